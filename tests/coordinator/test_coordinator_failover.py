"""Coordinator failover: the group metadata record, unload, and load from the last record
(Dead on unload, NOT_COORDINATOR; Kafka ``GroupMetadataManager#replay``
and ``#onLoaded``)."""

from __future__ import annotations

import msgspec
import pytest

from coordinator import CoordinatorConfig, GroupCoordinator, GroupRecord, GroupState
from protocol.effects import Log, SetTimer
from protocol.group import ErrorCode
from tests.coordinator.harness import COMPATIBLE, EAGER, GROUP, SESSIONED, CoordinatorContext

S = GroupState
E = ErrorCode


def _roles(ctx: CoordinatorContext, ids: dict[str, str]) -> tuple[str, list[str]]:
    leader = next(s for s, mid in ids.items() if mid == ctx.coordinator.leader_id)
    return leader, [s for s in ids if s != leader]


def _heartbeat_all(ctx: CoordinatorContext, ids: dict[str, str], generation: int) -> None:
    for source, mid in ids.items():
        assert ctx.heartbeat(source, mid, generation).error is E.NONE, source


# --------------------------------------------------------------------------- the record


def test_no_record_until_a_join_creates_the_group() -> None:
    ctx = CoordinatorContext()
    assert ctx.coordinator.stored_record() is None
    assert ctx.join("w1", session_timeout_ms=1).error is E.INVALID_SESSION_TIMEOUT
    assert ctx.join("w1", member_id="w1-ghost").error is E.UNKNOWN_MEMBER_ID
    assert ctx.coordinator.stored_record() is None
    assert ctx.join("w1").error is E.MEMBER_ID_REQUIRED
    # classicGroupJoin commits a newly created group with an empty record.
    assert ctx.coordinator.stored_record() == GroupRecord(GROUP, 0, None, None, None, (), 0)


def test_record_written_when_the_leader_syncs() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2", "w3"])
    before = ctx.coordinator.stored_record()
    assert before is not None and before.generation == 0 and before.members == ()
    leader, followers = _roles(ctx, ids)
    assert ctx.sync(followers[0], ids[followers[0]]).done is False  # a follower writes nothing
    assert ctx.coordinator.stored_record() == before
    ctx.sync(leader, ids[leader], assignments=[(ids[leader], b"L"), (ids[followers[0]], b"F")])
    record = ctx.coordinator.stored_record()
    assert record is not None
    assert (record.generation, record.protocol_type, record.protocol) == (1, "connect", "sessioned")
    assert record.leader == ids[leader] and record.written_ms == ctx.now_ms
    order = [m.member_id for m in ctx.coordinator.members()]
    assert [m.member_id for m in record.members] == order  # coordinator order
    by_id = {m.member_id: m for m in record.members}
    assert by_id[ids[leader]].assignment == b"L"
    assert by_id[ids[followers[0]]].assignment == b"F"
    assert by_id[ids[followers[1]]].assignment == b""  # missing from the leader's map
    for source, mid in ids.items():
        m = by_id[mid]
        assert (m.client_id, m.source) == (source, source)
        assert (m.session_timeout_ms, m.rebalance_timeout_ms) == (10_000, 60_000)
        assert m.subscription == b"S"  # metadata of the chosen protocol only


def test_record_unchanged_by_heartbeats_rebalances_and_leaves() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    record = ctx.coordinator.stored_record()
    _heartbeat_all(ctx, ids, 1)
    ctx.join_new("w3")
    assert ctx.state is S.PREPARING_REBALANCE
    ctx.leave("w2", ids["w2"])
    assert ctx.coordinator.stored_record() is record


def test_record_written_when_the_group_goes_empty() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    ctx.leave("w1", ids["w1"], ids["w2"])
    assert ctx.state is S.EMPTY and ctx.generation == 2
    record = ctx.coordinator.stored_record()
    assert record == GroupRecord(GROUP, 2, "connect", None, None, (), ctx.now_ms)


# --------------------------------------------------------------------------- failover


