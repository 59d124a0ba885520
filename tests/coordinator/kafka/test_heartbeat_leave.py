"""Heartbeat and LeaveGroup (dynamic members): Kafka's ``GroupMetadataManagerTest``
classic-group tests, translated.

Each test names its Kafka original (commit 1eb7644349cb07139d6a3c1ad1986979647cac99).
groupsim runs one :class:`~coordinator.group.GroupCoordinator` per group, so Kafka's
"unknown group" (no such group in the shard) is a coordinator for that group id that never
saw a JoinGroup.
"""

from __future__ import annotations

from coordinator import GroupRecord, GroupRecordMember
from protocol.group import LeaveGroupMemberResponse, MemberIdentity
from tests.coordinator.kafka.context import (
    E,
    KafkaContext,
    S,
    assert_no_or_empty_result,
    join_request,
    to_protocols,
    with_,
)

RANGE = to_protocols("range")


# --------------------------------------------------------------------------- Heartbeat


def test_heartbeat_unknown_group() -> None:
    """``GroupMetadataManagerTest.testHeartbeatUnknownGroup``."""
    ctx = KafkaContext()
    assert ctx.send_heartbeat("member-id", -1) is E.UNKNOWN_MEMBER_ID


def test_heartbeat_dead_group() -> None:
    """``GroupMetadataManagerTest.testHeartbeatDeadGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    ctx.force_state(S.DEAD)
    assert ctx.send_heartbeat("member-id", -1) is E.COORDINATOR_NOT_AVAILABLE


def test_heartbeat_empty_group() -> None:
    """``GroupMetadataManagerTest.testHeartbeatEmptyGroup``.

    Kafka adds the member to the Empty group directly; here a loaded one-member record at
    generation 0 is walked back to Empty with the test back door.
    """
    ctx = KafkaContext()
    record = GroupRecord(
        group_id="group-id",
        generation=0,
        protocol_type="consumer",
        protocol="range",
        leader="member-id",
        members=(
            GroupRecordMember("member-id", "client-id", "client-host", 10_000, 5000, b"", b""),
        ),
        written_ms=0,
    )
    ctx.load(record)
    ctx.force_state(S.PREPARING_REBALANCE)
    ctx.force_state(S.EMPTY)
    assert ctx.has_member("member-id")
    assert ctx.send_heartbeat("member-id", 0) is E.UNKNOWN_MEMBER_ID


def test_heartbeat_unknown_member_existing_group() -> None:
    """``GroupMetadataManagerTest.testHeartbeatUnknownMemberExistingGroup``."""
    ctx = KafkaContext()
    leader = ctx.join_dynamic_and_complete_rebalance()
    assert ctx.send_heartbeat("unknown-member-id", leader.generation_id) is E.UNKNOWN_MEMBER_ID


def test_heartbeat_during_preparing_rebalance() -> None:
    """``GroupMetadataManagerTest.testHeartbeatDuringPreparingRebalance``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    reply = ctx.send_join(request, True)
    assert reply.records == []
    assert reply.done and reply.error is E.MEMBER_ID_REQUIRED
    member_id = reply.response.member_id
    ctx.send_join(with_(request, member_id=member_id))
    assert ctx.state is S.PREPARING_REBALANCE
    assert ctx.send_heartbeat(member_id, 0) is E.REBALANCE_IN_PROGRESS


def test_heartbeat_during_completing_rebalance() -> None:
    """``GroupMetadataManagerTest.testHeartbeatDuringCompletingRebalance``."""
    ctx = KafkaContext()
    ctx.create_group()
    leader = ctx.join_dynamic_and_complete_join(join_request(protocols=RANGE))
    assert leader.generation_id == 1 and ctx.state is S.COMPLETING_REBALANCE
    assert ctx.send_heartbeat(leader.member_id, leader.generation_id) is E.NONE


def test_heartbeat_illegal_generation() -> None:
    """``GroupMetadataManagerTest.testHeartbeatIllegalGeneration``."""
    ctx = KafkaContext()
    leader = ctx.join_dynamic_and_complete_rebalance()
    assert ctx.send_heartbeat(leader.member_id, leader.generation_id + 1) is E.ILLEGAL_GENERATION


