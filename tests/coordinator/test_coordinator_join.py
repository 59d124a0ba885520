"""JoinGroup: the request x state table (``GroupMetadataManager#classicGroupJoin``), KIP-394,
the initial delay, join completion, leader choice, session-timeout bounds, group.max.size."""

from __future__ import annotations

import pytest

from coordinator import GroupState
from protocol.group import ErrorCode, JoinGroupResponse
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash
from tests.coordinator.harness import (
    COMPATIBLE,
    EAGER,
    SESSIONED,
    CoordinatorContext,
    listed_member_ids,
)

S = GroupState
E = ErrorCode


def _keep_alive(ctx: CoordinatorContext, ms: int, *members: tuple[str, str]) -> None:
    """Sleep ``ms`` while the given (source, member id) pairs heartbeat every 3 s."""
    end = ctx.now_ms + ms
    while ctx.now_ms < end:
        for source, mid in members:
            if ctx.coordinator.member(mid) is not None:
                ctx.heartbeat(source, mid)
        ctx.sleep(min(3000, end - ctx.now_ms))


# --------------------------------------------------------------------------- new member


def test_new_member_in_empty_group_kip394() -> None:
    ctx = CoordinatorContext()
    first = ctx.join("w1")
    assert first.error is E.MEMBER_ID_REQUIRED
    mid = first.response.member_id
    assert mid.startswith("w1-") and len(mid) == len("w1-") + 36
    assert ctx.coordinator.pending_member_ids() == [mid]
    assert ctx.timers[f"heartbeat:{mid}"][0] == 10_000  # the request's session timeout
    assert ctx.state is S.EMPTY and ctx.coordinator.members() == []

    second = ctx.join("w1", member_id=mid)
    assert not second.done
    assert ctx.state is S.PREPARING_REBALANCE
    (view,) = ctx.coordinator.members()
    assert view.member_id == mid and view.is_new and view.awaiting_join and view.is_leader
    assert ctx.timers[f"heartbeat:{mid}"][0] == 300_000  # KAFKA-7610 new-member timeout
    assert ctx.log_kinds("member_added") == [{"member": "w1", "member_id": mid}]

    ctx.sleep(3000)
    response = second.response
    assert response == JoinGroupResponse(
        E.NONE,
        generation_id=1,
        protocol_type="connect",
        protocol_name="sessioned",
        leader=mid,
        member_id=mid,
        members=response.members,
    )
    assert [(m.member_id, m.metadata) for m in response.members] == [(mid, b"S")]
    assert ctx.coordinator.members()[0].is_new is False
    assert ctx.timers[f"heartbeat:{mid}"][0] == 13_000
    assert ctx.timers["sync"][0] == 63_000


def test_new_member_below_v4_is_added_at_once() -> None:
    ctx = CoordinatorContext()
    reply = ctx.join("w1", api_version=3)
    assert not reply.done and ctx.state is S.PREPARING_REBALANCE
    ctx.sleep(3000)
    assert reply.error is E.NONE and reply.response.member_id.startswith("w1-")


def test_new_member_in_preparing_rebalance_is_parked_until_completion() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    lead = ctx.join("w1", member_id=ids["w1"])  # leader rejoin → rebalance
    assert ctx.state is S.PREPARING_REBALANCE and not lead.done
    w3_id, w3 = ctx.join_new("w3")
    assert not w3.done and ctx.state is S.PREPARING_REBALANCE
    w2 = ctx.join("w2", member_id=ids["w2"])  # last one: completes at once
    assert ctx.state is S.COMPLETING_REBALANCE
    assert all(r.error is E.NONE and r.response.generation_id == 2 for r in (lead, w2, w3))
    assert {m.member_id for m in lead.response.members} == {*ids.values(), w3_id}


def test_new_member_in_completing_rebalance_triggers_rebalance() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2"])
    follower = ctx.sync("w2", ids["w2"])
    assert not follower.done
    _, w3 = ctx.join_new("w3")
    assert ctx.state is S.PREPARING_REBALANCE
    assert follower.error is E.REBALANCE_IN_PROGRESS
    assert "sync" not in ctx.timers and not w3.done


