"""KIP-345 static membership in the classic group: Kafka's ``GroupMetadataManagerTest``
static-member tests, translated.

Each test names its Kafka original (commit 1eb7644349cb07139d6a3c1ad1986979647cac99). Not
translated (groupsim's record writes never fail, see docs/coordinator-fidelity.md):
``testReplaceStaticMemberInStableStateErrors`` and
``testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchangedPersistenceFailure``.
"""

from __future__ import annotations

import pytest

from coordinator import vote
from coordinator.group import IllegalGroupState
from protocol.group import JoinGroupResponse, LeaveGroupMemberResponse, MemberIdentity
from tests.coordinator.kafka.context import (
    UNKNOWN_MEMBER_ID,
    E,
    KafkaContext,
    S,
    assert_no_or_empty_result,
    join_request,
    to_protocols,
    with_,
)

RANGE = to_protocols("range")
SUPERSET = to_protocols("range", "roundrobin")
LEADER = "leader-instance-id"
FOLLOWER = "follower-instance-id"


def _fenced(member_id: str) -> JoinGroupResponse:
    """The JoinGroup answer of a replaced static member (``ClassicGroup#replaceStaticMember``)."""
    return JoinGroupResponse(E.FENCED_INSTANCE_ID, member_id=member_id)


# --------------------------------------------------------------------------- joining


def test_static_member_join_as_first_member() -> None:
    """``GroupMetadataManagerTest.testStaticMemberJoinAsFirstMember``."""
    ctx = KafkaContext()
    ctx.create_group()
    response = ctx.join_and_complete_join(
        join_request(group_instance_id="group-instance-id", protocols=RANGE), False, True
    )
    # A static member never goes through MEMBER_ID_REQUIRED; its id starts with its instance id.
    assert response.member_id.startswith("group-instance-id-")
    assert ctx.coordinator.static_member_id("group-instance-id") == response.member_id


def test_static_member_rejoin_with_explicit_unknown_member_id() -> None:
    """``GroupMetadataManagerTest.testStaticMemberRejoinWithExplicitUnknownMemberId``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(
        group_instance_id="group-instance-id",
        protocols=RANGE,
        session_timeout_ms=5000,
        rebalance_timeout_ms=5000,
    )
    assert ctx.join_and_complete_join(request, False, True).error is E.NONE
    reply = ctx.send_join(with_(request, member_id="unknown-member-id"))
    assert reply.records == []
    assert reply.done and reply.error is E.FENCED_INSTANCE_ID


def test_join_group_replace_static_member() -> None:
    """``GroupMetadataManagerTest.testJoinGroupReplaceStaticMember``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(
        group_instance_id="group-instance-id", protocols=RANGE, session_timeout_ms=5000
    )
    old = ctx.send_join(request)
    assert old.records == []
    assert not old.done
    assert ctx.num_awaiting_join() == 1 and ctx.num_members() == 1
    # Replace the static member with a new member id: the old member id is fenced.
    new = ctx.send_join(request)
    assert new.records == []
    assert not new.done
    assert old.done and old.error is E.FENCED_INSTANCE_ID
    assert ctx.num_awaiting_join() == 1 and ctx.num_members() == 1
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    assert new.done and new.error is E.NONE
    assert ctx.num_awaiting_join() == 0 and ctx.num_members() == 1