def test_valid_heartbeat() -> None:
    """``GroupMetadataManagerTest.testValidHeartbeat``."""
    ctx = KafkaContext()
    leader = ctx.join_dynamic_and_complete_rebalance()
    assert ctx.send_heartbeat(leader.member_id, leader.generation_id) is E.NONE


def test_classic_group_member_session_timeout() -> None:
    """``GroupMetadataManagerTest.testClassicGroupMemberSessionTimeout``."""
    ctx = KafkaContext()
    leader = ctx.join_dynamic_and_complete_rebalance()
    ctx.verify_session_expiration(5000)
    assert ctx.send_heartbeat(leader.member_id, leader.generation_id) is E.UNKNOWN_MEMBER_ID


def test_classic_group_member_heartbeat_maintains_session() -> None:
    """``GroupMetadataManagerTest.testClassicGroupMemberHeartbeatMaintainsSession``."""
    ctx = KafkaContext()
    leader = ctx.join_dynamic_and_complete_rebalance()
    assert_no_or_empty_result(ctx.sleep(2500))
    assert ctx.send_heartbeat(leader.member_id, leader.generation_id) is E.NONE
    assert_no_or_empty_result(ctx.sleep(2500))
    assert ctx.send_heartbeat(leader.member_id, leader.generation_id) is E.NONE


def test_classic_group_member_session_timeout_during_rebalance() -> None:
    """``GroupMetadataManagerTest.testClassicGroupMemberSessionTimeoutDuringRebalance``."""
    ctx = KafkaContext()
    leader = ctx.join_dynamic_and_complete_rebalance()
    other = ctx.send_join(
        join_request(protocols=RANGE, rebalance_timeout_ms=10_000, session_timeout_ms=5000)
    )
    assert other.records == []
    assert not other.done and ctx.state is S.PREPARING_REBALANCE
    assert_no_or_empty_result(ctx.sleep(2500))
    assert ctx.send_heartbeat(leader.member_id, leader.generation_id) is E.REBALANCE_IN_PROGRESS
    # The leader's session expires while it has not rejoined.
    assert_no_or_empty_result(ctx.sleep(5000))
    assert ctx.send_heartbeat(leader.member_id, leader.generation_id) is E.UNKNOWN_MEMBER_ID
    assert_no_or_empty_result(ctx.sleep(2500))
    assert other.done and other.error is E.NONE
    assert ctx.num_members() == 1 and ctx.generation == 2
    assert ctx.state is S.COMPLETING_REBALANCE


def test_heartbeat_during_rebalance_causes_rebalance_in_progress() -> None:
    """``GroupMetadataManagerTest.testHeartbeatDuringRebalanceCausesRebalanceInProgress``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE, rebalance_timeout_ms=10_000, session_timeout_ms=5000)
    leader = ctx.join_dynamic_and_complete_join(request)
    assert leader.generation_id == 1 and ctx.state is S.COMPLETING_REBALANCE
    reply = ctx.send_join(request)
    assert reply.records == [] and not reply.done
    assert ctx.send_heartbeat(leader.member_id, leader.generation_id) is E.REBALANCE_IN_PROGRESS


# --------------------------------------------------------------------------- LeaveGroup


def _answers(*rows: tuple[str, str | None, E]) -> tuple[LeaveGroupMemberResponse, ...]:
    return tuple(LeaveGroupMemberResponse(*row) for row in rows)


def test_pending_members_leave_group() -> None:
    """``GroupMetadataManagerTest.testPendingMembersLeaveGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    pending = ctx.setup_group_with_pending_member().pending_member_response
    leave = ctx.send_leave(MemberIdentity(pending.member_id))
    assert leave.records == []
    assert leave.error is E.NONE
    assert leave.response.members == _answers((pending.member_id, None, E.NONE))
    # The pending member was all the join waited for.
    assert ctx.state is S.COMPLETING_REBALANCE
    assert ctx.num_members() == 2 and len(ctx.dynamic_member_ids()) == 2
    assert ctx.num_pending() == 0