def test_new_member_in_stable_triggers_rebalance() -> None:
    ctx = CoordinatorContext()
    ctx.stable_group(["w1", "w2"])
    ctx.join_new("w3")
    assert ctx.transitions()[-1] == ("Stable", "PreparingRebalance")
    assert ctx.timers["join"][0] == ctx.now_ms + 60_000


def test_join_in_dead_group() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1"])
    ctx.unload()
    assert ctx.join("w2").error is E.COORDINATOR_NOT_AVAILABLE
    assert ctx.join("w1", member_id=ids["w1"]).error is E.COORDINATOR_NOT_AVAILABLE


# --------------------------------------------------------------------------- known member


def test_known_member_in_empty_group_gets_unknown_member_id() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1"])
    ctx.leave("w1", ids["w1"])
    ctx.sleep(0)
    assert ctx.state is S.EMPTY and ctx.generation == 2
    reply = ctx.join("w1", member_id=ids["w1"])
    assert reply.error is E.UNKNOWN_MEMBER_ID and reply.response.member_id == ids["w1"]


def test_known_member_id_for_a_group_never_created() -> None:
    ctx = CoordinatorContext()
    assert ctx.join("w1", member_id="w1-ghost").error is E.UNKNOWN_MEMBER_ID


def test_known_member_in_preparing_rebalance_is_updated_and_parked() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2", "w3"])
    ctx.join("w2", member_id=ids["w2"], protocols=COMPATIBLE, rebalance_timeout_ms=90_000)
    assert ctx.state is S.PREPARING_REBALANCE
    view = ctx.coordinator.member(ids["w2"])
    assert view.protocols == COMPATIBLE and view.rebalance_timeout_ms == 90_000
    assert view.awaiting_join
    r1 = ctx.join("w1", member_id=ids["w1"])
    assert not r1.done
    r3 = ctx.join("w3", member_id=ids["w3"])
    assert r1.done and r3.done and r1.response.protocol_name == "compatible"
    assert ctx.timers["sync"][0] == ctx.now_ms + 90_000  # max rebalance timeout


def test_known_member_in_completing_rebalance_same_metadata_gets_current_generation() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2"])
    leader = ctx.coordinator.leader_id
    follower_id = next(mid for mid in ids.values() if mid != leader)
    follower_src = next(s for s, mid in ids.items() if mid == follower_id)
    leader_src = next(s for s, mid in ids.items() if mid == leader)
    again = ctx.join(leader_src, member_id=leader)
    assert again.error is E.NONE and again.response.generation_id == 1
    assert {m.member_id for m in again.response.members} == set(ids.values())
    f = ctx.join(follower_src, member_id=follower_id)
    assert f.error is E.NONE and f.response.members == () and f.response.leader == leader
    assert ctx.state is S.COMPLETING_REBALANCE


def test_known_member_in_completing_rebalance_new_metadata_rebalances() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2"])
    reply = ctx.join("w2", member_id=ids["w2"], protocols=EAGER)
    assert not reply.done and ctx.state is S.PREPARING_REBALANCE


def test_stable_leader_join_always_rebalances() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    leader = ctx.coordinator.leader_id
    src = next(s for s, mid in ids.items() if mid == leader)
    reply = ctx.join(src, member_id=leader)  # same metadata
    assert not reply.done and ctx.state is S.PREPARING_REBALANCE


def test_stable_follower_same_metadata_gets_current_generation() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    follower = next(mid for mid in ids.values() if mid != ctx.coordinator.leader_id)
    src = next(s for s, mid in ids.items() if mid == follower)
    reply = ctx.join(src, member_id=follower)
    assert reply.error is E.NONE and reply.response.generation_id == 1
    assert reply.response.members == () and ctx.state is S.STABLE


def test_stable_follower_new_metadata_rebalances() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    follower = next(mid for mid in ids.values() if mid != ctx.coordinator.leader_id)
    src = next(s for s, mid in ids.items() if mid == follower)
    ctx.join(src, member_id=follower, protocols=COMPATIBLE)
    assert ctx.state is S.PREPARING_REBALANCE


