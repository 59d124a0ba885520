"""Stateful property: a hypothesis ``RuleBasedStateMachine`` over the pure coordinator.

Workers w1..w5 behave like clients that remember what the coordinator told them (member id,
generation, leadership, the leader's member list) and forget it when they crash. A worker is
either *diligent* (it reacts the way Kafka's ``AbstractCoordinator`` does: rejoins after
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, fencing errors and NOT_COORDINATOR, sends SyncGroup
after a successful JoinGroup, and heartbeats every 3 s while time passes) or *erratic* (it only
does what the rules make it do). A diligent worker's follow-up requests are in flight until
the ``deliver`` rule or the passing of time sends them, so other rules can come in between.

Rules: JoinGroup (as a new member or with the known id; protocol lists are suffixes of
Connect's ``[static, sessioned, compatible, default]`` so the vote moves), SyncGroup (a leader
with assignments, a follower without), Heartbeat, LeaveGroup, crash (the worker goes silent;
its parked requests stay parked; it restarts diligent or erratic), deliver, advancing the
virtual clock (due timers fire in (deadline, sequence) order), and failover (unload, then load
from ``stored_record()``, sometimes with a smaller ``group.max.size``).

Invariants after every step: no request raises; every logged transition is in Kafka's table
and starts where the last one ended (a ``group_loaded`` restarts the chain at its state);
generations go up by one per completed join and only go down to the stored record's
generation on a failover; the leader is a member when there are members; each member has at
most one parked JoinGroup and one parked SyncGroup (the coordinator's flags match a live
request, and no single coordinator call answers two of one kind for one member); in
CompletingRebalance and Stable every member's protocol list contains the group's protocol.

``HYPOTHESIS_PROFILE=long`` runs longer programs (and the profile's larger ``max_examples``).
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from coordinator import VALID_PREVIOUS_STATES, CoordinatorConfig, GroupRecord, GroupState
from protocol.effects import Effect, Send
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from tests.coordinator.harness import CoordinatorContext, Reply

E = ErrorCode
STATES = {s.value: s for s in GroupState}
WORKERS = ("w1", "w2", "w3", "w4", "w5")
CONNECT = ("static", "sessioned", "compatible", "default")
SUFFIXES = [tuple((name, name[:2].encode()) for name in CONNECT[i:]) for i in range(4)]
SLEEPS = [0, 1, 100, 1_000, 3_000, 6_000, 10_000, 60_000, 300_000]
HEARTBEAT_INTERVAL_MS = 3_000
#: Follow-up requests one delivery may chain (a guard against a livelock in the model clients).
MAX_FOLLOW_UPS = 40

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"


class CheckedContext(CoordinatorContext):
    """Checks every coordinator call's effects before carrying them out: no call answers two
    JoinGroups, two SyncGroups or two Heartbeats of one member."""

    def apply(self, effects: list[Effect]) -> None:
        answered: set[tuple[type, str]] = set()
        for effect in effects:
            if not isinstance(effect, Send):
                continue
            message = effect.message
            waiting = self._outstanding.get((effect.dest, type(message)))
            assert waiting, effect
            request = waiting[-1].request
            if isinstance(message, JoinGroupResponse):
                mid = message.member_id or request.member_id
            elif isinstance(message, (SyncGroupResponse, HeartbeatResponse)):
                mid = request.member_id
            else:
                continue
            if mid:
                key = (type(message), mid)
                assert key not in answered, (key, effects)
                answered.add(key)
        super().apply(effects)


class Client:
    """What one worker process knows (reset by a crash)."""

    def __init__(self, name: str, incarnation: int, diligent: bool) -> None:
        self.name = name
        self.incarnation = incarnation
        self.diligent = diligent
        self.member_id = ""
        self.generation = -1
        self.protocols = SUFFIXES[1]
        self.session_timeout_ms = 10_000
        self.rebalance_timeout_ms = 60_000
        self.leader = False
        self.join_members: tuple[str, ...] = ()

    def reset(self) -> None:
        self.member_id = ""
        self.generation = -1
        self.leader = False


class CoordinatorMachine(RuleBasedStateMachine):
    ctx: CoordinatorContext

    @initialize(
        delay=st.sampled_from([0, 3_000]),
        max_size=st.sampled_from([3, 100]),
        tie_break=st.sampled_from(["java", "first_listed"]),
        new_member_timeout=st.sampled_from([20_000, 300_000]),
        diligent=st.lists(st.booleans(), min_size=len(WORKERS), max_size=len(WORKERS)),
    )
    def setup(
        self,
        delay: int,
        max_size: int,
        tie_break: str,
        new_member_timeout: int,
        diligent: list[bool],
    ) -> None:
        config = CoordinatorConfig(
            initial_rebalance_delay_ms=delay,
            max_size=max_size,
            protocol_tie_break=tie_break,
            new_member_join_timeout_ms=new_member_timeout,
        )
        self.ctx = CheckedContext(config=config)
        self.clients = {w: Client(w, 0, d) for w, d in zip(WORKERS, diligent, strict=True)}
        self.serial = itertools.count()
        self.waiting: list[tuple[Reply, str, int]] = []  # unanswered, with worker/incarnation
        self.in_flight: list[tuple[str, int, Any]] = []  # worker, incarnation, request
        self.logs_seen = 0
        self.tracked_state = GroupState.EMPTY
        self.log_generation = 0
        self.last_generation = 0
        self.loaded: tuple[GroupRecord | None] | None = None

    # ------------------------------------------------------------------ plumbing

    def _send(self, worker: str, request: Any) -> None:
        self._send_one(worker, request)
        self._settle()

    def _send_one(self, worker: str, request: Any) -> None:
        # A unique address per request routes each response to exactly that request.
        reply = self.ctx.send(f"{worker}#{next(self.serial)}", request)
        self.waiting.append((reply, worker, self.clients[worker].incarnation))

    def _settle(self) -> None:
        """Hand every newly answered response to its client (if it has not crashed since);
        a diligent client's follow-up request goes in flight."""
        still: list[tuple[Reply, str, int]] = []
        for reply, worker, incarnation in self.waiting:
            if not reply.done:
                still.append((reply, worker, incarnation))
                continue
            client = self.clients[worker]
            if client.incarnation == incarnation:
                follow_up = _learn(client, reply.response, self.ctx.group_id)
                if follow_up is not None and client.diligent:
                    self.in_flight.append((worker, incarnation, follow_up))
        self.waiting = still

    def _deliver(self, limit: int = MAX_FOLLOW_UPS) -> None:
        """Send in-flight follow-ups (and those their answers cause), at most ``limit``."""
        while self.in_flight and limit > 0:
            worker, incarnation, request = self.in_flight.pop(0)
            if self.clients[worker].incarnation == incarnation:
                limit -= 1
                self._send(worker, request)

    # ------------------------------------------------------------------ rules

    @rule(
        worker=st.sampled_from(WORKERS),
        as_new=st.booleans(),
        change=st.sampled_from([None, None, *range(4)]),
        api_version=st.sampled_from([9, 9, 3]),
        session=st.sampled_from([6_000, 10_000, 30_000]),
        rebalance=st.sampled_from([6_000, 20_000, 60_000]),
    )
    def join(
        self,
        worker: str,
        as_new: bool,
        change: int | None,
        api_version: int,
        session: int,
        rebalance: int,
    ) -> None:
        client = self.clients[worker]
        if change is not None:  # an upgrade or downgrade of the worker's protocol
            client.protocols = SUFFIXES[change]
        client.session_timeout_ms = session
        client.rebalance_timeout_ms = rebalance
        if as_new:
            client.member_id = ""
        event(f"join {'known' if client.member_id else 'new'}")
        self._send(worker, _join_request(client, self.ctx.group_id, api_version))

    @rule(worker=st.sampled_from(WORKERS), drop=st.integers(min_value=0, max_value=5))
    def sync(self, worker: str, drop: int) -> None:
        client = self.clients[worker]
        event(f"sync {'leader' if client.leader else 'follower'}")
        self._send(worker, _sync_request(client, self.ctx.group_id, drop))

    @rule(worker=st.sampled_from(WORKERS), skew=st.sampled_from([0, 0, 0, -1, 1]))
    def heartbeat(self, worker: str, skew: int) -> None:
        client = self.clients[worker]
        self._send(
            worker,
            HeartbeatRequest(
                group_id=self.ctx.group_id,
                member_id=client.member_id,
                generation_id=client.generation + skew,
            ),
        )

    @rule(worker=st.sampled_from(WORKERS))
    def leave(self, worker: str) -> None:
        client = self.clients[worker]
        self._send(worker, LeaveGroupRequest(self.ctx.group_id, (client.member_id,)))
        client.reset()

    @rule(limit=st.sampled_from([1, 2, MAX_FOLLOW_UPS]))
    def deliver(self, limit: int) -> None:
        self._deliver(limit)

    @rule(worker=st.sampled_from(WORKERS), diligent=st.booleans())
    def crash(self, worker: str, diligent: bool) -> None:
        # The process dies: no LeaveGroup, its parked requests are never read. It restarts
        # (diligent or erratic) with no member id.
        self.clients[worker] = Client(worker, self.clients[worker].incarnation + 1, diligent)

    @rule(ms=st.sampled_from(SLEEPS))
    def advance_time(self, ms: int) -> None:
        # Diligent members with a generation heartbeat every 3 s meanwhile.
        end = self.ctx.now_ms + ms
        # What the last interval's answers cause stays in flight.
        while self.ctx.now_ms < end:
            self._deliver()
            self.ctx.sleep(min(HEARTBEAT_INTERVAL_MS, end - self.ctx.now_ms))
            self._settle()
            for worker, client in self.clients.items():
                if client.diligent and client.member_id and client.generation >= 0:
                    self._send(
                        worker,
                        HeartbeatRequest(self.ctx.group_id, client.member_id, client.generation),
                    )

    @rule(max_size=st.sampled_from([None, None, None, 2]))
    def failover(self, max_size: int | None) -> None:
        state = self.ctx.state
        event(f"failover from {state.value}")
        config = None
        if max_size is not None:
            config = CoordinatorConfig(
                initial_rebalance_delay_ms=self.ctx.config.initial_rebalance_delay_ms,
                max_size=max_size,
                protocol_tie_break=self.ctx.config.protocol_tie_break,
                new_member_join_timeout_ms=self.ctx.config.new_member_join_timeout_ms,
            )
        parked_before = [r for r, _, _ in self.waiting]
        record = self.ctx.failover(config)
        self.loaded = (record,)
        # What the old coordinator still owed a request was answered by unload, or dropped.
        for reply in parked_before:
            if reply.done:
                assert reply.error is E.NOT_COORDINATOR, reply
        event(f"loaded {self.ctx.state.value}")
        self._settle()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def transitions_are_legal_and_generations_monotonic(self) -> None:
        if not hasattr(self, "ctx"):
            return
        logs = self.ctx.logs
        for _, log in logs[self.logs_seen :]:
            fields = log.fields
            if log.kind == "group_state":
                source, target = STATES[fields["from"]], STATES[fields["to"]]
                assert source is self.tracked_state, (source, self.tracked_state)
                assert source in VALID_PREVIOUS_STATES[target], (source, target)
                self.tracked_state = target
                event(f"state {target.value}")
            elif log.kind == "generation":
                assert fields["generation"] == self.log_generation + 1, fields
                self.log_generation = fields["generation"]
            elif log.kind == "group_loaded":
                assert self.tracked_state is GroupState.DEAD  # the unload came first
                assert self.loaded is not None
                (record,) = self.loaded
                stored = record.generation if record is not None else 0
                assert fields["generation"] == stored <= self.log_generation, fields
                self.log_generation = stored
                self.tracked_state = STATES[fields["state"]]
        self.logs_seen = len(logs)
        c = self.ctx.coordinator
        assert c.state is self.tracked_state
        generation = c.generation_id
        if self.loaded is not None:
            (record,) = self.loaded
            assert generation == (record.generation if record is not None else 0)
            self.loaded = None
        else:
            assert generation >= self.last_generation
        self.last_generation = generation
        record = c.stored_record()
        assert record is None or record.generation <= generation

    @invariant()
    def leader_and_protocols(self) -> None:
        if not hasattr(self, "ctx"):
            return
        c = self.ctx.coordinator
        members = c.members()
        ids = {m.member_id for m in members}
        if members:
            assert c.leader_id in ids
            assert sum(m.is_leader for m in members) == 1
        else:
            assert c.leader_id is None
        assert not ids & set(c.pending_member_ids())
        if c.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            protocol = c.protocol_name
            assert protocol is not None and members
            for m in members:
                assert protocol in [name for name, _ in m.protocols], (protocol, m)
                assert m.protocol_type == c.protocol_type
        elif c.state is GroupState.EMPTY:
            assert not members and c.protocol_name is None

    @invariant()
    def at_most_one_parked_join_and_sync_per_member(self) -> None:
        if not hasattr(self, "ctx"):
            return
        outstanding = [r for r, _, _ in self.waiting]
        for m in self.ctx.coordinator.members():
            if m.awaiting_join:
                live = [
                    r
                    for r in outstanding
                    if r.source == m.source and isinstance(r.request, JoinGroupRequest)
                ]
                assert len(live) == 1, (m, live)
            if m.awaiting_sync:
                syncs = [
                    r
                    for r in self.ctx.outstanding()
                    if isinstance(r.request, SyncGroupRequest)
                    and r.request.member_id == m.member_id
                ]
                assert syncs and not syncs[-1].done, m


