"""SyncGroup, Heartbeat (incl. session expiry) and LeaveGroup per state
(``GroupMetadataManager#classicGroupSync``/``Heartbeat``/``Leave``), the sync timer, unload,
and the event-log records."""

from __future__ import annotations

from coordinator import GroupState
from protocol.effects import Send, SetTimer
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    SyncGroupResponse,
)
from tests.coordinator.harness import COMPATIBLE, GROUP, SESSIONED, CoordinatorContext

S = GroupState
E = ErrorCode


def _roles(ctx: CoordinatorContext, ids: dict[str, str]) -> tuple[str, list[str]]:
    leader = next(s for s, mid in ids.items() if mid == ctx.coordinator.leader_id)
    return leader, [s for s in ids if s != leader]


# --------------------------------------------------------------------------- SyncGroup


def test_sync_in_completing_rebalance_parks_followers_until_the_leader() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2", "w3"])
    leader, followers = _roles(ctx, ids)
    parked = [ctx.sync(f, ids[f]) for f in followers]
    assert not any(r.done for r in parked) and "sync" in ctx.timers
    # The leader forgets followers[1]: it gets an empty assignment.
    lead = ctx.sync(
        leader,
        ids[leader],
        assignments=[(ids[leader], b"L"), (ids[followers[0]], b"F0"), ("w9-unknown", b"?")],
    )
    assert ctx.state is S.STABLE
    assert lead.response == SyncGroupResponse(E.NONE, "connect", "sessioned", b"L")
    assert parked[0].response.assignment == b"F0"
    assert parked[1].response == SyncGroupResponse(E.NONE, "connect", "sessioned", b"")
    assert "sync" not in ctx.timers  # everyone synced
    for source in ids.values():
        assert ctx.timers[f"heartbeat:{source}"][0] == ctx.now_ms + 10_000


def test_follower_sync_after_stable_gets_stored_assignment() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2"])
    leader, (follower,) = _roles(ctx, ids)
    ctx.sync(leader, ids[leader], assignments=[(ids[follower], b"F")])
    assert ctx.state is S.STABLE and "sync" in ctx.timers  # follower still pending
    reply = ctx.sync(follower, ids[follower])
    assert reply.response.assignment == b"F" and "sync" not in ctx.timers
    assert ctx.coordinator.member(ids[leader]).assignment == b""


def test_sync_in_stable_returns_stored_assignment() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    for source, mid in ids.items():
        assert ctx.sync(source, mid).response.assignment == f"A:{mid}".encode()


def test_sync_in_preparing_rebalance() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    ctx.join("w1", member_id=ids["w1"], protocols=COMPATIBLE)
    assert ctx.sync("w2", ids["w2"]).error is E.REBALANCE_IN_PROGRESS


def test_sync_in_empty_and_dead() -> None:
    ctx = CoordinatorContext()
    assert ctx.sync("w1", "w1-x", 0).error is E.UNKNOWN_MEMBER_ID
    ids = ctx.stable_group(["w1"])
    ctx.unload()
    assert ctx.sync("w1", ids["w1"]).error is E.COORDINATOR_NOT_AVAILABLE


def test_sync_validation_order() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1"])
    mid = ids["w1"]
    assert ctx.sync("w1", "w1-x", 99, protocol_name="x").error is E.UNKNOWN_MEMBER_ID
    assert ctx.sync("w1", mid, 99, protocol_name="x").error is E.ILLEGAL_GENERATION
    assert ctx.sync("w1", mid, protocol_name="x").error is E.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.sync("w1", mid, protocol_type="consumer").error is E.INCONSISTENT_GROUP_PROTOCOL
    ok = ctx.sync("w1", mid, protocol_type="connect", protocol_name="sessioned")
    assert ok.error is E.NONE
    assert ctx.sync("w1", mid, group_id="").error is E.INVALID_GROUP_ID
    assert ctx.sync("w1", mid, group_id="other").error is E.NOT_COORDINATOR


def test_sync_timeout_removes_members_that_never_synced() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2", "w3"])
    leader, (f1, f2) = _roles(ctx, ids)
    formed = ctx.now_ms
    ctx.sync(leader, ids[leader], assignments=[])
    ctx.sync(f1, ids[f1])
    while ctx.now_ms < formed + 60_000:  # f2 heartbeats but never syncs
        for s in ids:
            ctx.heartbeat(s, ids[s])
        ctx.sleep(min(3000, formed + 60_000 - ctx.now_ms))
    assert ctx.removed() == [(ids[f2], "sync_timeout")]
    assert ctx.transitions()[-1] == ("Stable", "PreparingRebalance")
    assert f"heartbeat:{ids[f2]}" not in ctx.timers


