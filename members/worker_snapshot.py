"""``WorkerCoordinator``'s assignment snapshot (Kafka Connect): what a worker was last assigned,
merged with each incremental assignment under the cooperative protocols (KIP-415), and the
connectors and tasks in it. Pure functions; :class:`members.worker.ConnectWorker` keeps the
snapshot.
"""

from __future__ import annotations

import msgspec

from protocol.connect import ConnectAssignment, ConnectorTaskId

__all__ = ["merge_incremental", "snapshot_items"]


def merge_incremental(
    old: ConnectAssignment | None,
    assignment: ConnectAssignment,
    revoked_connectors: list[str],
    revoked_tasks: list[ConnectorTaskId],
) -> ConnectAssignment:
    """``WorkerCoordinator.onJoinComplete`` under a cooperative protocol: the new snapshot is
    ``assignment``'s newly assigned items, then the ``old`` snapshot's items less the revoked
    ones (``assignment`` itself when there is no old snapshot). Kafka merges into whatever
    snapshot it holds, even a failed (CONFIG_MISMATCH) one, so the items survive a failed
    round; every other field is ``assignment``'s."""
    if old is None:
        return assignment
    gone_c = set(revoked_connectors)
    gone_t = set(revoked_tasks)
    connectors = tuple(assignment.connectors) + tuple(c for c in old.connectors if c not in gone_c)
    tasks = tuple(assignment.tasks) + tuple(t for t in old.tasks if t not in gone_t)
    return msgspec.structs.replace(assignment, connectors=connectors, tasks=tasks)


def snapshot_items(
    snapshot: ConnectAssignment | None,
) -> tuple[list[str], list[ConnectorTaskId]]:
    """An assignment snapshot's connectors and tasks, each once, in order (none for None)."""
    if snapshot is None:
        return [], []
    return list(dict.fromkeys(snapshot.connectors)), list(dict.fromkeys(snapshot.tasks))
