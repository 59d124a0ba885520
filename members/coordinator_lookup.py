"""A group member's view of its coordinator: losing it and finding it again, as Kafka's
``AbstractCoordinator`` does (``markCoordinatorUnknown``, ``lookupCoordinator`` and its
``FindCoordinatorResponseHandler``), once.

One :class:`CoordinatorLookup` is owned by each :class:`members.group_client.GroupClient`.
Losing the coordinator drops the member's connection to it (``NetworkClient#disconnectAsync``:
every request still in flight on it goes unanswered) and cuts off a JoinGroup or SyncGroup in
flight; the next requests go out on a new connection, ``address/1``, then ``address/2``, ...
The coordinator is then looked up every ``FIND_COORDINATOR_RETRY_MS`` until a FindCoordinator
answers. The member's ``coordinator_known`` and ``connection_address`` stay plain attributes
of the client (the engine reads them on every delivery); what the lookup reads and asks of the
client is :class:`LookupOwner`, and its effects go out through the client's effect sinks
(:class:`members.member_state.ClientEffects`), handed over explicitly. Timer key it arms:
``find-coordinator``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from members.member_state import ClientEffects, MemberState
from protocol.group import ErrorCode, FindCoordinatorRequest, FindCoordinatorResponse

__all__ = ["FIND_COORDINATOR_RETRY_MS", "CoordinatorLookup", "LookupOwner"]

#: How often an unreachable coordinator is looked up again (FindCoordinator round trips).
FIND_COORDINATOR_RETRY_MS = 1_000

_JOINING = (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)


class LookupOwner(Protocol):
    """What the coordinator lookup reads and asks of its group client."""

    state: MemberState
    member_id: str
    group_id: str
    address: str
    connection_address: str
    coordinator_known: bool

    def cut_join(self, reason: str) -> None:
        """The JoinGroup or SyncGroup in flight is cut off: UNJOINED, rejoin for ``reason``."""
        ...

    def resume_heartbeats(self, now_ms: int) -> None:
        """The coordinator is back: the heartbeat thread resumes (in a generation)."""
        ...

    def maybe_rejoin(self, now_ms: int) -> None:
        """``ensureActiveGroup``: JoinGroup again if needed and free to."""
        ...

    def on_coordinator_unknown(self, now_ms: int) -> None:
        """Hook: the coordinator became unknown."""
        ...

    def on_coordinator_found(self, now_ms: int) -> None:
        """Hook: the coordinator was found again."""
        ...


class CoordinatorLookup:
    """One member's coordinator discovery (see the module docstring).

    Args:
        owner: the group client it looks the coordinator up for.
        effects: the client's effect sinks.
        clear_heartbeats: forgets the heartbeat thread's Heartbeats in flight.
    """

    __slots__ = ("_cancel", "_clear_heartbeats", "_connections", "_log", "_owner", "_send", "_set")

    def __init__(
        self,
        owner: LookupOwner,
        effects: ClientEffects,
        *,
        clear_heartbeats: Callable[[], None],
    ) -> None:
        self._owner = owner
        # the sinks it calls, bound once (a call costs no bundle lookup)
        self._send = effects.send
        self._set = effects.set_timer
        self._cancel = effects.cancel
        self._log = effects.log
        self._clear_heartbeats = clear_heartbeats
        self._connections = 0  # connections to the coordinator dropped so far

    def mark_unknown(self, reason: str, now_ms: int) -> None:
        """``markCoordinatorUnknown``: stop heartbeating, drop the connection (its requests in
        flight go unanswered) and look the coordinator up again; nothing if it is unknown
        already."""
        owner = self._owner
        if not owner.coordinator_known:
            return
        owner.coordinator_known = False
        self._clear_heartbeats()
        if owner.state in _JOINING:
            # markCoordinatorUnknown disconnects (NetworkClient#disconnectAsync): the JoinGroup
            # or SyncGroup in flight fails with a retriable DisconnectException, and
            # AbstractCoordinator#joinGroupIfNeeded joins again (same member id and
            # generation) once the coordinator is found. Its answer on the old connection
            # is dropped, so waiting for it would leave the member silent until its session
            # expires (a late Heartbeat answered NOT_COORDINATOR mid-join does this).
            self._cancel("request-timeout")
            owner.cut_join(f"rebalance failed: {reason} (DisconnectException)")
        self._connections += 1
        owner.connection_address = f"{owner.address}/{self._connections}"
        self._log("coordinator_unknown", member_id=owner.member_id, reason=reason)
        self._cancel("heartbeat")
        self._cancel("session")
        owner.on_coordinator_unknown(now_ms)
        self.find(now_ms)

    def find(self, now_ms: int) -> None:
        """``lookupCoordinator``: a FindCoordinator now, and again in
        ``FIND_COORDINATOR_RETRY_MS`` unless answered."""
        self._send(FindCoordinatorRequest(key=self._owner.group_id))
        self._set("find-coordinator", now_ms + FIND_COORDINATOR_RETRY_MS)

    def on_response(self, response: FindCoordinatorResponse, now_ms: int) -> None:
        """``FindCoordinatorResponseHandler``: the coordinator is known again (unless it was
        already, or the answer is an error: the find-coordinator timer then retries)."""
        owner = self._owner
        if owner.coordinator_known or response.error != ErrorCode.NONE:
            return  # still unknown: the find-coordinator timer retries
        owner.coordinator_known = True
        self._cancel("find-coordinator")
        owner.on_coordinator_found(now_ms)
        self._log("coordinator_found", member_id=owner.member_id)
        owner.resume_heartbeats(now_ms)
        owner.maybe_rejoin(now_ms)