@pytest.mark.parametrize("support_skipping_assignment", [True, False])
def test_replace_static_member_in_stable_state_no_error(support_skipping_assignment: bool) -> None:
    """``GroupMetadataManagerTest.testReplaceStaticMemberInStableStateNoError``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(group_instance_id="group-instance-id", protocols=RANGE)
    response = ctx.join_and_complete_join(request, True, support_skipping_assignment)
    old_id = response.member_id
    assert ctx.num_members() == 1 and ctx.generation == 1
    assert ctx.state is S.COMPLETING_REBALANCE
    ctx.force_state(S.STABLE)  # simulate a successful sync
    protocols = SUPERSET
    reply = ctx.send_join(
        with_(request, protocols=protocols, rebalance_timeout_ms=7000, session_timeout_ms=4500),
        True,
        support_skipping_assignment,
    )
    # The group record with the generated member id is written, then the joiner answered.
    assert reply.records == [ctx.group_record()]
    record = reply.records[0]
    new_id = ctx.coordinator.static_member_id("group-instance-id")
    assert new_id is not None and new_id != old_id
    assert [(m.member_id, m.group_instance_id) for m in record.members] == [
        (new_id, "group-instance-id")
    ]
    assert reply.done
    if support_skipping_assignment:
        expected = JoinGroupResponse(
            E.NONE,
            generation_id=1,
            protocol_type="consumer",
            protocol_name="range",
            leader=new_id,
            member_id=new_id,
            members=ctx.join_response_members(),
            skip_assignment=True,
        )
        assert [(m.member_id, m.group_instance_id, m.metadata) for m in expected.members] == [
            (new_id, "group-instance-id", dict(protocols)["range"])
        ]
    else:
        expected = JoinGroupResponse(
            E.NONE,
            generation_id=1,
            protocol_type="consumer",
            protocol_name="range",
            leader=old_id,
            member_id=new_id,
        )
    assert reply.response == expected
    updated = ctx.coordinator.member(new_id)
    assert updated is not None and updated.group_instance_id == "group-instance-id"
    assert updated.rebalance_timeout_ms == 7000 and updated.session_timeout_ms == 4500
    assert updated.protocols == protocols
    assert ctx.num_members() == 1 and ctx.generation == 1 and ctx.state is S.STABLE


def test_replace_static_member_in_stable_state_with_updated_protocol_triggers_rebalance() -> None:
    """``GroupMetadataManagerTest
    .testReplaceStaticMemberInStableStateWithUpdatedProtocolTriggersRebalance``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(group_instance_id="group-instance-id", protocols=SUPERSET)
    assert ctx.join_and_complete_join(request, True, True).error is E.NONE
    assert ctx.num_members() == 1 and ctx.generation == 1
    ctx.force_state(S.STABLE)
    # The selected protocol changes: a rebalance, which completes at once (one member).
    reply = ctx.send_join(with_(request, protocols=to_protocols("roundrobin")))
    assert reply.records == []
    assert reply.done and reply.error is E.NONE
    assert ctx.num_members() == 1 and ctx.generation == 2
    assert ctx.state is S.COMPLETING_REBALANCE


@pytest.mark.parametrize("support_skipping_assignment", [True, False])
def test_replace_static_member_in_stable_state_succeeds(support_skipping_assignment: bool) -> None:
    """``GroupMetadataManagerTest.testReplaceStaticMemberInStableStateSucceeds``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(group_instance_id="group-instance-id", protocols=RANGE)
    response = ctx.join_and_complete_join(request, True, support_skipping_assignment)
    old_id = response.member_id
    ctx.force_state(S.STABLE)
    reply = ctx.send_join(
        with_(request, protocols=SUPERSET, rebalance_timeout_ms=7000, session_timeout_ms=6000),
        True,
        support_skipping_assignment,
    )
    assert reply.records == [ctx.group_record()]
    assert reply.done
    new_id = reply.response.member_id
    expected = JoinGroupResponse(
        E.NONE,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader=new_id if support_skipping_assignment else old_id,
        member_id=new_id,
        members=ctx.join_response_members() if support_skipping_assignment else (),
        skip_assignment=support_skipping_assignment,
    )
    assert reply.response == expected
    new = ctx.coordinator.member(ctx.coordinator.static_member_id("group-instance-id") or "")
    assert new is not None and new.member_id != old_id
    assert new.group_instance_id == "group-instance-id"
    assert new.rebalance_timeout_ms == 7000 and new.session_timeout_ms == 6000
    assert new.protocols == SUPERSET
    assert ctx.num_members() == 1 and ctx.generation == 1 and ctx.state is S.STABLE


def test_replace_static_member_in_completing_rebalance_state_triggers_rebalance() -> None:
    """``GroupMetadataManagerTest
    .testReplaceStaticMemberInCompletingRebalanceStateTriggersRebalance``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(group_instance_id="group-instance-id", protocols=RANGE)
    assert ctx.join_and_complete_join(request, True, True).error is E.NONE
    assert ctx.num_members() == 1 and ctx.generation == 1
    assert ctx.state is S.COMPLETING_REBALANCE
    reply = ctx.send_join(request)
    assert reply.records == []
    assert reply.done and reply.error is E.NONE
    assert ctx.num_members() == 1 and ctx.generation == 2
    assert ctx.state is S.COMPLETING_REBALANCE


# --------------------------------------------------------------------------- fencing