def test_unknown_member_id_in_existing_group() -> None:
    ctx = CoordinatorContext()
    ctx.stable_group(["w1"])
    reply = ctx.join("w9", member_id="w9-nope")
    assert reply.error is E.UNKNOWN_MEMBER_ID and reply.response.member_id == "w9-nope"


# --------------------------------------------------------------------------- KIP-394 pending


def test_pending_member_blocks_completion_until_it_rejoins() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    ctx.join("w1", member_id=ids["w1"])
    pending = ctx.join("w3")
    assert pending.error is E.MEMBER_ID_REQUIRED
    ctx.join("w2", member_id=ids["w2"])
    assert ctx.state is S.PREPARING_REBALANCE  # all members joined, one pending
    w3 = ctx.join("w3", member_id=pending.response.member_id)
    assert ctx.state is S.COMPLETING_REBALANCE and w3.error is E.NONE


def test_pending_member_that_never_returns_expires_then_join_completes() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    r1 = ctx.join("w1", member_id=ids["w1"])
    pending = ctx.join("w3", session_timeout_ms=7000)
    r2 = ctx.join("w2", member_id=ids["w2"])
    start = ctx.now_ms
    ctx.sleep(6999)
    assert not r1.done
    ctx.sleep(1)
    assert r1.done and r2.done and ctx.now_ms == start + 7000
    assert ctx.coordinator.pending_member_ids() == []
    assert pending.response.member_id not in {m.member_id for m in r1.response.members}
    assert ctx.log_kinds("member_removed") == []  # a pending member never was a member


# --------------------------------------------------------------------------- initial delay


def test_first_generation_waits_the_initial_delay_even_when_all_joined() -> None:
    ctx = CoordinatorContext()
    _, reply = ctx.join_new("w1")
    ctx.sleep(2999)
    assert not reply.done and ctx.state is S.PREPARING_REBALANCE
    ctx.sleep(1)
    assert reply.done and ctx.now_ms == 3000


def test_initial_delay_extends_while_members_arrive() -> None:
    ctx = CoordinatorContext()
    _, r1 = ctx.join_new("w1")  # t=0
    ctx.sleep(1000)
    ctx.join_new("w2")  # t=1000: newMemberAdded
    ctx.sleep(2000)  # t=3000: extended to 6000
    assert not r1.done and ctx.timers["join"][0] == 6000
    ctx.sleep(2000)
    ctx.join_new("w3")  # t=5000
    ctx.sleep(1000)  # t=6000: extended to 9000
    assert not r1.done and ctx.timers["join"][0] == 9000
    ctx.sleep(2999)
    assert not r1.done
    ctx.sleep(1)
    assert r1.done and ctx.now_ms == 9000 and len(r1.response.members) == 3


def test_initial_delay_is_capped_by_the_rebalance_timeout() -> None:
    ctx = CoordinatorContext()
    _, r1 = ctx.join_new("w1", rebalance_timeout_ms=10_000)
    n = 2
    while not r1.done:
        ctx.sleep(1500)
        if not r1.done:
            ctx.join_new(f"w{n}", rebalance_timeout_ms=10_000)
            n += 1
    # 3000 + 3000 + 3000 + 1000: remaining 7000 → 4000 → 1000 → 0
    assert [t for t, key in ctx.fired if key == "join"] == [3000, 6000, 9000, 10_000]
    assert r1.answered_ms == 10_000


def test_initial_delay_zero_completes_on_the_first_timer() -> None:
    ctx = CoordinatorContext(initial_rebalance_delay_ms=0)
    _, r1 = ctx.join_new("w1")
    assert not r1.done  # previousState == Empty refuses early completion
    ctx.sleep(0)
    assert r1.done and ctx.now_ms == 0


# --------------------------------------------------------------------------- completion


