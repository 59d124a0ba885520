"""JoinGroup: Kafka's ``GroupMetadataManagerTest`` classic-group JoinGroup tests, translated.

Each test names its Kafka original (commit 1eb7644349cb07139d6a3c1ad1986979647cac99).
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


def test_join_group_unknown_member_new_group() -> None:
    """``GroupMetadataManagerTest.testJoinGroupUnknownMemberNewGroup``."""
    ctx = KafkaContext()
    reply = ctx.send_join(join_request(member_id="member-id"))
    assert reply.records == []
    assert reply.done and reply.error is E.UNKNOWN_MEMBER_ID
    # Static member
    reply = ctx.send_join(
        join_request(member_id="member-id", group_instance_id="group-instance-id")
    )
    assert reply.done and reply.error is E.UNKNOWN_MEMBER_ID
    assert reply.records == []


def test_classic_group_join_inconsistent_protocol_type() -> None:
    """``GroupMetadataManagerTest.testClassicGroupJoinInconsistentProtocolType``."""
    ctx = KafkaContext()
    ctx.create_group()
    ctx.join_dynamic_and_complete_join(join_request(protocols=RANGE))
    reply = ctx.send_join(join_request(protocol_type="connect", protocols=RANGE))
    assert reply.records == []
    assert reply.done and reply.error is E.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_with_empty_protocol_type() -> None:
    """``GroupMetadataManagerTest.testJoinGroupWithEmptyProtocolType``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocol_type="", protocols=RANGE)
    reply = ctx.send_join(request)
    assert reply.records == []
    assert reply.done and reply.error is E.INCONSISTENT_GROUP_PROTOCOL
    # Send as static member join.
    reply = ctx.send_join(with_(request, group_instance_id="group-instance-id"), True, True)
    assert reply.records == []
    assert reply.done and reply.error is E.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_with_empty_group_protocol() -> None:
    """``GroupMetadataManagerTest.testJoinGroupWithEmptyGroupProtocol``."""
    ctx = KafkaContext()
    ctx.create_group()
    reply = ctx.send_join(join_request(protocol_type="consumer", protocols=()))
    assert reply.records == []
    assert reply.done and reply.error is E.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_inconsistent_group_protocol() -> None:
    """``GroupMetadataManagerTest.testJoinGroupInconsistentGroupProtocol``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    reply = ctx.send_join(request)
    assert reply.records == [] and not reply.done
    other = ctx.send_join(with_(request, protocols=to_protocols("roundrobin")))
    assert other.records == [] and other.done
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    assert reply.done and reply.error is E.NONE
    assert other.error is E.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_second_join_inconsistent_protocol() -> None:
    """``GroupMetadataManagerTest.testJoinGroupSecondJoinInconsistentProtocol``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    reply = ctx.send_join(request, True)
    assert reply.records == []
    assert reply.done and reply.error is E.MEMBER_ID_REQUIRED
    # Sending an inconsistent protocol should be refused
    request = with_(request, member_id=reply.response.member_id, protocols=())
    reply = ctx.send_join(request, True)
    assert reply.records == []
    assert reply.done and reply.error is E.INCONSISTENT_GROUP_PROTOCOL
    # Sending consistent protocol should be accepted
    reply = ctx.send_join(with_(request, protocols=RANGE), True)
    assert reply.records == [] and not reply.done
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    assert reply.done and reply.error is E.NONE


def test_join_group_unknown_consumer_existing_group() -> None:
    """``GroupMetadataManagerTest.testJoinGroupUnknownConsumerExistingGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE, session_timeout_ms=5000, rebalance_timeout_ms=5000)
    assert ctx.join_dynamic_and_complete_join(request).error is E.NONE
    reply = ctx.send_join(with_(request, member_id="other-member-id"))
    assert reply.records == []
    assert reply.done and reply.error is E.UNKNOWN_MEMBER_ID


def test_join_group_unknown_consumer_new_dead_group() -> None:
    """``GroupMetadataManagerTest.testJoinGroupUnknownConsumerNewDeadGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    ctx.force_state(S.DEAD)
    reply = ctx.send_join(join_request(protocols=RANGE))
    assert reply.records == []
    assert reply.done and reply.error is E.COORDINATOR_NOT_AVAILABLE


def test_join_group_protocol_type_is_not_provided_when_an_error_occurs() -> None:
    """``GroupMetadataManagerTest.testJoinGroupProtocolTypeIsNotProvidedWhenAnErrorOccurs``."""
    ctx = KafkaContext()
    reply = ctx.send_join(join_request(member_id="member-id", protocols=RANGE))
    assert reply.records == []
    assert reply.done and reply.error is E.UNKNOWN_MEMBER_ID
    assert reply.response.protocol_type is None


