"""Property: random join/sync/heartbeat/leave/sleep sequences from a few members.

Never raises; every logged transition is in Kafka's table; every request is answered exactly
once, or was superseded by a later request of the same member (Kafka replaces the parked
future), or is a SyncGroup parked by a member that then left; after a long silence the group
drains to Empty with no join/sync timer armed.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from coordinator import VALID_PREVIOUS_STATES, CoordinatorConfig, GroupState
from protocol.group import (
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from tests.coordinator.harness import COMPATIBLE, EAGER, SESSIONED, CoordinatorContext

STATES = {s.value: s for s in GroupState}
PROTOCOLS = [SESSIONED, COMPATIBLE, EAGER, (("default", b"D"), ("sessioned", b"S"))]
WORKERS = ["w1", "w2", "w3", "w4"]
ACTIONS = ["join"] * 4 + ["sync", "sync_leader", "sync_member", "hb", "hb_member"] * 2
ACTIONS += ["leave", "sleep", "sleep", "sleep"] + ["rejoin", "sync_leader"] * 3


@st.composite
def configs(draw: st.DrawFn) -> CoordinatorConfig:
    return CoordinatorConfig(
        initial_rebalance_delay_ms=draw(st.sampled_from([0, 3000])),
        max_size=draw(st.sampled_from([2, 3, 100])),
        protocol_tie_break=draw(st.sampled_from(["java", "first_listed"])),
        new_member_join_timeout_ms=draw(st.sampled_from([20_000, 300_000])),
    )


@pytest.mark.slow  # a deep property run (~8 s): `pytest -m slow`, and in .ci/run
@settings(max_examples=max(300, settings().max_examples))
@given(config=configs(), data=st.data())
def test_random_sequences(config: CoordinatorConfig, data: st.DataObject) -> None:
    ctx = CoordinatorContext(config=config)
    serial = itertools.count()
    known_ids: list[str] = []
    replies = []
    steps = data.draw(st.integers(min_value=1, max_value=40), label="steps")

    def pick_id() -> str:
        if known_ids and data.draw(st.booleans()):
            return data.draw(st.sampled_from(known_ids))
        return data.draw(st.sampled_from(["", "", "w9-stale"]))

    def pick_generation() -> int:
        g = ctx.generation
        return data.draw(st.sampled_from([g, g, g, g - 1, g + 1]))

    def send(worker: str, request) -> None:
        # A unique source per request routes each response to exactly its request.
        replies.append(ctx.send(f"{worker}#{next(serial)}", request))

    rnd = data.draw(st.randoms(use_true_random=False), label="rnd")
    unload_step = rnd.randrange(40) if rnd.random() < 0.2 else None
    for step in range(steps):
        action = "unload" if step == unload_step else data.draw(st.sampled_from(ACTIONS))
        worker = data.draw(st.sampled_from(WORKERS))
        if action == "join":
            send(
                worker,
                JoinGroupRequest(
                    group_id=ctx.group_id,
                    member_id=pick_id(),
                    protocol_type=data.draw(st.sampled_from(["connect", "connect", "x"])),
                    protocols=data.draw(st.sampled_from(PROTOCOLS)),
                    session_timeout_ms=data.draw(st.sampled_from([1000, 6000, 10_000, 30_000])),
                    rebalance_timeout_ms=data.draw(st.sampled_from([6000, 20_000, 60_000])),
                    client_id=worker,
                    api_version=data.draw(st.sampled_from([3, 9, 9])),
                ),
            )
        elif action == "sync":
            member_id = pick_id()
            assignments = ()
            if data.draw(st.booleans()):
                assignments = tuple(
                    (mid, mid.encode())
                    for mid in data.draw(
                        st.lists(st.sampled_from(known_ids or ["w9-stale"]), max_size=4)
                    )
                )
            send(
                worker,
                SyncGroupRequest(
                    group_id=ctx.group_id,
                    member_id=member_id,
                    generation_id=pick_generation(),
                    protocol_name=data.draw(st.sampled_from([None, None, "sessioned", "x"])),
                    assignments=assignments,
                ),
            )
        elif action == "rejoin":
            # A well-behaved client rejoining with the id it was given.
            ids = ctx.coordinator.pending_member_ids() + [
                m.member_id for m in ctx.coordinator.members()
            ]
            ids = [mid for mid in ids if mid in known_ids]  # ids clients were told
            if not ids:
                continue
            member_id = data.draw(st.sampled_from(ids))
            view = ctx.coordinator.member(member_id)
            send(
                worker,
                JoinGroupRequest(
                    ctx.group_id,
                    member_id,
                    "connect",
                    view.protocols if view else data.draw(st.sampled_from(PROTOCOLS)),
                    10_000,
                    data.draw(st.sampled_from([6000, 20_000, 60_000])),
                    client_id=worker,
                ),
            )
        elif action in ("sync_leader", "sync_member", "hb_member"):
            # A well-behaved client: a real member at the current generation.
            members = [m.member_id for m in ctx.coordinator.members()]
            if action == "sync_leader" and ctx.coordinator.leader_id:
                member_id = ctx.coordinator.leader_id
            elif members:
                member_id = data.draw(st.sampled_from(members))
            else:
                continue
            if action == "hb_member":
                replies.append(ctx.heartbeat(f"{worker}#{next(serial)}", member_id))
            else:
                assignments = tuple((mid, mid.encode()) for mid in members[1:])
                send(
                    worker,
                    SyncGroupRequest(
                        ctx.group_id, member_id, ctx.generation, assignments=assignments
                    ),
                )
        elif action == "hb":
            replies.append(ctx.heartbeat(f"{worker}#{next(serial)}", pick_id(), pick_generation()))
        elif action == "leave":
            ids = data.draw(st.lists(st.sampled_from(known_ids + [""]), max_size=2))
            send(worker, LeaveGroupRequest(ctx.group_id, tuple(ids)))
        elif action == "sleep":
            ctx.sleep(data.draw(st.sampled_from([0, 1, 1000, 3000, 10_000, 60_000, 300_000])))
        else:
            assert action == "unload", action
            ctx.unload()
        # Learn member ids the way clients do: from responses.
        for reply in replies:
            mid = getattr(reply.response, "member_id", "") if reply.done else ""
            if mid and mid not in known_ids:
                known_ids.append(mid)

    # Silence: every parked request is answered, every session expires.
    for _ in range(4):
        ctx.sleep(700_000)

    for state in sorted({f["to"] for f in ctx.log_kinds("group_state")}):
        event(f"visited {state}")
    event(f"steps {steps // 10 * 10}+")
    for kind_fields in ctx.log_kinds("group_state"):
        assert STATES[kind_fields["from"]] in VALID_PREVIOUS_STATES[STATES[kind_fields["to"]]]
    generations = [f["generation"] for f in ctx.log_kinds("generation")]
    assert generations == sorted(set(generations))

    for i, reply in enumerate(replies):
        if reply.done:
            continue
        req = reply.request
        later = [r.request for r in replies[i + 1 :]]
        superseded = any(
            type(r) is type(req) and r.member_id == req.member_id and req.member_id for r in later
        )
        left = isinstance(req, SyncGroupRequest) and any(
            isinstance(r, LeaveGroupRequest) and req.member_id in r.member_ids for r in later
        )
        assert superseded or left, f"never answered: {req}"
    # each response went to exactly one waiting request (harness asserts a waiter exists)
    assert sum(r.done for r in replies) == len(ctx.sent)

    assert ctx.state in (GroupState.EMPTY, GroupState.DEAD)
    if ctx.state is GroupState.EMPTY:
        assert ctx.coordinator.members() == [] and ctx.coordinator.pending_member_ids() == []
        assert "join" not in ctx.timers and "sync" not in ctx.timers
