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
``connector_stopped``, ``member_start`` / ``member_stop`` / ``member_crash``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SnapshotTracker", "SNAPSHOT_KINDS"]

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
_STARTS = {
    "task_start": "task",
    "connector_start": "connector",
    "task_started": "task",
    "connector_started": "connector",
}
_STOPS = {"task_stop": "task", "connector_stop": "connector"}
_STOPPED = {"task_stopped": "task", "connector_stopped": "connector"}

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
        self._snapshots: dict[str, set[tuple[str, str]]] = {}
        # instances a revocation named that the member has not stopped (or started) since
        self._revoked: dict[str, set[tuple[str, str]]] = {}

    def feed(self, record: dict[str, Any]) -> None:
        """Apply one record (others are ignored). O(size of the record's lists)."""
        kind = record.get("kind")
        if kind not in SNAPSHOT_KINDS:
            return
        member = str(record.get("member"))
        # (kind is one of SNAPSHOT_KINDS: a str; no empty set is built for a lookup that
        # misses, these being the most frequent records here)
        if (what := _STARTS.get(kind)) is not None:
            # the herder starts only what its latest assignment gave it: in the snapshot
            instance = (what, str(record.get(what)))
            if (revoked := self._revoked.get(member)) is not None:
                revoked.discard(instance)
            if (held := self._snapshots.get(member)) is None:
                held = self._snapshots[member] = set()
            held.add(instance)
        elif (what := _STOPS.get(kind)) is not None:
            # being stopped (revoked, shut down): no longer left running
            self._revoked.setdefault(member, set()).add((what, str(record.get(what))))
        elif (what := _STOPPED.get(kind)) is not None:
            if (revoked := self._revoked.get(member)) is not None:
                revoked.discard((what, str(record.get(what))))
        elif kind == "assignment":
            if record.get("connectors") is None and record.get("tasks") is None:
                return  # a Streams assignment
            held = self._snapshots.get(member, set())
            if record.get("protocol") == _EAGER:
                held = set()
            else:
                gone = {("connector", c) for c in record.get("revoked_connectors") or ()}
                gone |= {("task", t) for t in record.get("revoked_tasks") or ()}
                self._revoked.setdefault(member, set()).update(gone)
                held = held - gone
            held |= {("connector", c) for c in record.get("connectors") or ()}
            held |= {("task", t) for t in record.get("tasks") or ()}
            self._snapshots[member] = held
        elif kind == "revoke":
            named = {("connector", c) for c in record.get("connectors") or ()}
            named |= {("task", t) for t in record.get("tasks") or ()}
            self._revoked.setdefault(member, set()).update(named)
            if record.get("reason") == "coordinator_lost" and member in self._snapshots:
                self._snapshots[member] = set()
        else:  # the process (re)starts or is gone: it runs nothing
            self._snapshots.pop(member, None)
            self._revoked.pop(member, None)

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
