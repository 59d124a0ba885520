"""A catalogue of planted protocol bugs, each applied by monkeypatching (never by editing
sources), to measure whether chaos and the checkers catch realistic mistakes.

Each :class:`PlantedBug` names where the bug lives and what a careless implementation of the
Kafka class would do; :meth:`PlantedBug.applied` is a context manager that patches it in and
out. :func:`detect` runs chaos runs (Connect, or ``--kind streams`` campaigns for the Streams
bugs) with the bug in place until one fails with a violation that is not a known upstream
issue. ``benchmarks/bench_planted.py`` reports runs-to-detection for
each; ``tests/scenarios/campaigns/chaos/test_planted.py`` runs a fast subset.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from coordinator import join as coordinator_join
from coordinator import rebalance as coordinator_rebalance
from coordinator import session as coordinator_session
from coordinator import sync as coordinator_sync
from coordinator import vote as coordinator_vote
from coordinator.classic_group import ClassicGroup
from coordinator.group import JOIN_TIMER, SYNC_TIMER, GroupCoordinator
from coordinator.state import GroupState
from members import consumer as consumer_member
from members.assignors.eager import EagerAssignor
from members.assignors.incremental_cooperative import IncrementalCooperativeAssignor
from members.assignors.static import StaticAssignor
from members.assignors.streams import high_availability, partition_assignor
from members.assignors.streams.rack_aware import RackAwareTaskAssignor
from members.assignors.streams.standby import (
    ClientTagAwareStandbyTaskAssignor,
    DefaultStandbyTaskAssignor,
)
from members.assignors.streams.task_movement import WarmupBudget
from members.group_client import GroupClient
from members.streams_client import StreamsClient
from members.worker import ConnectWorker
from protocol.connect import ConnectAssignment
from protocol.connect_codec import encode_assignment
from protocol.effects import Send, SetTimer
from protocol.group import ErrorCode, LeaveGroupResponse
from scenarios.campaigns.chaos import ChaosConfig, run_one

from . import consumer as consumer_bugs

__all__ = ["PlantedBug", "CATALOGUE", "Detection", "detect", "by_name", "chaos_config"]

Patch = tuple[Any, str, Callable[[Callable[..., Any]], Callable[..., Any]]]  # a class or module


@dataclass(frozen=True)
class PlantedBug:
    """One planted bug: ``patches`` are ``(class, method name, wrap)``: the method becomes
    ``wrap(original)`` while :meth:`applied` is active. ``kind`` is ``connect``, ``streams``
    or ``consumer`` (which runs can reach it); ``protocols`` the Connect protocols to run;
    ``referee_only``: the rule it breaks is the exact output of Kafka's algorithm, which only
    ``--referee kafka`` judges (docs/chaos.md "Contract rules")."""

    name: str
    where: str
    description: str
    kind: str
    patches: tuple[Patch, ...]
    protocols: tuple[str, ...] = ("eager", "compatible", "sessioned", "static")
    referee_only: bool = False

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        saved = [(cls, attr, cls.__dict__[attr]) for cls, attr, _ in self.patches]
        try:
            for cls, attr, wrap in self.patches:
                setattr(cls, attr, wrap(getattr(cls, attr)))
            yield
        finally:
            for cls, attr, original in reversed(saved):
                setattr(cls, attr, original)


# ---------------------------------------------------------------- coordinator bugs


def _sync_any_generation(original: Callable[..., Any]) -> Callable[..., Any]:
    def _sync(self: Any, source: str, req: Any, now_ms: int) -> Any:
        if self.members.get(req.member_id) is not None and req.generation_id >= 0:
            req = msgspec.structs.replace(req, generation_id=self.generation)
        return original(self, source, req, now_ms)

    return _sync


def _heartbeat_any_generation(original: Callable[..., Any]) -> Callable[..., Any]:
    def _heartbeat(self: Any, source: str, req: Any, now_ms: int) -> Any:
        if self.members.get(req.member_id) is not None and req.generation_id >= 0:
            req = msgspec.structs.replace(req, generation_id=self.generation)
        return original(self, source, req, now_ms)

    return _heartbeat


def _heartbeat_hides_rebalance(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupHeartbeat that treats PreparingRebalance like CompletingRebalance: the
    # member's session is extended but it is answered NONE, so it does not learn to rejoin
    # (it is removed when the join phase times out, which the checkers explain as not_rejoined)
    def _heartbeat(self: Any, source: str, req: Any, now_ms: int) -> Any:
        effects = original(self, source, req, now_ms)
        return [
            msgspec.structs.replace(
                e, message=msgspec.structs.replace(e.message, error=ErrorCode.NONE)
            )
            if isinstance(e, Send) and e.message.error == ErrorCode.REBALANCE_IN_PROGRESS
            else e
            for e in effects
        ]

    return _heartbeat


def _static_leader_not_told_to_skip(original: Callable[..., Any]) -> Callable[..., Any]:
    # updateStaticMemberThenRebalanceOrCompleteJoin without KIP-814: a static leader that
    # rejoins a Stable group is not told skip_assignment, so it runs the assignor again for the
    # generation it already assigned (the coordinator keeps the stored assignment either way)
    def rejoin(
        self: Any, source: str, req: Any, old_id: str, new_id: str, now_ms: int, effects: Any
    ) -> None:
        original(self, source, req, old_id, new_id, now_ms, effects)
        for i, e in enumerate(effects):
            if isinstance(e, Send) and getattr(e.message, "skip_assignment", False):
                told = msgspec.structs.replace(e.message, skip_assignment=False)
                effects[i] = msgspec.structs.replace(e, message=told)

    return rejoin


def _generation_bumped_once(original: Callable[..., Any]) -> Callable[..., Any]:
    # _select_protocol runs right after initNextGeneration's increment: undo all but the first.
    def _select_protocol(self: Any) -> Any:
        if self.generation > 1:
            self.generation = max(1, getattr(self, "_planted_first_generation", 1))
        else:
            self._planted_first_generation = self.generation
        return original(self)

    return _select_protocol


def _votes_least_preferred(original: Callable[..., Any]) -> Callable[..., Any]:
    # ClassicGroupMember#vote reading each member's protocol list backwards (oldest first):
    # every member votes for its least preferred candidate.
    def _select_protocol(self: Any) -> Any:
        saved = {mid: m.names for mid, m in self.members.items()}
        try:
            for m in self.members.values():
                m.names = tuple(reversed(m.names))
            return original(self)
        finally:
            for mid, names in saved.items():
                self.members[mid].names = names

    return _select_protocol


def _heartbeat_keeps_deadline(original: Callable[..., Any]) -> Callable[..., Any]:
    # A Heartbeat is answered but does not extend the member's session: only a JoinGroup or
    # SyncGroup does (GroupMetadataManager#classicGroupHeartbeat without the rescheduling).
    def _heartbeat(self: Any, source: str, req: Any, now_ms: int) -> Any:
        m = self.members.get(req.member_id)
        before = m.hb_deadline if m is not None else None
        effects = original(self, source, req, now_ms)
        if m is not None and before is not None:
            m.hb_deadline = before
            effects = [e for e in effects if not isinstance(e, SetTimer)]
        return effects

    return _heartbeat


def _deadline_uses_rebalance_timeout(original: Callable[..., Any]) -> Callable[..., Any]:
    # A Heartbeat pushes the deadline back by the rebalance timeout instead of the session
    # timeout: a crashed member lingers in the group for a minute instead of seconds.
    def _heartbeat(self: Any, source: str, req: Any, now_ms: int) -> Any:
        effects = original(self, source, req, now_ms)
        m = self.members.get(req.member_id)
        for i, effect in enumerate(effects):
            if isinstance(effect, SetTimer) and m is not None and effect.key == m.hb_key:
                m.hb_deadline = now_ms + m.rebalance_timeout_ms
                effects[i] = SetTimer(effect.key, m.hb_deadline)
        return effects

    return _heartbeat


def _leave_ignored(original: Callable[..., Any]) -> Callable[..., Any]:
    # A coordinator that answers LeaveGroup but keeps the member until its session expires.
    def _leave(self: Any, source: str, req: Any, now_ms: int) -> Any:
        return [Send(source, LeaveGroupResponse(ErrorCode.NONE))]

    return _leave


def _leader_first_joiner(original: Callable[..., Any]) -> Callable[..., Any]:
    # maybeElectNewJoinedLeader that always hands leadership to the first rejoined member in
    # coordinator order, even when the leader rejoined.
    def _maybe_elect_new_joined_leader(self: Any) -> bool:
        for mid in self.java_order():
            if self.members[mid].join_source is not None:
                self.leader_id = mid
                return True
        return bool(original(self))

    return _maybe_elect_new_joined_leader


# ---------------------------------------------------------------- group client bugs


def _ignore_rebalance_in_progress(original: Callable[..., Any]) -> Callable[..., Any]:
    def _on_heartbeat_response(self: Any, response: Any, now_ms: int) -> Any:
        if response.error == ErrorCode.REBALANCE_IN_PROGRESS:
            response = msgspec.structs.replace(response, error=ErrorCode.NONE)
        return original(self, response, now_ms)

    return _on_heartbeat_response


def _ignore_illegal_generation(original: Callable[..., Any]) -> Callable[..., Any]:
    # A client that treats ILLEGAL_GENERATION on a heartbeat as transient and keeps going.
    def _on_heartbeat_response(self: Any, response: Any, now_ms: int) -> Any:
        if response.error == ErrorCode.ILLEGAL_GENERATION:
            response = msgspec.structs.replace(response, error=ErrorCode.NONE)
        return original(self, response, now_ms)

    return _on_heartbeat_response


def _one_heartbeat_in_flight(original: Callable[..., Any]) -> Callable[..., Any]:
    # A heartbeat thread that waits for each answer before the next Heartbeat (Kafka's
    # HeartbeatThread sends one every interval and matches answers by correlation id).
    def _send_heartbeat(self: Any, now_ms: int) -> Any:
        if self.heartbeats_in_flight():
            self._arm_heartbeat(now_ms)
            return None
        return original(self, now_ms)

    return _send_heartbeat


# ---------------------------------------------------------------- Connect worker bugs


def _ignore_revocations(original: Callable[..., Any]) -> Callable[..., Any]:
    # WorkerCoordinator#onJoinComplete that forgets the revoked lists (KIP-415 step 1).
    def _on_join_complete(self: Any, assignment: Any, protocol_name: str, now_ms: int) -> Any:
        assignment = msgspec.structs.replace(assignment, revoked_connectors=(), revoked_tasks=())
        return original(self, assignment, protocol_name, now_ms)

    return _on_join_complete


def _never_revokes_on_coordinator_loss(original: Callable[..., Any]) -> Callable[..., Any]:
    # WorkerCoordinator#poll before KAFKA-9184's fix: a worker that cannot find the
    # coordinator keeps running its work however long it is cut off.
    def _on_coordinator_lost(self: Any, now_ms: int) -> None:
        return None

    return _on_coordinator_lost


def _wrong_protocol_applied(original: Callable[..., Any]) -> Callable[..., Any]:
    # A worker that decodes with its own configured protocol, not the elected one.
    def _on_join_complete(self: Any, assignment: Any, protocol_name: str, now_ms: int) -> Any:
        return original(self, assignment, self.config.connect_protocol.protocol_name, now_ms)

    return _on_join_complete


def _reclaims_withheld_task(original: Callable[..., Any]) -> Callable[..., Any]:
    # WorkerCoordinator#metadata that reports a stale allocation: the first task the worker
    # ever ran stays in its JoinGroup metadata after the leader revoked it, so every leader
    # sees it claimed twice, revokes it again and a follow-up rebalance starts: a livelock
    # (without a run budget one run of five workers logs a million records in a minute).
    def metadata(self: Any, now_ms: int) -> Any:
        snap = self.assignment_snapshot
        claim = getattr(self, "_planted_claim", None)
        if claim is None and snap is not None and snap.tasks:
            claim = self._planted_claim = snap.tasks[0]
        if claim is None or snap is None or claim in snap.tasks:
            return original(self, now_ms)
        self.assignment_snapshot = msgspec.structs.replace(snap, tasks=(*snap.tasks, claim))
        try:
            return original(self, now_ms)
        finally:
            self.assignment_snapshot = snap

    return metadata


# ---------------------------------------------------------------- Connect assignor bugs


def _rewrite_round(
    change: Callable[[dict[str, ConnectAssignment]], dict[str, ConnectAssignment]],
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap an assignor's ``perform_assignment`` so its result goes through ``change``
    (member id -> assignment), re-encoded as the wire bytes too."""

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def perform_assignment(self: Any, **kwargs: Any) -> Any:
            result = original(self, **kwargs)
            if result.error != 0 or len(result.assignments) < 2:
                return result
            decoded = change({mid: result.decoded[mid] for mid in result.assignments})
            result.assignments = {m: encode_assignment(a) for m, a in decoded.items()}
            result.decoded = decoded
            return result

        return perform_assignment

    return wrap


