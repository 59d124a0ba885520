"""SyncGroup: Kafka's ``GroupMetadataManagerTest`` classic-group SyncGroup tests, translated.

Each test names its Kafka original (commit 1eb7644349cb07139d6a3c1ad1986979647cac99).
``testSyncGroupAsLeaderAppendFailureTransformsError`` is not translated: groupsim's record
writes never fail (docs/coordinator-fidelity.md).
"""

from __future__ import annotations

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


def _sync_group_protocol_type_and_name_with(
    protocol_type: str | None,
    protocol_name: str | None,
    expected_error: E,
    expected_protocol_type: str | None,
    expected_protocol_name: str | None,
) -> None:
    """``GroupMetadataManagerTest.testSyncGroupProtocolTypeAndNameWith``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(
        group_instance_id="leader-instance-id", protocols=to_protocols("range", "roundrobin")
    )
    leader = ctx.send_join(request)
    follower = ctx.send_join(with_(request, group_instance_id="follower-instance-id"))
    assert leader.records == [] and follower.records == []
    assert not leader.done and not follower.done
    assert_no_or_empty_result(ctx.sleep(10_000))
    assert leader.error is E.NONE and follower.error is E.NONE
    leader_id = leader.response.member_id
    follower_id = follower.response.member_id
    generation = leader.response.generation_id
    for member_id, assignments in ((leader_id, ((leader_id, b""),)), (follower_id, ())):
        sync = ctx.send_sync(
            member_id,
            generation,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=assignments,
        )
        if member_id == follower_id:
            assert sync.records == []
        assert sync.done and sync.error is expected_error
        assert sync.response.protocol_type == expected_protocol_type
        assert sync.response.protocol_name == expected_protocol_name


def test_sync_group_returns_an_error_when_protocol_type_is_inconsistent() -> None:
    """``GroupMetadataManagerTest.testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent``."""
    _sync_group_protocol_type_and_name_with(
        "protocolType", None, E.INCONSISTENT_GROUP_PROTOCOL, None, None
    )


def test_sync_group_returns_an_error_when_protocol_name_is_inconsistent() -> None:
    """``GroupMetadataManagerTest.testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent``."""
    _sync_group_protocol_type_and_name_with(
        None, "protocolName", E.INCONSISTENT_GROUP_PROTOCOL, None, None
    )


def test_sync_group_succeed_when_protocol_type_and_name_are_not_provided() -> None:
    """``GroupMetadataManagerTest.testSyncGroupSucceedWhenProtocolTypeAndNameAreNotProvided``."""
    _sync_group_protocol_type_and_name_with(None, None, E.NONE, "consumer", "range")


def test_sync_group_succeed_when_protocol_type_and_name_are_consistent() -> None:
    """``GroupMetadataManagerTest.testSyncGroupSucceedWhenProtocolTypeAndNameAreConsistent``."""
    _sync_group_protocol_type_and_name_with("consumer", "range", E.NONE, "consumer", "range")


def test_sync_group_from_unknown_group() -> None:
    """``GroupMetadataManagerTest.testSyncGroupFromUnknownGroup``."""
    ctx = KafkaContext()
    sync = ctx.send_sync("member-id", 1)
    assert sync.records == []
    assert sync.done and sync.error is E.UNKNOWN_MEMBER_ID


def test_sync_group_from_unknown_member() -> None:
    """``GroupMetadataManagerTest.testSyncGroupFromUnknownMember``."""
    ctx = KafkaContext()
    ctx.create_group()
    response = ctx.join_and_complete_join(
        join_request(group_instance_id="leader-instance-id", protocols=RANGE), True, True
    )
    member_id, generation = response.member_id, response.generation_id
    assignments = ((member_id, b""),)
    sync = ctx.send_sync(member_id, generation, assignments=assignments)
    assert sync.done and sync.error is E.NONE and sync.response.assignment == b""
    sync = ctx.send_sync("unknown-member-id", generation, assignments=assignments)
    assert sync.records == []
    assert sync.done and sync.error is E.UNKNOWN_MEMBER_ID
    assert sync.response.assignment == b""  # ClassicGroupMember.EMPTY_ASSIGNMENT


def test_sync_group_from_illegal_generation() -> None:
    """``GroupMetadataManagerTest.testSyncGroupFromIllegalGeneration``."""
    ctx = KafkaContext()
    ctx.create_group()
    response = ctx.join_and_complete_join(
        join_request(group_instance_id="leader-instance-id", protocols=RANGE), True, True
    )
    sync = ctx.send_sync(response.member_id, response.generation_id + 1)
    assert sync.records == []
    assert sync.done and sync.error is E.ILLEGAL_GENERATION


def _leader_and_follower_completing(ctx: KafkaContext) -> tuple[str, str, int]:
    """The common opening of testLeaderFailureInSyncGroup / testSyncGroup*After*: a second
    member joins a Stable one-member group and the leader rejoins; CompletingRebalance."""
    leader_response = ctx.join_dynamic_and_complete_rebalance()
    request = join_request(protocols=RANGE, rebalance_timeout_ms=10_000, session_timeout_ms=5000)
    follower = ctx.send_join(request)
    assert follower.records == [] and not follower.done
    leader = ctx.send_join(with_(request, member_id=leader_response.member_id))
    assert leader.records == []
    assert leader.done and follower.done
    assert leader.error is E.NONE and follower.error is E.NONE
    assert leader.response.generation_id == follower.response.generation_id
    assert leader.response.leader == leader_response.member_id == follower.response.leader
    assert ctx.state is S.COMPLETING_REBALANCE
    return leader_response.member_id, follower.response.member_id, leader.response.generation_id


def test_leader_failure_in_sync_group() -> None:
    """``GroupMetadataManagerTest.testLeaderFailureInSyncGroup``."""
    ctx = KafkaContext()
    _, follower_id, generation = _leader_and_follower_completing(ctx)
    follower_sync = ctx.send_sync(follower_id, generation)
    assert follower_sync.records == [] and not follower_sync.done
    # The leader never syncs: the sync timeout removes it and the group rebalances.
    expired = ctx.sleep(10_000)
    assert len(expired) <= 2
    assert all(e.records == [] for e in expired)
    assert follower_sync.done and follower_sync.error is E.REBALANCE_IN_PROGRESS
    assert ctx.all_member_ids() == {follower_id}
    assert ctx.state is S.PREPARING_REBALANCE


def test_sync_group_follower_after_leader() -> None:
    """``GroupMetadataManagerTest.testSyncGroupFollowerAfterLeader``."""
    ctx = KafkaContext()
    leader_id, follower_id, generation = _leader_and_follower_completing(ctx)
    assignments = ((leader_id, b"\x00"), (follower_id, b"\x01"))
    sync = ctx.send_sync(leader_id, generation, assignments=assignments)
    assert sync.done and sync.error is E.NONE and sync.response.assignment == b"\x00"
    follower_sync = ctx.send_sync(follower_id, generation, assignments=assignments)
    assert follower_sync.records == []
    assert follower_sync.done and follower_sync.error is E.NONE
    assert follower_sync.response.assignment == b"\x01"
    assert ctx.state is S.STABLE


def test_sync_group_leader_after_follower() -> None:
    """``GroupMetadataManagerTest.testSyncGroupLeaderAfterFollower``."""
    ctx = KafkaContext()
    leader_id, follower_id, generation = _leader_and_follower_completing(ctx)
    follower_sync = ctx.send_sync(follower_id, generation)
    assert follower_sync.records == [] and not follower_sync.done
    assignments = ((leader_id, b"\x00"), (follower_id, b"\x01"))
    sync = ctx.send_sync(leader_id, generation, assignments=assignments)
    assert sync.records == [ctx.group_record(dict(assignments))]
    assert sync.done and sync.error is E.NONE and sync.response.assignment == b"\x00"
    assert follower_sync.error is E.NONE and follower_sync.response.assignment == b"\x01"
    assert ctx.state is S.STABLE


def test_sync_group_empty_assignment() -> None:
    """``GroupMetadataManagerTest.testSyncGroupEmptyAssignment``."""
    ctx = KafkaContext()
    leader = ctx.join_dynamic_and_complete_rebalance()
    assert ctx.coordinator.member(leader.member_id).assignment == b""  # type: ignore[union-attr]
    assert ctx.send_heartbeat(leader.member_id, leader.generation_id) is E.NONE
