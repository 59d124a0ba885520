"""The data of one incremental cooperative round (Kafka ``IncrementalCooperativeAssignor``'s
``WorkerLoad`` and ``ClusterAssignment``, KIP-415).

Tasks are handled as ``(connector, number)`` tuples; :class:`~protocol.connect.ConnectorTaskId`
is a NamedTuple, so both kinds compare and hash alike.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Task", "WorkerLoad", "ClusterAssignment"]

Task = tuple[str, int]


class WorkerLoad:
    """One worker's connectors and tasks during an assignment (Kafka ``WorkerLoad``).

    ``connectors`` and ``tasks`` are mutable lists in the worker's own order; the assignor
    appends to them and removes revoked items from them.
    """

    __slots__ = ("worker", "connectors", "tasks", "_cur_c", "_cur_t")

    def __init__(
        self,
        worker: str,
        connectors: Iterable[str] = (),
        tasks: Iterable[Task] = (),
    ) -> None:
        self.worker = worker
        self.connectors: list[str] = list(connectors)
        self.tasks: list[Task] = list(tasks)
        self._cur_c = len(self.connectors)
        self._cur_t = len(self.tasks)

    def is_empty(self) -> bool:
        """True when the worker holds no connector and no task."""
        return not self.connectors and not self.tasks

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WorkerLoad):
            return NotImplemented
        return (
            self.worker == other.worker
            and self.connectors == other.connectors
            and list(self.tasks) == list(other.tasks)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"WorkerLoad({self.worker!r}, {self.connectors!r}, {self.tasks!r})"

    def newly_assigned(self) -> tuple[list[str], list[Task]]:
        """What was appended since the load was made (less what revocations took from the
        front): the worker's newly assigned (connectors, tasks), new lists."""
        return self.connectors[self._cur_c :], self.tasks[self._cur_t :]

    def revoke_first(self, connectors: int, tasks: int) -> None:
        """Take the first ``connectors`` connectors and ``tasks`` tasks off the worker's lists
        (``performLoadBalancingRevocations`` revokes a worker's first items)."""
        if connectors:
            del self.connectors[:connectors]
            self._cur_c = max(self._cur_c - connectors, 0)
        if tasks:
            del self.tasks[:tasks]
            self._cur_t = max(self._cur_t - tasks, 0)


class ClusterAssignment:
    """Result of :meth:`IncrementalCooperativeAssignor.perform_task_assignment`.

    Kafka ``ClusterAssignment``. Every map is keyed by worker id (every member appears in the
    newly-assigned and all-assigned maps; the revoked maps hold every member too, possibly with
    empty lists). Lists are in Kafka's output order; tasks are ``(connector, n)`` tuples.

    Attributes:
        newly_assigned_connectors / newly_assigned_tasks: items to start this round.
        newly_revoked_connectors / newly_revoked_tasks: items to stop this round.
        all_assigned_connectors / all_assigned_tasks: each worker's complete assignment after
            this round (next − revoked).
    """

    __slots__ = (
        "newly_assigned_connectors",
        "newly_assigned_tasks",
        "newly_revoked_connectors",
        "newly_revoked_tasks",
        "all_assigned_connectors",
        "all_assigned_tasks",
    )

    def __init__(
        self,
        newly_assigned_connectors: dict[str, list[str]],
        newly_assigned_tasks: dict[str, list[Task]],
        newly_revoked_connectors: dict[str, list[str]],
        newly_revoked_tasks: dict[str, list[Task]],
        all_assigned_connectors: dict[str, list[str]],
        all_assigned_tasks: dict[str, list[Task]],
    ) -> None:
        self.newly_assigned_connectors = newly_assigned_connectors
        self.newly_assigned_tasks = newly_assigned_tasks
        self.newly_revoked_connectors = newly_revoked_connectors
        self.newly_revoked_tasks = newly_revoked_tasks
        self.all_assigned_connectors = all_assigned_connectors
        self.all_assigned_tasks = all_assigned_tasks

    @property
    def all_workers(self) -> set[str]:
        """Every worker id that appears in any map (Kafka ``allWorkers()``)."""
        out: set[str] = set()
        for m in (
            self.newly_assigned_connectors,
            self.newly_assigned_tasks,
            self.newly_revoked_connectors,
            self.newly_revoked_tasks,
            self.all_assigned_connectors,
            self.all_assigned_tasks,
        ):
            out.update(m)
        return out

    def has_revocations(self) -> bool:
        """True when any worker has something revoked."""
        return any(self.newly_revoked_connectors.values()) or any(self.newly_revoked_tasks.values())

    def is_empty_assignment(self) -> bool:
        """True when nobody gets anything new."""
        return not any(self.newly_assigned_connectors.values()) and not any(
            self.newly_assigned_tasks.values()
        )