def test_sync_timeout_with_nobody_synced_empties_the_group() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2"])
    formed = ctx.now_ms
    for _ in range(20):  # heartbeats keep sessions alive; nobody syncs
        for s in ids:
            ctx.heartbeat(s, ids[s])
        ctx.sleep(3000)
    assert ctx.now_ms == formed + 60_000
    assert sorted(r for _, r in ctx.removed()) == ["sync_timeout", "sync_timeout"]
    assert ctx.transitions()[-2:] == [
        ("CompletingRebalance", "PreparingRebalance"),
        ("PreparingRebalance", "Empty"),
    ]
    assert ctx.generation == 2 and ctx.log_kinds("generation")[-1]["protocol"] is None


def test_stale_or_disarmed_timers_do_nothing() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1"])
    assert ctx.coordinator.fire("sync", ctx.now_ms) == []
    assert ctx.coordinator.fire("join", ctx.now_ms) == []
    # a heartbeat timer that fires before the member's deadline (re-armed since)
    assert ctx.coordinator.fire(f"heartbeat:{ids['w1']}", ctx.now_ms) == []
    assert ctx.coordinator.fire("heartbeat:nobody", ctx.now_ms) == []


def test_unknown_timer_key_raises() -> None:
    ctx = CoordinatorContext()
    try:
        ctx.coordinator.fire("poll", 0)
    except ValueError as e:
        assert "poll" in str(e)
    else:
        raise AssertionError("expected ValueError")


# --------------------------------------------------------------------------- Heartbeat


def test_heartbeat_hot_path_effects() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1"])
    mid = ids["w1"]
    req = HeartbeatRequest(GROUP, mid, ctx.generation, correlation_id=49_997)
    effects = ctx.coordinator.handle("w1", req, 50_000)
    assert effects == [
        SetTimer(f"heartbeat:{mid}", 60_000),
        Send("w1", HeartbeatResponse(E.NONE, 49_997)),  # echoes the correlation id
    ]


def test_heartbeat_per_state() -> None:
    ctx = CoordinatorContext()
    assert ctx.heartbeat("w1", "w1-x", 0).error is E.UNKNOWN_MEMBER_ID  # Empty
    ids = ctx.form_group(["w1", "w2"])
    assert ctx.heartbeat("w1", ids["w1"]).error is E.NONE  # CompletingRebalance
    for s in ids:
        ctx.sync(s, ids[s], assignments=[])
    assert ctx.state is S.STABLE
    ctx.sleep(5000)
    assert ctx.heartbeat("w2", ids["w2"]).error is E.NONE
    assert ctx.timers[f"heartbeat:{ids['w2']}"][0] == ctx.now_ms + 10_000
    ctx.join("w1", member_id=ids["w1"], protocols=COMPATIBLE)
    ctx.sleep(5000)
    reply = ctx.heartbeat("w2", ids["w2"])
    assert reply.error is E.REBALANCE_IN_PROGRESS
    assert ctx.timers[f"heartbeat:{ids['w2']}"][0] == ctx.now_ms + 10_000  # still reset
    ctx.unload()
    assert ctx.heartbeat("w2", ids["w2"]).error is E.COORDINATOR_NOT_AVAILABLE


def test_heartbeat_fencing() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1"])
    assert ctx.heartbeat("w1", ids["w1"], ctx.generation - 1).error is E.ILLEGAL_GENERATION
    assert ctx.heartbeat("w1", ids["w1"], ctx.generation + 1).error is E.ILLEGAL_GENERATION
    assert ctx.heartbeat("w1", "w1-x", 99).error is E.UNKNOWN_MEMBER_ID  # member first
    assert ctx.heartbeat("w1", ids["w1"], group_id="").error is E.INVALID_GROUP_ID
    assert ctx.heartbeat("w1", ids["w1"], group_id="g2").error is E.NOT_COORDINATOR


def test_silent_member_expires_after_its_session() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    start = ctx.now_ms
    while ctx.coordinator.member(ids["w2"]) is not None:
        ctx.heartbeat("w1", ids["w1"])
        ctx.sleep(1000)
    assert ctx.removed() == [(ids["w2"], "session_timeout")]
    assert ctx.log_kinds("member_removed")[-1]["member"] == "w2"
    assert ctx.transitions()[-1] == ("Stable", "PreparingRebalance")
    assert ctx.now_ms - start <= 10_000 + 1000