def test_leave_group_invalid_group() -> None:
    """``GroupMetadataManagerTest.testLeaveGroupInvalidGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    # Another group's coordinator: one that never saw a JoinGroup (no such group).
    other = KafkaContext()
    leave = other.send_leave()
    # The manager's UnknownMemberIdException, as GroupCoordinatorService#leaveGroup answers
    # it: no top-level error, every listed member UNKNOWN_MEMBER_ID (none listed here).
    assert leave.records == []
    assert leave.error is E.NONE and leave.response.members == ()


def test_leave_group_unknown_group() -> None:
    """``GroupMetadataManagerTest.testLeaveGroupUnknownGroup``."""
    ctx = KafkaContext()  # the group was never created
    leave = ctx.send_leave(MemberIdentity("member-id"))
    # UnknownMemberIdException, as GroupCoordinatorService#leaveGroup answers it.
    assert leave.records == []
    assert leave.error is E.NONE
    assert leave.response.members == _answers(("member-id", None, E.UNKNOWN_MEMBER_ID))


def test_leave_group_unknown_member_id_existing_group() -> None:
    """``GroupMetadataManagerTest.testLeaveGroupUnknownMemberIdExistingGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    ctx.join_dynamic_and_complete_join(join_request(protocols=RANGE))
    leave = ctx.send_leave(MemberIdentity("unknown-member-id"))
    assert leave.records == []
    assert leave.error is E.NONE
    assert leave.response.members == _answers(("unknown-member-id", None, E.UNKNOWN_MEMBER_ID))


def test_leave_dead_group() -> None:
    """``GroupMetadataManagerTest.testLeaveDeadGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    ctx.force_state(S.DEAD)
    leave = ctx.send_leave(MemberIdentity("member-id"))
    assert leave.records == []
    assert leave.error is E.COORDINATOR_NOT_AVAILABLE and leave.response.members == ()


def test_valid_leave_group() -> None:
    """``GroupMetadataManagerTest.testValidLeaveGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    response = ctx.join_dynamic_and_complete_join(join_request(protocols=RANGE))
    leave = ctx.send_leave(MemberIdentity(response.member_id))
    # The group goes Empty and is written without members.
    assert leave.records == [ctx.group_record()]
    assert leave.records[0].members == () and leave.records[0].generation == 2
    assert leave.response.members == _answers((response.member_id, None, E.NONE))
    assert ctx.state is S.EMPTY and ctx.generation == 2


def test_pending_member_batch_leave_group() -> None:
    """``GroupMetadataManagerTest.testPendingMemberBatchLeaveGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    pending = ctx.setup_group_with_pending_member().pending_member_response
    leave = ctx.send_leave(
        MemberIdentity(group_instance_id="unknown-instance-id"), MemberIdentity(pending.member_id)
    )
    assert leave.response.members == _answers(
        ("", "unknown-instance-id", E.UNKNOWN_MEMBER_ID),
        (pending.member_id, None, E.NONE),
    )


def test_joined_member_pending_member_batch_leave_group() -> None:
    """``GroupMetadataManagerTest.testJoinedMemberPendingMemberBatchLeaveGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    result = ctx.setup_group_with_pending_member()
    pending_id = result.pending_member_response.member_id
    leave = ctx.send_leave(
        MemberIdentity(result.leader_id),
        MemberIdentity(result.follower_id),
        MemberIdentity(pending_id),
    )
    assert leave.response.members == _answers(
        (result.leader_id, None, E.NONE),
        (result.follower_id, None, E.NONE),
        (pending_id, None, E.NONE),
    )


def test_joined_member_pending_member_batch_leave_group_with_unknown_member() -> None:
    """``GroupMetadataManagerTest.testJoinedMemberPendingMemberBatchLeaveGroupWithUnknownMember``."""
    ctx = KafkaContext()
    ctx.create_group()
    result = ctx.setup_group_with_pending_member()
    pending_id = result.pending_member_response.member_id
    leave = ctx.send_leave(
        MemberIdentity(result.leader_id),
        MemberIdentity(result.follower_id),
        MemberIdentity(pending_id),
        MemberIdentity("unknown-member-id"),
    )
    assert leave.response.members == _answers(
        (result.leader_id, None, E.NONE),
        (result.follower_id, None, E.NONE),
        (pending_id, None, E.NONE),
        ("unknown-member-id", None, E.UNKNOWN_MEMBER_ID),
    )