def test_join_timeout_removes_members_that_did_not_rejoin() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2", "w3"])
    start = ctx.now_ms
    r2 = ctx.join("w2", member_id=ids["w2"], protocols=COMPATIBLE)
    r1 = ctx.join("w1", member_id=ids["w1"])
    # w3 keeps heartbeating (REBALANCE_IN_PROGRESS) but never rejoins.
    _keep_alive(ctx, 59_999, ("w3", ids["w3"]))
    assert not r1.done
    ctx.sleep(1)
    assert r1.done and r1.answered_ms == start + 60_000
    assert ctx.removed() == [(ids["w3"], "not_rejoined")]
    assert f"heartbeat:{ids['w3']}" not in ctx.timers
    gen = ctx.log_kinds("generation")[-1]
    assert gen["generation"] == 2 and sorted(gen["members"]) == ["w1", "w2"]
    assert gen["protocol"] == "compatible" and r2.response.protocol_name == "compatible"


def test_leader_falls_back_to_first_rejoined_member_in_java_order() -> None:
    ids_in = ["w1-0", "w2-0", "w3-1"]
    assert hash_order(ids_in, string_hash) == ["w3-1", "w2-0", "w1-0"]
    ctx = CoordinatorContext(member_ids=listed_member_ids(ids_in))
    ids = ctx.stable_group(["w1", "w2", "w3"])
    assert ctx.coordinator.leader_id == "w1-0"  # first joiner
    r2 = ctx.join("w2", member_id=ids["w2"], protocols=COMPATIBLE)
    r3 = ctx.join("w3", member_id=ids["w3"])
    _keep_alive(ctx, 60_000, ("w1", ids["w1"]))
    assert ctx.removed() == [("w1-0", "not_rejoined")]
    # w3-1 comes first in the member map's iteration order, so it leads.
    assert ctx.coordinator.leader_id == "w3-1" == r2.response.leader
    assert [m.member_id for m in r3.response.members] == ["w3-1", "w2-0"]
    assert r2.response.members == ()


def test_leader_member_list_is_in_java_hashmap_order() -> None:
    ids_in = ["w1-0", "w2-0", "w3-1"]
    ctx = CoordinatorContext(member_ids=listed_member_ids(ids_in))
    ctx.form_group(["w1", "w2", "w3"])
    leader_response = next(
        msg for _, dest, msg in ctx.sent if dest == "w1" and msg.generation_id == 1
    )
    assert [m.member_id for m in leader_response.members] == ["w3-1", "w2-0", "w1-0"]
    assert ctx.log_kinds("generation")[0]["members"] == ["w3", "w2", "w1"]
    assert [v.member_id for v in ctx.coordinator.members()] == ["w3-1", "w2-0", "w1-0"]


def test_member_map_capacity_never_shrinks() -> None:
    # 13 members grow the table to 32 buckets; with 2 left it still has 32.
    names = [f"w{i}" for i in range(1, 14)]
    ids_in = ["w1-0", "w2-2"] + [f"{n}-x" for n in names[2:]]
    assert hash_order(ids_in[:2], string_hash, 16) == ["w2-2", "w1-0"]
    assert hash_order(ids_in[:2], string_hash, 32) == ["w1-0", "w2-2"]
    ctx = CoordinatorContext(member_ids=listed_member_ids(ids_in))
    ids = ctx.stable_group(names)
    ctx.leave("w3", *[ids[n] for n in names[2:]])
    assert [v.member_id for v in ctx.coordinator.members()] == ["w1-0", "w2-2"]
    r1 = ctx.join("w1", member_id="w1-0")
    ctx.join("w2", member_id="w2-2")
    assert [m.member_id for m in r1.response.members] == ["w1-0", "w2-2"]


def test_leader_removed_passes_to_first_key_in_java_order() -> None:
    ids_in = ["w1-0", "w2-0", "w3-1"]
    ctx = CoordinatorContext(member_ids=listed_member_ids(ids_in))
    ctx.stable_group(["w1", "w2", "w3"])
    ctx.leave("w1", "w1-0")
    assert ctx.coordinator.leader_id == "w3-1"


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "session,error",
    [
        (5999, E.INVALID_SESSION_TIMEOUT),
        (6000, E.MEMBER_ID_REQUIRED),
        (1_800_000, E.MEMBER_ID_REQUIRED),
        (1_800_001, E.INVALID_SESSION_TIMEOUT),
    ],
)
def test_session_timeout_bounds(session: int, error: ErrorCode) -> None:
    ctx = CoordinatorContext()
    assert ctx.join("w1", session_timeout_ms=session).error is error


