"""Planted bugs in how the coordinator applies its ``[coordinator]`` settings (issue 23): each
breaks one rule of KIP-389's ``group.max.size``, of the session bounds
``group.{min,max}.session.timeout.ms`` or of KIP-134's initial delay while the group stays
live; the first two kinds are reached only since the chaos generators draw those settings
(``scenarios/campaigns/chaos/coordinator_draw.py``).
The rules are judged by ``scenarios/check/coordinator_config_contracts.py``; docs/chaos.md
"Planted bugs" gives the runs each took to find.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from coordinator import join as coordinator_join
from coordinator import rebalance as coordinator_rebalance
from coordinator.state import GroupState
from protocol.effects import Send
from protocol.group import ErrorCode, JoinGroupResponse

from . import PlantedBug

__all__ = ["COORDINATOR_CONFIG_BUGS"]


def _max_size_off_by_one(original: Callable[..., Any]) -> Callable[..., Any]:
    # acceptJoiningMember comparing with <= group.max.size: one member more than the maximum
    # is let in (a newcomer into a full Stable group, or one more awaiting a join)
    def _accept_joining_member(self: Any, mid: str) -> bool:
        if original(self, mid):
            return True
        if self.state is GroupState.PREPARING_REBALANCE:
            return bool(self.num_awaiting_join <= self.config.max_size)
        return len(self.members) <= self.config.max_size

    return _accept_joining_member


def _max_size_never_enforced(original: Callable[..., Any]) -> Callable[..., Any]:
    # group.max.size read but never applied: GROUP_MAX_SIZE_REACHED is never sent
    def _accept_joining_member(self: Any, mid: str) -> bool:
        return True

    return _accept_joining_member


def _session_bounds_exclusive(original: Callable[..., Any]) -> Callable[..., Any]:
    # the session-timeout bounds checked exclusively (min < s < max): a member whose
    # session.timeout.ms equals a bound is refused INVALID_SESSION_TIMEOUT
    def _join(self: Any, source: str, req: Any, now_ms: int) -> list[Any]:
        cfg = self.config
        if req.group_id == self.group_id and req.session_timeout_ms in (
            cfg.min_session_timeout_ms,
            cfg.max_session_timeout_ms,
        ):
            error = ErrorCode.INVALID_SESSION_TIMEOUT
            return [Send(source, JoinGroupResponse(error, member_id=req.member_id))]
        return list(original(self, source, req, now_ms))

    return _join


def _session_bounds_unchecked(original: Callable[..., Any]) -> Callable[..., Any]:
    # no session-timeout bounds at all: every JoinGroup is handled as if within them
    def _join(self: Any, source: str, req: Any, now_ms: int) -> list[Any]:
        cfg = self.config
        inside = max(
            cfg.min_session_timeout_ms, min(req.session_timeout_ms, cfg.max_session_timeout_ms)
        )
        if inside == req.session_timeout_ms:
            return list(original(self, source, req, now_ms))
        saved = self.config
        self.config = msgspec_replace(saved, req.session_timeout_ms)
        try:
            return list(original(self, source, req, now_ms))
        finally:
            self.config = saved

    return _join


def _initial_delay_not_extended(original: Callable[..., Any]) -> Callable[..., Any]:
    # tryCompleteInitialRebalanceElseSchedule ignoring newMemberAdded: the first join phase
    # of an Empty group completes after one group.initial.rebalance.delay.ms however many
    # members are still arriving
    def _try_complete_initial_rebalance(
        self: Any, delay_ms: int, remaining_ms: int, now_ms: int, effects: list[Any]
    ) -> None:
        self.new_member_added = False
        original(self, delay_ms, remaining_ms, now_ms, effects)

    return _try_complete_initial_rebalance


def msgspec_replace(config: Any, session_ms: int) -> Any:
    """``config`` with bounds widened to take ``session_ms``."""
    return msgspec.structs.replace(
        config,
        min_session_timeout_ms=min(config.min_session_timeout_ms, session_ms),
        max_session_timeout_ms=max(config.max_session_timeout_ms, session_ms),
    )


COORDINATOR_CONFIG_BUGS: tuple[PlantedBug, ...] = (
    PlantedBug(
        "coordinator-max-size-off-by-one",
        "coordinator/join.py accept_joining_member (acceptJoiningMember)",
        "group.max.size compared with <=: one member more than the maximum is let in",
        "connect",
        ((coordinator_join, "accept_joining_member", _max_size_off_by_one),),
    ),
    PlantedBug(
        "coordinator-max-size-never-enforced",
        "coordinator/join.py accept_joining_member (acceptJoiningMember)",
        "group.max.size never applied: GROUP_MAX_SIZE_REACHED is never sent",
        "consumer",
        ((coordinator_join, "accept_joining_member", _max_size_never_enforced),),
    ),
    PlantedBug(
        "coordinator-session-bounds-exclusive",
        "coordinator/join.py join (GroupCoordinatorService#joinGroup)",
        "session.timeout.ms equal to group.min/max.session.timeout.ms refused",
        "connect",
        ((coordinator_join, "join", _session_bounds_exclusive),),
    ),
    PlantedBug(
        "coordinator-initial-delay-not-extended",
        "coordinator/rebalance.py try_complete_initial_rebalance",
        "InitialDelayedJoin never extended: members arriving during the delay miss the phase",
        "connect",
        ((coordinator_rebalance, "try_complete_initial_rebalance", _initial_delay_not_extended),),
    ),
    PlantedBug(
        "coordinator-session-bounds-unchecked",
        "coordinator/join.py join (GroupCoordinatorService#joinGroup)",
        "no session-timeout bounds: INVALID_SESSION_TIMEOUT is never sent",
        "streams",
        ((coordinator_join, "join", _session_bounds_unchecked),),
    ),
)
