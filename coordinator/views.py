"""Read-only snapshots of a classic group for callers outside the coordinator: a member
(:class:`MemberView`, ``ClassicGroupMember``) and what DescribeGroups answers
(:class:`DescribedGroup`, ``GroupMetadataManager#describeGroups``)."""

from __future__ import annotations

import msgspec

from .classic_group import ClassicGroup, Member
from .state import GroupState

__all__ = ["MemberView", "DescribedMember", "DescribedGroup", "member_view", "describe"]


class MemberView(msgspec.Struct, frozen=True):
    """A read-only snapshot of one group member (``ClassicGroupMember``).

    Attributes:
        member_id: the id the coordinator gave it (``<client_id>-<uuid>``).
        source: network address of its latest JoinGroup (the worker name, e.g. ``"w1"``).
        client_id: the JoinGroup ``client_id``.
        protocol_type: e.g. ``"connect"``.
        protocols: its ordered (name, metadata) preference list.
        session_timeout_ms / rebalance_timeout_ms: from its latest JoinGroup (virtual ms).
        is_new: added and not yet through a completed join (KAFKA-7610 timeout applies).
        is_leader: it is the group's leader.
        awaiting_join / awaiting_sync: a JoinGroup / SyncGroup of it is parked.
        pending_sync: it is in the current generation but has not sent SyncGroup yet.
        assignment: its assignment bytes from the leader (``b""`` when none).
        group_instance_id: its KIP-345 static id, ``None`` for a dynamic member.
    """

    member_id: str
    source: str
    client_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    is_new: bool
    is_leader: bool
    awaiting_join: bool
    awaiting_sync: bool
    pending_sync: bool
    assignment: bytes
    group_instance_id: str | None = None


class DescribedMember(msgspec.Struct, frozen=True):
    """One member as DescribeGroups shows it (``ClassicGroupMember#describe`` /
    ``describeNoMetadata``).

    Attributes:
        member_id / group_instance_id / client_id: as in :class:`MemberView`.
        source: network address of its latest JoinGroup (Kafka reports ``clientHost``).
        metadata: its metadata for the group protocol when the group is Stable, else ``b""``.
        assignment: its current assignment bytes, in every state (``b""`` when none).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    source: str
    metadata: bytes
    assignment: bytes


class DescribedGroup(msgspec.Struct, frozen=True):
    """A group as DescribeGroups shows it (``GroupMetadataManager#describeGroups``).

    Attributes:
        group_id: the group.
        state: Kafka's state name (``"Stable"``, ``"PreparingRebalance"``...); ``"Dead"`` for
            a group that does not exist.
        protocol_type: ``""`` when none was fixed.
        protocol: the group protocol when Stable, ``""`` otherwise.
        members: every member, in coordinator (Java HashMap) order.
    """

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[DescribedMember, ...]


def member_view(g: ClassicGroup, m: Member) -> MemberView:
    """The snapshot of member ``m`` of ``g``."""
    return MemberView(
        member_id=m.member_id,
        source=m.source,
        client_id=m.client_id,
        protocol_type=m.protocol_type,
        protocols=m.protocols,
        session_timeout_ms=m.session_timeout_ms,
        rebalance_timeout_ms=m.rebalance_timeout_ms,
        is_new=m.is_new,
        is_leader=m.member_id == g.leader_id,
        awaiting_join=m.join_source is not None,
        awaiting_sync=m.sync_source is not None,
        pending_sync=m.member_id in g.pending_sync,
        assignment=m.assignment,
        group_instance_id=m.group_instance_id,
    )


def describe(g: ClassicGroup) -> DescribedGroup:
    """What DescribeGroups answers for ``g`` (``GroupMetadataManager#describeGroups``):
    when Stable, the protocol and each member with its metadata for it and its assignment
    (``ClassicGroupMember#describe``); in any other state no protocol, and each member
    without metadata but **with** its assignment (``describeNoMetadata``). A group that
    does not exist is ``Dead`` with no members (Kafka's ``GroupIdNotFoundException``
    branch)."""
    if not g.exists:
        return DescribedGroup(g.group_id, GroupState.DEAD.value, "", "", ())
    stable = g.state is GroupState.STABLE
    protocol = (g.protocol_name or "") if stable else ""
    members = tuple(
        DescribedMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            source=m.source,
            metadata=m.metadata(protocol) if stable else b"",
            assignment=m.assignment,
        )
        for m in (g.members[mid] for mid in g.java_order())
    )
    return DescribedGroup(g.group_id, g.state.value, g.protocol_type or "", protocol, members)
