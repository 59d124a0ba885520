"""Group records, loading (replay + ``onLoaded``) and unloading: Kafka's
``GroupMetadataManagerTest`` classic-group tests, translated.

Each test names its Kafka original (commit 1eb7644349cb07139d6a3c1ad1986979647cac99).
Kafka's ``replay(record)`` + ``onLoaded()`` is :meth:`GroupCoordinator.load` here; its
``onUnloaded()`` is :meth:`GroupCoordinator.unload`.
"""

from __future__ import annotations

import pytest

from coordinator import GroupRecord, GroupRecordMember
from protocol.group import JoinGroupResponse, JoinGroupResponseMember, SyncGroupResponse
from tests.coordinator.kafka.context import (
    E,
    KafkaContext,
    S,
    consumer_subscription,
    join_request,
    to_protocols,
    with_,
)

RANGE = to_protocols("range")
FOO = consumer_subscription("foo")


def _two_static_members_record(rebalance_timeout_ms: int = 9000) -> GroupRecord:
    """The ``GroupMetadataValue`` of Kafka's load tests: member-0 (leader) and member-1,
    static, session 4000 ms, assignment ``{2}``, generation 1, protocol range."""
    return GroupRecord(
        group_id="group-id",
        generation=1,
        protocol_type="consumer",
        protocol="range",
        leader="member-0",
        members=tuple(
            GroupRecordMember(
                member_id=f"member-{i}",
                client_id=f"client-{i}",
                source=f"host-{i}",
                rebalance_timeout_ms=rebalance_timeout_ms,
                session_timeout_ms=4000,
                subscription=FOO,
                assignment=b"\x02",
                group_instance_id=f"group-instance-id-{i}",
            )
            for i in range(2)
        ),
        written_ms=0,
    )


def test_generate_records_on_new_classic_group() -> None:
    """``GroupMetadataManagerTest.testGenerateRecordsOnNewClassicGroup``."""
    ctx = KafkaContext()
    reply = ctx.send_join(join_request(protocols=RANGE), True)
    assert reply.done and reply.error is E.MEMBER_ID_REQUIRED
    # The new group is committed with the empty group record.
    assert reply.records == [ctx.empty_group_record()]
    assert reply.records[0] == GroupRecord(
        group_id="group-id",
        generation=0,
        protocol_type=None,
        protocol=None,
        leader=None,
        members=(),
        written_ms=0,
    )


@pytest.mark.parametrize("use_default_rebalance_timeout", [True, False])
def test_replay_group_metadata_records(use_default_rebalance_timeout: bool) -> None:
    """``GroupMetadataManagerTest.testReplayGroupMetadataRecords``."""
    ctx = KafkaContext()
    ctx.load(_two_static_members_record(-1 if use_default_rebalance_timeout else 9000))
    coordinator = ctx.coordinator
    assert coordinator.group_id == "group-id" and coordinator.generation_id == 1
    assert coordinator.protocol_type == "consumer" and coordinator.protocol_name == "range"
    assert coordinator.leader_id == "member-0" and coordinator.state is S.STABLE
    # Kafka compares two HashMap-ordered groups; the order here is the same Java order.
    members = coordinator.group.leader_member_list()
    assert set(members) == {
        JoinGroupResponseMember(f"member-{i}", f"group-instance-id-{i}", FOO) for i in range(2)
    }
    assert [m.member_id for m in members] == [v.member_id for v in coordinator.members()]
    for i in range(2):
        view = coordinator.member(f"member-{i}")
        assert view is not None
        assert view.client_id == f"client-{i}" and view.source == f"host-{i}"
        assert view.session_timeout_ms == 4000
        assert view.rebalance_timeout_ms == (4000 if use_default_rebalance_timeout else 9000)
        assert view.protocols == (("range", FOO),) and view.assignment == b"\x02"
        assert coordinator.static_member_id(f"group-instance-id-{i}") == f"member-{i}"


def test_on_loaded_exceed_group_max_size_triggers_rebalance() -> None:
    """``GroupMetadataManagerTest.testOnLoadedExceedGroupMaxSizeTriggersRebalance``."""
    ctx = KafkaContext(max_size=1)
    ctx.load(_two_static_members_record())
    assert ctx.state is S.PREPARING_REBALANCE and ctx.num_members() == 2


def test_on_loaded_schedules_classic_group_member_heartbeats() -> None:
    """``GroupMetadataManagerTest.testOnLoadedSchedulesClassicGroupMemberHeartbeats``."""
    ctx = KafkaContext()
    ctx.load(_two_static_members_record())
    for i in range(2):
        assert ctx.timers[f"heartbeat:member-{i}"][0] == ctx.now_ms + 4000


def test_classic_group_on_unloaded_empty_and_preparing_rebalance() -> None:
    """``GroupMetadataManagerTest.testClassicGroupOnUnloadedEmptyAndPreparingRebalance``.

    Kafka unloads two groups of one shard; here each group has its own coordinator.
    """
    empty = KafkaContext()
    empty.create_group()
    assert empty.state is S.EMPTY
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=RANGE)
    first = ctx.send_join(request)
    second = ctx.send_join(request)
    assert first.records == [] and second.records == []
    assert not first.done and not second.done
    assert ctx.state is S.PREPARING_REBALANCE and ctx.num_members() == 2
    empty.unload()
    ctx.unload()
    assert empty.state is S.DEAD and ctx.state is S.DEAD
    assert first.done and second.done
    for reply in (first, second):
        assert reply.response == JoinGroupResponse(
            E.NOT_COORDINATOR, member_id=reply.response.member_id
        )
    assert first.response.member_id != second.response.member_id


def test_classic_group_on_unloaded_completing_rebalance() -> None:
    """``GroupMetadataManagerTest.testClassicGroupOnUnloadedCompletingRebalance``."""
    ctx = KafkaContext()
    ctx.create_group()
    result = ctx.setup_group_with_pending_member()
    pending_id = result.pending_member_response.member_id
    reply = ctx.send_join(with_(join_request(protocols=RANGE), member_id=pending_id))
    assert reply.records == []
    assert reply.done and reply.error is E.NONE
    assert ctx.num_members() == 3 and ctx.num_pending() == 0
    generation = reply.response.generation_id
    follower_sync = ctx.send_sync(result.follower_id, generation)
    pending_sync = ctx.send_sync(pending_id, generation)
    assert follower_sync.records == [] and pending_sync.records == []
    assert not follower_sync.done and not pending_sync.done
    assert ctx.state is S.COMPLETING_REBALANCE
    ctx.unload()
    assert ctx.state is S.DEAD
    assert follower_sync.response == SyncGroupResponse(E.NOT_COORDINATOR, assignment=b"")
    assert pending_sync.response == SyncGroupResponse(E.NOT_COORDINATOR, assignment=b"")
