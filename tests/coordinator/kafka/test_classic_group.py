"""``ClassicGroup`` unit tests of Kafka (``classic/ClassicGroupTest``), translated where the
behaviour is reachable through groupsim's coordinator: protocol vote, protocol support,
leader election at join completion.

Each test names its Kafka original (commit 1eb7644349cb07139d6a3c1ad1986979647cac99).
Kafka's tests add members to a ``ClassicGroup`` directly; here they join (JoinGroup v3, so
each is added at once) or are loaded from a group record.
"""

from __future__ import annotations

import pytest

from coordinator import (
    VALID_PREVIOUS_STATES,
    GroupRecord,
    GroupRecordMember,
    IllegalStateTransition,
    rebalance,
    vote,
)
from coordinator.group import GroupCoordinator, IllegalGroupState
from protocol.effects import Effect
from protocol.group import (
    JoinGroupResponse,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
)
from tests.coordinator.harness import Reply, listed_member_ids
from tests.coordinator.kafka.context import (
    E,
    KafkaContext,
    S,
    assert_no_or_empty_result,
    join_request,
    with_,
)


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
    assert vote.select_protocol(ctx.coordinator.group) in ("range", "roundrobin")
    ctx.send_join(join_request(protocols=_protocols("roundrobin", "range")))
    # Now we should prefer 'roundrobin'.
    assert vote.select_protocol(ctx.coordinator.group) == "roundrobin"


def test_select_protocol_chooses_compatible_protocol() -> None:
    """``ClassicGroupTest.testSelectProtocolChoosesCompatibleProtocol``."""
    ctx = _ctx_with_ids("memberId", "member2")
    ctx.send_join(join_request(protocols=_protocols("range", "roundrobin")))
    ctx.send_join(join_request(protocols=_protocols("roundrobin", "foo")))
    assert vote.select_protocol(ctx.coordinator.group) == "roundrobin"


def test_supports_protocols() -> None:
    """``ClassicGroupTest.testSupportsProtocols``."""
    ctx = _ctx_with_ids("memberId")
    coordinator = ctx.coordinator
    # By default, the (Empty) group supports everything.
    assert coordinator.group.supports_protocols("consumer", _protocols("range", "roundrobin"))
    ctx.send_join(join_request(protocols=_protocols("range", "roundrobin")))
    assert ctx.state is S.PREPARING_REBALANCE
    assert coordinator.group.supports_protocols("consumer", _protocols("roundrobin", "foo"))
    assert coordinator.group.supports_protocols("consumer", _protocols("range", "bar"))
    assert not coordinator.group.supports_protocols("consumer", _protocols("foo", "bar"))


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
    assert rebalance.maybe_elect_new_joined_leader(ctx.coordinator.group)
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
    assert rebalance.maybe_elect_new_joined_leader(ctx.coordinator.group)
    assert ctx.is_leader("memberId")


# --------------------------------------------------------------------------- states


