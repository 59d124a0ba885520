"""The online safety checker's per-member state (:class:`scenarios.check.invariants.
InvariantChecker`), typed: what it knows of each member between records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scenarios.check.snapshots import SnapshotTracker

__all__ = ["MemberState", "Zombie", "feed_snapshots"]

_STARTS = {
    "task_start": "task",
    "connector_start": "connector",
    "task_started": "task",
    "connector_started": "connector",
}
_STOPS = {"task_stop": "task", "connector_stop": "connector"}
_STOPPED = {"task_stopped": "task", "connector_stopped": "connector"}


@dataclass(slots=True, frozen=True)
class Zombie:
    """A member out of the group that may still run its work: the known issue whose window it
    is in (``KAFKA-9184``, ``KAFKA-16056``, ``streams-zombie``), the group's generation when it
    was removed (``None``: none yet) and when (virtual ms). The window closes when Kafka's
    client would have given up (:mod:`scenarios.check.known_windows`)."""

    issue: str
    generation: int | None
    removed_ms: int


@dataclass(slots=True)
class MemberState:
    """One member (a Connect worker or a Kafka Streams client) as the checker sees it."""

    #: the (``"task"``/``"connector"``, id) instances it owns, forgotten at once when it goes
    owned: set[tuple[str, str]] = field(default_factory=set)
    #: the generation of its latest applied assignment since it (re)started, or ``None``
    applied_generation: int | None = None
    #: the protocol of its latest applied assignment (``None``: none yet)
    applied_protocol: str | None = None
    #: set while it is out of the group but possibly still running work
    zombie: Zombie | None = None
    #: Kafka Streams: the tasks it holds as active, and its standby tasks
    active: set[str] = field(default_factory=set)
    standby: set[str] = field(default_factory=set)


def feed_snapshots(tracker: SnapshotTracker, record: Mapping[str, Any]) -> None:
    """:meth:`SnapshotTracker.feed` for the online checker, which reads each record dict as it
    is emitted (decoding every task event into its Struct there would cost a chaos run ~1%):
    the same steps, from the dict of a record of
    :data:`scenarios.check.snapshots.SNAPSHOT_KINDS`."""
    kind = record["kind"]
    member = str(record.get("member"))
    if (what := _STARTS.get(kind)) is not None:
        tracker.started(member, (what, str(record.get(what))))
    elif (what := _STOPS.get(kind)) is not None:
        tracker.stopping(member, (what, str(record.get(what))))
    elif (what := _STOPPED.get(kind)) is not None:
        tracker.stopped(member, (what, str(record.get(what))))
    elif kind == "assignment":
        connectors, tasks = record.get("connectors"), record.get("tasks")
        if connectors is not None or tasks is not None:
            tracker.assigned(
                member,
                str(record.get("protocol")),
                connectors or (),
                tasks or (),
                record.get("revoked_connectors") or (),
                record.get("revoked_tasks") or (),
            )
    elif kind == "revoke":
        tracker.revoked(
            member,
            record.get("connectors") or (),
            record.get("tasks") or (),
            str(record.get("reason")),
        )
    else:  # member_start, member_stop, member_crash
        tracker.gone(member)