def test_join_group_returns_the_protocol_type() -> None:
    """``GroupMetadataManagerTest.testJoinGroupReturnsTheProtocolType``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    leader = ctx.send_join(request)
    member = ctx.send_join(request)
    assert leader.records == [] and member.records == []
    assert not leader.done and not member.done
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    assert leader.error is E.NONE and leader.response.protocol_type == "consumer"
    assert member.error is E.NONE and member.response.protocol_type == "consumer"


def test_existing_member_join_dead_group() -> None:
    """``GroupMetadataManagerTest.testExistingMemberJoinDeadGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    response = ctx.join_dynamic_and_complete_join(request)
    assert ctx.has_member(response.member_id)
    ctx.force_state(S.DEAD)
    reply = ctx.send_join(request)
    assert reply.records == []
    assert reply.done and reply.error is E.COORDINATOR_NOT_AVAILABLE


def test_join_group_existing_member_updated_metadata_triggers_rebalance() -> None:
    """``GroupMetadataManagerTest.testJoinGroupExistingMemberUpdatedMetadataTriggersRebalance``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    response = ctx.join_dynamic_and_complete_join(request)
    member_id = response.member_id
    assert ctx.coordinator.member(member_id).protocols == RANGE  # type: ignore[union-attr]
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.generation == 1
    protocols = to_protocols("range", "roundrobin")
    # Updated member metadata: a rebalance that completes the join phase at once.
    reply = ctx.send_join(with_(request, member_id=member_id, protocols=protocols))
    assert reply.records == []
    assert reply.done and reply.error is E.NONE
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.generation == 2
    assert ctx.coordinator.member(member_id).protocols == protocols  # type: ignore[union-attr]


def test_join_group_as_existing_leader_triggers_rebalance_in_stable_state() -> None:
    """``GroupMetadataManagerTest.testJoinGroupAsExistingLeaderTriggersRebalanceInStableState``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    member_id = ctx.join_dynamic_and_complete_join(request).member_id
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.is_leader(member_id)
    ctx.force_state(S.STABLE)
    reply = ctx.send_join(with_(request, member_id=member_id))
    assert reply.records == []
    assert reply.done and reply.error is E.NONE
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.generation == 2


def test_join_group_as_existing_member_with_updated_metadata_triggers_rebalance_in_stable_state():  # noqa: E501, ANN201
    """``GroupMetadataManagerTest
    .testJoinGroupAsExistingMemberWithUpdatedMetadataTriggersRebalanceInStableState``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    leader_id = ctx.join_dynamic_and_complete_join(request).leader
    assert ctx.generation == 1
    member = ctx.send_join(request)
    assert not member.done
    leader = ctx.send_join(with_(request, member_id=leader_id))
    assert leader.done and member.done
    assert leader.error is E.NONE and member.error is E.NONE
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.num_members() == 2
    assert ctx.generation == 2
    ctx.force_state(S.STABLE)
    member_id = member.response.member_id
    member = ctx.send_join(
        with_(request, member_id=member_id, protocols=to_protocols("range", "roundrobin"))
    )
    assert not member.done
    leader = ctx.send_join(with_(request, member_id=leader_id))
    assert leader.done and member.done and member.error is E.NONE
    assert ctx.state is S.COMPLETING_REBALANCE and ctx.generation == 3
    assert ctx.num_members() == 2
    # No JoinGroup above wrote a record.
    assert ctx.written_since() == []


def test_join_group_existing_member_does_not_trigger_rebalance_in_stable_state() -> None:
    """``GroupMetadataManagerTest.testJoinGroupExistingMemberDoesNotTriggerRebalanceInStableState``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    leader_id = ctx.join_dynamic_and_complete_join(request).leader
    member = ctx.send_join(request)
    leader = ctx.send_join(with_(request, member_id=leader_id))
    assert leader.done and member.done and ctx.state is S.COMPLETING_REBALANCE
    assert ctx.num_members() == 2 and ctx.generation == 2
    ctx.force_state(S.STABLE)
    # Member rejoins with no metadata changes. This does not trigger a rebalance.
    member = ctx.send_join(with_(request, member_id=member.response.member_id))
    assert member.done and member.error is E.NONE
    assert member.response.generation_id == 2 and ctx.state is S.STABLE
    # No JoinGroup above wrote a record.
    assert ctx.written_since() == []


def test_join_group_existing_member_in_empty_state() -> None:
    """``GroupMetadataManagerTest.testJoinGroupExistingMemberInEmptyState``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    member_id = ctx.join_dynamic_and_complete_join(request).member_id
    assert ctx.state is S.COMPLETING_REBALANCE
    ctx.force_state(S.PREPARING_REBALANCE)
    ctx.force_state(S.EMPTY)
    reply = ctx.send_join(with_(request, member_id=member_id))
    assert reply.records == []
    assert reply.done and reply.error is E.UNKNOWN_MEMBER_ID
    assert reply.response.generation_id == -1


def test_complete_join_remove_not_yet_rejoined_dynamic_members() -> None:
    """``GroupMetadataManagerTest.testCompleteJoinRemoveNotYetRejoinedDynamicMembers``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE, session_timeout_ms=1000, rebalance_timeout_ms=1000)
    assert ctx.join_dynamic_and_complete_join(request).error is E.NONE
    assert ctx.generation == 1
    member = ctx.send_join(request)
    assert member.records == []
    assert not member.done and ctx.num_members() == 2
    assert ctx.state is S.PREPARING_REBALANCE
    # The rebalance timeout expires the leader, which has not rejoined.
    assert_no_or_empty_result(ctx.sleep(1000))
    assert member.done and member.error is E.NONE
    assert ctx.num_members() == 1 and ctx.has_member(member.response.member_id)
    assert ctx.generation == 2


