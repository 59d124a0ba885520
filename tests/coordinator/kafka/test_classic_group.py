"""``ClassicGroup`` unit tests of Kafka (``classic/ClassicGroupTest``), translated where the
behaviour is reachable through groupsim's coordinator: protocol vote, protocol support,
leader election at join completion.

Each test names its Kafka original (commit 1eb7644349cb07139d6a3c1ad1986979647cac99).
Kafka's tests add members to a ``ClassicGroup`` directly; here they join (JoinGroup v3, so
each is added at once) or are loaded from a group record.
"""

from __future__ import annotations

from coordinator import GroupRecord, GroupRecordMember
from coordinator.group import GroupCoordinator
from tests.coordinator.harness import listed_member_ids
from tests.coordinator.kafka.context import KafkaContext, S, join_request


def _protocols(*names: str) -> tuple[tuple[str, bytes], ...]:
    return tuple((name, b"") for name in names)


def _ctx_with_ids(*ids: str) -> KafkaContext:
    ctx = KafkaContext()
    ctx.member_ids = listed_member_ids(ids)
    ctx.coordinator = GroupCoordinator("group-id", ctx.config, ctx.member_ids)
    ctx.create_group()
    return ctx


def test_select_protocol() -> None:
    """``ClassicGroupTest.testSelectProtocol``."""
    ctx = _ctx_with_ids("memberId", "member2", "member3")
    ctx.send_join(join_request(protocols=_protocols("range", "roundrobin")))
    ctx.send_join(join_request(protocols=_protocols("roundrobin", "range")))
    # No majority preference: either protocol (Kafka's HashMap tie-break decides).
    assert ctx.coordinator._select_protocol() in ("range", "roundrobin")
    ctx.send_join(join_request(protocols=_protocols("roundrobin", "range")))
    # Now we should prefer 'roundrobin'.
    assert ctx.coordinator._select_protocol() == "roundrobin"


def test_select_protocol_chooses_compatible_protocol() -> None:
    """``ClassicGroupTest.testSelectProtocolChoosesCompatibleProtocol``."""
    ctx = _ctx_with_ids("memberId", "member2")
    ctx.send_join(join_request(protocols=_protocols("range", "roundrobin")))
    ctx.send_join(join_request(protocols=_protocols("roundrobin", "foo")))
    assert ctx.coordinator._select_protocol() == "roundrobin"


def test_supports_protocols() -> None:
    """``ClassicGroupTest.testSupportsProtocols``."""
    ctx = _ctx_with_ids("memberId")
    coordinator = ctx.coordinator
    # By default, the (Empty) group supports everything.
    assert coordinator._supports_protocols("consumer", _protocols("range", "roundrobin"))
    ctx.send_join(join_request(protocols=_protocols("range", "roundrobin")))
    assert ctx.state is S.PREPARING_REBALANCE
    assert coordinator._supports_protocols("consumer", _protocols("roundrobin", "foo"))
    assert coordinator._supports_protocols("consumer", _protocols("range", "bar"))
    assert not coordinator._supports_protocols("consumer", _protocols("foo", "bar"))


def _three_member_group() -> KafkaContext:
    """A Stable group of memberId (leader), new-leader and new-member, rebalancing with
    nobody parked yet."""
    ctx = KafkaContext()
    record = GroupRecord(
        group_id="group-id",
        generation=1,
        protocol_type="consumer",
        protocol="roundrobin",
        leader="memberId",
        members=tuple(
            GroupRecordMember(mid, "clientId", "clientHost", 60_000, 10_000, b"", b"")
            for mid in ("memberId", "new-leader", "new-member")
        ),
        written_ms=0,
    )
    ctx.load(record)
    ctx.prepare_rebalance()
    return ctx


def test_elect_new_joined_leader() -> None:
    """``ClassicGroupTest.testElectNewJoinedLeader``."""
    ctx = _three_member_group()
    assert ctx.is_leader("memberId")
    # Only new-leader is parked in JoinGroup.
    ctx.send_join(
        join_request(
            member_id="new-leader", protocols=_protocols("roundrobin"), rebalance_timeout_ms=60_000
        )
    )
    assert ctx.coordinator._maybe_elect_new_joined_leader()
    assert ctx.is_leader("new-leader")


def test_maybe_elect_new_joined_leader_choose_existing() -> None:
    """``ClassicGroupTest.testMaybeElectNewJoinedLeaderChooseExisting``."""
    ctx = _three_member_group()
    ctx.send_join(
        join_request(
            member_id="memberId", protocols=_protocols("roundrobin"), rebalance_timeout_ms=60_000
        )
    )
    assert ctx.coordinator.member("memberId").awaiting_join  # type: ignore[union-attr]
    assert ctx.coordinator._maybe_elect_new_joined_leader()
    assert ctx.is_leader("memberId")
