"""A group member's heartbeat thread: Kafka's ``AbstractCoordinator.HeartbeatThread``, the
``Heartbeat`` bookkeeping it keeps and its ``HeartbeatResponseHandler``, once.

One :class:`HeartbeatThread` is owned by each :class:`members.group_client.GroupClient` (the
``AbstractCoordinator`` whose inner classes these are in Kafka). It keeps the Heartbeats in
flight on the member's current connection to the coordinator — by correlation id, with the
generation each was sent with (``HeartbeatResponseHandler``'s ``sentGeneration``) — sends a
Heartbeat every ``heartbeat.interval.ms`` and acts on the answers. What it reads and asks of
its client is :class:`HeartbeatOwner`; its effects go out through the client's effect sinks
(:class:`members.member_state.ClientEffects`), handed over explicitly. Timer keys it arms:
``heartbeat`` and ``session``.

The steady-heartbeat half (:meth:`HeartbeatThread.round`, :meth:`HeartbeatThread.answered`,
:meth:`HeartbeatThread.shift`) is what the engine's heartbeat replay (scenarios/sim/fastpath)
carries out through the client's ``heartbeat_round`` / ``heartbeat_answered`` /
``shift_heartbeats``.
"""

from __future__ import annotations

from typing import Protocol

from members.member_state import IN_GENERATION, ClientEffects, GroupTimeouts, MemberState
from protocol.group import ErrorCode, HeartbeatRequest, HeartbeatResponse

__all__ = ["COORDINATOR_ERRORS", "HeartbeatOwner", "HeartbeatThread"]

_STABLE = MemberState.STABLE
_IN_GENERATION = IN_GENERATION
_NONE = ErrorCode.NONE
_FENCED = ErrorCode.FENCED_INSTANCE_ID
#: Errors meaning "this broker is not (or no longer) the group coordinator": rediscover it
#: (every response handler of ``AbstractCoordinator`` reads them so).
COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
#: Heartbeat errors that end the member's generation (when it is still the one sent with).
_GENERATION_ERRORS = (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, _FENCED)


class HeartbeatOwner(Protocol):
    """What the heartbeat thread reads and asks of its group client: the
    ``AbstractCoordinator`` fields and methods Kafka's inner ``HeartbeatThread`` and
    ``HeartbeatResponseHandler`` use."""

    state: MemberState
    member_id: str
    generation: int
    coordinator_known: bool
    log_heartbeats: bool
    rejoin_needed: bool
    timeouts: GroupTimeouts

    def heartbeat_request(self, correlation_id: int) -> HeartbeatRequest:
        """``sendHeartbeatRequest``'s request, ``correlation_id`` the request header's."""
        ...

    def mark_coordinator_unknown(self, reason: str, now_ms: int) -> None:
        """``markCoordinatorUnknown``: drop the connection, find the coordinator again."""
        ...

    def reset_state_and_generation(self, *, reset_member_id: bool) -> None:
        """``resetStateAndGeneration``: UNJOINED, no generation (nor member id)."""
        ...

    def request_rejoin(self, reason: str, now_ms: int) -> None:
        """``requestRejoin``."""
        ...

    def on_partitions_lost(self, reason: str, now_ms: int) -> None:
        """The generation is gone: what the member owned is lost."""
        ...

    def on_fenced(self, now_ms: int) -> None:
        """FENCED_INSTANCE_ID: another process took over the ``group.instance.id``."""
        ...