@pytest.mark.parametrize(
    ("path", "can_rebalance"),
    [
        pytest.param((), True, id="testCanRebalanceWhenStable"),
        pytest.param(
            (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
            True,
            id="testCanRebalanceWhenCompletingRebalance",
        ),
        pytest.param(
            (S.PREPARING_REBALANCE,), False, id="testCannotRebalanceWhenPreparingRebalance"
        ),
        pytest.param(
            (S.PREPARING_REBALANCE, S.EMPTY, S.DEAD), False, id="testCannotRebalanceWhenDead"
        ),
    ],
)
def test_can_rebalance(path: tuple[S, ...], can_rebalance: bool) -> None:
    """``ClassicGroupTest.testCanRebalanceWhenStable``,
    ``ClassicGroupTest.testCanRebalanceWhenCompletingRebalance``,
    ``ClassicGroupTest.testCannotRebalanceWhenPreparingRebalance``,
    ``ClassicGroupTest.testCannotRebalanceWhenDead``: ``ClassicGroup#canRebalance`` is
    "PreparingRebalance may be entered from here" (Kafka's fresh group is Empty, whatever the
    first test's name says)."""
    ctx = KafkaContext()
    ctx.create_group()
    for state in path:
        ctx.force_state(state)
    assert (ctx.state in VALID_PREVIOUS_STATES[S.PREPARING_REBALANCE]) is can_rebalance


_P, _C, _ST, _EM, _D = (
    S.PREPARING_REBALANCE,
    S.COMPLETING_REBALANCE,
    S.STABLE,
    S.EMPTY,
    S.DEAD,
)


@pytest.mark.parametrize(
    ("path", "target", "legal"),
    [
        pytest.param((), _P, True, id="testStableToPreparingRebalanceTransition"),
        pytest.param((), _D, True, id="testStableToDeadTransition"),
        pytest.param((_P, _C), _P, True, id="testAwaitingRebalanceToPreparingRebalanceTransition"),
        pytest.param((_P,), _D, True, id="testPreparingRebalanceToDeadTransition"),
        pytest.param((_P,), _EM, True, id="testPreparingRebalanceToEmptyTransition"),
        pytest.param((_P, _EM), _D, True, id="testEmptyToDeadTransition"),
        pytest.param((_P, _C), _ST, True, id="testAwaitingRebalanceToStableTransition"),
        pytest.param((), _ST, False, id="testEmptyToStableIllegalTransition"),
        pytest.param((_P, _C, _ST), _ST, False, id="testStableToStableIllegalTransition"),
        pytest.param((), _C, False, id="testEmptyToAwaitingRebalanceIllegalTransition"),
        pytest.param(
            (_P,), _P, False, id="testPreparingRebalanceToPreparingRebalanceIllegalTransition"
        ),
        pytest.param((_P,), _ST, False, id="testPreparingRebalanceToStableIllegalTransition"),
        pytest.param(
            (_P, _C), _C, False, id="testAwaitingRebalanceToAwaitingRebalanceIllegalTransition"
        ),
        # Kafka's name says illegal, its body shows Dead -> Dead is allowed.
        pytest.param((_P, _D), _D, True, id="testDeadToDeadIllegalTransition"),
        pytest.param((_P, _D), _ST, False, id="testDeadToStableIllegalTransition"),
        pytest.param((_P, _D), _P, False, id="testDeadToPreparingRebalanceIllegalTransition"),
        pytest.param((_P, _D), _C, False, id="testDeadToAwaitingRebalanceIllegalTransition"),
    ],
)
def test_state_transition(path: tuple[S, ...], target: S, legal: bool) -> None:
    """``ClassicGroupTest.testStableToPreparingRebalanceTransition``,
    ``ClassicGroupTest.testStableToDeadTransition``,
    ``ClassicGroupTest.testAwaitingRebalanceToPreparingRebalanceTransition``,
    ``ClassicGroupTest.testPreparingRebalanceToDeadTransition``,
    ``ClassicGroupTest.testPreparingRebalanceToEmptyTransition``,
    ``ClassicGroupTest.testEmptyToDeadTransition``,
    ``ClassicGroupTest.testAwaitingRebalanceToStableTransition``,
    ``ClassicGroupTest.testEmptyToStableIllegalTransition``,
    ``ClassicGroupTest.testStableToStableIllegalTransition``,
    ``ClassicGroupTest.testEmptyToAwaitingRebalanceIllegalTransition``,
    ``ClassicGroupTest.testPreparingRebalanceToPreparingRebalanceIllegalTransition``,
    ``ClassicGroupTest.testPreparingRebalanceToStableIllegalTransition``,
    ``ClassicGroupTest.testAwaitingRebalanceToAwaitingRebalanceIllegalTransition``,
    ``ClassicGroupTest.testDeadToDeadIllegalTransition``,
    ``ClassicGroupTest.testDeadToStableIllegalTransition``,
    ``ClassicGroupTest.testDeadToPreparingRebalanceIllegalTransition``,
    ``ClassicGroupTest.testDeadToAwaitingRebalanceIllegalTransition``: ``transitionTo`` on
    the coordinator's group, from a fresh (Empty) group along ``path``."""
    ctx = KafkaContext()
    ctx.create_group()
    for state in path:
        ctx.force_state(state)
    if legal:
        ctx.force_state(target)
        assert ctx.state is target
    else:
        with pytest.raises(IllegalStateTransition):
            ctx.force_state(target)


# --------------------------------------------------------------------------- generations


def test_select_protocol_raises_if_no_members() -> None:
    """``ClassicGroupTest.testSelectProtocolRaisesIfNoMembers``."""
    ctx = KafkaContext()
    with pytest.raises(IllegalGroupState):
        vote.select_protocol(ctx.coordinator.group)


def test_init_next_generation() -> None:
    """``ClassicGroupTest.testInitNextGeneration``: a member (roundrobin) in a rebalancing
    group; completing the join starts generation 1 with its protocol."""
    ctx = KafkaContext()
    ctx.create_group()
    reply = ctx.send_join(join_request(protocols=_protocols("roundrobin")))
    assert ctx.state is S.PREPARING_REBALANCE
    assert ctx.generation == 0 and ctx.coordinator.protocol_name is None
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    assert reply.done and reply.error is E.NONE
    assert ctx.generation == 1 and ctx.coordinator.protocol_name == "roundrobin"


def test_init_next_generation_empty_group() -> None:
    """``ClassicGroupTest.testInitNextGenerationEmptyGroup``: an empty group that rebalances
    moves to generation 1 with no protocol (and, in the coordinator, writes the empty group
    record, as ``completeClassicGroupJoin`` does)."""
    ctx = KafkaContext()
    ctx.create_group()
    assert ctx.state is S.EMPTY and ctx.generation == 0
    assert ctx.coordinator.protocol_name is None
    ctx.prepare_rebalance()
    expired = ctx.sleep(ctx.initial_rebalance_delay_ms)
    assert [e.key for e in expired] == ["join"]
    assert expired[0].records == [ctx.group_record()]
    assert ctx.generation == 1 and ctx.coordinator.protocol_name is None
    assert ctx.state is S.EMPTY


def test_update_member() -> None:
    """``ClassicGroupTest.testUpdateMember``: a rejoin replaces the member's protocols and
    timeouts (``ClassicGroup#updateMember``)."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(
        protocols=_protocols("roundrobin"), rebalance_timeout_ms=60_000, session_timeout_ms=10_000
    )
    first = ctx.send_join(request)
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    member_id = first.response.member_id
    new_protocols = _protocols("range", "roundrobin")
    ctx.send_join(
        with_(
            request,
            member_id=member_id,
            protocols=new_protocols,
            rebalance_timeout_ms=120_000,
            session_timeout_ms=20_000,
        )
    )
    member = ctx.coordinator.member(member_id)
    assert member is not None
    assert ctx.coordinator.rebalance_timeout_ms() == 120_000
    assert member.session_timeout_ms == 20_000
    assert member.protocols == new_protocols


def test_replace_group_instance_with_non_existing_member() -> None:
    """``ClassicGroupTest.testReplaceGroupInstanceWithNonExistingMember`` (Kafka's
    ``IllegalArgumentException`` is a failed lookup here)."""
    ctx = KafkaContext()
    ctx.create_group()
    with pytest.raises(KeyError):
        ctx.coordinator.group.replace_static_member(
            "groupInstanceId", "memberId", "newMemberId", []
        )


def test_replace_group_instance() -> None:
    """``ClassicGroupTest.testReplaceGroupInstance``: the static leader, parked in both
    JoinGroup and SyncGroup, is replaced under a new member id: leadership and the instance
    id move to it, and both parked requests are answered FENCED_INSTANCE_ID."""
    ctx = _ctx_with_ids("memberId", "newMemberId")
    request = join_request(group_instance_id="groupInstanceId", protocols=_protocols("roundrobin"))
    join = ctx.send_join(request)
    assert not join.done
    assert ctx.is_leader("memberId")
    assert ctx.coordinator.static_member_id("groupInstanceId") == "memberId"
    # Kafka parks a SyncGroup future on the member by hand; here the member's slot is set
    # the same way (no request can park a SyncGroup while a JoinGroup is parked).
    ctx.coordinator.group.members["memberId"].sync_source = join.source
    sync = Reply(join.source, SyncGroupRequest("group-id", "memberId", 0), ctx.now_ms)
    ctx._outstanding.setdefault((join.source, SyncGroupResponse), []).append(sync)
    effects: list[Effect] = []
    ctx.coordinator.group.replace_static_member(
        "groupInstanceId", "memberId", "newMemberId", effects
    )
    ctx.apply(effects)
    assert ctx.is_leader("newMemberId")
    assert ctx.coordinator.static_member_id("groupInstanceId") == "newMemberId"
    assert join.done and join.error is E.FENCED_INSTANCE_ID
    assert sync.done and sync.error is E.FENCED_INSTANCE_ID
    assert ctx.coordinator.member("memberId") is None
    new = ctx.coordinator.member("newMemberId")
    assert new is not None and not new.awaiting_join and not new.awaiting_sync


# --------------------------------------------------------------------------- pending sets


def test_cannot_add_pending_member_if_stable() -> None:
    """``ClassicGroupTest.testCannotAddPendingMemberIfStable``: a member id already in the
    group never becomes a KIP-394 pending member (Kafka's ``addPendingMember`` guard); its
    JoinGroup v4 is an existing member's rejoin."""
    ctx = KafkaContext()
    ctx.create_group()
    response = ctx.join_dynamic_and_complete_join(join_request(protocols=_protocols("roundrobin")))
    reply = ctx.send_join(
        join_request(member_id=response.member_id, protocols=_protocols("roundrobin")), True
    )
    assert reply.done and reply.error is E.NONE
    assert ctx.has_member(response.member_id) and ctx.num_pending() == 0


def test_removal_from_pending_after_member_is_stable() -> None:
    """``ClassicGroupTest.testRemovalFromPendingAfterMemberIsStable``."""
    ctx = KafkaContext()
    ctx.create_group()
    request = join_request(protocols=_protocols("roundrobin"))
    first = ctx.send_join(request, True)
    member_id = first.response.member_id
    assert not ctx.has_member(member_id)
    assert ctx.coordinator.pending_member_ids() == [member_id]
    ctx.send_join(with_(request, member_id=member_id), True)
    assert ctx.has_member(member_id)
    assert ctx.coordinator.pending_member_ids() == []


def test_removal_from_pending_when_member_is_removed() -> None:
    """``ClassicGroupTest.testRemovalFromPendingWhenMemberIsRemoved`` (the removal is a
    LeaveGroup of the pending member)."""
    ctx = KafkaContext()
    ctx.create_group()
    first = ctx.send_join(join_request(protocols=_protocols("roundrobin")), True)
    member_id = first.response.member_id
    assert not ctx.has_member(member_id)
    assert ctx.coordinator.pending_member_ids() == [member_id]
    leave = ctx.send_leave(MemberIdentity(member_id))
    assert leave.records == []
    assert not ctx.has_member(member_id)
    assert ctx.coordinator.pending_member_ids() == []


def test_cannot_add_static_member_if_already_present() -> None:
    """``ClassicGroupTest.testCannotAddStaticMemberIfAlreadyPresent``: a second JoinGroup of
    a present instance id does not add a second member with it (Kafka's ``add`` guard); it
    replaces the first under a new member id."""
    ctx = _ctx_with_ids("memberId", "memberId-2")
    request = join_request(group_instance_id="groupInstanceId", protocols=_protocols("roundrobin"))
    ctx.send_join(request)
    assert ctx.has_member("memberId")
    assert ctx.coordinator.static_member_id("groupInstanceId") == "memberId"
    ctx.send_join(request)
    assert ctx.all_member_ids() == {"memberId-2"}
    assert ctx.coordinator.static_member_id("groupInstanceId") == "memberId-2"


def _pending_sync_ids(ctx: KafkaContext) -> set[str]:
    return {v.member_id for v in ctx.coordinator.members() if v.pending_sync}


def test_can_add_and_remove_pending_sync_member() -> None:
    """``ClassicGroupTest.testCanAddAndRemovePendingSyncMember``: join completion puts the
    member in the pending-sync set, its SyncGroup takes it out."""
    ctx = KafkaContext()
    ctx.create_group()
    response = ctx.join_dynamic_and_complete_join(join_request(protocols=_protocols("roundrobin")))
    assert _pending_sync_ids(ctx) == {response.member_id}
    sync = ctx.send_sync(response.member_id, response.generation_id, protocol_name="roundrobin")
    assert sync.records == [ctx.group_record()]
    assert _pending_sync_ids(ctx) == set()


def test_removal_from_pending_sync_when_member_is_removed() -> None:
    """``ClassicGroupTest.testRemovalFromPendingSyncWhenMemberIsRemoved`` (the removal is a
    LeaveGroup of the static member)."""
    ctx = KafkaContext()
    ctx.create_group()
    response = ctx.join_and_complete_join(
        join_request(group_instance_id="groupInstanceId", protocols=_protocols("roundrobin")),
        False,
        False,
    )
    assert _pending_sync_ids(ctx) == {response.member_id}
    leave = ctx.send_leave(MemberIdentity(response.member_id, "groupInstanceId"))
    assert leave.error is E.NONE
    assert _pending_sync_ids(ctx) == set() and ctx.num_members() == 0


def test_new_generation_clears_pending_sync_members() -> None:
    """``ClassicGroupTest.testNewGenerationClearsPendingSyncMembers``: the pending-sync set of
    generation 1 is cleared when the next rebalance starts (``removeSyncExpiration``) and
    generation 2 starts it afresh with its own members (``completeClassicGroupJoin``)."""
    ctx = _ctx_with_ids("memberId", "other")
    request = join_request(protocols=_protocols("roundrobin"), session_timeout_ms=10_000)
    first = ctx.send_join(request)
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    assert first.done and _pending_sync_ids(ctx) == {"memberId"}
    other = ctx.send_join(request)
    assert not other.done and ctx.state is S.PREPARING_REBALANCE
    assert _pending_sync_ids(ctx) == set()
    rejoin = ctx.send_join(with_(request, member_id="memberId"))
    assert rejoin.done and other.done and ctx.generation == 2
    assert _pending_sync_ids(ctx) == {"memberId", "other"}


# --------------------------------------------------------------------------- futures


def test_complete_join_future() -> None:
    """``ClassicGroupTest.testCompleteJoinFuture``: completing a parked JoinGroup answers it
    and the member no longer awaits join."""
    ctx = _ctx_with_ids("memberId")
    reply = ctx.send_join(join_request(protocols=_protocols("roundrobin")))
    assert ctx.num_awaiting_join() == 1 and ctx.coordinator.group.has_all_members_joined()
    effects: list[Effect] = []
    member = ctx.coordinator.group.members["memberId"]
    response = JoinGroupResponse(E.NONE, member_id="memberId")
    assert ctx.coordinator.group.complete_join_future(member, response, effects)
    ctx.apply(effects)
    assert reply.done and reply.error is E.NONE and reply.response.member_id == "memberId"
    assert not ctx.coordinator.member("memberId").awaiting_join  # type: ignore[union-attr]
    assert ctx.num_awaiting_join() == 0


def test_not_complete_join_future() -> None:
    """``ClassicGroupTest.testNotCompleteJoinFuture``: a member not parked in JoinGroup has
    no JoinGroup to complete."""
    ctx = _ctx_with_ids("memberId")
    ctx.send_join(join_request(protocols=_protocols("roundrobin")))
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    member = ctx.coordinator.group.members["memberId"]
    assert member.join_source is None
    effects: list[Effect] = []
    response = JoinGroupResponse(E.NONE, member_id="memberId")
    assert not ctx.coordinator.group.complete_join_future(member, response, effects)
    assert effects == [] and member.join_source is None


def test_complete_sync_future() -> None:
    """``ClassicGroupTest.testCompleteSyncFuture``."""
    ctx = _ctx_with_ids("memberId", "other")
    request = join_request(protocols=_protocols("roundrobin"))
    leader = ctx.send_join(request)
    follower = ctx.send_join(request)
    assert_no_or_empty_result(ctx.sleep(ctx.initial_rebalance_delay_ms))
    generation = leader.response.generation_id
    sync = ctx.send_sync(follower.response.member_id, generation, protocol_name=None)
    assert not sync.done
    member = ctx.coordinator.group.members["other"]
    effects: list[Effect] = []
    assert ctx.coordinator.group.complete_sync_future(member, SyncGroupResponse(E.NONE), effects)
    ctx.apply(effects)
    assert sync.done and sync.error is E.NONE
    assert not ctx.coordinator.member("other").awaiting_sync  # type: ignore[union-attr]


def test_not_complete_sync_future() -> None:
    """``ClassicGroupTest.testNotCompleteSyncFuture``."""
    ctx = _ctx_with_ids("memberId")
    ctx.send_join(join_request(protocols=_protocols("roundrobin")))
    member = ctx.coordinator.group.members["memberId"]
    assert member.sync_source is None
    effects: list[Effect] = []
    assert not ctx.coordinator.group.complete_sync_future(
        member, SyncGroupResponse(E.NONE), effects
    )
    assert effects == [] and member.sync_source is None
