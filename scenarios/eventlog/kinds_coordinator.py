"""The coordinator's timer and pending-member record kinds (``coordinator/group.py``,
issue 23): KIP-62's re-armed join timer, KIP-394's pending members and KIP-814's pending sync.
The other coordinator kinds, and ``_CoordRec``, are in :mod:`.kinds`."""

from __future__ import annotations

from scenarios.eventlog.kinds import _CoordRec

__all__ = ["JoinRescheduled", "MemberPending", "MemberPendingRemoved", "PendingSyncComplete"]


class JoinRescheduled(_CoordRec, tag="join_rescheduled", kw_only=True):
    """The join timer expired with no member rejoined but static ones (KIP-345 keeps them):
    ``completeClassicGroupJoin`` arms it again for ``rebalance_timeout_ms`` (virtual ms)."""

    generation: int
    rebalance_timeout_ms: int


class MemberPending(_CoordRec, tag="member_pending", kw_only=True):
    """KIP-394: a JoinGroup without a member id was answered MEMBER_ID_REQUIRED with
    ``member_id``, which is pending until it rejoins with it (``member_added``) or is
    forgotten (``member_pending_removed``) — at the latest ``session_timeout_ms`` later
    (``GroupMetadataManager#classicGroupJoinNewDynamicMember``)."""

    member: str
    member_id: str
    session_timeout_ms: int


class MemberPendingRemoved(_CoordRec, tag="member_pending_removed", kw_only=True):
    """A pending member id is forgotten: ``reason`` ``session_timeout`` (it did not rejoin
    in time: ``removePendingMemberAndUpdateClassicGroup``), ``leave`` or ``max_size``."""

    member: str
    member_id: str
    reason: str


class PendingSyncComplete(_CoordRec, tag="pending_sync_complete", kw_only=True):
    """Every member of ``generation`` sent SyncGroup before the pending-sync deadline: the
    sync timer is cancelled (``GroupMetadataManager#removePendingSyncMember``)."""

    generation: int
