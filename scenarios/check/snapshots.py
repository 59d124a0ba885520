"""Each Connect worker's assignment snapshot as its event log shows it, and the instances it
runs outside it: KAFKA-13816's *leftovers*.

Kafka's ``WorkerCoordinator`` keeps an *assignment snapshot* (``assignmentSnapshot``):

- ``onJoinComplete`` under a cooperative protocol removes the revoked items from it and adds
  the new assignment; under eager (``default``) the snapshot becomes the new assignment;
- ``onJoinPrepare`` under eager revokes (stops) the snapshot's connectors and tasks, and a lost
  coordinator (``WorkerCoordinator#poll``) revokes the snapshot and drops it;
- a worker that was cooperative before an eager round revokes nothing at that join, and the
  eager leader may hand what it runs to others: those instances are in no snapshot of its, so
  no later eager join stops them. They run until the worker stops, or until an assignment
  names them again (then ``Worker#startTask`` refuses a second instance, the first runs on
  and is in the snapshot again).

So an instance a worker runs that is not in its snapshot, and that no revocation named (a
revoked instance runs on while its worker stops it), is a leftover of KAFKA-13816: in
groupsim's model nothing else leaves one (a cooperative revocation stops what it names, an
eager join stops the snapshot, and a process that stops runs nothing). The checkers count
ownership and convergence on the group's assignment (:class:`SnapshotTracker`) and name
leftovers as the known issue for as long as they run.

Records read: ``assignment`` (Connect fields), ``revoke``, ``task_start`` /
``connector_start`` and ``task_started`` / ``connector_started`` (the herder starts only what
its assignment gave it: in the snapshot),
``task_stop`` / ``connector_stop`` (being stopped: not left running), ``task_stopped`` /
``connector_stopped``, ``member_start`` / ``member_stop`` / ``member_crash``, typed
(:data:`scenarios.eventlog.records.LogRecord`; the online
:class:`scenarios.check.invariants.InvariantChecker`, fed record dicts as they are emitted,
calls the same steps through :func:`scenarios.check.invariant_state.feed_snapshots`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import cast

from msgspec import UNSET

from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_connect as kc
from scenarios.eventlog.records import RECORD_TYPES, LogRecord

__all__ = ["SnapshotTracker", "SNAPSHOT_KINDS", "SNAPSHOT_TYPES", "Instance"]

#: the record kinds :meth:`SnapshotTracker.feed` reads
SNAPSHOT_KINDS = frozenset(
    {
        "assignment",
        "revoke",
        "task_start",
        "connector_start",
        "task_started",
        "connector_started",
        "task_stop",
        "connector_stop",
        "task_stopped",
        "connector_stopped",
        "member_start",
        "member_stop",
        "member_crash",
    }
)
#: their Structs
SNAPSHOT_TYPES = frozenset(RECORD_TYPES[kind] for kind in SNAPSHOT_KINDS)
#: a task or connector: ``("task" | "connector", id)``
Instance = tuple[str, str]

#: Connect's eager protocol name (``ConnectProtocolCompatibility.EAGER``)
_EAGER = "default"


class SnapshotTracker:
    """Per-member assignment snapshots, fed the log's records in order.

    An instance is a ``("task" | "connector", id)`` pair. A member whose snapshot was
    dropped (it lost the coordinator) holds nothing; one that has applied no assignment
    since it started has no known snapshot, and nothing it runs counts as a leftover (a worker
    starts only what an assignment gave it; a hand-written log may have no ``assignment``).
    """

    __slots__ = ("_snapshots", "_revoked")

    def __init__(self) -> None:
        self._snapshots: dict[str, set[Instance]] = {}
        # instances a revocation named that the member has not stopped (or started) since
        self._revoked: dict[str, set[Instance]] = {}

    def feed(self, record: LogRecord) -> None:
        """Apply one typed record (others are ignored). O(size of the record's lists)."""
        step = _TASK_STEPS.get(type(record))
        if step is not None:  # the most frequent: by exact class, no chain of patterns
            task_event = cast(_TaskEvent, record)
            step(self, task_event.member, ("task", task_event.task))
            return
        match record:
            case kc.TaskStart(member=member, task=task) | kc.TaskStarted(member=member, task=task):
                self.started(member, ("task", task))
            case kc.TaskStop(member=member, task=task):
                self.stopping(member, ("task", task))
            case kc.TaskStopped(member=member, task=task):
                self.stopped(member, ("task", task))
            case (
                kc.ConnectorStart(member=member, connector=connector)
                | kc.ConnectorStarted(member=member, connector=connector)
            ):
                self.started(member, ("connector", connector))
            case kc.ConnectorStop(member=member, connector=connector):
                self.stopping(member, ("connector", connector))
            case kc.ConnectorStopped(member=member, connector=connector):
                self.stopped(member, ("connector", connector))
            case k.Assignment(member=member, protocol=protocol):
                if record.connectors is not UNSET or record.tasks is not UNSET:
                    self.assigned(
                        member,
                        protocol,
                        record.connectors or (),
                        record.tasks or (),
                        record.revoked_connectors or (),
                        record.revoked_tasks or (),
                    )
            case k.Revoke(member=member, connectors=connectors, tasks=tasks, reason=reason):
                self.revoked(member, connectors, tasks, reason)
            case (
                k.MemberStart(member=member)
                | k.MemberStop(member=member)
                | k.MemberCrash(member=member)
            ):
                self.gone(member)

    # ------------------------------------------------------------------ the steps

    def started(self, member: str, instance: Instance) -> None:
        """``member``'s herder starts (or started) ``instance``: the herder starts only what
        its latest assignment gave it, so it is in the snapshot."""
        if (revoked := self._revoked.get(member)) is not None:
            revoked.discard(instance)
        if (held := self._snapshots.get(member)) is None:
            held = self._snapshots[member] = set()
        held.add(instance)

    def stopping(self, member: str, instance: Instance) -> None:
        """``member`` is stopping ``instance`` (revoked, shut down): no longer left running."""
        self._revoked.setdefault(member, set()).add(instance)

    def stopped(self, member: str, instance: Instance) -> None:
        """``member`` stopped ``instance``."""
        if (revoked := self._revoked.get(member)) is not None:
            revoked.discard(instance)

    def assigned(
        self,
        member: str,
        protocol: str,
        connectors: Iterable[str],
        tasks: Iterable[str],
        revoked_connectors: Iterable[str],
        revoked_tasks: Iterable[str],
    ) -> None:
        """``member`` applied a Connect assignment of ``protocol`` (``onJoinComplete``):
        under eager the snapshot becomes the assignment; else the revoked items leave it
        (being stopped) and the assigned ones join it."""
        held = self._snapshots.get(member, set())
        if protocol == _EAGER:
            held = set()
        else:
            gone = {("connector", c) for c in revoked_connectors}
            gone |= {("task", t) for t in revoked_tasks}
            self._revoked.setdefault(member, set()).update(gone)
            held = held - gone
        held |= {("connector", c) for c in connectors}
        held |= {("task", t) for t in tasks}
        self._snapshots[member] = held

    def revoked(
        self, member: str, connectors: Iterable[str], tasks: Iterable[str], reason: str
    ) -> None:
        """``member`` revokes ``connectors`` and ``tasks``; a lost coordinator
        (``reason`` ``coordinator_lost``) drops its snapshot."""
        named = {("connector", c) for c in connectors}
        named |= {("task", t) for t in tasks}
        self._revoked.setdefault(member, set()).update(named)
        if reason == "coordinator_lost" and member in self._snapshots:
            self._snapshots[member] = set()

    def gone(self, member: str) -> None:
        """``member``'s process (re)starts or is gone: it runs nothing."""
        self._snapshots.pop(member, None)
        self._revoked.pop(member, None)

    # ------------------------------------------------------------------ questions

    def holds(self, member: str, kind: str, instance: str) -> bool:
        """Whether ``member``'s snapshot holds the instance (``kind``: task or connector)."""
        return (kind, instance) in self._snapshots.get(member, ())

    def is_leftover(self, member: str, kind: str, instance: str) -> bool:
        """Whether ``member``, which runs the instance, runs it as a KAFKA-13816 leftover: not
        in its snapshot, and named by no revocation or stop it is still carrying out (False
        while its snapshot is unknown)."""
        return (
            member in self._snapshots
            and not self.holds(member, kind, instance)
            and (kind, instance) not in self._revoked.get(member, ())
        )


_TaskEvent = kc.TaskStart | kc.TaskStarted | kc.TaskStop | kc.TaskStopped
#: The task events, by exact class: the step each is.
_TASK_STEPS: dict[type, Callable[[SnapshotTracker, str, Instance], None]] = {
    kc.TaskStart: SnapshotTracker.started,
    kc.TaskStarted: SnapshotTracker.started,
    kc.TaskStop: SnapshotTracker.stopping,
    kc.TaskStopped: SnapshotTracker.stopped,
}
