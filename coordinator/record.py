"""The group metadata record a classic group coordinator writes to ``__consumer_offsets``.

Kafka persists a classic group as one ``GroupMetadataKey``/``GroupMetadataValue`` record in
the group's ``__consumer_offsets`` partition (``GroupCoordinatorRecordHelpers
#newGroupMetadataRecord`` / ``newEmptyGroupMetadataRecord`` in the Java coordinator,
``GroupMetadataManager#storeGroup`` in the Scala one). A coordinator that takes the
partition over replays the log and keeps, per group, only the **last** record
(``GroupMetadataManager#replay(GroupMetadataKey, GroupMetadataValue)``, driven by
``CoordinatorLoaderImpl``); :meth:`coordinator.group.GroupCoordinator.load` rebuilds the
group from it. Field names follow ``GroupMetadataValue.json``; only the fields that change
the protocol's behaviour are kept, including each member's KIP-345 ``group_instance_id``
(``None`` for a dynamic member; Connect members are always dynamic).
"""

from __future__ import annotations

import msgspec

__all__ = ["GroupRecord", "GroupRecordMember"]


class GroupRecordMember(msgspec.Struct, frozen=True):
    """One member in a group metadata record (``GroupMetadataValue.MemberMetadata``).

    Attributes:
        member_id: its member id.
        client_id: the JoinGroup ``client_id``.
        source: network address of its latest JoinGroup (Kafka stores ``clientHost``).
        rebalance_timeout_ms / session_timeout_ms: from its latest JoinGroup.
        subscription: its metadata **for the group's protocol only** (Kafka stores
            ``member.metadata(protocolName)``, not the member's whole protocol list).
        assignment: the assignment bytes the leader gave it (``b""`` when none).
        group_instance_id: its static id (``MemberMetadata.groupInstanceId``), ``None`` for
            a dynamic member.
    """

    member_id: str
    client_id: str
    source: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None


class GroupRecord(msgspec.Struct, frozen=True):
    """A classic group as persisted (``GroupMetadataKey`` + ``GroupMetadataValue``).

    Written when the leader's SyncGroup stores a generation's assignment (with every member)
    and when the group goes Empty or is created (no members).

    Attributes:
        group_id: the record key (``GroupMetadataKey.group``).
        generation: the generation id at the write.
        protocol_type: e.g. ``"connect"``; ``None`` if no member ever fixed it.
        protocol: the protocol chosen for ``generation``; ``None`` when Empty.
        leader: the leader's member id; ``None`` when Empty.
        members: the members in coordinator (Java ``HashMap``) order; empty when Empty.
        written_ms: Kafka's ``currentStateTimestamp``: the virtual time of the group's last
            state transition (or creation) before the write, not of the write itself.
    """

    group_id: str
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    members: tuple[GroupRecordMember, ...]
    written_ms: int