def test_static_member_fence_duplicate_rejoined_follower() -> None:
    """``GroupMetadataManagerTest.testStaticMemberFenceDuplicateRejoinedFollower``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    # A third member joins: a rebalance.
    request = join_request(protocols=RANGE)
    ctx.send_join(request)
    assert ctx.state is S.PREPARING_REBALANCE
    # The old follower rejoins with its current member id.
    old = ctx.send_join(with_(request, member_id=result.follower_id, group_instance_id=FOLLOWER))
    assert old.records == []
    assert not old.done
    # A duplicate follower joins with an unknown member id: the member id is replaced.
    ctx.send_join(with_(request, member_id=UNKNOWN_MEMBER_ID, group_instance_id=FOLLOWER))
    # The old member is fenced at once.
    assert old.done
    ctx.check_join_group_response(
        _fenced(result.follower_id), old.response, S.PREPARING_REBALANCE, set()
    )


def test_static_member_fence_duplicate_syncing_follower_after_member_id_changed() -> None:
    """``GroupMetadataManagerTest
    .testStaticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    # The known leader rejoins: a rebalance.
    request = join_request(
        group_instance_id=LEADER,
        member_id=result.leader_id,
        protocols=SUPERSET,
        rebalance_timeout_ms=10_000,
    )
    leader = ctx.send_join(request)
    assert leader.records == []
    assert not leader.done and ctx.state is S.PREPARING_REBALANCE
    # The old follower rejoins with its current member id: the join completes.
    old = ctx.send_join(with_(request, member_id=result.follower_id, group_instance_id=FOLLOWER))
    assert old.records == []
    assert old.done and leader.done
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=result.leader_id,
            members=ctx.join_response_members(),
        ),
        leader.response,
        S.COMPLETING_REBALANCE,
        {LEADER, FOLLOWER},
    )
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=result.follower_id,
        ),
        old.response,
        S.COMPLETING_REBALANCE,
        set(),
    )
    # The old follower syncs (parked); a duplicate follower joins with an unknown member id:
    # the member id is replaced, CompletingRebalance rebalances, the parked SyncGroup is fenced.
    old_sync = ctx.send_sync(result.follower_id, old.response.generation_id, FOLLOWER)
    assert old_sync.records == []
    assert not old_sync.done
    duplicate = ctx.send_join(
        with_(request, member_id=UNKNOWN_MEMBER_ID, group_instance_id=FOLLOWER)
    )
    assert duplicate.records == []
    assert ctx.state is S.PREPARING_REBALANCE and not duplicate.done
    assert old_sync.done and old_sync.error is E.FENCED_INSTANCE_ID
    # The rebalance timeout completes the join with the duplicate follower only. Both old
    # heartbeats expire, but only the leader (not parked in JoinGroup) is removed.
    # (The leader's removal completes the join, which cancels the join timer.)
    expired = ctx.sleep(10_000)
    assert all(e.records == [] for e in expired)
    fired = [e.key for e in expired]
    assert sorted(fired) == sorted(
        [f"heartbeat:{result.leader_id}", f"heartbeat:{result.follower_id}"]
    )
    assert duplicate.done and ctx.state is S.COMPLETING_REBALANCE
    assert ctx.generation == 3 and ctx.num_members() == 1
    dup_id = duplicate.response.member_id
    assert ctx.has_member(dup_id) and duplicate.response.leader == dup_id


def test_static_member_fence_duplicate_rejoining_follower_after_member_id_changed() -> None:
    """``GroupMetadataManagerTest
    .testStaticMemberFenceDuplicateRejoiningFollowerAfterMemberIdChanged``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    request = join_request(
        group_instance_id=LEADER,
        member_id=result.leader_id,
        protocols=RANGE,
        rebalance_timeout_ms=10_000,
    )
    leader = ctx.send_join(request)
    assert leader.records == []
    assert not leader.done and ctx.state is S.PREPARING_REBALANCE
    # The duplicate follower joins: the member id is replaced and the join completes.
    duplicate = ctx.send_join(
        with_(request, member_id=UNKNOWN_MEMBER_ID, group_instance_id=FOLLOWER)
    )
    assert duplicate.records == []
    assert duplicate.done
    # The old follower rejoins: fenced, its member id was replaced.
    old = ctx.send_join(with_(request, member_id=result.follower_id, group_instance_id=FOLLOWER))
    assert old.records == []
    assert old.done and leader.done
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=result.leader_id,
            members=ctx.join_response_members(),
        ),
        leader.response,
        S.COMPLETING_REBALANCE,
        {LEADER, FOLLOWER},
    )
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=duplicate.response.member_id,
        ),
        duplicate.response,
        S.COMPLETING_REBALANCE,
        set(),
    )
    ctx.check_join_group_response(
        _fenced(result.follower_id), old.response, S.COMPLETING_REBALANCE, set()
    )


def test_static_member_rejoin_as_follower_with_mismatched_instance_id() -> None:
    """``GroupMetadataManagerTest.testStaticMemberRejoinAsFollowerWithMismatchedInstanceId``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    reply = ctx.send_join(
        join_request(group_instance_id=LEADER, member_id=result.follower_id, protocols=SUPERSET),
        True,
        True,
    )
    assert reply.records == []
    assert reply.done and reply.error is E.FENCED_INSTANCE_ID


