"""Planted bugs of an outside audit (issue 23): each breaks one published rule of the classic
coordinator, of a KIP's client timer or of an assignor, keeps ownership safe and the group
live, and was written before looking for the checker that would catch it.

:data:`KIP_RULE_BUGS` joins the chaos catalogue (``CATALOGUE``); docs/chaos.md "Planted bugs"
gives, for each, whether the checkers that existed before the audit found it within 300 runs
and which checker (``scenarios/check/kip_contracts.py`` for the ones that were missed) finds
it now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from coordinator import join as coordinator_join
from coordinator import rebalance as coordinator_rebalance
from coordinator import session as coordinator_session
from coordinator import vote as coordinator_vote
from coordinator.group import GroupCoordinator
from coordinator.state import GroupState
from members import consumer as consumer_member
from members.assignors.consumer import range as range_assignor
from members.assignors.incremental_cooperative import IncrementalCooperativeAssignor
from members.assignors.streams import high_availability
from members.group_client import GroupClient
from members.join_group import JoinGroupHandler
from members.member_state import MemberState
from members.streams_client import StreamsClient
from members.worker import ConnectWorker
from protocol.effects import Log, Send, SetTimer
from protocol.group import ErrorCode, LeaveGroupRequest

from . import PlantedBug

__all__ = ["KIP_RULE_BUGS", "UNJUDGED_BUGS"]

_COMPLETING = GroupState.COMPLETING_REBALANCE
_STABLE = GroupState.STABLE


# ---------------------------------------------------------------- coordinator


def _initial_delay_in_seconds(original: Callable[..., Any]) -> Callable[..., Any]:
    # prepareRebalance reading group.initial.rebalance.delay.ms as seconds and converting it
    # again (3000 ms → 3 ms): a group formed from Empty completes its first join phase before
    # the other members had time to join (KIP-134's delay), so it rebalances once more at once
    def _prepare_rebalance(self: Any, now_ms: int, effects: list[Any]) -> None:
        initial = self.state is GroupState.EMPTY
        before = len(effects)
        original(self, now_ms, effects)
        if not initial or self.join_timer is None or self.join_timer[0] != "initial":
            return
        _, delay, remaining = self.join_timer
        short = delay // 1000
        self.join_timer = ("initial", short, remaining + delay - short)
        for i in range(before, len(effects)):
            e = effects[i]
            if isinstance(e, SetTimer) and e.key == "join":
                effects[i] = SetTimer(e.key, now_ms + short)

    return _prepare_rebalance


def _keeps_absent_leader(original: Callable[..., Any]) -> Callable[..., Any]:
    # completeClassicGroupJoin without maybeElectNewJoinedLeader's check: a leader that has not
    # rejoined (a KIP-345 static member the join phase keeps) stays leader, so the generation's
    # assignment waits for a member that was never told it leads
    def _maybe_elect_new_joined_leader(self: Any) -> bool:
        if self.leader_id is not None:
            return True
        return bool(original(self))

    return _maybe_elect_new_joined_leader


def _member_ids_from_counter(original: Callable[..., Any]) -> Callable[..., Any]:
    # ClassicGroup#generateMemberId with a per-coordinator counter instead of a UUID: a
    # coordinator that takes the group over (failover) starts counting again and hands out
    # member ids the group already used
    def __init__(self: Any, group_id: str, config: Any, new_member_id: Any) -> None:
        counter = [0]

        def counted(prefix: str) -> str:
            counter[0] += 1
            return f"{prefix}-{counter[0]}"

        original(self, group_id, config, counted)

    return __init__


def _compares_protocol_names_only(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupJoinExistingMember comparing a rejoining member's protocol *names*, not its
    # metadata: a follower rejoining a Stable (or CompletingRebalance) group with new metadata
    # (Connect: a newer config offset or another owned assignment) is answered the current
    # generation and no rebalance starts (ClassicGroupMember#matches compares both)
    def _join_existing_member(
        self: Any, source: str, req: Any, now_ms: int, effects: list[Any]
    ) -> None:
        m = self.members.get(req.member_id)
        if (
            m is not None
            and self.state in (_STABLE, _COMPLETING)
            and req.member_id != self.leader_id
            and self.validate_member(req.member_id, req.group_instance_id) is None
            and tuple(n for n, _ in m.protocols) == tuple(n for n, _ in req.protocols)
        ):
            m.protocols = req.protocols
        original(self, source, req, now_ms, effects)

    return _join_existing_member


def _completing_rejoin_rebalances(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupJoinExistingMember treating CompletingRebalance like PreparingRebalance: a
    # member whose JoinGroup answer was lost and that rejoins with the same metadata starts a
    # new join phase instead of being answered the current generation
    def _join_existing_member(
        self: Any, source: str, req: Any, now_ms: int, effects: list[Any]
    ) -> None:
        m = self.members.get(req.member_id)
        if (
            m is not None
            and self.state is _COMPLETING
            and self.validate_member(req.member_id, req.group_instance_id) is None
            and m.protocols == req.protocols
        ):
            m.protocols = ()
        original(self, source, req, now_ms, effects)

    return _join_existing_member


def _heartbeat_completing_in_progress(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupHeartbeat answering REBALANCE_IN_PROGRESS in CompletingRebalance too (Kafka
    # answers NONE there: members heartbeat while they wait for their SyncGroup answer). Kafka's
    # client ignores the error outside Stable, so no member behaves differently: found by
    # heartbeat_completing_refused on the wire tap's completing_heartbeat record
    def _heartbeat(self: Any, source: str, req: Any, now_ms: int) -> Any:
        completing = self.state is _COMPLETING
        effects = original(self, source, req, now_ms)
        if not completing:
            return effects
        return [
            msgspec.structs.replace(
                e, message=msgspec.structs.replace(e.message, error=ErrorCode.REBALANCE_IN_PROGRESS)
            )
            if isinstance(e, Send) and e.message.error == ErrorCode.NONE
            else e
            for e in effects
        ]

    return _heartbeat


# ---------------------------------------------------------------- Streams (KIP-441)


def _ignores_acceptable_lag(original: Callable[..., Any]) -> Callable[..., Any]:
    # HighAvailabilityTaskAssignor computing the caught-up clients with a lag of 0 instead of
    # acceptable.recovery.lag: a client within the acceptable lag counts as behind, so an active
    # headed for it moves to a fully caught-up client and it gets a warm-up it does not need
    def caught_up(table: Any, acceptable_recovery_lag: int) -> Any:
        return original(table, 0)

    return caught_up


def _probing_time_read_as_delay(original: Callable[..., Any]) -> Callable[..., Any]:
    # StreamsPartitionAssignor#onAssignment reading nextScheduledRebalanceMs (an absolute time)
    # as a delay: the leader's probing rebalance is armed at now + that time, far too late
    def _on_assignment(self: Any, partitions: Any, info: Any, now_ms: int) -> None:
        arm = self._set

        def _set(key: str, at_ms: int) -> None:
            arm(key, now_ms + at_ms if key == "probing-rebalance" else at_ms)

        self._set = _set
        try:
            original(self, partitions, info, now_ms)
        finally:
            del self._set

    return _on_assignment


# ---------------------------------------------------------------- Connect (KIP-415)


def _delay_restarted_each_round(original: Callable[..., Any]) -> Callable[..., Any]:
    # handleLostAssignments restarting the countdown in every round of the delay (delay = the
    # full scheduled.rebalance.max.delay.ms again instead of what remains of it)
    def handle_lost_assignments(self: Any, *args: Any, **kwargs: Any) -> Any:
        waiting = self.scheduled_rebalance_ms > 0
        out = original(self, *args, **kwargs)
        now_ms = kwargs.get("now_ms", args[-1] if args else 0)
        if waiting and self.scheduled_rebalance_ms > now_ms and out == ([], []):
            self.delay_ms = self.max_delay_ms
            self.scheduled_rebalance_ms = now_ms + self.delay_ms
        return out

    return handle_lost_assignments


# ---------------------------------------------------------------- consumer (RangeAssignor)


def _range_rotated_per_topic(original: Callable[..., Any]) -> Callable[..., Any]:
    # RangeAssignor sorting a topic's consumers afresh per topic with a rotation (as if by a
    # per-topic hash): each topic's ranges go to its consumers in another order, so partition p
    # of two co-partitioned topics lands on different consumers. Counts per topic unchanged.
    def assign_range(members: Sequence[Any], cluster: Any) -> Any:
        out = original(members, cluster)
        ids = list(out)
        if len(ids) < 2:
            return out
        rotated: dict[str, list[Any]] = {m: [] for m in ids}
        for k, topic in enumerate(sorted(cluster)):
            ranges = [[tp for tp in out[m] if tp.topic == topic] for m in ids]
            for i, m in enumerate(ids):
                rotated[m].extend(ranges[(i + k) % len(ids)])
        return rotated

    return assign_range


def _range_ignores_racks(original: Callable[..., Any]) -> Callable[..., Any]:
    # RangeAssignor without KIP-881 (as before Kafka 3.5): useRackAwareAssignment always false
    # for range, so no rack-matching pass runs and a partition goes to whichever member its
    # range falls on, also when a member on one of its replicas' racks had room for it. Counts
    # per member unchanged (the same quotas), sticky assignors untouched.
    def use_rack_aware_assignment(*args: Any) -> bool:
        return False

    return use_rack_aware_assignment


# ---------------------------------------------------------------- round 2: clients and timers


def _static_rejoin_ignores_protocol_change(original: Callable[..., Any]) -> Callable[..., Any]:
    # updateStaticMemberThenRebalanceOrCompleteJoin without the selected-protocol check: a
    # static member rejoining a Stable group with another protocol list is answered the current
    # generation even when the vote would now elect another protocol (KIP-345 rebalances then).
    # Reached by the consumer generator's rolling partition.assignment.strategy change
    def rejoin(
        self: Any, source: str, req: Any, old_id: str, new_id: str, now_ms: int, effects: Any
    ) -> None:
        if self.state is not _STABLE:
            original(self, source, req, old_id, new_id, now_ms, effects)
            return
        current = self.protocol_name
        select = coordinator_vote.select_protocol
        names = [name for name, _ in req.protocols]
        # the current protocol is kept whenever the rejoining member still supports it (for
        # the votes of this call only)
        coordinator_vote.select_protocol = lambda g: current if current in names else select(g)
        try:
            original(self, source, req, old_id, new_id, now_ms, effects)
        finally:
            coordinator_vote.select_protocol = select

    return rejoin


def _static_member_leaves_on_close(original: Callable[..., Any]) -> Callable[..., Any]:
    # KafkaConsumer.close sending LeaveGroup for a static member too (KIP-345: a static member
    # leaves no group on close; the coordinator waits for its session timeout, so that a
    # restart within it costs no rebalance)
    def shutdown(self: Any, now_ms: int) -> Any:
        if (
            self.group_instance_id is not None
            and self.member_id
            and self.state is not MemberState.UNJOINED
            and self.state is not MemberState.STOPPED
        ):
            self.leave_group("shutdown", "the consumer is being closed")
        return original(self, now_ms)

    return shutdown


def _poll_timeout_one_heartbeat_late(original: Callable[..., Any]) -> Callable[..., Any]:
    # Heartbeat#pollTimeoutExpired read only at the heartbeat thread's next Heartbeat after
    # the deadline (KIP-62: HeartbeatThread.run tests it each time it wakes, at most
    # retry.backoff.ms apart): a stalled consumer leaves one heartbeat.interval.ms late
    def _stall(self: Any, stall_ms: int, now_ms: int) -> None:
        original(self, stall_ms, now_ms)
        timeouts = self.timeouts
        late = now_ms + timeouts.rebalance_timeout_ms + timeouts.heartbeat_interval_ms
        self._set("poll", late)

    return _stall


def _poll_timeout_without_leave(original: Callable[..., Any]) -> Callable[..., Any]:
    # handlePollTimeoutExpiry resetting the generation without maybeLeaveGroup: a dynamic
    # member whose poll timer expired stays in the group until its session times out (KIP-62
    # has it leave at once, so that the group rebalances without it)
    def _on_poll_timeout(self: Any, now_ms: int) -> None:
        before = len(self._fx)
        original(self, now_ms)
        self._fx[before:] = [
            e
            for e in self._fx[before:]
            if not (isinstance(e, Send) and isinstance(e.message, LeaveGroupRequest))
            and not (isinstance(e, Log) and e.kind == "leave_group")
        ]

    return _on_poll_timeout


def _join_under_request_timeout(original: Callable[..., Any]) -> Callable[..., Any]:
    # sendJoinGroupRequest under the client's request.timeout.ms alone (KIP-266's lapse
    # forgotten): a JoinGroup the coordinator holds for its rebalance timeout times out first
    def send_join(self: Any, now_ms: int) -> None:
        original(self, now_ms)
        if self._owner.state is MemberState.PREPARING_REBALANCE:
            self._set("request-timeout", now_ms + self._owner.timeouts.request_timeout_ms)

    return send_join


def _no_rejoin_after_revocation(original: Callable[..., Any]) -> Callable[..., Any]:
    # ConsumerCoordinator#onJoinComplete without the cooperative follow-up: a member that
    # revoked partitions does not rejoin, so what it gave up waits for some other rebalance
    # (KIP-429's second round)
    def on_join_complete(self: Any, assignment: Any, protocol_name: str, now_ms: int) -> None:
        rejoin = self.request_rejoin

        def request_rejoin(reason: str, at_ms: int) -> None:
            if reason != "need to revoke partitions and re-join":
                rejoin(reason, at_ms)

        self.request_rejoin = request_rejoin
        try:
            original(self, assignment, protocol_name, now_ms)
        finally:
            del self.request_rejoin

    return on_join_complete


def _new_member_timeout_is_session(original: Callable[..., Any]) -> Callable[..., Any]:
    # addMemberThenRebalanceOrCompleteJoin arming a new member's heartbeat with its
    # session.timeout.ms instead of group.classic.new.member.join.timeout.ms (5 minutes): a new
    # member whose join phase waits longer than its session is expired while it waits
    def _add_member(
        self: Any, source: str, req: Any, mid: str, now_ms: int, effects: list[Any]
    ) -> None:
        original(self, source, req, mid, now_ms, effects)
        m = self.members.get(mid)
        if m is not None and m.is_new:
            m.hb_deadline = now_ms + req.session_timeout_ms
            effects.append(SetTimer(m.hb_key, m.hb_deadline))

    return _add_member


def _follower_ignores_scheduled_delay(original: Callable[..., Any]) -> Callable[..., Any]:
    # WorkerCoordinator#onJoinComplete arming the ScheduledDelay rejoin on the leader only: a
    # follower never rejoins when the delay expires (KIP-415: every member does); the leader's
    # own rejoin still starts the round
    def _on_join_complete(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.leader_id == self.member_id:
            return original(self, *args, **kwargs)
        arm = self._set

        def _set(key: str, at_ms: int) -> None:
            if key != "scheduled-rebalance":
                arm(key, at_ms)

        self._set = _set
        try:
            return original(self, *args, **kwargs)
        finally:
            del self._set

    return _on_join_complete


def _streams_ignores_followup(original: Callable[..., Any]) -> Callable[..., Any]:
    # StreamsPartitionAssignor#onAssignment ignoring nextScheduledRebalanceMs = 0 (the leader's
    # "rejoin at once": a withheld active's owner revoked it) — the task waits for the next
    # rebalance of any cause
    def _on_assignment(self: Any, partitions: Any, info: Any, now_ms: int) -> None:
        rejoin = self.request_rejoin

        def request_rejoin(reason: str, at_ms: int) -> None:
            if reason != "follow-up rebalance requested by the leader":
                rejoin(reason, at_ms)

        self.request_rejoin = request_rejoin
        try:
            original(self, partitions, info, now_ms)
        finally:
            del self.request_rejoin

    return _on_assignment


KIP_RULE_BUGS: tuple[PlantedBug, ...] = (
    PlantedBug(
        "coordinator-initial-delay-in-seconds",
        "coordinator/rebalance.py prepare_rebalance (InitialDelayedJoin)",
        "group.initial.rebalance.delay.ms divided by 1000: a group from Empty forms at once",
        "connect",
        ((coordinator_rebalance, "prepare_rebalance", _initial_delay_in_seconds),),
    ),
    PlantedBug(
        "coordinator-keeps-absent-leader",
        "coordinator/rebalance.py maybe_elect_new_joined_leader",
        "a leader that has not rejoined (a static member kept) stays leader of the generation",
        "consumer",
        ((coordinator_rebalance, "maybe_elect_new_joined_leader", _keeps_absent_leader),),
    ),
    PlantedBug(
        "coordinator-member-ids-from-counter",
        "coordinator/group.py GroupCoordinator.__init__ (ClassicGroup#generateMemberId)",
        "member ids from a per-coordinator counter: a coordinator after failover reuses ids",
        "connect",
        ((GroupCoordinator, "__init__", _member_ids_from_counter),),
    ),
    PlantedBug(
        "coordinator-heartbeat-completing-in-progress",
        "coordinator/session.py heartbeat",
        "a Heartbeat in CompletingRebalance is answered REBALANCE_IN_PROGRESS",
        "connect",
        ((coordinator_session, "heartbeat", _heartbeat_completing_in_progress),),
    ),
    PlantedBug(
        "coordinator-compares-protocol-names-only",
        "coordinator/join.py join_existing_member (ClassicGroupMember#matches)",
        "a follower rejoining Stable with new metadata but the same protocol names: no rebalance",
        "connect",
        ((coordinator_join, "join_existing_member", _compares_protocol_names_only),),
    ),
    PlantedBug(
        "coordinator-completing-rejoin-rebalances",
        "coordinator/join.py join_existing_member",
        "a same-metadata rejoin in CompletingRebalance starts a new join phase",
        "connect",
        ((coordinator_join, "join_existing_member", _completing_rejoin_rebalances),),
    ),
    PlantedBug(
        "hata-ignores-acceptable-recovery-lag",
        "members/assignors/streams/high_availability.py (_CaughtUp with lag 0)",
        "caught-up clients computed with lag 0: warm-ups for clients within the acceptable lag",
        "streams",
        ((high_availability, "_CaughtUp", _ignores_acceptable_lag),),
    ),
    PlantedBug(
        "streams-probing-time-read-as-delay",
        "members/streams_client.py StreamsClient._on_assignment (nextScheduledRebalanceMs)",
        "the leader arms its probing rebalance at now + the encoded absolute time",
        "streams",
        ((StreamsClient, "_on_assignment", _probing_time_read_as_delay),),
    ),
    PlantedBug(
        "streams-ignores-followup",
        "members/streams_client.py StreamsClient._on_assignment",
        "a client told to rejoin at once (nextScheduledRebalanceMs 0) does not",
        "streams",
        ((StreamsClient, "_on_assignment", _streams_ignores_followup),),
    ),
    PlantedBug(
        "cooperative-delay-restarted-each-round",
        "members/assignors/incremental_cooperative.py handle_lost_assignments",
        "every round during the delay restarts it at scheduled.rebalance.max.delay.ms",
        "connect",
        (
            (
                IncrementalCooperativeAssignor,
                "handle_lost_assignments",
                _delay_restarted_each_round,
            ),
        ),
        ("compatible", "sessioned", "static"),
    ),
    PlantedBug(
        "range-assignor-breaks-copartitioning",
        "members/assignors/consumer/range.py assign_range",
        "each topic's ranges go to its consumers in a rotated order (co-partitioning broken)",
        "consumer",
        ((consumer_member, "assign_range", _range_rotated_per_topic),),
        (),
    ),
    PlantedBug(
        "range-assignor-ignores-racks",
        "members/assignors/consumer/range.py use_rack_aware_assignment (KIP-881)",
        "range never matches racks: partitions off their replicas' racks though a member on one"
        " had room",
        "consumer",
        ((range_assignor, "use_rack_aware_assignment", _range_ignores_racks),),
        (),
    ),
    PlantedBug(
        "coordinator-static-rejoin-ignores-protocol-change",
        "coordinator/join.py update_static_member_then_rebalance_or_complete_join",
        "a static rejoin in Stable never rebalances, even when the elected protocol changes",
        "consumer",
        (
            (
                coordinator_join,
                "update_static_member_then_rebalance_or_complete_join",
                _static_rejoin_ignores_protocol_change,
            ),
        ),
        (),
    ),
    PlantedBug(
        "consumer-static-member-leaves-on-close",
        "members/consumer.py ConsumerClient.shutdown (maybeLeaveGroup)",
        "a static consumer sends LeaveGroup when it closes",
        "consumer",
        ((consumer_member.ConsumerClient, "shutdown", _static_member_leaves_on_close),),
        (),
    ),
    PlantedBug(
        "consumer-poll-timeout-one-heartbeat-late",
        "members/consumer.py ConsumerClient._stall (Heartbeat#pollTimeoutExpired)",
        "a stalled consumer's poll timer expires one heartbeat interval after its deadline",
        "consumer",
        ((consumer_member.ConsumerClient, "_stall", _poll_timeout_one_heartbeat_late),),
        (),
    ),
    PlantedBug(
        "consumer-poll-timeout-without-leave",
        "members/group_client.py GroupClient._on_poll_timeout (handlePollTimeoutExpiry)",
        "a dynamic consumer whose poll timer expired sends no LeaveGroup",
        "consumer",
        ((GroupClient, "_on_poll_timeout", _poll_timeout_without_leave),),
        (),
    ),
    PlantedBug(
        "consumer-join-under-request-timeout",
        "members/join_group.py JoinGroupHandler.send_join (sendJoinGroupRequest)",
        "a consumer's JoinGroup times out after request.timeout.ms, not rebalance timeout + 5 s",
        "consumer",
        ((JoinGroupHandler, "send_join", _join_under_request_timeout),),
        (),
    ),
    PlantedBug(
        "consumer-no-rejoin-after-revocation",
        "members/consumer.py ConsumerClient.on_join_complete",
        "a cooperative consumer that revoked partitions does not rejoin",
        "consumer",
        ((consumer_member.ConsumerClient, "on_join_complete", _no_rejoin_after_revocation),),
        (),
    ),
    PlantedBug(
        "coordinator-new-member-timeout-is-session",
        "coordinator/join.py add_member_then_rebalance_or_complete_join",
        "a new member's heartbeat deadline is its session timeout, not the new-member timeout",
        "connect",
        (
            (
                coordinator_join,
                "add_member_then_rebalance_or_complete_join",
                _new_member_timeout_is_session,
            ),
        ),
    ),
    PlantedBug(
        "worker-follower-ignores-scheduled-delay",
        "members/worker.py ConnectWorker._on_join_complete (onAssigned)",
        "only the leader rejoins when the scheduled delay expires",
        "connect",
        ((ConnectWorker, "_on_join_complete", _follower_ignores_scheduled_delay),),
        ("compatible", "sessioned", "static"),
    ),
)

#: Bugs of the audit that no checker finds (docs/chaos.md "Contract rules"): none now. The
#: last two, ``coordinator-completing-rejoin-rebalances`` (judged on the wire tap's
#: ``completing_join`` record) and ``streams-ignores-followup`` (``followup_rejoin_missed``),
#: are in :data:`KIP_RULE_BUGS`.
UNJUDGED_BUGS: tuple[PlantedBug, ...] = ()
