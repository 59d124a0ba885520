"""Helpers shared by the assignor tests: vector loading and member-side merging."""

from __future__ import annotations

import json
from pathlib import Path

from protocol.connect import ConnectAssignment

VECTORS = Path(__file__).resolve().parents[2] / "vectors"


def load_vectors(name: str) -> dict:
    return json.loads((VECTORS / name).read_text())


def merge(old: ConnectAssignment | None, new: ConnectAssignment) -> ConnectAssignment:
    """``WorkerCoordinator.onJoinComplete`` merge: new items + (old − revoked)."""
    if old is None:
        return new
    rc = set(new.revoked_connectors)
    rt = set(new.revoked_tasks)
    return ConnectAssignment(
        new.version,
        new.error,
        new.leader,
        new.leader_url,
        new.config_offset,
        new.connectors + tuple(c for c in old.connectors if c not in rc),
        new.tasks + tuple(t for t in old.tasks if t not in rt),
        new.revoked_connectors,
        new.revoked_tasks,
        new.delay_ms,
    )
