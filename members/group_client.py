"""Kafka's group client, ``AbstractCoordinator``, once: the half every group member shares.

A Kafka Connect worker (``WorkerCoordinator``), a Kafka Streams client and a plain consumer
(``ConsumerCoordinator``) are all members of a classic group. What they share is
:class:`GroupClient`: the member state and generation, FindCoordinator, LeaveGroup, losing and
rediscovering the coordinator, the poll timeout, and two parts it owns and drives:

* the JoinGroup / SyncGroup round — :class:`members.join_group.JoinGroupHandler`;
* the heartbeat thread — :class:`members.heartbeat.HeartbeatThread`;

(the member states, their transition table and the timeouts: :mod:`members.member_state`).
What differs is behind hooks named as Kafka's (:class:`members.member_hooks.MemberHooks`).

Sans-IO: every entry point takes the virtual time ``now_ms`` and returns the effects to carry
out (:mod:`protocol.effects`), in order. Timer keys owned here and by its parts:
``heartbeat``, ``session``, ``request-timeout``, ``retry``, ``find-coordinator``, ``poll``.
"""

from __future__ import annotations

from collections.abc import Callable

from members.coordinator_lookup import CoordinatorLookup
from members.heartbeat import HeartbeatThread
from members.join_group import JoinGroupHandler
from members.member_hooks import MemberHooks
from members.member_state import (
    IN_GENERATION,
    VALID_PREVIOUS_STATES,
    ClientEffects,
    GroupTimeouts,
    IllegalMemberTransition,
    MemberState,
    PollStall,
)
from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from protocol.group import (
    UNKNOWN_GENERATION_ID,
    UNKNOWN_MEMBER_ID,
    ErrorCode,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupResponse,
)

__all__ = [
    "COORDINATOR_ADDRESS",
    "GroupClient",
    # re-exported: the engine (scenarios/sim) imports these from here
    "MemberState",
    "PollStall",
]

#: Network address of the group coordinator.
COORDINATOR_ADDRESS = "coordinator"

_UNJOINED = MemberState.UNJOINED
_PREPARING = MemberState.PREPARING_REBALANCE
_COMPLETING = MemberState.COMPLETING_REBALANCE
_STABLE = MemberState.STABLE
_STOPPED = MemberState.STOPPED
_IN_GENERATION = IN_GENERATION
#: the coordinator's answers to the group client's own requests (:meth:`GroupClient.handle`)
_GROUP_RESPONSES = frozenset(
    {HeartbeatResponse, JoinGroupResponse, SyncGroupResponse, FindCoordinatorResponse}
)