class HeartbeatThread:
    """One member's ``AbstractCoordinator.HeartbeatThread`` with its ``Heartbeat`` state and
    ``HeartbeatResponseHandler`` (see the module docstring).

    Args:
        owner: the group client it heartbeats for.
        effects: the client's effect sinks; it sends, arms timers and logs (never cancels: the
            client and the coordinator lookup disarm its timers).
    """

    __slots__ = ("_in_flight", "_log", "_owner", "_send", "_set")

    def __init__(self, owner: HeartbeatOwner, effects: ClientEffects) -> None:
        self._owner = owner
        # the sinks it calls, bound once (a call on the hot path costs no bundle lookup)
        self._send = effects.send
        self._set = effects.set_timer
        self._log = effects.log
        # Heartbeats in flight on the current connection, oldest first: correlation id (its
        # send time, virtual ms) -> the generation it was sent with (HeartbeatResponseHandler's
        # sentGeneration)
        self._in_flight: dict[int, int] = {}

    def arm(self, now_ms: int) -> None:
        """(Re-)arm the ``heartbeat`` timer ``heartbeat.interval.ms`` after ``now_ms``
        (``Heartbeat#resetHeartbeatTimer``)."""
        self._set("heartbeat", now_ms + self._owner.timeouts.heartbeat_interval_ms)

    def tick(self, now_ms: int) -> None:
        """The heartbeat timer fired (``HeartbeatThread.run``): a Heartbeat every
        ``heartbeat.interval.ms``, whether or not earlier ones were answered
        (``Heartbeat#shouldHeartbeat`` looks only at its timer); one unanswered for
        ``request.timeout.ms`` loses the coordinator (checked at each tick): NetworkClient
        fails it and disconnects."""
        owner = self._owner
        if owner.state not in _IN_GENERATION or not owner.coordinator_known:
            return
        self.arm(now_ms)
        heartbeats = self._in_flight
        if heartbeats and now_ms - next(iter(heartbeats)) >= owner.timeouts.request_timeout_ms:
            # the HeartbeatResponseHandler marks the coordinator unknown (it is then found
            # again, and the next heartbeat says whether we are still a member)
            owner.mark_coordinator_unknown("heartbeat request timed out", now_ms)
            return
        correlation_id = self._record(now_ms)
        if owner.log_heartbeats:
            self._log("heartbeat_request", member_id=owner.member_id, generation=owner.generation)
        self._send(owner.heartbeat_request(correlation_id))

    def _record(self, now_ms: int) -> int:
        """Record a Heartbeat sent now as in flight; return its correlation id (its send
        time, one more per earlier Heartbeat sent in the same ms)."""
        heartbeats = self._in_flight
        correlation_id = now_ms
        while correlation_id in heartbeats:  # a second Heartbeat in the same ms
            correlation_id += 1
        heartbeats[correlation_id] = self._owner.generation
        return correlation_id

    def clear(self) -> None:
        """Forget every Heartbeat in flight: the connection they went on is gone
        (``markCoordinatorUnknown`` disconnects; their answers are never delivered)."""
        self._in_flight.clear()

    def on_response(self, response: HeartbeatResponse, now_ms: int) -> None:
        """``HeartbeatResponseHandler`` of the request ``response.correlation_id`` names."""
        sent_generation = self._in_flight.pop(response.correlation_id, None)
        if sent_generation is None:
            return  # not a request in flight on this connection: NetworkClient drops it
        owner = self._owner
        error = response.error
        # a fencing answer is logged always: the log must show the member was told (KIP-345,
        # ``zombie_owns_work``), whatever its handler does next
        if owner.log_heartbeats or error == _FENCED:
            self._log(
                "heartbeat_response",
                member_id=owner.member_id,
                generation=owner.generation,
                error=error.name,
            )
        if error == _NONE:
            if owner.state in _IN_GENERATION:
                self._set("session", now_ms + owner.timeouts.session_timeout_ms)
            return
        if error == ErrorCode.REBALANCE_IN_PROGRESS:
            # Only a stable member rejoins (HeartbeatResponseHandler); whatever the state, the
            # heartbeat thread's listener counts the answer as a heartbeat received
            # (``heartbeat.receiveHeartbeat()`` on a RebalanceInProgressException), so the
            # session timer restarts — also for a stable member whose rejoin waits for its
            # polling thread (a stall, a busy herder); a JoinGroup sent now cancels it.
            if owner.state is _STABLE:
                owner.request_rejoin("group is rebalancing", now_ms)
                if owner.state is not _STABLE:
                    return  # its JoinGroup went out: the session timer is cancelled
            self._set("session", now_ms + owner.timeouts.session_timeout_ms)
            return
        if error in COORDINATOR_ERRORS:
            owner.mark_coordinator_unknown(f"Heartbeat: {error.name}", now_ms)
            return
        if error in _GENERATION_ERRORS:
            # Stale errors (for a generation we already left) are ignored.
            if sent_generation != owner.generation:
                return
            if error == _FENCED:
                # HeartbeatResponseHandler resets the state, generation and member id, then
                # the heartbeat thread keeps FencedInstanceIdException (``failed``) and stops;
                # the next poll() throws it (KIP-345).
                owner.reset_state_and_generation(reset_member_id=True)
                owner.rejoin_needed = True
                owner.on_fenced(now_ms)
                return
            if owner.state in _IN_GENERATION:
                owner.reset_state_and_generation(
                    reset_member_id=error == ErrorCode.UNKNOWN_MEMBER_ID
                )
                owner.on_partitions_lost(f"heartbeat failed: {error.name}", now_ms)
                owner.request_rejoin(f"heartbeat failed: {error.name}", now_ms)

    # ------------------------------------------------------------------ steady heartbeats
    #
    # The engine's heartbeat replay carries out a steady member's heartbeat rounds through
    # these (by way of GroupClient.heartbeat_round / heartbeat_answered), without effects.

    def round(self, now_ms: int) -> int:
        """A steady member's heartbeat round at ``now_ms`` with no Heartbeat in flight: record
        the Heartbeat sent now and return its correlation id (``now_ms``); -1, changing
        nothing, while a Heartbeat is still in flight."""
        heartbeats = self._in_flight
        if heartbeats:
            return -1
        heartbeats[now_ms] = self._owner.generation  # _record, with none in flight
        return now_ms

    def answered(self, correlation_id: int) -> bool:
        """A NONE answer to ``correlation_id`` arrived: True (and it is no longer in flight)
        if it was in flight, else False."""
        return self._in_flight.pop(correlation_id, None) is not None

    def awaits(self, correlation_id: int) -> bool:
        """True while the Heartbeat ``correlation_id`` is in flight."""
        return correlation_id in self._in_flight

    def in_flight(self) -> tuple[tuple[int, int], ...]:
        """The Heartbeats in flight, oldest first: (sent at virtual ms, generation sent
        with)."""
        return tuple(self._in_flight.items())

    def shift(self, dt_ms: int) -> None:
        """Move the Heartbeats in flight ``dt_ms`` virtual ms later."""
        self._in_flight = {sent + dt_ms: g for sent, g in self._in_flight.items()}