def test_member_parked_in_join_does_not_expire() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    start = ctx.now_ms
    r1 = ctx.join("w1", member_id=ids["w1"], protocols=COMPATIBLE)  # w1 never heartbeats again
    for _ in range(20):  # w2 keeps its session alive but does not rejoin
        ctx.heartbeat("w2", ids["w2"])
        ctx.sleep(3000)
    assert (start + 10_000, f"heartbeat:{ids['w1']}") in ctx.fired
    assert r1.done and r1.response.generation_id == 2
    assert ctx.removed() == [(ids["w2"], "not_rejoined")]


def test_member_parked_in_sync_does_not_expire() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2"])
    leader, (follower,) = _roles(ctx, ids)
    parked = ctx.sync(follower, ids[follower])
    for _ in range(5):  # 15 s: the follower's session timer fires meanwhile
        ctx.heartbeat(leader, ids[leader])
        ctx.sleep(3000)
    assert ctx.coordinator.member(ids[follower]) is not None and not parked.done
    ctx.sync(leader, ids[leader], assignments=[(ids[follower], b"F")])
    assert parked.response.assignment == b"F"


def test_new_member_parked_in_join_expires_after_the_new_member_timeout() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"], rebalance_timeout_ms=600_000)
    start = ctx.now_ms
    w3_id, w3 = ctx.join_new("w3", rebalance_timeout_ms=600_000)
    while not w3.done:  # the old members heartbeat but do not rejoin
        for s in ids:
            ctx.heartbeat(s, ids[s])
        ctx.sleep(3000)
    assert w3.answered_ms == start + 300_000
    assert w3.response.error is E.UNKNOWN_MEMBER_ID and w3.response.member_id == ""
    assert ctx.removed() == [(w3_id, "session_timeout")]
    assert ctx.state is S.PREPARING_REBALANCE


def test_new_member_timeout_is_configurable() -> None:
    ctx = CoordinatorContext(new_member_join_timeout_ms=20_000)
    mid, _ = ctx.join_new("w1")
    assert ctx.timers[f"heartbeat:{mid}"][0] == 20_000


# --------------------------------------------------------------------------- LeaveGroup


def test_leave_in_stable_rebalances_and_batch_errors() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2", "w3"])
    pending = ctx.join("w4").response.member_id
    reply = ctx.leave("w3", ids["w3"], "w9-unknown", "", pending, ids["w3"])
    assert reply.response.error is E.NONE
    assert reply.response.member_errors == (
        (ids["w3"], E.NONE),
        ("w9-unknown", E.UNKNOWN_MEMBER_ID),
        ("", E.UNKNOWN_MEMBER_ID),
        (pending, E.NONE),
        # Kafka removes each member as it goes: listed twice, the second is unknown.
        (ids["w3"], E.UNKNOWN_MEMBER_ID),
    )
    assert ctx.removed() == [(ids["w3"], "leave")]
    assert ctx.coordinator.pending_member_ids() == []
    assert f"heartbeat:{ids['w3']}" not in ctx.timers and f"heartbeat:{pending}" not in ctx.timers
    assert ctx.state is S.PREPARING_REBALANCE
    r1 = ctx.join("w1", member_id=ids["w1"])
    r2 = ctx.join("w2", member_id=ids["w2"])
    assert r1.done and r2.done and ctx.state is S.COMPLETING_REBALANCE


def test_leave_in_preparing_rebalance_answers_the_parked_join_and_completes() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    r1 = ctx.join("w1", member_id=ids["w1"], protocols=COMPATIBLE)
    r2 = ctx.join("w2", member_id=ids["w2"], protocols=COMPATIBLE)
    assert ctx.state is S.COMPLETING_REBALANCE
    ctx.join("w1", member_id=ids["w1"])  # back to PreparingRebalance, w1 parked
    r1 = ctx.join("w1", member_id=ids["w1"])
    assert not r1.done and ctx.state is S.PREPARING_REBALANCE
    ctx.leave("w1", ids["w1"])
    assert r1.response.error is E.UNKNOWN_MEMBER_ID
    assert not r2.response.error  # w2 was answered earlier
    # only w2 left, but it has not rejoined: no completion yet
    assert ctx.state is S.PREPARING_REBALANCE
    r2 = ctx.join("w2", member_id=ids["w2"])
    assert r2.done and r2.response.leader == ids["w2"]


