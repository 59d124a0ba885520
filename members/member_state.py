"""The group member's states and its fixed settings: the types every member kind shares.

* :class:`MemberState` and :data:`VALID_PREVIOUS_STATES` — ``AbstractCoordinator.MemberState``
  plus the process lifecycle, and the transition table
  :meth:`members.group_client.GroupClient._transition` enforces (raising
  :class:`IllegalMemberTransition`);
* :class:`GroupTimeouts` — the client's ``GroupRebalanceConfig`` timeouts;
* :class:`PollStall` — the fault that blocks the member's polling thread (KIP-62).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import msgspec

__all__ = [
    "GroupTimeouts",
    "IN_GENERATION",
    "IllegalMemberTransition",
    "MemberState",
    "PollStall",
    "VALID_PREVIOUS_STATES",
]


class MemberState(enum.Enum):
    """``AbstractCoordinator.MemberState`` plus the process lifecycle (STOPPED).

    * UNJOINED — no generation; a JoinGroup is sent when a rejoin is needed and the member
      polls. *transition:* → PREPARING_REBALANCE (JoinGroup sent), → STOPPED.
    * PREPARING_REBALANCE — a JoinGroup is in flight. *transition:* → COMPLETING_REBALANCE
      (joined), → UNJOINED (error or timeout), → STOPPED.
    * COMPLETING_REBALANCE — joined, SyncGroup in flight, heartbeating. *transition:* → STABLE
      (assignment received), → UNJOINED (error, fenced, timeout), → STOPPED.
    * STABLE — member of the generation, heartbeating. *transition:* → PREPARING_REBALANCE
      (rejoin), → UNJOINED (fenced, poll timeout), → STOPPED.
    * STOPPED — the process is gone; nothing leaves this state.
    """

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    STABLE = "STABLE"
    STOPPED = "STOPPED"


_UNJOINED = MemberState.UNJOINED
_PREPARING = MemberState.PREPARING_REBALANCE
_COMPLETING = MemberState.COMPLETING_REBALANCE
_STABLE = MemberState.STABLE
_STOPPED = MemberState.STOPPED
#: The states of a member of a generation (it heartbeats): ``AbstractCoordinator``'s
#: ``state == COMPLETING_REBALANCE || state == STABLE``.
IN_GENERATION = (_COMPLETING, _STABLE)

#: target state -> the states it may be entered from (as ``ClassicGroupState`` declares its
#: ``validPreviousStates``). UNJOINED from UNJOINED is ``resetStateAndGeneration`` on a member
#: that had not joined (a poll timeout while rejoining).
VALID_PREVIOUS_STATES: dict[MemberState, frozenset[MemberState]] = {
    _UNJOINED: frozenset({_UNJOINED, _PREPARING, _COMPLETING, _STABLE}),
    _PREPARING: frozenset({_UNJOINED, _STABLE}),
    _COMPLETING: frozenset({_PREPARING}),
    _STABLE: frozenset({_COMPLETING}),
    _STOPPED: frozenset({_UNJOINED, _PREPARING, _COMPLETING, _STABLE}),
}


class PollStall(msgspec.Struct, frozen=True):
    """A fault: the member's polling thread (the Connect herder, the Streams stream thread)
    blocks for ``stall_ms`` virtual ms; the heartbeat thread goes on."""

    stall_ms: int


class IllegalMemberTransition(RuntimeError):
    """A member state change the transition table forbids (a groupsim bug, never input)."""


class GroupTimeouts(NamedTuple):
    """The group client's timeouts, virtual ms (``GroupRebalanceConfig`` and the client's
    ``request.timeout.ms``; Connect's and the consumer's defaults differ)."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    rebalance_timeout_ms: int
    request_timeout_ms: int