def _drop_last_task(round_: dict[str, ConnectAssignment]) -> dict[str, ConnectAssignment]:
    # an off-by-one in the round robin: the highest task number of each connector is skipped
    top: dict[str, int] = {}
    for a in round_.values():
        for t in a.tasks:
            top[t.connector] = max(t.task, top.get(t.connector, -1))
    return {
        m: msgspec.structs.replace(
            a, tasks=tuple(t for t in a.tasks if t.task != top[t.connector] or t.task == 0)
        )
        for m, a in round_.items()
    }


def _assign_without_revoking(round_: dict[str, ConnectAssignment]) -> dict[str, ConnectAssignment]:
    # a task newly given to one worker is also given to the next one (a move without the
    # revocation round of KIP-415)
    ids = list(round_)
    out = dict(round_)
    for i, mid in enumerate(ids):
        if round_[mid].tasks:
            nxt = ids[(i + 1) % len(ids)]
            extra = round_[mid].tasks[:1]
            out[nxt] = msgspec.structs.replace(out[nxt], tasks=(*out[nxt].tasks, *extra))
            break
    return out


def _members_off_by_one(round_: dict[str, ConnectAssignment]) -> dict[str, ConnectAssignment]:
    # each member receives the assignment computed for the member after it
    ids = list(round_)
    return {mid: round_[ids[(i + 1) % len(ids)]] for i, mid in enumerate(ids)}