def test_failover_during_stable_keeps_members_and_generation() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2", "w3"])
    leader_id = ctx.coordinator.leader_id
    order = [m.member_id for m in ctx.coordinator.members()]
    ctx.sleep(7_000)
    record = ctx.failover()
    assert record is not None
    c = ctx.coordinator
    assert c.state is S.STABLE and c.previous_state is S.DEAD
    assert c.generation_id == 1 and c.protocol_name == "sessioned"
    assert c.protocol_type == "connect" and c.leader_id == leader_id
    assert [m.member_id for m in c.members()] == order
    assert c.stored_record() is record and c.pending_member_ids() == []
    for view in c.members():
        assert view.assignment == f"A:{view.member_id}".encode()
        assert not (view.awaiting_join or view.awaiting_sync or view.pending_sync or view.is_new)
        # the session timer runs from load time
        assert ctx.timers[f"heartbeat:{view.member_id}"][0] == ctx.now_ms + 10_000
    assert set(ctx.timers) == {f"heartbeat:{mid}" for mid in ids.values()}
    (loaded,) = ctx.log_kinds("group_loaded")
    assert loaded == {
        "generation": 1,
        "protocol": "sessioned",
        "state": "Stable",
        "leader": next(s for s, mid in ids.items() if mid == leader_id),
        "leader_id": leader_id,
        "members": [m.source for m in c.members()],
        "member_ids": order,
    }
    # Members keep heartbeating to the new coordinator and stay members.
    for _ in range(10):
        ctx.sleep(3_000)
        _heartbeat_all(ctx, ids, 1)
    assert ctx.state is S.STABLE and ctx.generation == 1 and len(c.members()) == 3
    assert ctx.transitions()[-1] == ("Stable", "Dead")  # no transition on load
    for source, mid in ids.items():  # SyncGroup in Stable returns the stored assignment
        assert ctx.sync(source, mid, 1).response.assignment == f"A:{mid}".encode()


def test_silent_member_expires_a_session_after_the_load() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    ctx.sleep(9_000)  # w2's old session would end at +1 s
    ctx.failover()
    ctx.sleep(9_999)
    ctx.heartbeat("w1", ids["w1"], 1)
    assert ctx.coordinator.member(ids["w2"]) is not None
    ctx.sleep(1)
    assert ctx.removed() == [(ids["w2"], "session_timeout")]
    assert ctx.state is S.PREPARING_REBALANCE


def test_failover_during_preparing_rebalance_reverts_to_the_stored_generation() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    leader, (follower,) = _roles(ctx, ids)
    w3, _ = ctx.join_new("w3")  # a new member: rebalance, its JoinGroup parked
    parked = ctx.join(leader, member_id=ids[leader])
    assert ctx.state is S.PREPARING_REBALANCE and not parked.done
    ctx.failover()
    assert parked.error is E.NOT_COORDINATOR  # answered by unload
    assert [r for r in ctx.outstanding() if not r.done] == []
    c = ctx.coordinator
    assert c.state is S.STABLE and c.generation_id == 1
    assert {m.member_id for m in c.members()} == set(ids.values())  # w3's join is lost
    assert ctx.heartbeat(follower, ids[follower], 1).error is E.NONE
    assert ctx.heartbeat("w3", w3, 0).error is E.UNKNOWN_MEMBER_ID
    # w3 starts over and a rebalance to generation 2 follows.
    w3, j3 = ctx.join_new("w3")
    j1 = ctx.join(leader, member_id=ids[leader], protocols=(("sessioned", b"S"),))
    j2 = ctx.join(follower, member_id=ids[follower], protocols=(("sessioned", b"S"),))
    assert j1.done and j2.done and j3.done and ctx.generation == 2
    assert ctx.state is S.COMPLETING_REBALANCE


def test_failover_during_completing_rebalance_fences_the_lost_generation() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    leader, (follower,) = _roles(ctx, ids)
    w3, j3 = ctx.join_new("w3")
    j1 = ctx.join(leader, member_id=ids[leader])
    j2 = ctx.join(follower, member_id=ids[follower])
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.generation == 2
    assert j1.response.generation_id == j2.response.generation_id == 2 and j3.done
    parked_sync = ctx.sync(follower, ids[follower], 2)
    ctx.failover()
    assert parked_sync.error is E.NOT_COORDINATOR
    assert ctx.state is S.STABLE and ctx.generation == 1
    # The stored generation is fine; the lost one is ILLEGAL_GENERATION.
    assert ctx.heartbeat(leader, ids[leader], 1).error is E.NONE
    assert ctx.heartbeat(follower, ids[follower], 2).error is E.ILLEGAL_GENERATION
    assert ctx.sync(follower, ids[follower], 2).error is E.ILLEGAL_GENERATION
    assert ctx.heartbeat("w3", w3, 2).error is E.UNKNOWN_MEMBER_ID
    # The leader rejoins (always a rebalance in Stable): generation 2 is handed out again.
    ctx.join(leader, member_id=ids[leader])
    assert ctx.state is S.PREPARING_REBALANCE
    ctx.join(follower, member_id=ids[follower])
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.generation == 2


