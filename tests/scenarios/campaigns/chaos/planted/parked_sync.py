"""Planted bugs in when the coordinator answers a parked SyncGroup
(``GroupMetadataManager#prepareRebalance`` → ``resetAndPropagateAssignmentWithError``):
judged by ``parked_sync_unanswered`` (``scenarios/check/parked_sync_contracts.py``);
docs/chaos.md "Planted bugs" gives the runs each took to find.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator import sync as coordinator_sync
from protocol.group import ErrorCode

from . import PlantedBug

__all__ = ["PARKED_SYNC_BUGS"]


def _prepare_drops_parked_sync(original: Callable[..., Any]) -> Callable[..., Any]:
    # prepareRebalance without resetAndPropagateAssignmentWithError's answers: the parked
    # SyncGroups of a group leaving CompletingRebalance for PreparingRebalance are dropped
    # unanswered (their futures forgotten), so their members wait for request.timeout.ms
    # instead of hearing REBALANCE_IN_PROGRESS and rejoining at once
    def propagate(g: Any, error: ErrorCode, now_ms: int, effects: Any) -> None:
        if error is not ErrorCode.REBALANCE_IN_PROGRESS:
            original(g, error, now_ms, effects)
            return
        for m in g.members.values():
            m.sync_source = None

    return propagate


PARKED_SYNC_BUGS: tuple[PlantedBug, ...] = (
    PlantedBug(
        "coordinator-prepare-drops-parked-sync",
        "coordinator/rebalance.py prepare_rebalance (prepareRebalance -> "
        "resetAndPropagateAssignmentWithError)",
        "a group leaving CompletingRebalance for PreparingRebalance drops its parked SyncGroups "
        "unanswered instead of answering them REBALANCE_IN_PROGRESS",
        "connect",
        ((coordinator_sync, "propagate_assignment", _prepare_drops_parked_sync),),
    ),
)