def _delay_never_cleared(original: Callable[..., Any]) -> Callable[..., Any]:
    # handleLostAssignments whose expiry branch hands the lost work out but forgets
    # resetDelay(): the old delay and scheduledRebalance stay (KIP-415).
    def handle_lost_assignments(self: Any, lost_c: Any, lost_t: Any, workers: Any, now: int) -> Any:
        due, delay = self.scheduled_rebalance_ms, self.delay_ms
        fired = due > 0 and now >= due and (lost_c or lost_t)
        out = original(self, lost_c, lost_t, workers, now)
        if fired:
            self.scheduled_rebalance_ms, self.delay_ms = due, delay
        return out

    return handle_lost_assignments


def _lost_work_without_delay(original: Callable[..., Any]) -> Callable[..., Any]:
    # handleLostAssignments that reassigns a departed worker's work at once, as if
    # scheduled.rebalance.max.delay.ms were 0 (KIP-415's delay ignored).
    def handle_lost_assignments(self: Any, lost_c: Any, lost_t: Any, workers: Any, now: int) -> Any:
        original(self, lost_c, lost_t, workers, now)
        self._reset_delay()
        return list(lost_c), list(lost_t)

    return handle_lost_assignments


def _deleted_counted_as_configured(original: Callable[..., Any]) -> Callable[..., Any]:
    # performTaskAssignment that takes the configured set to include what it assigned before:
    # "deleted" (previous - configured) is always empty, so deleted work is neither revoked
    # nor left out of its worker's load.
    def _configured(self: Any, snapshot: Any) -> Any:
        conf_c, conf_t = original(self, snapshot)
        return conf_c | self._prev_c, conf_t | self._prev_t

    return _configured


def _deleted_never_revoked(original: Callable[..., Any]) -> Callable[..., Any]:
    # performAssignment that computes the deleted set but drops its revocations: a deleted
    # connector or task keeps running on its worker (the herder waits for the leader).
    def perform_assignment(self: Any, **kwargs: Any) -> Any:
        result = original(self, **kwargs)
        if result.error != 0:
            return result
        counts = kwargs["snapshot"].connectors

        def keep(a: ConnectAssignment) -> ConnectAssignment:
            return msgspec.structs.replace(
                a,
                revoked_connectors=tuple(c for c in a.revoked_connectors if c in counts),
                revoked_tasks=tuple(
                    t for t in a.revoked_tasks if t.task < counts.get(t.connector, 0)
                ),
            )

        decoded = {mid: keep(result.decoded[mid]) for mid in result.assignments}
        result.assignments = {m: encode_assignment(a) for m, a in decoded.items()}
        result.decoded = decoded
        return result

    return perform_assignment


def _reassign_revoked_at_once(round_: dict[str, ConnectAssignment]) -> dict[str, ConnectAssignment]:
    # the first task revoked this round is also handed to the next worker in the same round
    # (KIP-415 reassigns revoked work only in the follow-up round)
    ids = list(round_)
    out = dict(round_)
    for i, mid in enumerate(ids):
        if round_[mid].revoked_tasks:
            nxt = ids[(i + 1) % len(ids)]
            task = round_[mid].revoked_tasks[0]
            if task not in out[nxt].tasks:
                out[nxt] = msgspec.structs.replace(out[nxt], tasks=(*out[nxt].tasks, task))
            break
    return out


def _delay_only_for_first(round_: dict[str, ConnectAssignment]) -> dict[str, ConnectAssignment]:
    # fillAssignments that puts the scheduled delay only into the first member's assignment:
    # the others never schedule their own rejoin (KIP-415 gives every member the delay)
    first = next(iter(round_))
    return {
        m: a if m == first else msgspec.structs.replace(a, delay_ms=0) for m, a in round_.items()
    }


# ---------------------------------------------------------------- contract bugs (docs/chaos.md)


def _static_rejoin_always_rebalances(original: Callable[..., Any]) -> Callable[..., Any]:
    # updateStaticMemberThenRebalanceOrCompleteJoin that rebalances a Stable group even when
    # the elected protocol stays (KIP-345 promises no rebalance for a static rejoin)
    def update(self: Any, *args: Any, **kwargs: Any) -> Any:
        saved = self.protocol_name
        self.protocol_name = None if self.state is GroupState.STABLE else saved
        try:
            return original(self, *args, **kwargs)
        finally:
            if self.protocol_name is None:
                self.protocol_name = saved

    return update