def test_failover_from_empty() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    ctx.leave("w1", *ids.values())
    assert ctx.state is S.EMPTY and ctx.generation == 2
    ctx.failover()
    c = ctx.coordinator
    assert c.state is S.EMPTY and c.generation_id == 2 and c.members() == []
    assert c.leader_id is None and c.protocol_name is None and ctx.timers == {}
    assert ctx.log_kinds("group_loaded")[-1]["state"] == "Empty"
    assert ctx.join("w1", member_id=ids["w1"]).error is E.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat("w1", ids["w1"], 2).error is E.UNKNOWN_MEMBER_ID
    new = ctx.form_group(["w1"])
    assert ctx.generation == 3 and new["w1"] != ids["w1"]
    assert ctx.transitions()[-2:] == [
        ("Empty", "PreparingRebalance"),
        ("PreparingRebalance", "CompletingRebalance"),
    ]


def test_failover_before_the_first_generation_is_stored() -> None:
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2"])  # CompletingRebalance, generation 1, not stored yet
    record = ctx.failover()
    assert record is not None and record.generation == 0
    assert ctx.state is S.EMPTY and ctx.generation == 0
    assert ctx.sync("w1", ids["w1"], 1).error is E.UNKNOWN_MEMBER_ID


def test_failover_without_any_record() -> None:
    ctx = CoordinatorContext()
    assert ctx.failover() is None
    c = ctx.coordinator
    assert c.state is S.EMPTY and c.generation_id == 0 and c.stored_record() is None
    assert ctx.log_kinds("group_loaded") == [
        {
            "generation": 0,
            "protocol": None,
            "state": "Empty",
            "leader": None,
            "leader_id": None,
            "members": [],
            "member_ids": [],
        }
    ]
    assert ctx.join("w1", member_id="w1-ghost").error is E.UNKNOWN_MEMBER_ID  # no group
    ctx.form_group(["w1"])
    assert ctx.generation == 1


def test_failover_twice_loads_the_same_record() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    first = ctx.failover()
    second = ctx.failover()
    assert first is second and ctx.state is S.STABLE and ctx.generation == 1
    _heartbeat_all(ctx, ids, 1)
    assert ctx.transitions()[-2:] == [("Stable", "Dead"), ("Stable", "Dead")]


def test_loaded_members_advertise_only_the_group_protocol() -> None:
    """Kafka stores each member's metadata for the chosen protocol only, and replay rebuilds
    the member with that one protocol: a follower rejoining with its full list has changed
    metadata (rebalance), and a joiner must now support exactly that protocol."""
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"], protocols=COMPATIBLE)
    leader, (follower,) = _roles(ctx, ids)
    assert ctx.coordinator.protocol_name == "compatible"
    ctx.failover()
    for view in ctx.coordinator.members():
        assert view.protocols == (("compatible", b"C"),)
    # An eager worker: "default" was supported by all before; now nobody lists it.
    assert ctx.join("w9", protocols=EAGER).error is E.INCONSISTENT_GROUP_PROTOCOL
    # Same (loaded) metadata: the current generation, no rebalance.
    same = ctx.join(follower, member_id=ids[follower], protocols=(("compatible", b"C"),))
    assert same.error is E.NONE and ctx.state is S.STABLE and same.response.generation_id == 1
    # The follower's real list differs from the loaded one: rebalance.
    ctx.join(follower, member_id=ids[follower], protocols=COMPATIBLE)
    assert ctx.state is S.PREPARING_REBALANCE
    ctx.join(leader, member_id=ids[leader], protocols=SESSIONED)
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.coordinator.protocol_name == "compatible"


def test_loaded_group_over_capacity_rebalances() -> None:
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2", "w3"])
    ctx.failover(CoordinatorConfig(max_size=2))
    assert ctx.transitions()[-1] == ("Stable", "PreparingRebalance")
    assert ctx.log_kinds("group_loaded")[-1]["state"] == "Stable"
    assert ctx.timers["join"][0] == ctx.now_ms + 60_000
    assert ctx.heartbeat("w1", ids["w1"], 1).error is E.REBALANCE_IN_PROGRESS
    j1, j2, j3 = (ctx.join(s, member_id=ids[s]) for s in ("w1", "w2", "w3"))
    assert not j1.done and not j2.done and j3.error is E.GROUP_MAX_SIZE_REACHED
    ctx.sleep(60_000)
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.generation == 2
    assert j1.error is E.NONE and j2.error is E.NONE
    assert ctx.removed() == [(ids["w3"], "max_size")]