def test_leave_of_the_last_parked_straggler_completes_the_join() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    r1 = ctx.join("w1", member_id=ids["w1"], protocols=COMPATIBLE)
    ctx.leave("w2", ids["w2"])  # w2 never rejoined; its leave lets the join complete
    assert r1.done and ctx.state is S.COMPLETING_REBALANCE


def test_leave_in_completing_rebalance_answers_parked_syncs() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2", "w3"])
    leader, (f1, f2) = _roles(ctx, ids)
    parked = ctx.sync(f1, ids[f1])
    ctx.leave(f2, ids[f2])
    assert parked.error is E.REBALANCE_IN_PROGRESS and parked.response.assignment == b""
    assert ctx.state is S.PREPARING_REBALANCE and "sync" not in ctx.timers


def test_leave_in_empty_and_dead() -> None:
    ctx = CoordinatorContext()
    # A group that does not exist yet: "Group not found" (UnknownMemberIdException), which
    # GroupCoordinatorService#leaveGroup answers per member (Kafka 4.0 oracle agrees).
    reply = ctx.leave("w1", "w1-x")
    assert reply.response.error is E.NONE
    assert reply.response.member_errors == (("w1-x", E.UNKNOWN_MEMBER_ID),)
    assert ctx.state is S.EMPTY
    ids = ctx.stable_group(["w1"])
    ctx.unload()
    assert ctx.leave("w1", ids["w1"]).response.error is E.COORDINATOR_NOT_AVAILABLE
    assert ctx.leave("w1", ids["w1"], group_id="x").response.error is E.NOT_COORDINATOR


def test_last_member_leaving_empties_the_group() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1"])
    ctx.leave("w1", ids["w1"])
    assert ctx.transitions()[-2:] == [
        ("Stable", "PreparingRebalance"),
        ("PreparingRebalance", "Empty"),
    ]
    assert ctx.log_kinds("generation")[-1] == {
        "generation": 2,
        "protocol": None,
        "leader": None,
        "leader_id": None,
        "members": [],
        "member_ids": [],
    }
    assert ctx.coordinator.leader_id is None and ctx.coordinator.protocol_name is None
    # a new member restarts with the initial delay
    _, r = ctx.join_new("w2")
    ctx.sleep(2999)
    assert not r.done
    ctx.sleep(1)
    assert r.response.generation_id == 3


def test_leave_during_the_initial_delay_does_not_complete_early() -> None:
    ctx = CoordinatorContext()
    m1, r1 = ctx.join_new("w1")
    m2, r2 = ctx.join_new("w2")
    ctx.sleep(1000)
    ctx.leave("w2", m2)
    assert r2.error is E.UNKNOWN_MEMBER_ID and not r1.done  # previousState == Empty
    ctx.sleep(5000)
    assert r1.done and r1.answered_ms == 6000


# --------------------------------------------------------------------------- unload, logs


def test_unload_answers_parked_requests_and_cancels_timers() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2", "w3"])
    leader, (f1, f2) = _roles(ctx, ids)
    parked_sync = ctx.sync(f1, ids[f1])
    ctx.unload()
    assert parked_sync.error is E.NOT_COORDINATOR
    assert ctx.timers == {}
    assert ctx.state is S.DEAD and ctx.transitions()[-1] == ("CompletingRebalance", "Dead")
    ctx.unload()  # Dead -> Dead is legal
    assert ctx.join("w5").error is E.COORDINATOR_NOT_AVAILABLE

    ctx = CoordinatorContext()
    ctx.stable_group(["w1"])
    pending = ctx.join("w2").response.member_id
    mid, parked_join = ctx.join_new("w3")
    ctx.unload()
    assert parked_join.error is E.NOT_COORDINATOR and parked_join.response.member_id == mid
    assert ctx.timers == {} and pending
    assert ctx.transitions()[-1] == ("PreparingRebalance", "Dead")