class GroupClient(MemberHooks):
    """One classic-group member's ``AbstractCoordinator`` (see the module docstring).

    Args:
        name: the member's name: its ``client.id`` and, in the log, ``member``.
        group_id: the group (Connect ``group.id``, Streams ``application.id``).
        protocol_type: ``connect`` or ``consumer``.
        timeouts: session, heartbeat, rebalance and request timeouts (virtual ms).
        address: where responses reach this incarnation (defaults to ``name``).
        log_heartbeats: also log heartbeat requests and responses.

    Entry points, each returning effects: :meth:`start`, :meth:`handle` (a delivered message),
    :meth:`fire` (a due timer), :meth:`crash`. Subclasses add their own shutdown.
    """

    def __init__(
        self,
        name: str,
        group_id: str,
        protocol_type: str,
        timeouts: GroupTimeouts,
        *,
        address: str | None = None,
        log_heartbeats: bool = False,
    ) -> None:
        self.name = name
        self.address = address or name
        #: Where the coordinator's answers reach this member: its connection to the
        #: coordinator. ``markCoordinatorUnknown`` disconnects (``client.disconnectAsync``),
        #: so every request still in flight on the old connection goes unanswered; the next
        #: request opens connection ``address/1``, then ``address/2``, ...
        self.connection_address = self.address
        self.group_id = group_id
        self.protocol_type = protocol_type
        self.timeouts = timeouts
        self.log_heartbeats = log_heartbeats

        self.state = _UNJOINED
        #: a JoinGroup or SyncGroup was cut off by ``markCoordinatorUnknown`` and the member
        #: has not joined again since: Kafka's ``state`` is still PREPARING_REBALANCE or
        #: COMPLETING_REBALANCE then (only an error answer resets it), which
        #: ``maybeLeaveGroup`` reads (:meth:`joined_for_leave`)
        self._join_cut = False
        #: the join cut off was a SyncGroup (Kafka's ``state`` is still COMPLETING_REBALANCE,
        #: so its heartbeat thread still runs: :meth:`_heartbeat_thread_runs`)
        self._cut_completing = False
        #: the ``poll`` timer expired unnoticed (:meth:`_poll_timer_due`): noticed once the
        #: heartbeat thread can, forgotten at the next ``poll()`` (:meth:`stop_poll_timer`)
        self._poll_expired = False
        #: (connection, group response) nobody handled during a stall mid-join
        #: (:meth:`_held_by_stall`); handled, in order, by :meth:`poll_resumed`
        self._held: list[tuple[str, object]] = []
        # the virtual ms of the last poll() before the polling thread blocked: where
        # Heartbeat.pollTimer was last reset (:meth:`start_poll_timer`)
        self._last_poll_ms = 0
        #: KIP-345 ``group.instance.id`` (``GroupRebalanceConfig.groupInstanceId``): ``None``
        #: for a dynamic member. Connect never sets one; a Streams client may.
        self.group_instance_id: str | None = None
        self.member_id = UNKNOWN_MEMBER_ID
        self.generation = UNKNOWN_GENERATION_ID
        self.leader_id: str | None = None
        self.rejoin_needed = True
        self.rejoin_reason = "start-up"
        # AbstractCoordinator.coordinatorUnknown(): found at start-up (the runtime's bootstrap).
        self.coordinator_known = True
        self._leaving = False
        self._fx: list[Effect] = []
        # the effect sinks its parts share: each appends to the effects :meth:`_take` returns
        effects = ClientEffects(
            send=self._send, set_timer=self._set, cancel=self._cancel, log=self._log
        )
        #: the heartbeat thread (``AbstractCoordinator.HeartbeatThread``) and its Heartbeats
        #: in flight on the current connection
        self._heartbeat = HeartbeatThread(self, effects)
        #: the JoinGroup / SyncGroup round (``JoinGroupResponseHandler``,
        #: ``SyncGroupResponseHandler``)
        self._join = JoinGroupHandler(self, effects, arm_heartbeat=self._heartbeat.arm)
        #: losing and finding the coordinator (``markCoordinatorUnknown``,
        #: ``lookupCoordinator``)
        self._lookup = CoordinatorLookup(self, effects, clear_heartbeats=self._heartbeat.clear)

    # ------------------------------------------------------------------ hooks

    def on_fenced(self, now_ms: int) -> None:
        """FENCED_INSTANCE_ID answered this member's JoinGroup, SyncGroup or Heartbeat:
        another process took over its ``group.instance.id`` (KIP-345,
        ``ClassicGroup#replaceStaticMember``) and ``poll()`` throws
        ``FencedInstanceIdException``, which is fatal (``AbstractCoordinator``'s response
        handlers). Default: the polling thread dies (``member_fatal``); a kind whose process
        does more first (the consumer's application closes it) overrides and then calls this."""
        self._log("member_fatal", error=ErrorCode.FENCED_INSTANCE_ID.name)
        self.fail(now_ms)

    # ------------------------------------------------------------------ entry points

    def start(self, now_ms: int) -> list[Effect]:
        """The process starts: begin joining the group."""
        self.maybe_rejoin(now_ms)
        return self._take()

    def handle(self, message: object, now_ms: int) -> list[Effect]:
        """Process a message delivered to this member."""
        if self.state is _STOPPED:
            return []
        if self._held_by_stall(message):
            self._held.append((self.connection_address, message))
            if type(message) is JoinGroupResponse:
                # received: NetworkClient completes a request before it tests its timeout
                self._cancel("request-timeout")
            return self._take()
        self._dispatch(message, now_ms)
        return self._take()

    def _held_by_stall(self, message: object) -> bool:
        """True if nobody handles the group response ``message`` now: the polling thread is
        stalled (:meth:`poll_blocked`) with a JoinGroup in flight, and ``HeartbeatThread.run``,
        the only other thread that polls the network client, is disabled while
        ``MemberState#hasNotJoinedGroup``: the answers wait for the next ``poll()``."""
        return (
            self.state is _PREPARING and type(message) in _GROUP_RESPONSES and self.poll_blocked()
        )

    def _dispatch(self, message: object, now_ms: int) -> None:
        kind = type(message)
        if kind is HeartbeatResponse:
            self._on_heartbeat_response(message, now_ms)  # type: ignore[arg-type]
        elif kind is JoinGroupResponse:
            self._join.on_join_response(message, now_ms)  # type: ignore[arg-type]
        elif kind is SyncGroupResponse:
            self._join.on_sync_response(message, now_ms)  # type: ignore[arg-type]
        elif kind is FindCoordinatorResponse:
            self._lookup.on_response(message, now_ms)  # type: ignore[arg-type]
        elif kind is not LeaveGroupResponse:
            self.on_message(message, now_ms)

    def fire(self, key: str, now_ms: int) -> list[Effect]:
        """A timer this member armed is due."""
        if self.state is _STOPPED:
            return []
        if key == "heartbeat":
            self._send_heartbeat(now_ms)
        elif key.startswith(self.SILENT_TIMER_PREFIXES):
            self.on_silent_timer(key, now_ms)
        else:
            self._log("timer_fired", key=key)
            if key == "retry":
                self.maybe_rejoin(now_ms)
            elif key == "session":
                # Heartbeat.sessionTimerExpired: "session timed out without receiving a
                # heartbeat response" marks the coordinator unknown.
                if self.state in _IN_GENERATION:
                    self.mark_coordinator_unknown("session timed out", now_ms)
            elif key == "request-timeout":
                self._on_request_timeout(now_ms)
            elif key == "find-coordinator":
                if not self.coordinator_known:
                    self._lookup.find(now_ms)
            elif key == "poll":
                self._poll_timer_due(now_ms)
            else:
                self.on_timer(key, now_ms)
        return self._take()

    def crash(self, now_ms: int) -> list[Effect]:
        """The process dies: no LeaveGroup; everything it ran stops at once."""
        if self.state is _STOPPED:
            return []
        self.on_crash(now_ms)
        self._log("member_crash")
        self._stop_everything()
        return self._take()

    # ------------------------------------------------------------------ joining

    def maybe_rejoin(self, now_ms: int) -> None:
        """Send JoinGroup if a rejoin is needed and the member is free to poll
        (``AbstractCoordinator.ensureActiveGroup``)."""
        if (
            not self.rejoin_needed
            or self._leaving
            or self.state not in (_UNJOINED, _STABLE)
            or not self.coordinator_known
            or self.poll_blocked()
        ):
            return
        if self.on_join_prepare(now_ms):
            self.send_join(now_ms)

    def request_rejoin(self, reason: str, now_ms: int) -> None:
        """``AbstractCoordinator.requestRejoin``: join again as soon as the member polls."""
        if not self.rejoin_needed:
            self.rejoin_needed = True
            self.rejoin_reason = reason
        self.maybe_rejoin(now_ms)

    def send_join(self, now_ms: int) -> None:
        """``sendJoinGroupRequest``: the JoinGroup with :meth:`metadata`, under the rebalance
        timeout plus ``JOIN_GROUP_TIMEOUT_LAPSE``
        (:meth:`members.join_group.JoinGroupHandler.send_join`); nothing once the member is
        leaving."""
        if self._leaving:
            return  # shutting down: the revocation that preceded this was the last act
        self._join.send_join(now_ms)

    def complete_join(self) -> None:
        """The member is STABLE in its generation; no rejoin is pending."""
        self.transition(_STABLE)
        self.rejoin_needed = False

    def reset_state_and_generation(self, *, reset_member_id: bool) -> None:
        """``AbstractCoordinator.resetStateAndGeneration``: back to UNJOINED with no generation
        (and no member id if ``reset_member_id``); heartbeat and session timers cancelled.

        Raises:
            IllegalMemberTransition: the member is STOPPED.
        """
        self.transition(_UNJOINED)
        self.reset_generation(reset_member_id=reset_member_id)

    def reset_generation(self, *, reset_member_id: bool) -> None:
        """``resetGenerationOnResponseError``: forget the generation (and the member id if
        ``reset_member_id``); heartbeat and session timers cancelled."""
        self.generation = UNKNOWN_GENERATION_ID
        if reset_member_id:
            self.member_id = UNKNOWN_MEMBER_ID
        self._cancel("heartbeat")
        self._cancel("session")

    # ------------------------------------------------------------------ heartbeats
    #
    # The heartbeat thread is a :class:`members.heartbeat.HeartbeatThread`; these are its entry
    # points from :meth:`handle` / :meth:`fire` and the engine's heartbeat replay
    # (scenarios/sim/fastpath): a Stable member that knows its coordinator and logs no
    # heartbeats sends a Heartbeat every heartbeat.interval.ms; each NONE answer pushes its
    # session timer to session.timeout.ms after it arrives. Anything else (a Heartbeat still
    # unanswered, another answer) goes through fire/handle.

    def _arm_heartbeat(self, now_ms: int) -> None:
        self._heartbeat.arm(now_ms)

    def _send_heartbeat(self, now_ms: int) -> None:
        """The heartbeat timer fired: :meth:`members.heartbeat.HeartbeatThread.tick`."""
        self._heartbeat.tick(now_ms)

    def _on_heartbeat_response(self, response: HeartbeatResponse, now_ms: int) -> None:
        """``HeartbeatResponseHandler``: :meth:`members.heartbeat.HeartbeatThread.on_response`."""
        self._heartbeat.on_response(response, now_ms)

    def heartbeats_steady(self, generation_id: int) -> bool:
        """True while this member is Stable in ``generation_id``, knows its coordinator and
        logs no heartbeats: its heartbeat rounds then change nothing but its heartbeat and
        session timers and its Heartbeats in flight (:meth:`heartbeat_round`,
        :meth:`heartbeat_answered`)."""
        return (
            self.state is _STABLE
            and self.coordinator_known
            and self.generation == generation_id
            and not self.log_heartbeats
        )

    def heartbeat_round(self, now_ms: int) -> int:
        """A steady member's heartbeat timer fired at ``now_ms`` with no Heartbeat in flight:
        the Heartbeat sent now is recorded as in flight (its request is
        ``heartbeat_request(correlation id)``) and the heartbeat timer re-arms at ``now_ms +
        heartbeat.interval.ms``, exactly as :meth:`fire` does; returns its correlation id.
        Returns -1 and changes nothing when a Heartbeat is still in flight (then :meth:`fire`
        decides: it may have timed out)."""
        return self._heartbeat.round(now_ms)

    def heartbeat_answered(self, correlation_id: int) -> bool:
        """A NONE HeartbeatResponse to ``correlation_id`` reached a steady member: True if that
        Heartbeat was in flight (it no longer is, and the session timer re-arms at the
        arrival + ``session.timeout.ms``, as :meth:`handle` does); False if not (nothing
        changes: ``NetworkClient`` drops the answer)."""
        return self._heartbeat.answered(correlation_id)

    def steady_heartbeat_hooks(self) -> tuple[Callable[[int], int], Callable[[int], bool]]:
        """:meth:`heartbeat_round` and :meth:`heartbeat_answered` as the heartbeat thread's own
        bound methods, one call each instead of two (the heartbeat replay calls them thousands
        of times a run: ``scenarios.sim.fastpath.heartbeats``); the same effects and results.
        Valid for this member's life (its heartbeat thread is made once)."""
        heartbeat = self._heartbeat
        return heartbeat.round, heartbeat.answered

    def awaits_heartbeat(self, correlation_id: int) -> bool:
        """True while the Heartbeat ``correlation_id`` is in flight on this connection."""
        return self._heartbeat.awaits(correlation_id)

    def heartbeats_in_flight(self) -> tuple[tuple[int, int], ...]:
        """The Heartbeats in flight, oldest first: (sent at virtual ms, generation sent
        with)."""
        return self._heartbeat.in_flight()

    def shift_heartbeats(self, dt_ms: int) -> None:
        """Move the Heartbeats in flight ``dt_ms`` virtual ms later (the engine skipped whole
        heartbeat periods of a quiet group, every time in it shifted alike)."""
        self._heartbeat.shift(dt_ms)

    def heartbeat_request(self, correlation_id: int) -> HeartbeatRequest:
        """The HeartbeatRequest this member sends now (``AbstractCoordinator.sendHeartbeatRequest``:
        its group, member id, generation and instance id), ``correlation_id`` standing for the
        request header's."""
        return HeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            generation_id=self.generation,
            group_instance_id=self.group_instance_id,
            correlation_id=correlation_id,
        )

    # ------------------------------------------------------------------ the coordinator

    def mark_coordinator_unknown(self, reason: str, now_ms: int) -> None:
        """``AbstractCoordinator.markCoordinatorUnknown``: stop heartbeating, drop the
        connection (its requests in flight go unanswered) and look the coordinator up again;
        nothing if it is unknown already
        (:meth:`members.coordinator_lookup.CoordinatorLookup.mark_unknown`)."""
        self._lookup.mark_unknown(reason, now_ms)

    def cut_join(self, reason: str) -> None:
        """The JoinGroup or SyncGroup in flight is cut off (its connection dropped, or it timed
        out): UNJOINED, a rejoin needed for ``reason``, and :meth:`joined_for_leave` still
        counts the member as joining until it joins again.

        Raises:
            IllegalMemberTransition: the member is STOPPED.
        """
        completing = self.state is _COMPLETING
        self.transition(_UNJOINED)
        self._join_cut = True
        self._cut_completing = completing
        self.rejoin_needed = True
        self.rejoin_reason = reason

    def resume_heartbeats(self, now_ms: int) -> None:
        """The coordinator was found again: in a generation, the heartbeat thread resumes (the
        session timer re-armed, a Heartbeat now); its answer says whether we are still a
        member. A poll timeout that expired while the coordinator was unknown is noticed now
        instead (:meth:`_on_poll_timeout`): ``FindCoordinatorResponseHandler`` resets the
        session timer (``Heartbeat#resetSessionTimeout``), so the heartbeat thread's next
        ``HeartbeatThread.run`` round passes the coordinator-unknown and session-expired tests
        and reaches ``pollTimeoutExpired`` before it sends a Heartbeat."""
        if self._poll_expired and self._heartbeat_thread_runs():
            self._on_poll_timeout(now_ms)
            return
        if self.state in _IN_GENERATION:
            self._set("session", now_ms + self.timeouts.session_timeout_ms)
            self._send_heartbeat(now_ms)

    def _on_request_timeout(self, now_ms: int) -> None:
        """A JoinGroup/SyncGroup went unanswered: Kafka treats it as a lost connection. A
        JoinGroup's is logged (``join_timeout``: its send time and the two timeouts Kafka's
        bound is made of, ``members.join_group.join_group_timeout_ms``; KIP-266)."""
        if self.state not in (_PREPARING, _COMPLETING):
            return
        if self.state is _PREPARING:
            self._log(
                "join_timeout",
                sent_ms=self._join.join_sent_ms,
                rebalance_timeout_ms=self.timeouts.rebalance_timeout_ms,
                request_timeout_ms=self.timeouts.request_timeout_ms,
            )
        self.cut_join("request timed out")
        self.mark_coordinator_unknown("request timed out", now_ms)

    def start_poll_timer(self, now_ms: int) -> None:
        """The polling thread blocks after a ``poll()`` at ``now_ms`` (virtual ms): arm the
        ``poll`` timer to expire the rebalance timeout (``max.poll.interval.ms``; Connect's
        ``rebalance.timeout.ms``) later — ``Heartbeat#poll`` resets ``pollTimer`` at each
        ``poll()`` (KIP-62), and :meth:`_on_poll_timeout` runs if none follows in time and
        the heartbeat thread notices (:meth:`_poll_timer_due`)."""
        self._last_poll_ms = now_ms
        self._poll_expired = False
        self._set("poll", now_ms + self.timeouts.rebalance_timeout_ms)

    def stop_poll_timer(self) -> None:
        """The polling thread polls again (``Heartbeat#poll`` resets ``pollTimer``): the
        ``poll`` timer is disarmed and an expiry the heartbeat thread has not noticed yet is
        forgotten (KIP-62)."""
        self._poll_expired = False
        self._cancel("poll")

    def poll_resumed(self, now_ms: int) -> None:
        """The polling thread is free again (a stall or blocking job ended; after
        :meth:`stop_poll_timer`): the next ``poll()`` handles the responses held during a stall
        mid-join (:meth:`_held_by_stall`), in arrival order — a JoinGroup answer's SyncGroup may
        then hear UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION from a coordinator that evicted it —
        then rejoins if needed (``ensureActiveGroup``). Answers that came on a connection
        dropped since are never delivered. Nothing while :meth:`poll_blocked`."""
        if self.poll_blocked():
            return
        held, self._held = self._held, []
        for connection, message in held:
            if self.state is _STOPPED:
                return
            if connection != self.connection_address:
                continue  # its connection was dropped (markCoordinatorUnknown)
            if self._held_by_stall(message):  # handling an earlier one blocked it again
                self._held.append((connection, message))
            else:
                self._dispatch(message, now_ms)
        self.maybe_rejoin(now_ms)

    def _heartbeat_thread_runs(self) -> bool:
        """True while Kafka's heartbeat thread is enabled: the member has joined
        (COMPLETING_REBALANCE, STABLE). ``HeartbeatThread.run`` disables itself while
        ``MemberState#hasNotJoinedGroup`` (UNJOINED, PREPARING_REBALANCE); a SyncGroup cut
        off by ``markCoordinatorUnknown`` leaves Kafka's state at COMPLETING_REBALANCE
        (groupsim's member is UNJOINED then: :meth:`cut_join`)."""
        return self.state in _IN_GENERATION or (self._join_cut and self._cut_completing)

    def _poll_timer_due(self, now_ms: int) -> None:
        """The ``poll`` timer reached ``Heartbeat.pollTimer``'s deadline. Only a running
        heartbeat thread notices it, and only after its coordinator-unknown and
        session-expired tests (``HeartbeatThread.run``): with the member not joined
        (``MemberState#hasNotJoinedGroup``) or its coordinator unknown the expiry waits
        (noticed by :meth:`resume_heartbeats` when the coordinator is found, or forgotten by
        the next ``poll()``: :meth:`stop_poll_timer`)."""
        if self.coordinator_known and self._heartbeat_thread_runs():
            self._on_poll_timeout(now_ms)
        else:
            self._poll_expired = True

    def _on_poll_timeout(self, now_ms: int) -> None:
        """The heartbeat thread noticed that ``Heartbeat.pollTimer`` expired (the polling
        thread was blocked for longer than the rebalance timeout): it leaves the group
        (``handlePollTimeoutExpiry`` → ``maybeLeaveGroup``; KAFKA-16056's path).

        Logs ``poll_timeout`` first: the last poll, the interval and whether the member was
        in the group (``maybeLeaveGroup``'s test) and static, so that ``poll_timeout_not_left``
        can judge the leave from the log (KIP-62). Kafka's ``HeartbeatThread.run`` tests
        ``pollTimeoutExpired`` each time it wakes (at most ``retry.backoff.ms`` apart); the
        ``poll`` timer fires at the deadline itself, or the expiry is noticed when the
        coordinator is found again (:meth:`_poll_timer_due`)."""
        self._poll_expired = False
        in_group = bool(self.member_id) and self.joined_for_leave()
        self._log(
            "poll_timeout",
            last_poll_ms=self._last_poll_ms,
            max_poll_interval_ms=self.timeouts.rebalance_timeout_ms,
            in_group=in_group,
            static=self.group_instance_id is not None,
        )
        # maybeLeaveGroup: only a dynamic member sends LeaveGroup (KIP-345: a static one is
        # removed by session expiry alone); both forget the generation and member id.
        if in_group and self.group_instance_id is None:
            self.leave_group("poll timeout expired", "consumer poll timeout has expired")
        self.transition(_UNJOINED)
        self.reset_generation(reset_member_id=True)
        self.on_partitions_lost("poll timeout expired", now_ms)
        self.rejoin_needed = True
        self.rejoin_reason = "poll timeout expired"

    # ------------------------------------------------------------------ leaving

    def leave_group(self, reason: str, request_reason: str) -> None:
        """``maybeLeaveGroup``: log and send a LeaveGroup for this member."""
        self._log("leave_group", member_id=self.member_id, reason=reason)
        if self.group_instance_id is not None:
            # a static member leaves by its full identity (KIP-345 / KIP-812 close)
            identity = MemberIdentity(self.member_id, self.group_instance_id, request_reason)
            request = LeaveGroupRequest(group_id=self.group_id, members=(identity,))
        else:
            request = LeaveGroupRequest(
                group_id=self.group_id, member_ids=(self.member_id,), reason=request_reason
            )
        self._send(request)

    def fail(self, now_ms: int) -> None:
        """The polling thread died: work stops abruptly and the member goes silent."""
        self.on_fatal(now_ms)
        self._stop_everything()

    def _stop_everything(self) -> None:
        self.transition(_STOPPED)
        self._held.clear()
        for key in (
            "heartbeat",
            "session",
            "poll",
            "retry",
            "request-timeout",
            "find-coordinator",
            *self.extra_timer_keys(),
        ):
            self._cancel(key)

    def joined_for_leave(self) -> bool:
        """``maybeLeaveGroup``'s ``state != UNJOINED``: the member is joining or joined, which
        includes a join cut off by a coordinator disconnect it has not retried yet (Kafka's
        ``markCoordinatorUnknown`` leaves ``state`` as it was; groupsim's member is UNJOINED
        then, so that it joins again once the coordinator is found)."""
        return self.state is not _UNJOINED or self._join_cut

    def transition(self, target: MemberState) -> None:
        """The one place the member state changes (``AbstractCoordinator``'s ``state = ...``).

        Raises:
            IllegalMemberTransition: :data:`members.member_state.VALID_PREVIOUS_STATES` forbids
                the move (a groupsim bug, never input); the state is unchanged.
        """
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalMemberTransition(
                f"{self.name}: member state {self.state.name} cannot move to {target.name}"
            )
        self.state = target
        self._join_cut = False
        self._cut_completing = False

    # ------------------------------------------------------------------ effects

    def _take(self) -> list[Effect]:
        effects, self._fx = self._fx, []
        return effects

    def _send(self, message: object) -> None:
        self._fx.append(Send(COORDINATOR_ADDRESS, message, self.connection_address))

    def _set(self, key: str, at_ms: int) -> None:
        self._fx.append(SetTimer(key, at_ms))

    def _cancel(self, key: str) -> None:
        self._fx.append(CancelTimer(key))

    def _log(self, kind: str, **fields: object) -> None:
        fields["member"] = self.name
        self._fx.append(Log(kind, fields))