def _admits_without_member_id(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupJoinNewMember that skips KIP-394: a new dynamic member is added at once
    def join_new_member(self: Any, source: str, req: Any, now_ms: int, effects: Any) -> Any:
        return original(self, source, msgspec.structs.replace(req, api_version=3), now_ms, effects)

    return join_new_member


def _join_bounded_by_session_timeout(original: Callable[..., Any]) -> Callable[..., Any]:
    # ClassicGroup#rebalanceTimeoutMs as before KIP-62: the members' maximum session.timeout.ms
    # bounds the join phase, so a member still processing (within rebalance.timeout.ms) is
    # dropped as not rejoined when its session timeout ends the phase
    def rebalance_timeout_ms(self: Any) -> int:
        return max((m.session_timeout_ms for m in self.members.values()), default=0)

    return rebalance_timeout_ms


def _join_timer_reset_on_rejoin(original: Callable[..., Any]) -> Callable[..., Any]:
    # updateMemberThenRebalanceOrCompleteJoin that arms the join timer again on every rejoin
    # during PreparingRebalance (a debounce): a member that never rejoins holds the phase open
    # one rebalance timeout after the last rejoin, not after the phase began (KIP-62)
    def update(self: Any, source: str, m: Any, req: Any, now_ms: int, effects: Any) -> Any:
        original(self, source, m, req, now_ms, effects)
        timer = self.join_timer
        if self.state is GroupState.PREPARING_REBALANCE and timer and timer[0] == "complete":
            effects.append(SetTimer(JOIN_TIMER, now_ms + self.rebalance_timeout_ms()))

    return update


def _pending_never_expires(original: Callable[..., Any]) -> Callable[..., Any]:
    # expireClassicGroupMemberHeartbeat that skips pending members: a member id answered
    # MEMBER_ID_REQUIRED whose owner never comes back (its answer was lost, or it crashed) stays
    # pending, and every later join phase waits for it until the rebalance timeout (KIP-394)
    def _expire_heartbeat(self: Any, mid: str, now_ms: int, effects: Any) -> None:
        if mid in self.pending:
            return
        original(self, mid, now_ms, effects)

    return _expire_heartbeat


def _leader_members_in_join_order(original: Callable[..., Any]) -> Callable[..., Any]:
    # ClassicGroup#currentClassicGroupMembers walking the members in the order they joined
    # (a LinkedHashMap) instead of the members HashMap: the leader gets the same members and
    # metadata in another order. Connect's and the consumer's leaders put them in a map of
    # their own, so no assignment changes and no checker sees it
    def _leader_member_list(self: Any) -> Any:
        listed = original(self)
        joined = {mid: i for i, mid in enumerate(self.members)}
        return tuple(sorted(listed, key=lambda m: joined[m.member_id]))

    return _leader_member_list


def _pending_added_at_once(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupJoinNewDynamicMember checking requiresKnownMemberId only after the member
    # was added: a v4+ JoinGroup without a member id adds the member (the v3 path: it takes
    # part in the rebalance at once) and is then answered MEMBER_ID_REQUIRED with its new id
    # as if it were pending (KIP-394): the next generation lists an id whose owner has not
    # rejoined with it
    def _join_new_member(self: Any, source: str, req: Any, now_ms: int, effects: Any) -> None:
        if req.group_instance_id is not None or req.api_version < 4:
            return original(self, source, req, now_ms, effects)
        added: list[Any] = []
        original(self, source, msgspec.structs.replace(req, api_version=3), now_ms, added)
        new_id = next(
            (e.fields["member_id"] for e in added if getattr(e, "kind", "") == "member_added"),
            None,
        )
        effects.extend(added)
        if new_id is not None:
            effects += coordinator_join.member_id_required(source, new_id, req.session_timeout_ms)
        return None

    return _join_new_member


def _pending_sync_by_session_timeout(original: Callable[..., Any]) -> Callable[..., Any]:
    # schedulePendingSync armed for the members' session timeout instead of the group's
    # rebalance timeout (KIP-814): a member whose SyncGroup takes longer than
    # session.timeout.ms (a held request) is removed as not synced although it still had
    # time. Wraps handle and fire, the two ways a join completes
    def wrapped(self: Any, *args: Any) -> Any:
        effects = original(self, *args)
        now_ms = args[-1]
        out = []
        for e in effects:
            members = self.group.members
            if isinstance(e, SetTimer) and e.key == SYNC_TIMER and members:
                shortest = min(m.session_timeout_ms for m in members.values())
                e = SetTimer(SYNC_TIMER, now_ms + shortest)
            out.append(e)
        return out

    return wrapped


def _runs_assignment_without_reading(original: Callable[..., Any]) -> Callable[..., Any]:
    # DistributedHerder#handleRebalanceCompleted without readConfigToEnd: a worker behind the
    # assignment's config offset starts its work under the config it has (KIP-415); the
    # tasks it starts exist in both configs, so nothing else need break
    def handle(self: Any, assignment: Any, generation: int, revoked: bool, now_ms: int) -> Any:
        if not assignment.failed and self.config_view.offset < assignment.config_offset:
            stale = msgspec.structs.replace(assignment, config_offset=self.config_view.offset)
            return self._start_assigned(stale, generation, revoked, now_ms)
        return original(self, assignment, generation, revoked, now_ms)

    return handle


def _unknown_member_joins_stable(original: Callable[..., Any]) -> Callable[..., Any]:
    # classicGroupJoinExistingMember that answers an unknown member id in a Stable group like a
    # follower rejoining with unchanged metadata: the current generation, not UNKNOWN_MEMBER_ID
    # (its SyncGroup then fails and it starts over, so the group stays safe and live)
    def join_existing(self: Any, source: str, req: Any, now_ms: int, effects: Any) -> Any:
        mid = req.member_id
        if (
            self.state is GroupState.STABLE
            and mid not in self.members
            and mid not in self.pending
            and req.group_instance_id is None
            and self.leader_id is not None
        ):
            answer = coordinator_join.current_join_response(
                self, self.members[self.leader_id], False
            )
            leader_view = msgspec.structs.replace(answer, member_id=mid)
            effects.append(Send(source, leader_view))
            return None
        return original(self, source, req, now_ms, effects)

    return join_existing


def _pending_sync_never_expires(original: Callable[..., Any]) -> Callable[..., Any]:
    # expirePendingSync that never removes anyone: a member answered JoinGroup whose SyncGroup
    # is held past the rebalance timeout stays in the generation (KIP-814's pending sync)
    def _expire_pending_sync(self: Any, generation: int, now_ms: int, effects: Any) -> None:
        return None

    return _expire_pending_sync


def _no_fencing(original: Callable[..., Any]) -> Callable[..., Any]:
    # ClassicGroup#validateMember that never answers FENCED_INSTANCE_ID: an old member id of a
    # static instance another process took over hears UNKNOWN_MEMBER_ID, rejoins with the
    # instance id and takes it back (KIP-345 fences it for good)
    def _validate_member(self: Any, mid: str, group_instance_id: str | None) -> Any:
        if group_instance_id is not None and self.static.get(group_instance_id) not in (
            None,
            mid,
        ):
            group_instance_id = None
        return original(self, mid, group_instance_id)

    return _validate_member


def _warmups_without_probing(original: Callable[..., Any]) -> Callable[..., Any]:
    # HighAvailabilityTaskAssignor that places warm-ups but reports no probing rebalance
    # needed: the warm-ups never become actives unless something else rebalances (KIP-441)
    def assign(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        result.probing_rebalance_needed = False
        return result

    return assign


def _warmup_budget_off_by_one(original: Callable[..., Any]) -> Callable[..., Any]:
    # TaskMovement's remainingWarmupReplicas read as "getAndDecrement() >= 0": one warm-up
    # more than max.warmup.replicas per assignment (KIP-441 bounds them)
    def take(self: Any) -> bool:
        value = self.remaining
        self.remaining -= 1
        return bool(value >= 0)

    return take


def _last_task_without_standby(original: Callable[..., Any]) -> Callable[..., Any]:
    # DefaultStandbyTaskAssignor whose loop stops one task short: the last stateful task gets
    # no standby (KIP-441: num.standby.replicas per stateful task)
    def assign(self: Any, clients: Any, stateful: Any) -> Any:
        return original(self, clients, list(stateful)[:-1])

    return assign


def _standby_move_needs_warmup(original: Callable[..., Any]) -> Callable[..., Any]:
    # TaskMovement.assignStandbyTaskMovements that gives the caught-up client its standby only
    # inside the warm-up branch: once max.warmup.replicas is spent, a standby movement drops
    # the copy from the lagging client and places none (KIP-441: num.standby.replicas per
    # stateful task). Only that round is short: the next one places all standbys again.
    def assign(caught_up: Any, by_lag: Any, clients: Any, warmups: Any, budget: Any) -> int:
        before = {p: set(c.standby) for p, c in clients.items()}
        moved = int(original(caught_up, by_lag, clients, warmups, budget))
        dropped = Counter(t for p, c in clients.items() for t in before[p] - c.standby)
        for p in sorted(clients):
            for task in sorted(clients[p].standby - before[p]):
                if dropped[task] > 0:
                    clients[p].unassign_standby(task)
                    dropped[task] -= 1
        return moved

    return assign


def _tags_ignored(original: Callable[..., Any]) -> Callable[..., Any]:
    # ClientTagAwareStandbyTaskAssignor whose tag filter drops every configured key (e.g. a
    # key compared with a value): the standbys go least-loaded, whatever their zone (KIP-708)
    def assign_with_different_tags(self: Any, *args: Any) -> Any:
        saved = self.tag_keys
        self.tag_keys = ()
        try:
            return original(self, *args)
        finally:
            self.tag_keys = saved

    return assign_with_different_tags


def _flow_maximises(original: Callable[..., Any]) -> Callable[..., Any]:
    # RackAwareTaskAssignor's min-cost flow with its arc costs inverted (a sign error: it
    # finds the most expensive placement of the same shape) that reports the true cost of
    # what it chose (KIP-925: min_traffic never raises the cost of the starting placement)
    def optimize(
        self: Any,
        tasks: Any,
        clients: Any,
        owner: Any,
        standby: bool,
        traffic: int,
        non_overlap: int,
        balance: bool,
        solver: Any = None,
        matrices: Any = None,
    ) -> int:
        if matrices is None:
            matrices = self._cost_matrix(tasks, clients, standby, traffic, non_overlap)
        cost, current = matrices
        inverted = (cost.max() - cost, current)
        original(
            self, tasks, clients, owner, standby, traffic, non_overlap, balance, solver, inverted
        )
        return sum(
            int(cost[i, j])
            for i, task in enumerate(tasks)
            for j, c in enumerate(clients)
            if task in (c.standby if standby else c.active)
        )

    return optimize


# ---------------------------------------------------------------- Streams client bugs


def _keep_revoked_active(original: Callable[..., Any]) -> Callable[..., Any]:
    def _close_active(self: Any, task: Any, reason: str, now_ms: int) -> Any:
        if reason == "revoked":
            return None  # onPartitionsRevoked forgets to close the task
        return original(self, task, reason, now_ms)

    return _close_active


def _standby_beside_active(original: Callable[..., Any]) -> Callable[..., Any]:
    # StandbyTaskAssignor that does not exclude the client holding the active copy
    def assign(self: Any, clients: Any, stateful: Any) -> Any:
        original(self, clients, stateful)
        for state in clients.values():
            for task in sorted(state.active):
                if task in stateful and task not in state.standby:
                    state.standby.add(task)
                    return None
        return None

    return assign


def _no_active_movements(original: Callable[..., Any]) -> Callable[..., Any]:
    # HighAvailabilityTaskAssignor without TaskMovement.assignActiveTaskMovements: actives stay
    # where the balancing put them, restoring from scratch, and no warmups are handed out.
    def assign_active_task_movements(*args: Any, **kwargs: Any) -> int:
        return 0

    return assign_active_task_movements


from .assignor_rules import (  # noqa: E402 (uses PlantedBug, _rewrite_round)
    ASSIGNOR_RULE_BUGS,
    CONSUMER_BUGS,
)
from .audit28 import AUDIT28_BUGS  # noqa: E402 (uses PlantedBug)
from .coordinator_config import COORDINATOR_CONFIG_BUGS  # noqa: E402 (uses PlantedBug)
from .fencing import FENCING_BUGS  # noqa: E402 (uses PlantedBug)
from .kip_rules import KIP_RULE_BUGS  # noqa: E402 (uses PlantedBug)
from .load_path import LOAD_PATH_BUGS  # noqa: E402 (uses PlantedBug)
from .parked_sync import PARKED_SYNC_BUGS  # noqa: E402 (uses PlantedBug)
from .racks import RACK_BUGS  # noqa: E402 (uses PlantedBug)

CATALOGUE: tuple[PlantedBug, ...] = (
    PlantedBug(
        "coordinator-pending-member-added-at-once",
        "coordinator/join.py join_new_member",
        "a JoinGroup without a member id adds the member, then answers MEMBER_ID_REQUIRED",
        "connect",
        ((coordinator_join, "join_new_member", _pending_added_at_once),),
    ),
    PlantedBug(
        "coordinator-pending-sync-by-session-timeout",
        "coordinator/rebalance.py complete_join (schedulePendingSync)",
        "the pending-sync deadline is the session timeout, not the rebalance timeout",
        "connect",
        (
            (GroupCoordinator, "handle", _pending_sync_by_session_timeout),
            (GroupCoordinator, "fire", _pending_sync_by_session_timeout),
        ),
    ),
    PlantedBug(
        "coordinator-leader-members-in-join-order",
        "coordinator/classic_group.py ClassicGroup.leader_member_list",
        "the leader's JoinGroup answer lists the members in join order, not the HashMap's",
        "connect",
        ((ClassicGroup, "leader_member_list", _leader_members_in_join_order),),
        referee_only=True,
    ),
    PlantedBug(
        "coordinator-static-rejoin-rebalances",
        "coordinator/join.py update_static_member_then_rebalance_or_complete_join",
        "a static member rejoining a Stable group triggers a rebalance though the vote stays",
        "streams",
        (
            (
                coordinator_join,
                "update_static_member_then_rebalance_or_complete_join",
                _static_rejoin_always_rebalances,
            ),
        ),
    ),
    PlantedBug(
        "coordinator-heartbeat-hides-rebalance",
        "coordinator/session.py heartbeat",
        "a Heartbeat during PreparingRebalance is answered NONE, not REBALANCE_IN_PROGRESS",
        "connect",
        ((coordinator_session, "heartbeat", _heartbeat_hides_rebalance),),
    ),
    PlantedBug(
        "coordinator-static-leader-reassigns",
        "coordinator/join.py update_static_member_then_rebalance_or_complete_join",
        "a static leader rejoining a Stable group is not told skip_assignment (KIP-814)",
        "streams",
        (
            (
                coordinator_join,
                "update_static_member_then_rebalance_or_complete_join",
                _static_leader_not_told_to_skip,
            ),
        ),
    ),
    PlantedBug(
        "coordinator-does-not-fence",
        "coordinator/classic_group.py ClassicGroup.validate_member",
        "an old member id of a static instance taken over by another process is not fenced",
        # reached by the zombie fault: Streams runs with static members
        "streams",
        ((ClassicGroup, "validate_member", _no_fencing),),
    ),
    PlantedBug(
        "coordinator-join-bounded-by-session-timeout",
        "coordinator/classic_group.py ClassicGroup.rebalance_timeout_ms",
        "the join phase is bounded by the members' session timeout, not rebalance.timeout.ms",
        "connect",
        ((ClassicGroup, "rebalance_timeout_ms", _join_bounded_by_session_timeout),),
    ),
    PlantedBug(
        "coordinator-join-timer-reset-on-rejoin",
        "coordinator/join.py update_member_then_rebalance_or_complete_join",
        "every rejoin during PreparingRebalance arms the join timer again",
        "streams",
        (
            (
                coordinator_join,
                "update_member_then_rebalance_or_complete_join",
                _join_timer_reset_on_rejoin,
            ),
        ),
    ),
    PlantedBug(
        "coordinator-pending-member-never-expires",
        "coordinator/session.py expire_heartbeat",
        "a KIP-394 pending member that never rejoins is never forgotten",
        "connect",
        ((coordinator_session, "expire_heartbeat", _pending_never_expires),),
    ),
    PlantedBug(
        "coordinator-pending-sync-never-expires",
        "coordinator/rebalance.py expire_pending_sync",
        "members that do not SyncGroup within the rebalance timeout are never removed",
        "connect",
        ((coordinator_rebalance, "expire_pending_sync", _pending_sync_never_expires),),
    ),
    PlantedBug(
        "worker-runs-assignment-without-reading-config",
        "members/worker.py ConnectWorker._handle_rebalance_completed",
        "a worker behind the assignment's config offset starts its work without reading",
        "connect",
        ((ConnectWorker, "_handle_rebalance_completed", _runs_assignment_without_reading),),
    ),
    PlantedBug(
        "coordinator-answers-unknown-member",
        "coordinator/join.py join_existing_member",
        "an unknown member id rejoining a Stable group is handed the current generation",
        "connect",
        ((coordinator_join, "join_existing_member", _unknown_member_joins_stable),),
    ),
    PlantedBug(
        "coordinator-admits-without-member-id",
        "coordinator/join.py join_new_member",
        "a new dynamic member is admitted at once, without KIP-394's MEMBER_ID_REQUIRED",
        "connect",
        ((coordinator_join, "join_new_member", _admits_without_member_id),),
    ),
    PlantedBug(
        "cooperative-assignor-reassigns-revoked-at-once",
        "members/assignors/incremental_cooperative.py perform_assignment",
        "a revoked task is handed to another worker in the same round (KIP-415: next round)",
        "connect",
        (
            (
                IncrementalCooperativeAssignor,
                "perform_assignment",
                _rewrite_round(_reassign_revoked_at_once),
            ),
        ),
        ("compatible", "sessioned"),
    ),
    PlantedBug(
        "cooperative-delay-for-one-member",
        "members/assignors/incremental_cooperative.py perform_assignment (fillAssignments)",
        "the scheduled delay reaches only one member; the others get 0",
        "connect",
        (
            (
                IncrementalCooperativeAssignor,
                "perform_assignment",
                _rewrite_round(_delay_only_for_first),
            ),
        ),
        ("compatible", "sessioned", "static"),
    ),
    PlantedBug(
        "hata-warmups-without-probing",
        "members/assignors/streams/partition_assignor.py assign_high_availability"
        " (probingRebalanceNeeded)",
        "warm-ups are placed but no probing rebalance is asked for",
        "streams",
        ((partition_assignor, "assign_high_availability", _warmups_without_probing),),
    ),
    PlantedBug(
        "hata-warmup-budget-off-by-one",
        "members/assignors/streams/task_movement.py WarmupBudget.take",
        "one warm-up more than max.warmup.replicas per assignment",
        "streams",
        ((WarmupBudget, "take", _warmup_budget_off_by_one),),
    ),
    PlantedBug(
        "standby-assignor-skips-last-task",
        "members/assignors/streams/standby.py DefaultStandbyTaskAssignor.assign",
        "the last stateful task gets no standby",
        "streams",
        ((DefaultStandbyTaskAssignor, "assign", _last_task_without_standby),),
    ),
    PlantedBug(
        "standby-movement-needs-warmup",
        "members/assignors/streams/task_movement.py assign_standby_task_movements",
        "a standby movement without a warm-up left drops the standby instead of moving it",
        "streams",
        ((high_availability, "assign_standby_task_movements", _standby_move_needs_warmup),),
    ),
    PlantedBug(
        "tag-aware-standby-ignores-tags",
        "members/assignors/streams/standby.py ClientTagAwareStandbyTaskAssignor",
        "standbys are placed least-loaded whatever their rack.aware.assignment.tags values",
        "streams",
        (
            (
                ClientTagAwareStandbyTaskAssignor,
                "_assign_with_different_tags",
                _tags_ignored,
            ),
        ),
    ),
    PlantedBug(
        "rack-aware-flow-maximises",
        "members/assignors/streams/rack_aware.py RackAwareTaskAssignor._optimize",
        "the rack-aware flow finds the costliest placement of the same shape",
        "streams",
        ((RackAwareTaskAssignor, "_optimize", _flow_maximises),),
    ),
    PlantedBug(
        "coordinator-sync-any-generation",
        "coordinator/sync.py sync",
        "SyncGroup accepted from a stale generation (no ILLEGAL_GENERATION check)",
        "connect",
        ((coordinator_sync, "sync", _sync_any_generation),),
    ),
    PlantedBug(
        "coordinator-heartbeat-any-generation",
        "coordinator/session.py heartbeat",
        "Heartbeat accepted from a stale generation",
        "connect",
        ((coordinator_session, "heartbeat", _heartbeat_any_generation),),
    ),
    PlantedBug(
        "coordinator-generation-bumped-once",
        "coordinator/rebalance.py complete_join (initNextGeneration)",
        "the generation is bumped only on the first rebalance",
        "connect",
        ((coordinator_vote, "select_protocol", _generation_bumped_once),),
    ),
    PlantedBug(
        "coordinator-votes-least-preferred",
        "coordinator/vote.py select_protocol",
        "each member votes for the last candidate in its protocol list, not the first",
        "connect",
        ((coordinator_vote, "select_protocol", _votes_least_preferred),),
        ("compatible", "sessioned", "static"),
    ),
    PlantedBug(
        "coordinator-heartbeat-keeps-deadline",
        "coordinator/session.py heartbeat",
        "a Heartbeat does not extend the member's session (only JoinGroup/SyncGroup do)",
        "connect",
        ((coordinator_session, "heartbeat", _heartbeat_keeps_deadline),),
    ),
    PlantedBug(
        "coordinator-deadline-by-rebalance-timeout",
        "coordinator/session.py heartbeat",
        "a Heartbeat pushes the session deadline back by the rebalance timeout",
        "connect",
        ((coordinator_session, "heartbeat", _deadline_uses_rebalance_timeout),),
    ),
    PlantedBug(
        "coordinator-ignores-leave",
        "coordinator/session.py leave",
        "LeaveGroup is answered NONE but the member stays until its session times out",
        "connect",
        ((coordinator_session, "leave", _leave_ignored),),
    ),
    PlantedBug(
        "coordinator-leader-first-joiner",
        "coordinator/rebalance.py maybe_elect_new_joined_leader",
        "each join phase makes the first rejoined member leader, even if the leader rejoined",
        "connect",
        ((coordinator_rebalance, "maybe_elect_new_joined_leader", _leader_first_joiner),),
    ),
    PlantedBug(
        "client-ignores-rebalance-in-progress",
        "members/group_client.py GroupClient._on_heartbeat_response",
        "a member ignores REBALANCE_IN_PROGRESS in heartbeats",
        "connect",
        ((GroupClient, "_on_heartbeat_response", _ignore_rebalance_in_progress),),
    ),
    PlantedBug(
        "client-ignores-illegal-generation",
        "members/group_client.py GroupClient._on_heartbeat_response",
        "a member ignores ILLEGAL_GENERATION in heartbeats",
        # reached by KIP-345 static members only (Streams chaos draws them): join completion
        # keeps a static member that missed the join phase, and its next Heartbeat gets
        # ILLEGAL_GENERATION for the generation it still runs
        "streams",
        ((GroupClient, "_on_heartbeat_response", _ignore_illegal_generation),),
    ),
    PlantedBug(
        "client-one-heartbeat-in-flight",
        "members/group_client.py GroupClient._send_heartbeat",
        "no Heartbeat while an earlier one is unanswered, so a lost answer silences the member",
        "connect",
        ((GroupClient, "_send_heartbeat", _one_heartbeat_in_flight),),
    ),
    PlantedBug(
        "worker-ignores-revocations",
        "members/worker.py ConnectWorker._on_join_complete",
        "a cooperative worker ignores the revoked connectors and tasks of its assignment",
        "connect",
        ((ConnectWorker, "_on_join_complete", _ignore_revocations),),
        ("compatible", "sessioned", "static"),
    ),
    PlantedBug(
        "worker-never-revokes-on-coordinator-loss",
        "members/worker.py ConnectWorker._on_coordinator_lost",
        "a worker cut off from the coordinator never revokes its work (KAFKA-9184 unfixed)",
        "connect",
        ((ConnectWorker, "_on_coordinator_lost", _never_revokes_on_coordinator_loss),),
    ),
    PlantedBug(
        "worker-applies-own-protocol",
        "members/worker.py ConnectWorker._on_join_complete",
        "a worker applies the assignment under its configured protocol, not the elected one",
        "connect",
        ((ConnectWorker, "_on_join_complete", _wrong_protocol_applied),),
    ),
    PlantedBug(
        "worker-reclaims-withheld-task",
        "members/worker.py ConnectWorker.metadata",
        "a worker keeps claiming, in every JoinGroup, a task the leader took away (livelock)",
        "connect",
        ((ConnectWorker, "metadata", _reclaims_withheld_task),),
        ("compatible", "sessioned"),
    ),
    PlantedBug(
        "eager-assignor-skips-last-task",
        "members/assignors/eager.py EagerAssignor.perform_assignment",
        "the eager round robin skips the highest task number of each connector",
        "connect",
        ((EagerAssignor, "perform_assignment", _rewrite_round(_drop_last_task)),),
        ("eager",),
    ),
    PlantedBug(
        "cooperative-assignor-moves-without-revoking",
        "members/assignors/incremental_cooperative.py perform_assignment",
        "a task is given to a second worker without being revoked from its owner",
        "connect",
        (
            (
                IncrementalCooperativeAssignor,
                "perform_assignment",
                _rewrite_round(_assign_without_revoking),
            ),
        ),
        ("compatible", "sessioned"),
    ),
    PlantedBug(
        "cooperative-delay-never-cleared",
        "members/assignors/incremental_cooperative.py handle_lost_assignments",
        "the leader never clears its scheduled delay after the delayed rebalance fired",
        "connect",
        ((IncrementalCooperativeAssignor, "handle_lost_assignments", _delay_never_cleared),),
        ("compatible", "sessioned", "static"),
    ),
    PlantedBug(
        "cooperative-lost-work-without-delay",
        "members/assignors/incremental_cooperative.py handle_lost_assignments",
        "the leader reassigns a departed worker's work at once instead of waiting the delay",
        "connect",
        ((IncrementalCooperativeAssignor, "handle_lost_assignments", _lost_work_without_delay),),
        ("compatible", "sessioned", "static"),
    ),
    PlantedBug(
        "cooperative-assignor-keeps-deleted",
        "members/assignors/incremental_cooperative.py perform_assignment",
        "deleted connectors and tasks are neither revoked nor left out of their worker's load",
        "connect",
        ((IncrementalCooperativeAssignor, "_configured", _deleted_counted_as_configured),),
        ("compatible", "sessioned"),
    ),
    PlantedBug(
        "cooperative-assignor-never-revokes-deleted",
        "members/assignors/incremental_cooperative.py perform_assignment",
        "deleted connectors and tasks are left out of the load but never revoked",
        "connect",
        ((IncrementalCooperativeAssignor, "perform_assignment", _deleted_never_revoked),),
        ("compatible", "sessioned"),
    ),
    PlantedBug(
        "static-assignor-members-off-by-one",
        "members/assignors/static.py StaticAssignor.perform_assignment",
        "each member receives the assignment computed for the next member",
        "connect",
        ((StaticAssignor, "perform_assignment", _rewrite_round(_members_off_by_one)),),
        ("static",),
    ),
    PlantedBug(
        "standby-assignor-beside-active",
        "members/assignors/streams/standby.py DefaultStandbyTaskAssignor.assign",
        "a standby is placed on the client that holds the task's active copy",
        "streams",
        ((DefaultStandbyTaskAssignor, "assign", _standby_beside_active),),
    ),
    PlantedBug(
        "hata-skips-active-movements",
        "members/assignors/streams/high_availability.py assign_high_availability",
        "active tasks are never moved to caught-up clients (no TaskMovement, no warmups)",
        "streams",
        ((high_availability, "assign_active_task_movements", _no_active_movements),),
    ),
    PlantedBug(
        "streams-keeps-revoked-active",
        "members/streams_client.py StreamsClient._close_active",
        "a Streams client keeps an active task the leader took away",
        "streams",
        ((StreamsClient, "_close_active", _keep_revoked_active),),
    ),
    *ASSIGNOR_RULE_BUGS,
    *CONSUMER_BUGS,  # consumer assignor rules, reached by chaos --kind consumer
    *LOAD_PATH_BUGS,  # the failover load path: referee only (load_path.py)
    # ------------------------------------------------ plain consumers (KIP-429, issue 22)
    PlantedBug(
        "consumer-keeps-revoked-partition",
        "members/consumer.py ConsumerClient._revoke",
        "a cooperative consumer's onPartitionsRevoked does not stop consuming what the "
        "assignment took away",
        "consumer",
        (
            (consumer_member.ConsumerClient, "_revoke", consumer_bugs.keep_revoked),
            (
                consumer_member.ConsumerClient,
                "_subscription",
                consumer_bugs.report_assignment_only,
            ),
        ),
    ),
    PlantedBug(
        "cooperative-sticky-skips-adjust",
        "members/consumer.py (CooperativeStickyAssignor.adjustAssignment)",
        "the cooperative-sticky leader gives a moved partition to its new owner at once",
        "consumer",
        ((consumer_member, "cooperative_adjust", consumer_bugs.skip_adjust),),
    ),
    PlantedBug(
        "consumer-protocol-of-any-assignor",
        "members/consumer.py rebalance_protocol",
        "the rebalance protocol is the highest any configured assignor supports, not all",
        "consumer",
        ((consumer_member, "rebalance_protocol", consumer_bugs.protocol_of_any),),
    ),
    PlantedBug(
        "consumer-ignores-fencing",
        "members/consumer.py ConsumerClient.on_fenced (FencedInstanceIdException)",
        "a fenced consumer keeps its partitions and its process runs on",
        # reached by the zombie fault: consumer runs with static members
        "consumer",
        ((consumer_member.ConsumerClient, "on_fenced", consumer_bugs.ignore_fencing),),
    ),
    *KIP_RULE_BUGS,  # the issue-23 audit (kip_rules.py; rules in scenarios/check/kip_contracts.py)
    *AUDIT28_BUGS,  # the round-28 audit (audit28.py; docs/chaos.md)
    *COORDINATOR_CONFIG_BUGS,  # [coordinator] settings (coordinator_config.py; docs/chaos.md)
    *FENCING_BUGS,  # KIP-345 fencing of a SyncGroup (fencing.py; fencing_contracts.py)
    *RACK_BUGS,  # KIP-881's sticky rack preference (racks.py; rack_contracts.py)
    *PARKED_SYNC_BUGS,  # a parked SyncGroup answered (parked_sync.py; parked_sync_contracts.py)
)


def by_name(name: str) -> PlantedBug:
    """The catalogue entry called ``name`` (KeyError if none)."""
    for bug in CATALOGUE:
        if bug.name == name:
            return bug
    raise KeyError(name)


@dataclass(frozen=True)
class Detection:
    """``runs``: runs made; ``found_at``: index of the first failing run (``None``: not found
    within the budget); ``invariant``: its first new violation; ``new``: every new violation
    name of that run (end-of-run ``liveness`` comes before the protocol checkers' names)."""

    bug: str
    runs: int
    found_at: int | None
    invariant: str | None
    new: tuple[str, ...] = ()


def chaos_config(
    bug: PlantedBug, index: int, members: int = 5, referee: str | None = None
) -> ChaosConfig:
    """The chaos config run ``index`` of :func:`detect` uses: ``members`` members, 10 virtual
    minutes of faults; Connect protocols cycled over ``bug.protocols``, or a Streams or
    consumer campaign (``kind = "streams"``/``"consumer"``); judged by ``referee`` too when
    given (``"kafka"``)."""
    if bug.kind in ("streams", "consumer"):
        return ChaosConfig(
            members=(members, members), duration_ms=600_000, kind=bug.kind, referee=referee
        )
    protocol = bug.protocols[index % len(bug.protocols)]
    return ChaosConfig(
        members=(members, members), protocols=(protocol,), duration_ms=600_000, referee=referee
    )


def detect(
    bug: PlantedBug, runs: int, *, seed: int = 1, members: int = 5, referee: str | None = None
) -> Detection:
    """Run chaos runs ``0 .. runs-1`` of campaign ``seed`` (:func:`chaos_config`, judged by
    ``referee`` too when given) with ``bug`` applied; stop at the first new violation."""
    with bug.applied():
        for i in range(runs):
            outcome = run_one(chaos_config(bug, i, members, referee), seed, i)
            if outcome.failed:
                invariant = outcome.first_new[0] if outcome.first_new else None
                return Detection(bug.name, i + 1, i, invariant, tuple(outcome.new_violations))
    return Detection(bug.name, runs, None, None)
