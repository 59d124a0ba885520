"""Planted bugs in the coordinator's failover load path (``GroupCoordinator.load``: Kafka's
``GroupMetadataManager#replay`` + ``onLoaded``) that only the coordinator referee sees: it
unloads Kafka's ``GroupMetadataManager`` at each ``coordinator_failover`` and loads the group
again from the records Kafka wrote, then judges every later answer (scenarios/referee/
coordinator.py, docs/chaos.md "Coordinator answers").

:data:`LOAD_PATH_BUGS` joins the chaos catalogue (``CATALOGUE``); both are referee-only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.group import GroupCoordinator
from protocol.effects import SetTimer

from . import PlantedBug

__all__ = ["LOAD_PATH_BUGS"]


def _load_without_session_timers(original: Callable[..., Any]) -> Callable[..., Any]:
    # GroupMetadataManager#onLoaded skipped: the new coordinator arms no member's heartbeat,
    # so a member that dies after the failover is never expired (its partitions stay
    # assigned; no checker sees it, since a silent member may hold its partitions until the
    # session the log cannot see runs out); Kafka's manager expires it and rebalances
    def load(cls: type, *args: Any, **kwargs: Any) -> Any:
        coordinator, effects = original(*args, **kwargs)  # bound to the class already
        return coordinator, [e for e in effects if type(e) is not SetTimer]

    return classmethod(load)  # type: ignore[return-value]


def _load_forgets_instance_ids(original: Callable[..., Any]) -> Callable[..., Any]:
    # replay that builds each ClassicGroupMember without its group.instance.id
    # (KIP-345): the loaded group has no static members, so a static member's next request
    # with its instance id is UNKNOWN_MEMBER_ID / a fresh member id where Kafka knows it
    def load(cls: type, *args: Any, **kwargs: Any) -> Any:
        coordinator, effects = original(*args, **kwargs)  # bound to the class already
        coordinator.group.static.clear()
        for m in coordinator.group.members.values():
            m.group_instance_id = None
        return coordinator, effects

    return classmethod(load)  # type: ignore[return-value]


LOAD_PATH_BUGS: tuple[PlantedBug, ...] = (
    PlantedBug(
        "coordinator-load-arms-no-session-timers",
        "coordinator/group.py GroupCoordinator.load (GroupMetadataManager#onLoaded)",
        "the new coordinator arms no member's session timer after a failover (referee only)",
        "consumer",
        ((GroupCoordinator, "load", _load_without_session_timers),),
        referee_only=True,
    ),
    PlantedBug(
        "coordinator-load-forgets-instance-ids",
        "coordinator/group.py GroupCoordinator.load (GroupMetadataManager#replay)",
        "the loaded group forgets its static members' group.instance.ids (referee only)",
        "consumer",
        ((GroupCoordinator, "load", _load_forgets_instance_ids),),
        referee_only=True,
    ),
)
