"""DescribeGroups of a classic group: Kafka's ``GroupMetadataManagerTest`` tests, translated.

Each test names its Kafka original (commit 1eb7644349cb07139d6a3c1ad1986979647cac99).
Kafka's ``replay(record)`` is :meth:`KafkaContext.load` here (which also runs ``onLoaded``);
Kafka first checks that the replayed group is not visible before ``commit()`` (its timeline
snapshots): not modelled, groupsim has no uncommitted state.
"""

from __future__ import annotations

from coordinator import DescribedGroup, DescribedMember, GroupRecord, GroupRecordMember
from tests.coordinator.kafka.context import GROUP_ID, KafkaContext

# The MemberMetadata of Kafka's two describe tests (its rebalance timeout -1 and session
# timeout 0 are GroupMetadataValue's defaults).
_MEMBER = GroupRecordMember(
    member_id="member-id",
    client_id="client-id",
    source="client-host",
    rebalance_timeout_ms=-1,
    session_timeout_ms=0,
    subscription=b"\x00\x01\x02",
    assignment=b"\x00",
    group_instance_id="group-instance-id",
)
_RECORD = GroupRecord(
    group_id=GROUP_ID,
    generation=0,
    protocol_type="consumer",
    protocol="range",
    leader=None,
    members=(_MEMBER,),
    written_ms=0,
)


def _described_member(metadata: bytes) -> DescribedMember:
    return DescribedMember(
        member_id="member-id",
        group_instance_id="group-instance-id",
        client_id="client-id",
        source="client-host",
        metadata=metadata,
        assignment=b"\x00",
    )


def test_describe_group_stable() -> None:
    """``GroupMetadataManagerTest.testDescribeGroupStable``."""
    ctx = KafkaContext()
    ctx.load(_RECORD)
    assert ctx.describe() == DescribedGroup(
        group_id=GROUP_ID,
        state="Stable",
        protocol_type="consumer",
        protocol="range",
        members=(_described_member(b"\x00\x01\x02"),),
    )


def test_describe_group_rebalancing() -> None:
    """``GroupMetadataManagerTest.testDescribeGroupRebalancing``: while rebalancing there is
    no protocol and no member metadata, but each member keeps its assignment
    (``ClassicGroupMember#describeNoMetadata``)."""
    ctx = KafkaContext()
    ctx.load(_RECORD)
    ctx.prepare_rebalance()
    assert ctx.describe() == DescribedGroup(
        group_id=GROUP_ID,
        state="PreparingRebalance",
        protocol_type="consumer",
        protocol="",
        members=(_described_member(b""),),
    )


def test_describe_groups_group_id_not_found_exception() -> None:
    """``GroupMetadataManagerTest.testDescribeGroupsGroupIdNotFoundException``
    (``verifyDescribeGroupsReturnsDeadGroup``)."""
    ctx = KafkaContext()
    assert ctx.describe() == DescribedGroup(GROUP_ID, "Dead", "", "", ())
