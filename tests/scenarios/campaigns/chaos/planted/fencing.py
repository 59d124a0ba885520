"""Planted bugs in the coordinator's KIP-345 fencing of a SyncGroup (issue 23): reached by the
``zombie`` fault's SyncGroup variant (``scenarios/campaigns/chaos/timeline.py``
``add_sync_zombie``: a static consumer's SyncGroup held past its twin's takeover, or parked
at the coordinator when the twin takes over) and judged
by ``sync_not_fenced`` (``scenarios/check/fencing_contracts.py``); docs/chaos.md "Planted
bugs" gives the runs each took to find.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from coordinator import sync as coordinator_sync
from coordinator.classic_group import ClassicGroup

from . import PlantedBug

__all__ = ["FENCING_BUGS"]


def _sync_ignores_fencing(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupSync validating the member by its member id only: the group.instance.id
    # check of ClassicGroup#validateMember skipped, so a SyncGroup of a replaced static member
    # id is answered UNKNOWN_MEMBER_ID (the id is no member), not FENCED_INSTANCE_ID
    def _sync(self: Any, source: str, req: Any, now_ms: int) -> list[Any]:
        if req.group_instance_id is not None:
            req = msgspec.structs.replace(req, group_instance_id=None)
        return list(original(self, source, req, now_ms))

    return _sync


def _replace_keeps_parked_sync(original: Callable[..., Any]) -> Callable[..., Any]:
    # ClassicGroup#replaceStaticMember without its completeSyncFuture: the new member record
    # is copied from the old one with its parked SyncGroup, which the join phase the
    # replacement starts in CompletingRebalance then answers REBALANCE_IN_PROGRESS
    # (propagateAssignment), not FENCED_INSTANCE_ID
    def replace(self: Any, iid: str, old_id: str, new_id: str, effects: Any) -> Any:
        old = self.members[old_id]
        parked, old.sync_source = old.sync_source, None
        member = original(self, iid, old_id, new_id, effects)
        member.sync_source = parked
        return member

    return replace


FENCING_BUGS: tuple[PlantedBug, ...] = (
    PlantedBug(
        "coordinator-sync-ignores-fencing",
        "coordinator/sync.py sync (classicGroupSync -> validateMember)",
        "a SyncGroup is validated by member id only: a replaced static member id hears "
        "UNKNOWN_MEMBER_ID, not FENCED_INSTANCE_ID",
        # reached by the zombie fault's SyncGroup variant: consumer runs with static members
        # and two topics or more
        "consumer",
        ((coordinator_sync, "sync", _sync_ignores_fencing),),
    ),
    PlantedBug(
        "coordinator-replace-keeps-parked-sync",
        "coordinator/classic_group.py ClassicGroup.replace_static_member (replaceStaticMember)",
        "a static member's takeover in CompletingRebalance does not fence the old member id's "
        "parked SyncGroup: the new join phase answers it REBALANCE_IN_PROGRESS",
        # reached by the zombie fault's parked SyncGroup variant (consumers and Streams)
        "consumer",
        ((ClassicGroup, "replace_static_member", _replace_keeps_parked_sync),),
    ),
)