def test_static_member_rejoin_as_leader_with_mismatched_instance_id() -> None:
    """``GroupMetadataManagerTest.testStaticMemberRejoinAsLeaderWithMismatchedInstanceId``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    reply = ctx.send_join(
        join_request(group_instance_id=FOLLOWER, member_id=result.leader_id, protocols=SUPERSET),
        True,
        True,
    )
    assert reply.records == []
    assert reply.done and reply.error is E.FENCED_INSTANCE_ID


def test_static_member_sync_as_leader_with_invalid_member_id() -> None:
    """``GroupMetadataManagerTest.testStaticMemberSyncAsLeaderWithInvalidMemberId``."""
    ctx = KafkaContext()
    ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    sync = ctx.send_sync("invalid-member-id", 0, FOLLOWER)
    assert sync.records == []
    assert sync.done and sync.error is E.FENCED_INSTANCE_ID


def test_static_member_heartbeat_leader_with_invalid_member_id() -> None:
    """``GroupMetadataManagerTest.testStaticMemberHeartbeatLeaderWithInvalidMemberId``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    sync = ctx.send_sync(result.leader_id, result.generation_id, LEADER)
    assert sync.records == []
    assert sync.done and sync.error is E.NONE
    assert ctx.send_heartbeat(result.leader_id, result.generation_id) is E.NONE
    assert (
        ctx.send_heartbeat("invalid-member-id", result.generation_id, LEADER)
        is E.FENCED_INSTANCE_ID
    )


def test_static_member_join_with_unknown_instance_id_and_known_member_id() -> None:
    """``GroupMetadataManagerTest.testStaticMemberJoinWithUnknownInstanceIdAndKnownMemberId``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    reply = ctx.send_join(
        join_request(
            group_instance_id="unknown-instance-id", member_id=result.leader_id, protocols=SUPERSET
        ),
        True,
        True,
    )
    assert reply.records == []
    assert reply.done and reply.error is E.UNKNOWN_MEMBER_ID


# --------------------------------------------------------------------------- rejoining


def test_static_member_rejoin_with_known_member_id() -> None:
    """``GroupMetadataManagerTest.testStaticMemberRejoinWithKnownMemberId``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(group_instance_id="group-instance-id", protocols=RANGE)
    response = ctx.join_and_complete_join(request, False, False)
    member_id = response.member_id
    rejoin = ctx.send_join(with_(request, member_id=member_id))
    assert rejoin.records == []
    # Same metadata during CompletingRebalance: answered at once.
    assert ctx.state is S.COMPLETING_REBALANCE
    assert rejoin.done and rejoin.error is E.NONE
    sync = ctx.send_sync(member_id, response.generation_id, "group-instance-id")
    assert sync.records == [ctx.group_record()]
    assert sync.done and sync.error is E.NONE and ctx.state is S.STABLE


@pytest.mark.parametrize("support_skipping_assignment", [True, False])
def test_static_member_rejoin_with_leader_id_and_unknown_member_id(
    support_skipping_assignment: bool,
) -> None:
    """``GroupMetadataManagerTest.testStaticMemberRejoinWithLeaderIdAndUnknownMemberId``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    # A static leader rejoining with an unknown id does not rebalance; the record is written.
    request = join_request(group_instance_id=LEADER, protocols=SUPERSET)
    reply = ctx.send_join(request, True, support_skipping_assignment)
    assert reply.records == [ctx.group_record()]
    assert reply.done
    new_id = reply.response.member_id
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id,
            protocol_type="consumer",
            protocol_name="range",
            leader=new_id if support_skipping_assignment else result.leader_id,
            member_id=new_id,
            members=ctx.join_response_members() if support_skipping_assignment else (),
            skip_assignment=support_skipping_assignment,
        ),
        reply.response,
        S.STABLE,
        {LEADER, FOLLOWER} if support_skipping_assignment else set(),
    )
    old = ctx.send_join(
        with_(request, member_id=result.leader_id), True, support_skipping_assignment
    )
    assert old.records == []
    assert old.done and old.error is E.FENCED_INSTANCE_ID
    # The old leader is fenced.
    old_sync = ctx.send_sync(result.leader_id, result.generation_id, LEADER)
    assert old_sync.records == []
    assert old_sync.done and old_sync.error is E.FENCED_INSTANCE_ID
    # Without the instance id, the old leader id is simply unknown.
    old_sync = ctx.send_sync(result.leader_id, result.generation_id)
    assert old_sync.records == []
    assert old_sync.done and old_sync.error is E.UNKNOWN_MEMBER_ID


def test_static_member_rejoin_with_leader_id_and_known_member_id() -> None:
    """``GroupMetadataManagerTest.testStaticMemberRejoinWithLeaderIdAndKnownMemberId``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    request = join_request(
        group_instance_id=LEADER,
        member_id=result.leader_id,
        protocols=RANGE,
        rebalance_timeout_ms=10_000,
    )
    response = ctx.join_and_complete_join(request, True, True, 10_000)
    # The follower's session (5 s) expires while the leader's rebalance waits.
    assert not ctx.has_member(result.follower_id)
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=result.leader_id,
            members=ctx.join_response_members(),
        ),
        response,
        S.COMPLETING_REBALANCE,
        {LEADER},
    )


