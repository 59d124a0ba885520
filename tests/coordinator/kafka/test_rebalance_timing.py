"""Initial rebalance delay, new-member and heartbeat expiry, join/sync timeouts, group size
limits: Kafka's ``GroupMetadataManagerTest`` classic-group tests, translated.

Each test names its Kafka original (commit 1eb7644349cb07139d6a3c1ad1986979647cac99).
"""

from __future__ import annotations

from coordinator import GroupRecord, GroupRecordMember
from tests.coordinator.kafka.context import (
    E,
    KafkaContext,
    S,
    assert_no_or_empty_result,
    consumer_subscription,
    join_request,
    to_protocols,
    verify_join_responses,
    with_,
)

RANGE = to_protocols("range")
FOO = consumer_subscription("foo")


# --------------------------------------------------------------------------- initial delay


def test_delay_initial_rebalance_by_group_initial_rebalance_delay_on_empty_group() -> None:
    """``GroupMetadataManagerTest
    .testDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup``."""
    ctx = KafkaContext()
    ctx.create_group()
    reply = ctx.send_join(join_request(protocols=RANGE))
    assert reply.records == []
    assert not reply.done
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms // 2))
    assert not reply.done
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms // 2 + 1))
    assert reply.done and reply.error is E.NONE


def test_reset_rebalance_delay_when_new_member_joins_group_during_initial_rebalance() -> None:
    """``GroupMetadataManagerTest
    .testResetRebalanceDelayWhenNewMemberJoinsGroupDuringInitialRebalance``."""
    ctx = KafkaContext()
    ctx.create_group()
    delay = ctx.initial_rebalance_delay_ms
    request = join_request(protocols=RANGE, rebalance_timeout_ms=delay * 3)
    first = ctx.send_join(request)
    assert first.records == []
    assert_no_or_empty_result(ctx.sleep(delay - 1))
    second = ctx.send_join(request)
    assert second.records == []
    assert not first.done and not second.done
    assert_no_or_empty_result(ctx.sleep(2))
    # Past the initial delay: the delay was extended.
    assert_no_or_empty_result(ctx.sleep(delay // 2 + 1))
    assert not first.done and not second.done
    # Beyond the recomputed delay.
    assert_no_or_empty_result(ctx.sleep(delay // 2))
    assert first.done and second.done
    assert first.error is E.NONE and second.error is E.NONE


def test_delay_rebalance_upto_rebalance_timeout() -> None:
    """``GroupMetadataManagerTest.testDelayRebalanceUptoRebalanceTimeout``."""
    ctx = KafkaContext()
    ctx.create_group()
    delay = ctx.initial_rebalance_delay_ms
    request = join_request(protocols=RANGE, rebalance_timeout_ms=delay * 2)
    first = ctx.send_join(request)
    assert first.records == []
    second = ctx.send_join(request)
    assert second.records == []
    assert_no_or_empty_result(ctx.sleep(delay + 1))
    third = ctx.send_join(request)
    assert third.records == []
    assert not third.done
    # Right before the rebalance timeout.
    assert_no_or_empty_result(ctx.sleep(delay - 1))
    assert not (first.done or second.done or third.done)
    # Beyond the rebalance timeout.
    assert_no_or_empty_result(ctx.sleep(1))
    assert first.done and second.done and third.done
    assert {first.error, second.error, third.error} == {E.NONE}


# --------------------------------------------------------------------------- expiry


def test_new_member_join_expiration() -> None:
    """``GroupMetadataManagerTest.testNewMemberJoinExpiration``."""
    ctx = KafkaContext()
    ctx.create_group()
    timeout = ctx.new_member_join_timeout_ms
    request = join_request(
        protocols=RANGE, session_timeout_ms=5000 + timeout, rebalance_timeout_ms=2 * timeout
    )
    first = ctx.join_dynamic_and_complete_join(request)
    assert first.leader == first.member_id and first.error is E.NONE
    assert not any(v.is_new for v in ctx.coordinator.members())
    second = ctx.send_join(with_(request, session_timeout_ms=5000, rebalance_timeout_ms=5000))
    assert second.records == []
    assert not second.done
    assert ctx.num_members() == 2
    new = [v for v in ctx.coordinator.members() if v.is_new]
    assert len(new) == 1 and new[0].member_id != first.member_id
    # The new member join timeout expires the second member.
    assert_no_or_empty_result(ctx.sleep(timeout))
    assert second.done and second.error is E.UNKNOWN_MEMBER_ID
    assert ctx.all_member_ids() == {first.member_id}
    assert not any(v.is_new for v in ctx.coordinator.members())


def test_heartbeat_expiration_should_remove_pending_member() -> None:
    """``GroupMetadataManagerTest.testHeartbeatExpirationShouldRemovePendingMember``."""
    ctx = KafkaContext()
    ctx.create_group()
    reply = ctx.send_join(join_request(protocols=RANGE, session_timeout_ms=1000), True)
    assert reply.records == []
    assert reply.done and reply.error is E.MEMBER_ID_REQUIRED
    assert ctx.num_members() == 0 and ctx.num_pending() == 1
    assert_no_or_empty_result(ctx.sleep(1000))
    assert ctx.num_pending() == 0


def test_heartbeat_expiration_should_remove_member() -> None:
    """``GroupMetadataManagerTest.testHeartbeatExpirationShouldRemoveMember``."""
    ctx = KafkaContext(initial_rebalance_delay_ms=10 * 60 * 1000)
    ctx.create_group()
    reply = ctx.send_join(join_request(protocols=RANGE))
    assert reply.records == []
    assert not reply.done and ctx.num_members() == 1
    member_id = ctx.coordinator.leader_id
    expired = ctx.sleep(ctx.new_member_join_timeout_ms)
    assert [e.key for e in expired] == [f"heartbeat:{member_id}"]
    # A group that goes Empty by completing the join phase writes its record.
    assert expired[0].records == [ctx.group_record()]
    assert expired[0].records[0].members == () and expired[0].records[0].generation == 1
    assert reply.done and reply.error is E.UNKNOWN_MEMBER_ID
    assert ctx.num_members() == 0


def test_new_member_timeout_completion() -> None:
    """``GroupMetadataManagerTest.testNewMemberTimeoutCompletion``."""
    ctx = KafkaContext()
    ctx.create_group()
    reply = ctx.send_join(
        join_request(protocols=RANGE, session_timeout_ms=ctx.new_member_join_timeout_ms + 5000)
    )
    assert reply.records == []
    assert not reply.done
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    assert reply.done and reply.error is E.NONE
    assert ctx.generation == 1 and ctx.state is S.COMPLETING_REBALANCE
    assert not any(v.is_new for v in ctx.coordinator.members())
    sync = ctx.send_sync(reply.response.member_id, reply.response.generation_id)
    assert sync.done and sync.error is E.NONE and ctx.num_members() == 1
    # The new-member timeout is no longer in effect.
    assert_no_or_empty_result(ctx.sleep(ctx.new_member_join_timeout_ms))
    assert ctx.num_members() == 1
    # The session timeout removes the member; the group is now Empty.
    expired = ctx.sleep(5000)
    assert [e.key for e in expired] == [f"heartbeat:{reply.response.member_id}"]
    # The group's record with no members (Kafka spells its fields out here).
    assert expired[0].records == [ctx.group_record()]
    record = expired[0].records[0]
    assert record.generation == 2 and record.protocol_type == "consumer"
    assert record.members == () and record.leader is None and record.protocol is None
    assert ctx.num_members() == 0 and ctx.state is S.EMPTY


def test_new_member_failure_after_join_group_completion() -> None:
    """``GroupMetadataManagerTest.testNewMemberFailureAfterJoinGroupCompletion``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE, session_timeout_ms=5000, rebalance_timeout_ms=10_000)
    response = ctx.join_and_complete_join(request, False, False)
    member_id = response.member_id
    assert response.leader == member_id and response.generation_id == 1
    sync = ctx.send_sync(member_id, 1)
    assert sync.done and sync.error is E.NONE
    assert ctx.state is S.STABLE and ctx.generation == 1
    other = ctx.send_join(request)
    assert other.records == []
    reply = ctx.send_join(with_(request, member_id=member_id))
    assert reply.records == []
    assert reply.done and other.done
    assert reply.error is E.NONE and other.error is E.NONE
    ctx.verify_session_expiration(5000)


def test_second_member_partially_join_and_timeout() -> None:
    """``GroupMetadataManagerTest.testSecondMemberPartiallyJoinAndTimeout``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(
        group_instance_id="leader-instance-id",
        protocols=RANGE,
        rebalance_timeout_ms=10_000,
        session_timeout_ms=5000,
    )
    leader = ctx.join_and_complete_join(request, True, True)
    first_id, generation = leader.member_id, leader.generation_id
    assert generation == 1 and ctx.state is S.COMPLETING_REBALANCE
    sync = ctx.send_sync(first_id, generation)
    assert sync.done and sync.error is E.NONE and ctx.state is S.STABLE
    reply = ctx.send_join(
        with_(request, group_instance_id=None, session_timeout_ms=5000), True, True
    )
    assert reply.records == []
    assert reply.done and reply.error is E.MEMBER_ID_REQUIRED
    assert ctx.num_pending() == 1 and ctx.state is S.STABLE
    for _ in range(2):
        assert_no_or_empty_result(ctx.sleep(2500))
        assert ctx.send_heartbeat(first_id, generation) is E.NONE
    assert ctx.all_member_ids() == {first_id}
    assert ctx.generation == 1 and ctx.state is S.STABLE


def test_rebalance_completes_before_member_joins() -> None:
    """``GroupMetadataManagerTest.testRebalanceCompletesBeforeMemberJoins``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(
        group_instance_id="leader-instance-id",
        protocols=RANGE,
        rebalance_timeout_ms=10_000,
        session_timeout_ms=5000,
    )
    leader = ctx.join_and_complete_join(request, True, True)
    first_id, first_generation = leader.member_id, leader.generation_id
    assert first_generation == 1 and ctx.state is S.COMPLETING_REBALANCE
    sync = ctx.send_sync(first_id, first_generation)
    assert sync.done and sync.error is E.NONE and ctx.state is S.STABLE
    second = ctx.send_join(with_(request, group_instance_id=None, session_timeout_ms=2500))
    assert second.records == []
    assert not second.done and ctx.state is S.PREPARING_REBALANCE
    # The first (static) member keeps heartbeating without rejoining.
    for _ in range(2):
        assert_no_or_empty_result(ctx.sleep(2500))
        assert ctx.send_heartbeat(first_id, first_generation) is E.REBALANCE_IN_PROGRESS
    # The rebalance timeout completes the join without the static member.
    assert_no_or_empty_result(ctx.sleep(8000))
    assert second.done and second.error is E.NONE
    assert ctx.num_members() == 2 and ctx.generation == 2
    assert ctx.state is S.COMPLETING_REBALANCE
    other_id = second.response.member_id
    sync = ctx.send_sync(other_id, 2)
    assert sync.done and sync.error is E.NONE and ctx.state is S.STABLE
    # The unjoined (first) static member remains in the group until its session times out.
    assert ctx.send_heartbeat(first_id, first_generation) is E.ILLEGAL_GENERATION
    for expected in (E.NONE, E.NONE, E.REBALANCE_IN_PROGRESS):
        assert_no_or_empty_result(ctx.sleep(2000))
        assert ctx.send_heartbeat(other_id, 2) is expected
    assert ctx.num_members() == 1 and ctx.state is S.PREPARING_REBALANCE
    rejoin = ctx.send_join(
        with_(request, member_id=other_id, group_instance_id=None, session_timeout_ms=2500)
    )
    assert rejoin.records == []
    assert rejoin.done and rejoin.error is E.NONE
    assert rejoin.response.generation_id == 3 and ctx.state is S.COMPLETING_REBALANCE
    resync = ctx.send_sync(other_id, 3)
    assert resync.done and resync.error is E.NONE and ctx.state is S.STABLE
    for _ in range(20):
        assert_no_or_empty_result(ctx.sleep(2000))
        assert ctx.send_heartbeat(other_id, 3) is E.NONE


def test_rebalance_times_out_when_sync_request_is_not_received() -> None:
    """``GroupMetadataManagerTest.testRebalanceTimesOutWhenSyncRequestIsNotReceived``."""
    ctx = KafkaContext()
    responses = ctx.join_with_n_members(3, 5000, 5000)
    assert_no_or_empty_result(ctx.sleep(2500))
    for r in responses:
        assert ctx.send_heartbeat(r.member_id, r.generation_id) is E.NONE
    expired = ctx.sleep(2500)
    assert [e.key for e in expired] == ["sync"]
    # Everyone is removed: the group goes Empty through join completion, and is written.
    assert expired[0].records == [ctx.group_record()]
    assert expired[0].records[0].members == ()
    for r in responses:
        assert ctx.send_heartbeat(r.member_id, r.generation_id) is E.UNKNOWN_MEMBER_ID
    assert ctx.state is S.EMPTY


def test_rebalance_times_out_when_sync_request_is_not_received_from_followers() -> None:
    """``GroupMetadataManagerTest.testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers``."""
    ctx = KafkaContext()
    responses = ctx.join_with_n_members(3, 5000, 5000)
    assert_no_or_empty_result(ctx.sleep(2500))
    for r in responses:
        assert ctx.send_heartbeat(r.member_id, r.generation_id) is E.NONE
    sync = ctx.send_sync(responses[0].member_id, 1)
    assert sync.done and sync.error is E.NONE and ctx.state is S.STABLE
    assert ctx.send_heartbeat(responses[0].member_id, 1) is E.NONE
    expired = ctx.sleep(2500)
    assert [e.key for e in expired] == ["sync"] and expired[0].records == []
    assert ctx.send_heartbeat(responses[0].member_id, 1) is E.REBALANCE_IN_PROGRESS
    for r in responses[1:]:
        assert ctx.send_heartbeat(r.member_id, 1) is E.UNKNOWN_MEMBER_ID
    assert ctx.state is S.PREPARING_REBALANCE


def test_rebalance_times_out_when_sync_request_is_not_received_from_leaders() -> None:
    """``GroupMetadataManagerTest.testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromLeaders``."""
    ctx = KafkaContext()
    responses = ctx.join_with_n_members(3, 5000, 5000)
    assert_no_or_empty_result(ctx.sleep(2500))
    for r in responses:
        assert ctx.send_heartbeat(r.member_id, r.generation_id) is E.NONE
    follower_syncs = [ctx.send_sync(r.member_id, 1) for r in responses[1:]]
    assert not any(s.done or s.records for s in follower_syncs)
    expired = ctx.sleep(2500)
    assert [e.key for e in expired] == ["sync"] and expired[0].records == []
    assert all(s.done and s.error is E.REBALANCE_IN_PROGRESS for s in follower_syncs)
    assert ctx.send_heartbeat(responses[0].member_id, 1) is E.UNKNOWN_MEMBER_ID
    for r in responses[1:]:
        assert ctx.send_heartbeat(r.member_id, 1) is E.REBALANCE_IN_PROGRESS
    assert ctx.state is S.PREPARING_REBALANCE


def test_rebalance_does_not_time_out_when_all_sync_are_received() -> None:
    """``GroupMetadataManagerTest.testRebalanceDoesNotTimeOutWhenAllSyncAreReceived``."""
    ctx = KafkaContext()
    responses = ctx.join_with_n_members(3, 5000, 5000)
    leader_id = responses[0].member_id
    assert_no_or_empty_result(ctx.sleep(2500))
    for r in responses:
        assert ctx.send_heartbeat(r.member_id, r.generation_id) is E.NONE
    syncs = []
    completing_since = ctx.coordinator.state_since_ms
    for r in responses:
        syncs.append(ctx.send_sync(r.member_id, 1))
        # Only the leader's SyncGroup writes the group record (while CompletingRebalance).
        expected = (
            [ctx.group_record(state_since_ms=completing_since)] if r.member_id == leader_id else []
        )
        assert syncs[-1].records == expected
        assert syncs[-1].done
    assert all(s.error is E.NONE for s in syncs)
    assert "sync" not in ctx.timers
    for _ in range(2):
        assert_no_or_empty_result(ctx.sleep(2500))
        for r in responses:
            assert ctx.send_heartbeat(r.member_id, 1) is E.NONE
    assert ctx.state is S.STABLE


def test_complete_join_phase_no_members_rejoined_extends_join_phase() -> None:
    """``GroupMetadataManagerTest.testCompleteJoinPhaseNoMembersRejoinedExtendsJoinPhase``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(
        group_instance_id="first-instance-id",
        protocols=RANGE,
        session_timeout_ms=30_000,
        rebalance_timeout_ms=10_000,
    )
    first_id = ctx.join_and_complete_join(request, True, True).member_id
    second = ctx.send_join(with_(request, group_instance_id="second-instance-id"))
    assert second.records == []
    assert not second.done
    first = ctx.send_join(with_(request, member_id=first_id))
    assert first.records == []
    assert first.done and second.done
    assert first.error is E.NONE and second.error is E.NONE
    assert ctx.num_members() == 2 and ctx.generation == 2
    second_id = second.response.member_id
    # Trigger a rebalance. No members rejoined.
    ctx.prepare_rebalance()
    assert ctx.num_members() == 2 and ctx.state is S.PREPARING_REBALANCE
    assert ctx.num_awaiting_join() == 0
    # As long as no member rejoins, the join phase is extended by the rebalance timeout.
    for _ in range(2):
        assert_no_or_empty_result(ctx.sleep(10_000))
        assert ctx.timers["join"][0] - ctx.now_ms == 10_000
    assert ctx.state is S.PREPARING_REBALANCE
    assert ctx.num_members() == 2 and ctx.generation == 2
    first = ctx.send_join(with_(request, member_id=first_id))
    assert first.records == []
    assert not first.done and ctx.state is S.PREPARING_REBALANCE
    second = ctx.send_join(
        with_(request, member_id=second_id, group_instance_id="second-instance-id")
    )
    assert second.records == []
    assert first.done and second.done
    assert first.error is E.NONE and second.error is E.NONE
    assert ctx.state is S.COMPLETING_REBALANCE
    assert ctx.num_members() == 2 and ctx.generation == 3


# --------------------------------------------------------------------------- group.max.size


def test_join_group_should_receive_error_if_group_over_max_size() -> None:
    """``GroupMetadataManagerTest.testJoinGroupShouldReceiveErrorIfGroupOverMaxSize``."""
    ctx = KafkaContext(max_size=10)
    ctx.create_group()
    request = join_request(protocols=RANGE)
    for _ in range(10):
        assert not ctx.send_join(request).done
    reply = ctx.send_join(request)
    assert reply.records == []
    assert reply.done and reply.error is E.GROUP_MAX_SIZE_REACHED


def test_dynamic_members_join_group_with_max_size_and_required_known_member() -> None:
    """``GroupMetadataManagerTest.testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember``."""
    ctx = KafkaContext(max_size=10, initial_rebalance_delay_ms=50)
    ctx.create_group()
    request = join_request(protocols=RANGE)
    first_round = [ctx.send_join(request, True) for _ in range(11)]
    ids = verify_join_responses(first_round, 0, E.MEMBER_ID_REQUIRED)
    assert len(ids) == 11 and ctx.num_members() == 0
    assert ctx.state is S.EMPTY and ctx.num_pending() == 11
    second_round = [ctx.send_join(with_(request, member_id=mid), True) for mid in ids]
    # The first initial delay extends itself (new members joined), the second completes.
    assert_no_or_empty_result(ctx.sleep(50))
    assert_no_or_empty_result(ctx.sleep(50))
    verify_join_responses(second_round, 10, E.GROUP_MAX_SIZE_REACHED)
    assert ctx.num_members() == 10 and ctx.num_pending() == 0
    assert ctx.state is S.COMPLETING_REBALANCE
    # Accepted members can rejoin; the others are rejected in CompletingRebalance.
    third_round = [ctx.send_join(with_(request, member_id=mid), True) for mid in ids]
    verify_join_responses(third_round, 10, E.GROUP_MAX_SIZE_REACHED)


def test_dynamic_members_join_group_with_max_size_and_not_required_known_member() -> None:
    """``GroupMetadataManagerTest
    .testDynamicMembersJoinGroupWithMaxSizeAndNotRequiredKnownMember``."""
    ctx = KafkaContext(max_size=10, initial_rebalance_delay_ms=50)
    ctx.create_group()
    request = join_request(protocols=RANGE)
    first_round = [ctx.send_join(request) for _ in range(11)]
    assert ctx.num_members() == 10 and ctx.num_awaiting_join() == 10
    assert ctx.state is S.PREPARING_REBALANCE
    assert_no_or_empty_result(ctx.sleep(50))
    assert_no_or_empty_result(ctx.sleep(50))
    ids = verify_join_responses(first_round, 10, E.GROUP_MAX_SIZE_REACHED)
    second_round = [ctx.send_join(with_(request, member_id=mid)) for mid in ids]
    verify_join_responses(second_round, 10, E.GROUP_MAX_SIZE_REACHED)
    assert ctx.num_members() == 10 and ctx.num_awaiting_join() == 0
    assert ctx.state is S.COMPLETING_REBALANCE


def test_static_members_join_group_with_max_size() -> None:
    """``GroupMetadataManagerTest.testStaticMembersJoinGroupWithMaxSize``."""
    ctx = KafkaContext(max_size=10, initial_rebalance_delay_ms=50)
    ctx.create_group()
    instance_ids = [f"instance-id-{i}" for i in range(11)]
    request = join_request(protocols=RANGE)
    first_round = [ctx.send_join(with_(request, group_instance_id=i)) for i in instance_ids]
    assert ctx.num_members() == 10 and ctx.num_awaiting_join() == 10
    assert ctx.state is S.PREPARING_REBALANCE
    assert_no_or_empty_result(ctx.sleep(50))
    assert_no_or_empty_result(ctx.sleep(50))
    ids = verify_join_responses(first_round, 10, E.GROUP_MAX_SIZE_REACHED)
    second_round = [
        ctx.send_join(with_(request, member_id=mid, group_instance_id=iid))
        for mid, iid in zip(ids, instance_ids, strict=True)
    ]
    verify_join_responses(second_round, 10, E.GROUP_MAX_SIZE_REACHED)
    assert ctx.num_members() == 10 and ctx.num_awaiting_join() == 0
    assert ctx.state is S.COMPLETING_REBALANCE


def test_dynamic_members_can_rejoin_group_with_max_size_while_rebalancing() -> None:
    """``GroupMetadataManagerTest.testDynamicMembersCanRejoinGroupWithMaxSizeWhileRebalancing``."""
    ctx = KafkaContext(max_size=10, initial_rebalance_delay_ms=50)
    ctx.create_group()
    request = join_request(protocols=RANGE)
    first_round = [ctx.send_join(request, True) for _ in range(11)]
    assert ctx.num_members() == 0 and ctx.num_pending() == 11 and ctx.state is S.EMPTY
    ids = verify_join_responses(first_round, 0, E.MEMBER_ID_REQUIRED)
    for mid in ids:
        ctx.send_join(with_(request, member_id=mid), True)
    assert ctx.num_members() == 10 and ctx.num_awaiting_join() == 10
    assert ctx.state is S.PREPARING_REBALANCE
    # Members can rejoin while rebalancing.
    third_round = [ctx.send_join(with_(request, member_id=mid), True) for mid in ids]
    assert_no_or_empty_result(ctx.sleep(50))
    assert_no_or_empty_result(ctx.sleep(50))
    verify_join_responses(third_round, 10, E.GROUP_MAX_SIZE_REACHED)
    assert ctx.num_members() == 10 and ctx.num_awaiting_join() == 0
    assert ctx.state is S.COMPLETING_REBALANCE


def test_last_joining_members_are_kicked_out_when_rejoining_group_with_max_size() -> None:
    """``GroupMetadataManagerTest.testLastJoiningMembersAreKickedOutWhenRejoiningGroupWithMaxSize``.

    Kafka adds 12 members to the group directly and calls ``prepareRebalance``; here the
    coordinator loads a record of 12 members with ``group.max.size`` 10, which rebalances the
    over-capacity group the same way (``GroupMetadataManager#onLoaded``).
    """
    ctx = KafkaContext(max_size=10, initial_rebalance_delay_ms=50)
    ids = [f"client-id-{i:02d}" for i in range(12)]
    record = GroupRecord(
        group_id="group-id",
        generation=1,
        protocol_type="consumer",
        protocol="range",
        leader=ids[0],
        members=tuple(
            GroupRecordMember(mid, "client-id", "client-host", 10_000, 5000, FOO, b"")
            for mid in ids
        ),
        written_ms=0,
    )
    ctx.load(record)
    assert ctx.state is S.PREPARING_REBALANCE
    replies = [
        ctx.send_join(join_request(member_id=mid, protocols=RANGE, rebalance_timeout_ms=10_000))
        for mid in ids
    ]
    assert ctx.num_members() == 10 and ctx.num_awaiting_join() == 10
    assert ctx.state is S.PREPARING_REBALANCE
    # Advance the clock by the rebalance timeout to complete the join phase. Not modelled:
    # Kafka's group.add arms no heartbeat, loading (onLoaded) does, so the members'
    # heartbeat timers expire here too, as no-ops; the join timer is the one that acts.
    expired = ctx.sleep(10_000)
    assert [e.key for e in expired if not e.key.startswith("heartbeat:")] == ["join"]
    assert all(e.records == [] for e in expired)
    verify_join_responses(replies, 10, E.GROUP_MAX_SIZE_REACHED)
    assert ctx.num_members() == 10 and ctx.state is S.COMPLETING_REBALANCE
    # Java HashMap order decides which 10 were first to rejoin here; every member that
    # rejoined in time stays and every one turned away is gone.
    accepted = {r.response.member_id for r in replies if r.error is E.NONE}
    assert ctx.all_member_ids() == accepted and len(accepted) == 10
    assert accepted == set(ids[:10])