def test_complete_join_phase_in_empty_state_skips_rebalance() -> None:
    """``GroupMetadataManagerTest.testCompleteJoinPhaseInEmptyStateSkipsRebalance``."""
    ctx = KafkaContext()
    ctx.create_group()
    reply = ctx.send_join(
        join_request(protocols=RANGE, session_timeout_ms=1000, rebalance_timeout_ms=1000)
    )
    assert reply.records == [] and not reply.done
    assert ctx.generation == 0 and ctx.state is S.PREPARING_REBALANCE
    ctx.force_state(S.DEAD)
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    assert ctx.generation == 0


def test_join_group_from_unchanged_follower_does_not_rebalance() -> None:
    """``GroupMetadataManagerTest.testJoinGroupFromUnchangedFollowerDoesNotRebalance``."""
    ctx = KafkaContext()
    leader_response = ctx.join_dynamic_and_complete_rebalance()
    mark = ctx.mark()
    request = join_request(protocols=RANGE)
    follower = ctx.send_join(request)
    assert not follower.done
    leader = ctx.send_join(with_(request, member_id=leader_response.member_id))
    assert leader.done and follower.done
    assert leader.error is E.NONE and follower.error is E.NONE
    assert leader.response.generation_id == follower.response.generation_id
    assert leader.response.leader == leader_response.member_id == follower.response.leader
    generation = leader.response.generation_id
    follower = ctx.send_join(with_(request, member_id=follower.response.member_id))
    assert follower.done and follower.error is E.NONE
    assert follower.response.generation_id == generation
    assert follower.records == [] and ctx.written_since(mark) == []


def test_join_group_from_unchanged_leader_should_rebalance() -> None:
    """``GroupMetadataManagerTest.testJoinGroupFromUnchangedLeaderShouldRebalance``."""
    ctx = KafkaContext()
    leader = ctx.join_dynamic_and_complete_rebalance()
    reply = ctx.send_join(join_request(member_id=leader.member_id, protocols=RANGE))
    assert reply.records == []
    assert reply.done and reply.error is E.NONE
    assert reply.response.generation_id == leader.generation_id + 1


def test_join_group_completion_when_pending_member_joins() -> None:
    """``GroupMetadataManagerTest.testJoinGroupCompletionWhenPendingMemberJoins``."""
    ctx = KafkaContext()
    ctx.create_group()
    pending = ctx.setup_group_with_pending_member().pending_member_response
    reply = ctx.send_join(join_request(member_id=pending.member_id, protocols=RANGE))
    assert reply.records == []
    assert reply.done and reply.error is E.NONE
    assert ctx.state is S.COMPLETING_REBALANCE
    assert ctx.num_members() == 3 and ctx.num_pending() == 0


def test_join_group_completion_when_pending_member_times_out() -> None:
    """``GroupMetadataManagerTest.testJoinGroupCompletionWhenPendingMemberTimesOut``."""
    ctx = KafkaContext()
    ctx.create_group()
    ctx.setup_group_with_pending_member()
    # Advancing the clock past the pending member's session timeout completes the join.
    assert_no_or_empty_result(ctx.sleep(3000))
    assert ctx.state is S.COMPLETING_REBALANCE
    assert ctx.num_members() == 2 and ctx.num_pending() == 0


def test_generation_id_increments_on_rebalance() -> None:
    """``GroupMetadataManagerTest.testGenerationIdIncrementsOnRebalance``."""
    ctx = KafkaContext()
    leader = ctx.join_dynamic_and_complete_rebalance()
    reply = ctx.send_join(join_request(member_id=leader.member_id, protocols=RANGE))
    assert reply.records == []
    assert reply.done and reply.error is E.NONE and reply.response.generation_id == 2


def test_join_group_existing_pending_member_with_group_instance_id_throws_exception() -> None:
    """``GroupMetadataManagerTest
    .testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException``."""
    import pytest

    from coordinator.group import IllegalGroupState

    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    reply = ctx.send_join(request, True)
    assert reply.records == []
    assert reply.done and reply.error is E.MEMBER_ID_REQUIRED
    with pytest.raises(IllegalGroupState):
        ctx.send_join(
            with_(
                request, member_id=reply.response.member_id, group_instance_id="group-instance-id"
            )
        )