def test_load_effects_and_errors() -> None:
    ctx = CoordinatorContext()
    ctx.stable_group(["w1", "w2"])
    record = ctx.coordinator.stored_record()
    assert record is not None
    coordinator, effects = GroupCoordinator.load(GROUP, ctx.config, ctx.member_ids, record, 500)
    assert isinstance(effects[0], Log) and effects[0].kind == "group_loaded"
    assert effects[1:] == [
        SetTimer(f"heartbeat:{m.member_id}", 10_500) for m in coordinator.members()
    ]
    with pytest.raises(ValueError, match="record of group 'connect-cluster'"):
        GroupCoordinator.load("connect-other", ctx.config, ctx.member_ids, record, 0)
    other = msgspec.structs.replace(record, group_id="another-group")
    with pytest.raises(ValueError, match="another-group"):
        GroupCoordinator.load(GROUP, ctx.config, ctx.member_ids, other, 0)
    # the record is a frozen value
    with pytest.raises(AttributeError):
        record.generation = 5  # type: ignore[misc]


# --------------------------------------------------------------- a record slow to commit


def _held_leader_sync(ctx: CoordinatorContext, ids: dict[str, str], latency_ms: int) -> str:
    """The leader's SyncGroup with its record ``latency_ms`` from committing; the leader."""
    leader, followers = _roles(ctx, ids)
    for f in followers:
        assert ctx.sync(f, ids[f]).done is False
    ctx.coordinator.write_latency_ms = latency_ms
    try:
        ctx.sync(leader, ids[leader], assignments=[(mid, s.encode()) for s, mid in ids.items()])
    finally:
        ctx.coordinator.write_latency_ms = 0
    return leader


def test_a_held_record_keeps_the_group_completing_until_it_commits() -> None:
    """``CoordinatorRuntime`` completes the leader's append future at the high watermark:
    until then the group is CompletingRebalance, the SyncGroups parked, the record not yet what
    a next coordinator loads."""
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2"])
    before = ctx.coordinator.stored_record()
    _held_leader_sync(ctx, ids, 100)
    assert ctx.state is S.COMPLETING_REBALANCE
    assert all(not r.done for r in ctx.outstanding())
    assert ctx.coordinator.stored_record() is before
    answered = ctx.sleep(100)
    assert ctx.state is S.STABLE
    assert sorted((dest, msg.error, msg.assignment) for dest, msg in answered) == [
        ("w1", E.NONE, b"w1"),
        ("w2", E.NONE, b"w2"),
    ]
    record = ctx.coordinator.stored_record()
    assert record is not None and record.generation == 1


def test_a_join_before_the_commit_fails_the_parked_syncs_but_the_record_commits() -> None:
    """A new member's JoinGroup while the leader's record is uncommitted: PreparingRebalance,
    every parked SyncGroup (the leader's too) answered REBALANCE_IN_PROGRESS; the record still
    commits (it is in the log), but the group does not go Stable (the append future's check of
    state and generation). Seen on a real 3-broker cluster (Kafka 4.4.0)."""
    ctx = CoordinatorContext()
    ids = ctx.form_group(["w1", "w2"])
    _held_leader_sync(ctx, ids, 100)
    ctx.sleep(50)
    ctx.join_new("w3")
    assert ctx.state is S.PREPARING_REBALANCE
    syncs = [msg for _, _, msg in ctx.sent if type(msg).__name__ == "SyncGroupResponse"]
    assert [m.error for m in syncs] == [E.REBALANCE_IN_PROGRESS] * 2
    ctx.sleep(50)
    assert ctx.state is S.PREPARING_REBALANCE
    record = ctx.coordinator.stored_record()
    assert record is not None and record.generation == 1 and len(record.members) == 2


def test_a_coordinator_gone_before_the_commit_leaves_the_previous_record() -> None:
    """Unloaded with the leader's record still uncommitted: the next coordinator loads the last
    committed record (the generation before), Stable with its members."""
    ctx = CoordinatorContext()
    ids = ctx.stable_group(["w1", "w2"])
    ctx.join_new("w3")
    for source, mid in ids.items():
        ctx.join(source, member_id=mid)
    ctx.sleep(0)
    assert ctx.state is S.COMPLETING_REBALANCE
    ids3 = {m.client_id: m.member_id for m in ctx.coordinator.members()}
    _held_leader_sync(ctx, ids3, 100)
    record = ctx.failover()
    assert record is not None and record.generation == 1 and len(record.members) == 2
    assert ctx.state is S.STABLE and ctx.generation == 1
    assert "commit" not in ctx.timers