def test_static_member_rejoin_with_leader_id_and_unexpected_dead_group() -> None:
    """``GroupMetadataManagerTest.testStaticMemberRejoinWithLeaderIdAndUnexpectedDeadGroup``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    ctx.force_state(S.DEAD)
    reply = ctx.send_join(
        join_request(group_instance_id=LEADER, member_id=result.leader_id, protocols=RANGE),
        True,
        True,
    )
    assert reply.records == []
    assert reply.done and reply.error is E.COORDINATOR_NOT_AVAILABLE


def test_static_member_rejoin_with_leader_id_and_unexpected_empty_group() -> None:
    """``GroupMetadataManagerTest.testStaticMemberRejoinWithLeaderIdAndUnexpectedEmptyGroup``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    ctx.force_state(S.PREPARING_REBALANCE)
    ctx.force_state(S.EMPTY)
    reply = ctx.send_join(
        join_request(group_instance_id=LEADER, member_id=result.leader_id, protocols=RANGE),
        True,
        True,
    )
    assert reply.records == []
    assert reply.done and reply.error is E.UNKNOWN_MEMBER_ID


def test_static_member_rejoin_with_follower_id_and_change_of_protocol() -> None:
    """``GroupMetadataManagerTest.testStaticMemberRejoinWithFollowerIdAndChangeOfProtocol``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER, 10_000, 15_000)
    # The follower rejoins with a changed protocol: a rebalance.
    reply = ctx.send_join(
        join_request(
            group_instance_id=FOLLOWER,
            member_id=result.follower_id,
            protocols=to_protocols("roundrobin"),
            rebalance_timeout_ms=10_000,
            session_timeout_ms=15_000,
        )
    )
    assert reply.records == []
    assert not reply.done
    assert_no_or_empty_result(ctx.sleep(10_000))
    assert reply.done and reply.error is E.NONE
    # The leader did not rejoin: it stays (static) and the follower becomes leader.
    assert ctx.coordinator.static_member_id(LEADER) is not None
    assert ctx.is_leader(result.follower_id)
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="roundrobin",
            leader=result.follower_id,
            member_id=result.follower_id,
            members=ctx.join_response_members(),
        ),
        reply.response,
        S.COMPLETING_REBALANCE,
        {LEADER, FOLLOWER},
    )


def test_static_member_rejoin_with_unknown_member_id_and_change_of_protocol_with_selected_protocol_changed():  # noqa: E501
    """``GroupMetadataManagerTest
    .testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER, 10_000, 15_000)
    assert vote.select_protocol(ctx.coordinator.group) != "roundrobin"
    reply = ctx.send_join(
        join_request(
            group_instance_id=FOLLOWER,
            protocols=to_protocols("roundrobin"),
            rebalance_timeout_ms=10_000,
            session_timeout_ms=15_000,
        )
    )
    assert reply.records == []
    assert not reply.done
    assert vote.select_protocol(ctx.coordinator.group) == "roundrobin"
    assert_no_or_empty_result(ctx.sleep(10_000))
    assert reply.done and reply.error is E.NONE
    assert ctx.coordinator.static_member_id(LEADER) is not None
    new_id = reply.response.member_id
    assert ctx.is_leader(new_id) and new_id != result.follower_id
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="roundrobin",
            leader=new_id,
            member_id=new_id,
            members=ctx.join_response_members(),
        ),
        reply.response,
        S.COMPLETING_REBALANCE,
        {LEADER, FOLLOWER},
    )


