"""KIP-345 static members across a coordinator failover, and their removal by session
expiry only (groupsim's own tests; Kafka's are in ``tests/coordinator/kafka/``)."""

from __future__ import annotations

from coordinator import GroupState
from protocol.group import ErrorCode, JoinGroupRequest, SyncGroupRequest
from tests.coordinator.harness import EAGER, CoordinatorContext, Reply

S = GroupState
E = ErrorCode


def _static_join(
    ctx: CoordinatorContext, source: str, instance_id: str, member_id: str = ""
) -> Reply:
    return ctx.send(
        source,
        JoinGroupRequest(
            group_id=ctx.group_id,
            member_id=member_id,
            protocol_type="connect",
            protocols=EAGER,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=60_000,
            client_id=source,
            group_instance_id=instance_id,
        ),
    )


def _stable_static_pair(ctx: CoordinatorContext) -> dict[str, str]:
    """w1 (instance i1) and w2 (instance i2) join, the leader assigns, both sync."""
    r1 = _static_join(ctx, "w1", "i1")
    r2 = _static_join(ctx, "w2", "i2")
    ctx.sleep(3000)  # the second joiner extends the initial delay once
    assert not r1.done
    ctx.sleep(3000)
    assert r1.error is E.NONE and r2.error is E.NONE
    ids = {"w1": r1.response.member_id, "w2": r2.response.member_id}
    leader = ctx.coordinator.leader_id
    assignments = tuple((mid, f"A:{src}".encode()) for src, mid in ids.items())
    for src, mid in sorted(ids.items(), key=lambda kv: kv[1] != leader):
        sync = ctx.send(
            src,
            SyncGroupRequest(
                ctx.group_id, mid, 1, assignments=assignments if mid == leader else ()
            ),
        )
        assert sync.error is E.NONE
    assert ctx.state is S.STABLE
    return ids


def test_failover_keeps_instance_ids_and_a_restarted_static_member_keeps_its_assignment() -> None:
    ctx = CoordinatorContext()
    ids = _stable_static_pair(ctx)
    record = ctx.failover()
    assert record is not None
    assert {m.member_id: m.group_instance_id for m in record.members} == {
        ids["w1"]: "i1",
        ids["w2"]: "i2",
    }
    assert ctx.coordinator.static_member_id("i2") == ids["w2"]
    # w2 restarts: it rejoins with no member id, is given a new one, and the Stable group
    # does not rebalance (the selected protocol stays).
    generations = len(ctx.log_kinds("generation"))
    rejoin = _static_join(ctx, "w2", "i2")
    assert rejoin.error is E.NONE and rejoin.response.generation_id == 1
    new_id = rejoin.response.member_id
    assert new_id != ids["w2"] and ctx.coordinator.static_member_id("i2") == new_id
    assert ctx.state is S.STABLE and len(ctx.log_kinds("generation")) == generations
    assert ctx.log_kinds("member_replaced") == [
        {"member": "w2", "member_id": new_id, "old_member_id": ids["w2"]}
    ]
    sync = ctx.send("w2", SyncGroupRequest(ctx.group_id, new_id, 1, group_instance_id="i2"))
    assert sync.error is E.NONE and sync.response.assignment == b"A:w2"
    # The write kept the new member id for the next failover.
    stored = ctx.coordinator.stored_record()
    assert stored is not None
    assert {m.member_id for m in stored.members} == {ids["w1"], new_id}


def test_a_static_member_that_does_not_rejoin_stays_until_its_session_expires() -> None:
    ctx = CoordinatorContext()
    ids = _stable_static_pair(ctx)
    # w1 rejoins (a rebalance); w2 stays silent.
    leader = ctx.coordinator.leader_id
    src = "w1" if ids["w1"] == leader else "w2"
    other = "w2" if src == "w1" else "w1"
    rejoin = _static_join(ctx, src, "i1" if src == "w1" else "i2", member_id=ids[src])
    assert not rejoin.done and ctx.state is S.PREPARING_REBALANCE
    # w2's session (10 s) runs out first: only then is it removed, and the join completes.
    ctx.sleep(10_000)
    assert ctx.removed() == [(ids[other], "session_timeout")]
    assert rejoin.done and rejoin.error is E.NONE and rejoin.response.generation_id == 2
    assert [v.member_id for v in ctx.coordinator.members()] == [ids[src]]