def test_session_timeout_bounds_are_configurable() -> None:
    ctx = CoordinatorContext(min_session_timeout_ms=1000, max_session_timeout_ms=2000)
    assert ctx.join("w1", session_timeout_ms=2001).error is E.INVALID_SESSION_TIMEOUT
    assert ctx.join("w1", session_timeout_ms=1000).error is E.MEMBER_ID_REQUIRED


def test_group_id_checks() -> None:
    ctx = CoordinatorContext()
    assert ctx.join("w1", group_id="").error is E.INVALID_GROUP_ID
    assert ctx.join("w1", group_id="other").error is E.NOT_COORDINATOR


def test_protocol_type_mismatch() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    new = ctx.join("c1", protocol_type="consumer", protocols=(("range", b""),))
    assert new.error is E.INCONSISTENT_GROUP_PROTOCOL and new.response.member_id == ""
    known = ctx.join("w2", member_id=ids["w2"], protocols=(("static", b"X"),))
    assert known.error is E.INCONSISTENT_GROUP_PROTOCOL
    assert known.response.member_id == ids["w2"]
    assert ctx.state is S.STABLE


def test_empty_group_needs_a_protocol_type_and_protocols() -> None:
    ctx = CoordinatorContext()
    assert ctx.join("w1", protocol_type="").error is E.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.join("w1", protocols=()).error is E.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.join("w1", protocol_type="consumer").error is E.MEMBER_ID_REQUIRED


def test_protocol_type_is_fixed_by_the_first_member() -> None:
    ctx = CoordinatorContext()
    ctx.join_new("w1")
    assert ctx.coordinator.protocol_type == "connect"
    assert ctx.join("c1", protocol_type="consumer").error is E.INCONSISTENT_GROUP_PROTOCOL


# --------------------------------------------------------------------------- max size


def test_max_size_in_stable_and_completing() -> None:
    ctx = CoordinatorContext(max_size=2)
    ids = ctx.stable_group(["w1", "w2"])
    reply = ctx.join("w3")
    assert reply.error is E.GROUP_MAX_SIZE_REACHED and reply.response.member_id == ""
    assert ctx.state is S.STABLE
    follower = next(s for s, mid in ids.items() if mid != ctx.coordinator.leader_id)
    assert ctx.join(follower, member_id=ids[follower]).error is E.NONE  # known: accepted


def test_max_size_in_preparing_rebalance_counts_parked_joiners() -> None:
    ctx = CoordinatorContext(max_size=2)
    ids = ctx.stable_group(["w1", "w2"])
    leader = ctx.coordinator.leader_id
    leader_src = next(s for s, mid in ids.items() if mid == leader)
    other_src = next(s for s in ids if s != leader_src)
    ctx.join(leader_src, member_id=leader)  # 1 parked
    w3_id, w3 = ctx.join_new("w3")  # 2 parked, 3 members
    assert not w3.done
    turned_away = ctx.join(other_src, member_id=ids[other_src])
    assert turned_away.error is E.GROUP_MAX_SIZE_REACHED
    assert ctx.removed() == [(ids[other_src], "max_size")]
    assert ctx.coordinator.member(ids[other_src]) is None
    ctx.sleep(60_000)  # nothing tried to complete the join; the join timer does
    assert w3.error is E.NONE and w3.response.generation_id == 2


def test_duplicate_join_replaces_the_parked_one() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    ctx.join("w2", member_id=ids["w2"], protocols=COMPATIBLE)
    first = ctx.join("w1", member_id=ids["w1"])
    assert first.done  # completed the join
    ctx2 = CoordinatorContext()
    ids = ctx2.stable_group(["w1", "w2"])
    a = ctx2.join("w2", member_id=ids["w2"], protocols=COMPATIBLE)
    b = ctx2.join("w2", member_id=ids["w2"], protocols=SESSIONED)
    ctx2.join("w1", member_id=ids["w1"])
    assert b.done and not a.done  # Kafka drops the superseded future
    assert b.response.protocol_name == "sessioned"