def test_static_member_rejoin_with_unknown_member_id_and_change_of_protocol_while_select_protocol_unchanged():  # noqa: E501
    """``GroupMetadataManagerTest
    .testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    request = join_request(
        group_instance_id=FOLLOWER,
        protocols=to_protocols(vote.select_protocol(ctx.coordinator.group)),
    )
    reply = ctx.send_join(request, True, True)
    assert reply.records == [ctx.group_record()]
    assert reply.done
    new_id = reply.response.member_id
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=new_id,
        ),
        reply.response,
        S.STABLE,
        set(),
    )
    assert new_id != result.follower_id
    old = ctx.send_join(with_(request, member_id=result.follower_id))
    assert old.records == []
    assert old.error is E.FENCED_INSTANCE_ID
    old_sync = ctx.send_sync(result.follower_id, result.generation_id, FOLLOWER)
    assert old_sync.records == []
    assert old_sync.done and old_sync.error is E.FENCED_INSTANCE_ID
    sync = ctx.send_sync(new_id, result.generation_id, FOLLOWER)
    assert sync.records == []
    assert sync.done and sync.error is E.NONE
    # The replaced member keeps the assignment of the old one.
    assert sync.response.assignment == result.follower_assignment


def test_static_member_rejoin_with_known_leader_id_to_trigger_rebalance_and_follower_with_changeof_protocol():  # noqa: E501
    """``GroupMetadataManagerTest
    .testStaticMemberRejoinWithKnownLeaderIdToTriggerRebalanceAndFollowerWithChangeofProtocol``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    # The leader rejoins: a rebalance.
    request = join_request(
        group_instance_id=LEADER,
        member_id=result.leader_id,
        protocols=SUPERSET,
        rebalance_timeout_ms=10_000,
        session_timeout_ms=5000,
    )
    leader = ctx.send_join(request, True, True)
    assert leader.records == []
    assert not leader.done
    follower = ctx.send_join(
        with_(request, group_instance_id=FOLLOWER, member_id=result.follower_id), True, True
    )
    assert follower.records == []
    assert leader.done and follower.done
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.generation == 2
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=leader.response.member_id,
            members=ctx.join_response_members(),
        ),
        leader.response,
        S.COMPLETING_REBALANCE,
        {LEADER, FOLLOWER},
    )
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=follower.response.member_id,
        ),
        follower.response,
        S.COMPLETING_REBALANCE,
        set(),
    )
    # The follower rejoins with a changed protocol: another rebalance.
    follower = ctx.send_join(
        with_(request, group_instance_id=FOLLOWER, member_id=result.follower_id, protocols=RANGE),
        True,
        True,
    )
    assert follower.records == []
    assert not follower.done and ctx.state is S.PREPARING_REBALANCE
    # The leader's session expires (5 s, parked in nothing); the join completes without it.
    assert len(ctx.expire(5000)) <= 2
    assert follower.done
    new_follower_id = follower.response.member_id
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 2,
            protocol_type="consumer",
            protocol_name="range",
            leader=new_follower_id,
            member_id=new_follower_id,
            members=ctx.join_response_members(),
        ),
        follower.response,
        S.COMPLETING_REBALANCE,
        {FOLLOWER},
    )


def test_static_member_rejoin_as_follower_with_unknown_member_id() -> None:
    """``GroupMetadataManagerTest.testStaticMemberRejoinAsFollowerWithUnknownMemberId``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    reply = ctx.send_join(join_request(group_instance_id=FOLLOWER, protocols=SUPERSET), True, True)
    assert reply.records == [ctx.group_record()]
    assert reply.done and ctx.coordinator.static_member_id(LEADER) is not None
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id,  # the group has not changed
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=reply.response.member_id,
        ),
        reply.response,
        S.STABLE,
        set(),
    )
    assert reply.response.member_id != result.follower_id
    sync = ctx.send_sync(reply.response.member_id, result.generation_id, FOLLOWER)
    assert sync.records == []
    assert sync.done and sync.error is E.NONE
    assert sync.response.assignment == result.follower_assignment


def test_static_member_rejoin_as_follower_with_known_member_id_and_no_protocol_change() -> None:
    """``GroupMetadataManagerTest
    .testStaticMemberRejoinAsFollowerWithKnownMemberIdAndNoProtocolChange``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    reply = ctx.send_join(
        join_request(group_instance_id=FOLLOWER, member_id=result.follower_id, protocols=SUPERSET),
        True,
        True,
    )
    assert reply.records == []
    assert reply.done and ctx.coordinator.static_member_id(LEADER) is not None
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=result.follower_id,
        ),
        reply.response,
        S.STABLE,
        set(),
    )


