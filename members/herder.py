"""The Connect herder's work queue: starting and stopping connectors and tasks, in order.

Kafka's ``DistributedHerder`` is a single thread: starting and stopping connectors and tasks
blocks it, and the group protocol only advances when it polls. groupsim models that thread as
a queue of jobs that take virtual time (``groupsim.*.start.ms`` / ``.stop.ms``); the member
sends a JoinGroup only when the queue is idle (:meth:`HerderQueue.poll_blocked`). A job that
outlasts ``rebalance.timeout.ms`` expires the poll timer and the worker leaves the group
(KAFKA-16056's path, :meth:`members.group_client.GroupClient._on_poll_timeout`), if its
heartbeat thread runs (:meth:`members.group_client.GroupClient._poll_timer_due`); answers
that come while a job blocks a JoinGroup in flight wait for the queue to empty
(:meth:`members.group_client.GroupClient.poll_resumed`).

Timer keys: ``herder`` (the running job ends), ``poll`` (armed while a job runs).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from members.config import WorkerConfig
from members.group_client import GroupClient
from protocol.connect import ConnectorTaskId
from protocol.group import UNKNOWN_GENERATION_ID

__all__ = ["HerderQueue", "Job"]


class Job:
    """One blocking herder operation: stop or start a set of connectors and tasks."""

    __slots__ = (
        "kind",
        "connectors",
        "tasks",
        "reason",
        "generation",
        "then",
        "duration_ms",
        "config_offset",
    )

    def __init__(
        self,
        kind: str,
        connectors: list[str],
        tasks: list[ConnectorTaskId],
        reason: str = "",
        generation: int = UNKNOWN_GENERATION_ID,
        then: Callable[[int], None] | None = None,
        duration_ms: int = 0,
        config_offset: int = -1,
    ) -> None:
        self.kind = kind
        # a start: the config offset the worker runs the assignment under (its view's)
        self.config_offset = config_offset
        self.duration_ms = duration_ms
        self.connectors = connectors
        self.tasks = tasks
        self.reason = reason
        self.generation = generation
        self.then = then


class HerderQueue(GroupClient):
    """The herder thread's job queue, mixed into :class:`members.worker.ConnectWorker`.

    Attributes:
        running_connectors / running_tasks: what the worker runs (Kafka's ``Worker`` maps of
            connectors and tasks), name → ``starting``, ``running`` or ``stopping``.
        running_assignment_connectors / running_assignment_tasks: the herder's
            ``runningAssignment`` (``DistributedHerder``): what ``startWork`` need not start
            again — the last assignment it started under a cooperative protocol, empty under
            eager, less what ``onRevoked`` stopped since.
    """

    config: WorkerConfig
    running_connectors: dict[str, str]
    running_tasks: dict[ConnectorTaskId, str]
    running_assignment_connectors: set[str]
    running_assignment_tasks: set[ConnectorTaskId]
    _jobs: deque[Job]
    _job: Job | None

    def _init_herder(self) -> None:
        self.running_connectors = {}
        self.running_tasks = {}
        self.running_assignment_connectors = set()
        self.running_assignment_tasks = set()
        self._jobs = deque()
        self._job = None

    def herder_busy(self) -> bool:
        """True while a job runs or waits: the herder thread does not poll."""
        return self._job is not None or bool(self._jobs)

    def _owned_work(self) -> tuple[list[str], list[ConnectorTaskId]]:
        return list(self.running_connectors), list(self.running_tasks)

    def _enqueue(self, job: Job, now_ms: int) -> None:
        self._jobs.append(job)
        if self._job is None:
            self._next_job(now_ms)

    def _after_jobs(self, callback: Callable[[int], None], now_ms: int) -> None:
        """Run ``callback`` once every queued herder job has finished."""
        if self._job is None and not self._jobs:
            callback(now_ms)
        else:
            self._jobs.append(Job("call", [], [], then=callback))

    def _next_job(self, now_ms: int) -> None:
        while self._job is None and self._jobs:
            job = self._jobs.popleft()
            if job.kind == "call":
                if job.then is not None:
                    job.then(now_ms)
                continue
            self._job = job
            duration = self._begin_job(job)
            if duration > 0:
                self._set("herder", now_ms + duration)
                self.start_poll_timer(now_ms)
                return
            self._finish_job(now_ms)
        if self._job is None and not self._jobs:
            self.poll_resumed(now_ms)

    def _begin_job(self, job: Job) -> int:
        config = self.config
        if job.kind == "stall":
            self._log("herder_stall", stall_ms=job.duration_ms)
            return job.duration_ms
        if job.kind == "stop":
            job.connectors = [c for c in job.connectors if c in self.running_connectors]
            job.tasks = [t for t in job.tasks if t in self.running_tasks]
            for connector in job.connectors:
                self.running_connectors[connector] = "stopping"
                self._log("connector_stop", connector=connector, reason=job.reason)
            for task in job.tasks:
                self.running_tasks[task] = "stopping"
                self._log("task_stop", task=str(task), reason=job.reason)
            return max(
                config.connector_stop_ms if job.connectors else 0,
                config.task_stop_ms if job.tasks else 0,
            )
        # start. An instance the worker already runs cannot be started twice: Kafka's
        # Worker#startConnector / Worker#startTask refuse it ("Connector with name ... already
        # exists", "Task already exists in this worker"), the herder reports it FAILED
        # (DistributedHerder's starting callables), and the first instance runs on.
        for connector in job.connectors:
            if connector in self.running_connectors:
                self._log(
                    "connector_start_failed",
                    connector=connector,
                    generation=job.generation,
                    error="already exists",
                )
        for task in job.tasks:
            if task in self.running_tasks:
                self._log(
                    "task_start_failed",
                    task=str(task),
                    generation=job.generation,
                    error="already exists",
                )
        job.connectors = [c for c in job.connectors if c not in self.running_connectors]
        job.tasks = [t for t in job.tasks if t not in self.running_tasks]
        for connector in job.connectors:
            self.running_connectors[connector] = "starting"
            self._log(
                "connector_start",
                connector=connector,
                generation=job.generation,
                config_offset=job.config_offset,
            )
        for task in job.tasks:
            self.running_tasks[task] = "starting"
            self._log(
                "task_start",
                task=str(task),
                generation=job.generation,
                config_offset=job.config_offset,
            )
        return max(
            config.connector_start_ms if job.connectors else 0,
            config.task_start_ms if job.tasks else 0,
        )

    def _finish_job(self, now_ms: int) -> None:
        job = self._job
        if job is None:
            return
        self._job = None
        self.stop_poll_timer()
        if job.kind == "stall":
            pass
        elif job.kind == "stop":
            for connector in job.connectors:
                if self.running_connectors.pop(connector, None) is not None:
                    self._log("connector_stopped", connector=connector, reason=job.reason)
            for task in job.tasks:
                if self.running_tasks.pop(task, None) is not None:
                    self._log("task_stopped", task=str(task), reason=job.reason)
        else:
            for connector in job.connectors:
                if self.running_connectors.get(connector) == "starting":
                    self.running_connectors[connector] = "running"
                    self._log("connector_started", connector=connector, generation=job.generation)
            for task in job.tasks:
                if self.running_tasks.get(task) == "starting":
                    self.running_tasks[task] = "running"
                    self._log("task_started", task=str(task), generation=job.generation)
        if job.then is not None:
            job.then(now_ms)
        self._next_job(now_ms)

    def running_work(self) -> tuple[list[str], list[ConnectorTaskId]]:
        """Connectors and tasks currently running (started and not being stopped)."""
        return (
            [c for c, s in self.running_connectors.items() if s == "running"],
            [t for t, s in self.running_tasks.items() if s == "running"],
        )