def test_event_log_records() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    added = ctx.log_kinds("member_added")
    assert added == [{"member": s, "member_id": ids[s]} for s in ("w1", "w2")]
    (gen,) = ctx.log_kinds("generation")
    assert gen["generation"] == 1 and gen["protocol"] == "sessioned"
    assert gen["leader_id"] == ids["w1"] and gen["leader"] == "w1"
    assert sorted(gen["members"]) == ["w1", "w2"]
    assert ctx.log_kinds("group_state") == [
        {
            "from": "Empty",
            "to": "PreparingRebalance",
            "generation": 0,
            "rebalance_timeout_ms": 60_000,
            "initial_rebalance_delay_ms": 3_000,
        },
        {"from": "PreparingRebalance", "to": "CompletingRebalance", "generation": 1},
        {"from": "CompletingRebalance", "to": "Stable", "generation": 1},
    ]
    before = len(ctx.logs)
    for _ in range(3):
        ctx.heartbeat("w1", ids["w1"])
    assert len(ctx.logs) == before  # heartbeats are not logged


def test_a_join_phase_logs_the_members_maximum_rebalance_timeout() -> None:
    # KIP-62 (ClassicGroup#rebalanceTimeoutMs): the bound the join-phase checkers judge by
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    leader = next(src for src, mid in ids.items() if mid == ctx.coordinator.leader_id)
    ctx.join(leader, member_id=ids[leader], rebalance_timeout_ms=90_000)  # the leader rejoins
    assert ctx.log_kinds("group_state")[-1] == {
        "from": "Stable",
        "to": "PreparingRebalance",
        "generation": 1,
        "rebalance_timeout_ms": 90_000,
    }


def test_kip394_pending_members_are_logged_until_forgotten() -> None:
    ctx = CoordinatorContext()
    ctx.stable_group(["w1"])
    first = ctx.join("w2", session_timeout_ms=12_000)
    pending = first.response.member_id
    assert ctx.log_kinds("member_pending")[-1] == {
        "member": "w2",
        "member_id": pending,
        "session_timeout_ms": 12_000,
    }
    ctx.sleep(11_999)
    assert ctx.log_kinds("member_pending_removed") == []
    ctx.sleep(1)
    assert ctx.log_kinds("member_pending_removed") == [
        {"member": "w2", "member_id": pending, "reason": "session_timeout"}
    ]
    # one that rejoins in time becomes a member, logged as member_added only
    mid, _ = ctx.join_new("w3")
    assert ctx.log_kinds("member_added")[-1] == {"member": "w3", "member_id": mid}
    assert len(ctx.log_kinds("member_pending_removed")) == 1


def test_a_join_timer_armed_again_for_static_stragglers_is_logged() -> None:
    # completeClassicGroupJoin with no member rejoined but a static one (KIP-345 keeps it):
    # another rebalance timeout, logged (what join_phase_overran moves its bound by)
    ctx = CoordinatorContext()
    static = JoinGroupRequest(
        group_id=GROUP,
        member_id="",
        protocol_type="connect",
        protocols=SESSIONED,
        session_timeout_ms=100_000,
        rebalance_timeout_ms=30_000,
        client_id="s1",
        group_instance_id="i1",
    )
    s1 = ctx.send("s1", static)
    mid, w2 = ctx.join_new("w2", session_timeout_ms=100_000, rebalance_timeout_ms=30_000)
    ctx.sleep(30_000)  # the initial delay, extended while members arrive
    leader = s1.response.member_id
    assert ctx.sync("s1", leader, assignments=[(leader, b"A"), (mid, b"B")]).error is E.NONE
    assert ctx.sync("w2", mid).error is E.NONE
    ctx.leave("w2", mid)  # Stable -> PreparingRebalance; s1 does not rejoin
    ctx.sleep(30_000)
    assert ctx.log_kinds("join_rescheduled") == [{"generation": 1, "rebalance_timeout_ms": 30_000}]
    assert ctx.state is S.PREPARING_REBALANCE


def test_a_generation_logs_its_sync_deadline_and_when_every_member_synced() -> None:
    # KIP-814's pending sync (schedulePendingSync / removePendingSyncMember): what
    # pending_sync_kept judges a generation by
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2"])
    (generation,) = ctx.log_kinds("generation")
    assert generation["rebalance_timeout_ms"] == 60_000
    leader = ctx.coordinator.leader_id
    follower = next(mid for mid in ids.values() if mid != leader)
    ctx.sync(next(s for s, m in ids.items() if m == leader), leader)
    assert ctx.log_kinds("pending_sync_complete") == []
    ctx.sync(next(s for s, m in ids.items() if m == follower), follower)
    assert ctx.log_kinds("pending_sync_complete") == [{"generation": 1}]