def test_get_different_static_member_id_after_each_rejoin() -> None:
    """``GroupMetadataManagerTest.testGetDifferentStaticMemberIdAfterEachRejoin``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    last = result.leader_id
    for _ in range(5):
        reply = ctx.send_join(
            join_request(group_instance_id=LEADER, protocols=SUPERSET), True, True
        )
        assert reply.records == [ctx.group_record()]
        assert reply.done and reply.error is E.NONE
        assert reply.response.member_id == ctx.coordinator.static_member_id(LEADER)
        assert reply.response.member_id != last
        last = reply.response.member_id


def test_static_member_re_join_with_illegal_state_as_unknown_member() -> None:
    """``GroupMetadataManagerTest.testStaticMemberReJoinWithIllegalStateAsUnknownMember``."""
    ctx = KafkaContext()
    ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    ctx.force_state(S.PREPARING_REBALANCE)
    ctx.force_state(S.EMPTY)
    with pytest.raises(IllegalGroupState) as raised:
        ctx.send_join(join_request(group_instance_id=FOLLOWER, protocols=SUPERSET), True, True)
    assert "group-id" in str(raised.value) and FOLLOWER in str(raised.value)


def test_static_member_follower_fail_to_rejoin_before_rebalance_timeout() -> None:
    """``GroupMetadataManagerTest.testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER, 10_000, 15_000)
    new_instance = "new-member-instance-id"
    request = join_request(group_instance_id=new_instance, protocols=SUPERSET)
    new = ctx.send_join(request, True, True)
    assert new.records == []
    assert not new.done and ctx.state is S.PREPARING_REBALANCE
    leader = ctx.send_join(
        with_(request, group_instance_id=LEADER, member_id=result.leader_id), True, True
    )
    assert leader.records == []
    assert not leader.done
    assert_no_or_empty_result(ctx.sleep(10_000))
    assert leader.done and new.done
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=result.leader_id,
            members=ctx.join_response_members(),
        ),
        leader.response,
        S.COMPLETING_REBALANCE,
        {LEADER, FOLLOWER, new_instance},
    )
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=result.leader_id,
            member_id=new.response.member_id,
        ),
        new.response,
        S.COMPLETING_REBALANCE,
        set(),
    )