def _join_request(client: Client, group_id: str, api_version: int = 9) -> Any:
    return JoinGroupRequest(
        group_id=group_id,
        member_id=client.member_id,
        protocol_type="connect",
        protocols=client.protocols,
        session_timeout_ms=client.session_timeout_ms,
        rebalance_timeout_ms=client.rebalance_timeout_ms,
        client_id=client.name,
        api_version=api_version,
    )


def _sync_request(client: Client, group_id: str, drop: int = -1) -> Any:
    assignments: tuple[tuple[str, bytes], ...] = ()
    if client.leader:
        # A leader's assignment for the members it was told about (maybe forgetting one).
        assignments = tuple(
            (mid, f"{mid}@{client.generation}".encode())
            for i, mid in enumerate(client.join_members)
            if i != drop
        )
    return SyncGroupRequest(group_id, client.member_id, client.generation, assignments=assignments)


_REJOIN_ON = {
    E.REBALANCE_IN_PROGRESS,
    E.ILLEGAL_GENERATION,
    E.UNKNOWN_MEMBER_ID,
    E.NOT_COORDINATOR,
    E.COORDINATOR_NOT_AVAILABLE,
}


def _learn(client: Client, response: Any, group_id: str) -> Any:
    """Kafka's ``AbstractCoordinator`` response handling, reduced to what the rules use.

    Returns the request a diligent client sends next, or ``None``."""
    error = response.error
    if isinstance(response, JoinGroupResponse):
        if error is E.MEMBER_ID_REQUIRED:
            client.member_id, client.generation = response.member_id, -1
            return _join_request(client, group_id)
        if error is E.NONE:
            client.member_id = response.member_id
            client.generation = response.generation_id
            client.leader = response.leader == response.member_id
            client.join_members = tuple(m.member_id for m in response.members)
            return _sync_request(client, group_id)
        if error is E.UNKNOWN_MEMBER_ID:
            client.reset()
        return _join_request(client, group_id) if error in _REJOIN_ON else None
    if error is E.UNKNOWN_MEMBER_ID:
        client.reset()
    elif error is E.ILLEGAL_GENERATION:
        client.generation = -1
    if isinstance(response, (SyncGroupResponse, HeartbeatResponse)) and error in _REJOIN_ON:
        return _join_request(client, group_id)
    return None


CoordinatorMachine.TestCase.settings = settings(
    max_examples=max(300, settings().max_examples),
    stateful_step_count=120 if LONG else 50,
    deadline=None,
)
TestCoordinatorStateful = CoordinatorMachine.TestCase
# a deep stateful run (~7 s): `pytest -m slow`, and in .ci/run
TestCoordinatorStateful.pytestmark = [pytest.mark.slow]  # type: ignore[attr-defined]
