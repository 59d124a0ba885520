"""The group member's states and its fixed settings: the types every member kind shares.

* :class:`MemberState` and :data:`VALID_PREVIOUS_STATES` — ``AbstractCoordinator.MemberState``
  plus the process lifecycle, and the transition table
  :meth:`members.group_client.GroupClient.transition` enforces (raising
  :class:`IllegalMemberTransition`);
* :class:`GroupTimeouts` — the client's ``GroupRebalanceConfig`` timeouts;
* :class:`PollStall` — the fault that blocks the member's polling thread (KIP-62);
* :class:`ClientEffects` — the group client's effect sinks, which it builds once and hands to
  each of its parts (heartbeat thread, JoinGroup round, coordinator lookup).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import msgspec

__all__ = [
    "ClientEffects",
    "GroupTimeouts",
    "IN_GENERATION",
    "IllegalMemberTransition",
    "LogSink",
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


class LogSink(Protocol):
    """The log sink's signature: an event-log record of ``kind`` with ``fields`` (the sink adds
    ``member``; docs/event-log.md)."""

    def __call__(self, kind: str, **fields: object) -> None:
        """Record one :class:`protocol.effects.Log` effect."""
        ...


@dataclass(frozen=True, slots=True)
class ClientEffects:
    """The group client's effect sinks, one per effect of :mod:`protocol.effects`: what its
    parts (:class:`members.heartbeat.HeartbeatThread`,
    :class:`members.join_group.JoinGroupHandler`,
    :class:`members.coordinator_lookup.CoordinatorLookup`) do instead of I/O. The client builds
    one bundle and hands it to each part; every sink appends an effect to the client's list,
    which its entry point returns (sans-IO, in call order). A part binds the sinks it calls in
    its constructor, so a call costs what calling the client's own bound method does.

    Attributes:
        send: a request to the coordinator on the client's current connection
            (:class:`protocol.effects.Send`).
        set_timer: arm the client's timer: (key, due at virtual ms)
            (:class:`protocol.effects.SetTimer`).
        cancel: disarm the client's timer: (key) (:class:`protocol.effects.CancelTimer`).
        log: an event-log record: (kind, fields) (:class:`protocol.effects.Log`).
    """

    send: Callable[[object], None]
    set_timer: Callable[[str, int], None]
    cancel: Callable[[str], None]
    log: LogSink