def test_static_member_leader_fail_to_rejoin_before_rebalance_timeout() -> None:
    """``GroupMetadataManagerTest.testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER, 10_000, 15_000)
    new_instance = "new-member-instance-id"
    request = join_request(group_instance_id=new_instance, protocols=SUPERSET)
    new = ctx.send_join(request, True, True)
    assert new.records == []
    assert not new.done and ctx.state is S.PREPARING_REBALANCE
    old_follower = ctx.send_join(
        with_(request, group_instance_id=FOLLOWER, member_id=result.follower_id), True, True
    )
    assert old_follower.records == []
    assert not old_follower.done
    assert_no_or_empty_result(ctx.sleep(10_000))
    assert old_follower.done and new.done
    follower_leads = old_follower.response.leader == old_follower.response.member_id
    new_leader = old_follower.response if follower_leads else new.response
    new_follower = new.response if follower_leads else old_follower.response
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=new_leader.member_id,
            member_id=new_leader.member_id,
            members=ctx.join_response_members(),
        ),
        new_leader,
        S.COMPLETING_REBALANCE,
        {LEADER, FOLLOWER, new_instance},
    )
    ctx.check_join_group_response(
        JoinGroupResponse(
            E.NONE,
            generation_id=result.generation_id + 1,
            protocol_type="consumer",
            protocol_name="range",
            leader=new_leader.member_id,
            member_id=new_follower.member_id,
        ),
        new_follower,
        S.COMPLETING_REBALANCE,
        set(),
    )


def test_group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member() -> None:
    """``GroupMetadataManagerTest.testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember``."""
    ctx = KafkaContext()
    result = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER, 5000, 10_000)
    reply = ctx.send_join(join_request(protocols=SUPERSET, session_timeout_ms=10_000))
    assert reply.records == []
    assert_no_or_empty_result(ctx.sleep(5000))
    assert reply.done and reply.error is E.NONE
    new_id = reply.response.member_id
    assert reply.response.leader == new_id
    assert len(reply.response.members) == 3 and reply.response.generation_id == 2
    assert ctx.state is S.COMPLETING_REBALANCE
    assert ctx.all_member_ids() == {result.leader_id, result.follower_id, new_id}
    assert ctx.static_member_ids() == {result.leader_id, result.follower_id}
    assert ctx.dynamic_member_ids() == {new_id}
    leave = ctx.send_leave(MemberIdentity(result.follower_id, FOLLOWER))
    assert leave.records == []
    assert leave.response.members == (
        LeaveGroupMemberResponse(result.follower_id, FOLLOWER, E.NONE),
    )
    assert ctx.state is S.PREPARING_REBALANCE
    ctx.sleep(5000)  # Kafka does not check this sleep's result
    # The dynamic member did not rejoin and is gone; the static leader stays until its
    # session expires, and with no member rejoined the join phase is extended.
    assert ctx.dynamic_member_ids() == set()
    assert ctx.all_member_ids() == {result.leader_id}
    assert ctx.generation == 2 and ctx.state is S.PREPARING_REBALANCE


# --------------------------------------------------------------------------- LeaveGroup


def test_leave_group_with_fenced_instance_id() -> None:
    """``GroupMetadataManagerTest.testLeaveGroupWithFencedInstanceId``."""
    ctx = KafkaContext()
    ctx.create_group()
    ctx.join_and_complete_join(
        join_request(group_instance_id="group-instance-id", protocols=RANGE), True, True
    )
    leave = ctx.send_leave(MemberIdentity("other-member-id", "group-instance-id"))
    assert leave.records == []
    assert leave.response.members == (
        LeaveGroupMemberResponse("other-member-id", "group-instance-id", E.FENCED_INSTANCE_ID),
    )


def test_leave_group_static_member_with_unknown_member_id() -> None:
    """``GroupMetadataManagerTest.testLeaveGroupStaticMemberWithUnknownMemberId``."""
    ctx = KafkaContext()
    ctx.create_group()
    ctx.join_and_complete_join(
        join_request(group_instance_id="group-instance-id", protocols=RANGE), True, True
    )
    leave = ctx.send_leave(MemberIdentity(UNKNOWN_MEMBER_ID, "group-instance-id"))
    assert leave.records == [ctx.group_record()]  # the group went Empty
    assert leave.response.members == (
        LeaveGroupMemberResponse(UNKNOWN_MEMBER_ID, "group-instance-id", E.NONE),
    )
    # The admin removal took the only member out.
    assert ctx.num_members() == 0


def test_static_members_valid_batch_leave_group() -> None:
    """``GroupMetadataManagerTest.testStaticMembersValidBatchLeaveGroup``."""
    ctx = KafkaContext()
    ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    leave = ctx.send_leave(
        MemberIdentity(group_instance_id=LEADER), MemberIdentity(group_instance_id=FOLLOWER)
    )
    assert leave.records == [ctx.group_record()]  # the group went Empty
    assert leave.response.members == (
        LeaveGroupMemberResponse("", LEADER, E.NONE),
        LeaveGroupMemberResponse("", FOLLOWER, E.NONE),
    )


def test_static_members_leave_unknown_group() -> None:
    """``GroupMetadataManagerTest.testStaticMembersLeaveUnknownGroup``."""
    ctx = KafkaContext()
    ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    # Another group's coordinator: one that never saw a JoinGroup (no such group).
    other = KafkaContext()
    leave = other.send_leave(
        MemberIdentity(group_instance_id=LEADER),
        MemberIdentity(group_instance_id=FOLLOWER),
    )
    # UnknownMemberIdException, as GroupCoordinatorService#leaveGroup answers it.
    assert leave.records == []
    assert leave.error is E.NONE
    assert leave.response.members == (
        LeaveGroupMemberResponse("", LEADER, E.UNKNOWN_MEMBER_ID),
        LeaveGroupMemberResponse("", FOLLOWER, E.UNKNOWN_MEMBER_ID),
    )


def test_static_members_fenced_instance_batch_leave_group() -> None:
    """``GroupMetadataManagerTest.testStaticMembersFencedInstanceBatchLeaveGroup``."""
    ctx = KafkaContext()
    ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    leave = ctx.send_leave(
        MemberIdentity(group_instance_id=LEADER),
        MemberIdentity("invalid-member-id", FOLLOWER),
    )
    assert leave.records == []
    assert leave.response.members == (
        LeaveGroupMemberResponse("", LEADER, E.NONE),
        LeaveGroupMemberResponse("invalid-member-id", FOLLOWER, E.FENCED_INSTANCE_ID),
    )


def test_static_members_unknown_instance_batch_leave_group() -> None:
    """``GroupMetadataManagerTest.testStaticMembersUnknownInstanceBatchLeaveGroup``."""
    ctx = KafkaContext()
    ctx.static_members_join_and_rebalance(LEADER, FOLLOWER)
    leave = ctx.send_leave(
        MemberIdentity(group_instance_id="unknown-instance-id"),
        MemberIdentity(group_instance_id=FOLLOWER),
    )
    assert leave.records == []
    assert leave.response.members == (
        LeaveGroupMemberResponse("", "unknown-instance-id", E.UNKNOWN_MEMBER_ID),
        LeaveGroupMemberResponse("", FOLLOWER, E.NONE),
    )
    # The follower left: a rebalance (Kafka writes no record here).
    assert ctx.state is S.PREPARING_REBALANCE
