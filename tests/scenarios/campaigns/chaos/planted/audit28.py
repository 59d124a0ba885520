"""Planted bugs of a second outside audit (issue 23, red team round 28): each breaks one rule
Kafka states — a coordinator answer or timer, a member's identity, KIP-415's delay, KIP-441's
caught-up test and probing interval, KIP-708's tags, KIP-429's lost partitions — with a small
monkeypatch of one groupsim function, written before looking for the checker that would catch
it.

:data:`AUDIT28_BUGS` joins the chaos catalogue (``CATALOGUE``), all thirteen of them (the two
no chaos run reached at first are reached since issue 23's coverage round); docs/chaos.md
"Planted bugs: the round-28 audit" gives, for each, the run and checker that found it within
300 runs of seeds 1 and 2, or how the gap was closed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from coordinator import join as coordinator_join
from coordinator import rebalance as coordinator_rebalance
from coordinator import session as coordinator_session
from coordinator import sync as coordinator_sync
from coordinator import vote as coordinator_vote
from coordinator.classic_group import ClassicGroup
from coordinator.state import GroupState
from members import consumer as consumer_member
from members.assignors.incremental_cooperative import IncrementalCooperativeAssignor
from members.assignors.streams import high_availability, partition_assignor
from members.assignors.streams.standby import ClientTagAwareStandbyTaskAssignor
from members.group_client import GroupClient
from protocol.effects import Log, Send, SetTimer
from protocol.group import ErrorCode, SyncGroupResponse
from protocol.kafka_configs import STREAMS_DEFAULTS

from . import PlantedBug

__all__ = ["AUDIT28_BUGS"]

_PREPARING = GroupState.PREPARING_REBALANCE
_STABLE = GroupState.STABLE
_EMPTY = GroupState.EMPTY


# ---------------------------------------------------------------- coordinator answers


def _sync_preparing_unknown_member(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupSync answering a valid member's SyncGroup in PreparingRebalance with
    # UNKNOWN_MEMBER_ID instead of REBALANCE_IN_PROGRESS: the member forgets its member id and
    # rejoins as a new member, while its old id waits in the join phase until it is removed
    def _sync(self: Any, source: str, req: Any, now_ms: int) -> Any:
        preparing = self.state is _PREPARING
        effects = original(self, source, req, now_ms)
        if not preparing:
            return effects
        return [
            Send(e.dest, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), e.via)
            if isinstance(e, Send)
            and isinstance(e.message, SyncGroupResponse)
            and e.message.error == ErrorCode.REBALANCE_IN_PROGRESS
            else e
            for e in effects
        ]

    return _sync


def _votes_leader_only(original: Callable[..., Any]) -> Callable[..., Any]:
    # ClassicGroup#selectProtocol counting the leader's vote only: the group's protocol is the
    # leader's most preferred candidate, whatever the other members prefer
    def _select_protocol(self: Any) -> str:
        leader = self.members.get(self.leader_id) if self.leader_id is not None else None
        if leader is None:
            return str(original(self))
        n = len(self.members)
        candidates = {name for name, count in self.supported.items() if count == n}
        return next(name for name in leader.names if name in candidates)

    return _select_protocol


def _empty_generation_not_bumped(original: Callable[..., Any]) -> Callable[..., Any]:
    # completeClassicGroupJoin skipping initNextGeneration's increment when the join phase
    # ends with no members (the group goes Empty under the same generation id; Kafka bumps it:
    # a generation of nobody is still a generation)
    def _complete_join(self: Any, now_ms: int, effects: list[Any]) -> None:
        before = self.generation
        start = len(effects)
        original(self, now_ms, effects)
        if self.state is _EMPTY and self.generation == before + 1:
            self.generation = before
            for e in effects[start:]:
                if isinstance(e, Log) and e.kind == "generation":
                    e.fields["generation"] = before

    return _complete_join


def _join_stable_leader_no_rebalance(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupJoinExistingMember treating the leader like a follower in Stable: a leader
    # that rejoins with unchanged metadata (it wants a rebalance: new topic metadata, a
    # follow-up) is answered the current generation and no rebalance starts
    def _join_existing_member(
        self: Any, source: str, req: Any, now_ms: int, effects: list[Any]
    ) -> None:
        m = self.members.get(req.member_id)
        if (
            m is not None
            and self.state is _STABLE
            and req.member_id == self.leader_id
            and self.validate_member(req.member_id, req.group_instance_id) is None
            and m.protocols == req.protocols
            and self.supports_protocols(req.protocol_type, req.protocols)
        ):
            effects.append(
                Send(source, coordinator_join.current_join_response(self, m, with_members=False))
            )
            return
        original(self, source, req, now_ms, effects)

    return _join_existing_member


# ---------------------------------------------------------------- coordinator timers


def _heartbeat_extends_only_when_stable(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupHeartbeat rescheduling the member's session only in Stable: a member that
    # heartbeats through a rebalance (answered REBALANCE_IN_PROGRESS or NONE) keeps its old
    # deadline and is expired although it heartbeat in time
    def _heartbeat(self: Any, source: str, req: Any, now_ms: int) -> Any:
        if self.state is _STABLE:
            return original(self, source, req, now_ms)
        m = self.members.get(req.member_id)
        kept = m.hb_deadline if m is not None else None
        effects = original(self, source, req, now_ms)
        if m is None or kept is None:
            return effects
        m.hb_deadline = kept
        return [e for e in effects if not (isinstance(e, SetTimer) and e.key == m.hb_key)]

    return _heartbeat


def _rebalance_timeout_min(original: Callable[..., Any]) -> Callable[..., Any]:
    # ClassicGroup#rebalanceTimeoutMs taking the members' minimum rebalance.timeout.ms instead
    # of their maximum: the join phase (and the pending-sync window) ends before a member with
    # a longer rebalance timeout had time to rejoin (KIP-62)
    def rebalance_timeout_ms(self: Any) -> int:
        return min((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    return rebalance_timeout_ms


# ---------------------------------------------------------------- members


def _illegal_generation_resets_member_id(original: Callable[..., Any]) -> Callable[..., Any]:
    # resetGenerationOnResponseError forgetting the member id on ILLEGAL_GENERATION too (Kafka
    # keeps it: only UNKNOWN_MEMBER_ID and FENCED reset it): the member rejoins as a new
    # member and its old id waits in the group until its session or the join phase ends
    def reset_generation(self: Any, *, reset_member_id: bool) -> None:
        original(self, reset_member_id=True)

    return reset_generation


def _lost_as_revoked(original: Callable[..., Any]) -> Callable[..., Any]:
    # ConsumerCoordinator calling onPartitionsRevoked (a commit) instead of onPartitionsLost
    # when its generation is gone (KIP-429: partitions of a fenced or reset generation are
    # lost; committing them may overwrite their new owner's offsets)
    def on_partitions_lost(self: Any, reason: str, now_ms: int) -> None:
        if self._stalled:
            original(self, reason, now_ms)
            return
        self._revoke(list(self.owned), reason)

    return on_partitions_lost


# ---------------------------------------------------------------- Connect (KIP-415)


def _delay_extended_by_new_loss(original: Callable[..., Any]) -> Callable[..., Any]:
    # handleLostAssignments restarting scheduled.rebalance.max.delay.ms when another worker's
    # work is lost while the delay runs (Kafka's countdown runs from the first loss; later
    # losses wait for the same expiry)
    def handle_lost_assignments(
        self: Any, lost_connectors: Any, lost_tasks: Any, workers: Any, now_ms: int
    ) -> Any:
        lost = {*lost_connectors, *lost_tasks}
        seen = getattr(self, "_audit28_lost", set())
        waiting = self.scheduled_rebalance_ms > now_ms
        out = original(self, lost_connectors, lost_tasks, workers, now_ms)
        if waiting and lost - seen and self.scheduled_rebalance_ms > now_ms and out == ([], []):
            self.delay_ms = self.max_delay_ms
            self.scheduled_rebalance_ms = now_ms + self.delay_ms
        self._audit28_lost = lost if self.scheduled_rebalance_ms > 0 else set()
        return out

    return handle_lost_assignments


def _lost_work_to_first_candidate(original: Callable[..., Any]) -> Callable[..., Any]:
    # handleLostAssignments giving every lost connector and task to the first candidate worker
    # when the delay expires instead of dealing them round robin over the candidates
    def handle_lost_assignments(
        self: Any, lost_connectors: Any, lost_tasks: Any, workers: Any, now_ms: int
    ) -> Any:
        expiring = 0 < self.scheduled_rebalance_ms <= now_ms
        sizes = {w.worker: (len(w.connectors), len(w.tasks)) for w in workers}
        out = original(self, lost_connectors, lost_tasks, workers, now_ms)
        if not expiring:
            return out
        grown = [w for w in workers if (len(w.connectors), len(w.tasks)) != sizes[w.worker]]
        if len(grown) < 2:
            return out
        first = grown[0]
        for w in grown[1:]:
            nc, nt = sizes[w.worker]
            first.connectors.extend(w.connectors[nc:])
            first.tasks.extend(w.tasks[nt:])
            del w.connectors[nc:]
            del w.tasks[nt:]
        return out

    return handle_lost_assignments


# ---------------------------------------------------------------- Streams (KIP-441, KIP-708)


def _acceptable_lag_exclusive(original: Callable[..., Any]) -> Callable[..., Any]:
    # HighAvailabilityTaskAssignor's caught-up test as lag < acceptable.recovery.lag instead
    # of <= (TaskMovement/ClientState: "within" the acceptable lag includes it)
    def caught_up(table: Any, acceptable_recovery_lag: int) -> Any:
        return original(table, max(acceptable_recovery_lag - 1, 0))

    return caught_up


def _tags_first_key_only(original: Callable[..., Any]) -> Callable[..., Any]:
    # ClientTagAwareStandbyTaskAssignor spreading standbys over the first tag key of
    # rack.aware.assignment.tags only: a second key (zone, then cluster) is ignored
    def __init__(self: Any, num_standby_replicas: int, tag_keys: Any, *args: Any) -> None:
        original(self, num_standby_replicas, tuple(tag_keys)[:1], *args)

    return __init__


def _probing_interval_default(original: Callable[..., Any]) -> Callable[..., Any]:
    # StreamsPartitionAssignor scheduling the probing rebalance with the default
    # probing.rebalance.interval.ms (10 minutes), not the configured one
    def assign(self: Any, members: Any, now_ms: int) -> Any:
        configured = self.configs
        self.configs = dataclasses.replace(
            configured,
            probing_rebalance_interval_ms=STREAMS_DEFAULTS.probing_rebalance_interval_ms,
        )
        try:
            return original(self, members, now_ms)
        finally:
            self.configs = configured

    return assign


AUDIT28_BUGS: tuple[PlantedBug, ...] = (
    PlantedBug(
        "coordinator-sync-preparing-unknown-member",
        "coordinator/sync.py sync (classicGroupSync)",
        "a valid member's SyncGroup in PreparingRebalance is answered UNKNOWN_MEMBER_ID",
        "connect",
        ((coordinator_sync, "sync", _sync_preparing_unknown_member),),
    ),
    PlantedBug(
        "coordinator-votes-leader-only",
        "coordinator/vote.py select_protocol (ClassicGroup#selectProtocol)",
        "the group protocol is the leader's most preferred candidate; no other member votes",
        "consumer",
        ((coordinator_vote, "select_protocol", _votes_leader_only),),
        (),
    ),
    PlantedBug(
        "coordinator-heartbeat-extends-only-when-stable",
        "coordinator/session.py heartbeat (rescheduleClassicGroupMemberHeartbeat)",
        "a Heartbeat outside Stable is answered but does not push the session deadline back",
        "connect",
        ((coordinator_session, "heartbeat", _heartbeat_extends_only_when_stable),),
    ),
    PlantedBug(
        "client-illegal-generation-resets-member-id",
        "members/group_client.py GroupClient.reset_generation (resetGenerationOnResponseError)",
        "ILLEGAL_GENERATION makes the member forget its member id too",
        # reached where ILLEGAL_GENERATION is: KIP-345 static members kept by a join phase
        # they missed (Streams chaos draws them)
        "streams",
        ((GroupClient, "reset_generation", _illegal_generation_resets_member_id),),
    ),
    PlantedBug(
        "consumer-lost-as-revoked",
        "members/consumer.py ConsumerClient.on_partitions_lost (onPartitionsLost)",
        "partitions of a lost generation are revoked (committed), not lost",
        "consumer",
        ((consumer_member.ConsumerClient, "on_partitions_lost", _lost_as_revoked),),
        (),
    ),
    PlantedBug(
        "cooperative-delay-extended-by-new-loss",
        "members/assignors/incremental_cooperative.py handle_lost_assignments",
        "a loss during the scheduled delay restarts it at scheduled.rebalance.max.delay.ms",
        "connect",
        (
            (
                IncrementalCooperativeAssignor,
                "handle_lost_assignments",
                _delay_extended_by_new_loss,
            ),
        ),
        ("compatible", "sessioned", "static"),
    ),
    PlantedBug(
        "cooperative-lost-work-to-first-candidate",
        "members/assignors/incremental_cooperative.py handle_lost_assignments",
        "at the delay's expiry every lost item goes to the first candidate worker",
        "connect",
        (
            (
                IncrementalCooperativeAssignor,
                "handle_lost_assignments",
                _lost_work_to_first_candidate,
            ),
        ),
        ("compatible", "sessioned", "static"),
    ),
    PlantedBug(
        "hata-acceptable-lag-exclusive",
        "members/assignors/streams/high_availability.py (_CaughtUp: lag < acceptable)",
        "a client exactly acceptable.recovery.lag behind counts as not caught up",
        "streams",
        ((high_availability, "_CaughtUp", _acceptable_lag_exclusive),),
    ),
    PlantedBug(
        "tag-aware-standby-first-key-only",
        "members/assignors/streams/standby.py ClientTagAwareStandbyTaskAssignor.__init__",
        "standbys are spread over the first rack.aware.assignment.tags key only",
        "streams",
        ((ClientTagAwareStandbyTaskAssignor, "__init__", _tags_first_key_only),),
        referee_only=True,
    ),
    PlantedBug(
        "streams-probing-interval-default",
        "members/assignors/streams/partition_assignor.py StreamsPartitionAssignor.assign",
        "the probing rebalance is scheduled at the default interval, not the configured one",
        "streams",
        ((partition_assignor.StreamsPartitionAssignor, "assign", _probing_interval_default),),
    ),
    PlantedBug(
        "coordinator-empty-generation-not-bumped",
        "coordinator/rebalance.py complete_join (initNextGeneration)",
        "a join phase that ends with no members leaves the generation id as it was",
        # reached by the consumer generator's whole-group outage (every consumer closes)
        "consumer",
        ((coordinator_rebalance, "complete_join", _empty_generation_not_bumped),),
        (),
    ),
    PlantedBug(
        "coordinator-stable-leader-rejoin-no-rebalance",
        "coordinator/join.py join_existing_member",
        "the leader rejoining Stable with the same metadata is answered without a rebalance",
        # reached by a Connect leader that rejoins after losing the coordinator (a latency or
        # loss fault on its link) with its metadata unchanged; a consumer's subscription v3
        # carries its generation (KIP-792), so a consumer leader's rejoin never has unchanged
        # metadata (docs/chaos.md)
        "connect",
        ((coordinator_join, "join_existing_member", _join_stable_leader_no_rebalance),),
    ),
    PlantedBug(
        "coordinator-rebalance-timeout-min",
        "coordinator/classic_group.py ClassicGroup.rebalance_timeout_ms (ClassicGroup)",
        "the group's rebalance timeout is the members' minimum, not their maximum",
        # reached by the consumer generator's long-poll straggler (a consumer with a longer
        # max.poll.interval.ms, stalled while another member's restart rebalances the group)
        "consumer",
        ((ClassicGroup, "rebalance_timeout_ms", _rebalance_timeout_min),),
        (),
    ),
)
