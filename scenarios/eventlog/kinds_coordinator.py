"""The coordinator's timer and pending-member record kinds (``coordinator/``,
issue 23): KIP-62's re-armed join timer, KIP-394's pending members and KIP-814's pending sync;
the wire tap's ``completing_join`` and ``bounded_join`` (``scenarios/sim/wire_tap.py``); and
the coordinator's requests, answers and timers as the Kafka referee replays them
(``scenarios/sim/coordinator_io.py``, only in runs that ask for them).
The other coordinator kinds, and ``_CoordRec``, are in :mod:`.kinds`."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, UnsetType

from scenarios.eventlog.kinds import _CoordRec, _Rec

__all__ = [
    "BoundedJoin",
    "CompletingJoin",
    "CoordinatorOpened",
    "CoordinatorRequest",
    "CoordinatorResponse",
    "CoordinatorTimer",
    "JoinRescheduled",
    "MemberPending",
    "MemberPendingRemoved",
    "PendingSyncComplete",
]


class CompletingJoin(_CoordRec, tag="completing_join", kw_only=True):
    """A JoinGroup of a known member reached the group in CompletingRebalance (the wire tap):
    ``same_metadata`` — its protocols equal the ones the coordinator holds for it;
    ``group_generation`` the group's generation then; ``error`` and ``generation`` the
    JoinGroup answer that left the coordinator at once (``None``: parked, a new join phase)."""

    member_id: str
    same_metadata: bool
    group_generation: int
    error: str | None
    generation: int | None
    member: str


class BoundedJoin(_CoordRec, tag="bounded_join", kw_only=True):
    """A JoinGroup reached a coordinator whose ``group.max.size`` or session bounds are not
    Kafka's defaults (the wire tap): the request's ``member_id`` and ``session_timeout_ms``;
    the coordinator's ``min_session_timeout_ms``, ``max_session_timeout_ms`` and
    ``max_size``; what ``GroupMetadataManager#acceptJoiningMember`` reads before it is
    handled — ``state`` (the group's), ``size`` (members), ``awaiting`` (members awaiting a
    JoinGroup answer), ``known`` (the sender's member id is a member), ``awaiting_member``
    (and it awaits one); ``error`` the answer that left at once (``None``: parked, let in).
    Times in virtual ms."""

    member_id: str
    session_timeout_ms: int
    min_session_timeout_ms: int
    max_session_timeout_ms: int
    max_size: int
    state: str
    size: int
    awaiting: int
    known: bool
    awaiting_member: bool
    error: str | None
    member: str


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


class CoordinatorOpened(_Rec, tag="coordinator_opened", kw_only=True):
    """The coordinator of ``group`` and its settings (``CoordinatorConfig``; times in virtual
    ms), logged once after ``run_start`` when the run logs its coordinator's traffic."""

    group: str
    initial_rebalance_delay_ms: int
    min_session_timeout_ms: int
    max_session_timeout_ms: int
    max_size: int
    new_member_join_timeout_ms: int
    protocol_tie_break: str


class CoordinatorRequest(_Rec, tag="coordinator_request", kw_only=True):
    """A group request reached the coordinator: ``handle`` (its number in the run),
    ``source`` (the connection address), ``api`` (``join``, ``sync``, ``heartbeat``,
    ``leave``), ``version``, ``client_id``, ``body`` (the request as the harness's
    ``GroupsimCoordinatorDriver`` reads it: snake_case, bytes base64) and ``member_uuids``
    (the UUIDs of the member ids drawn while handling it)."""

    handle: int
    source: str
    api: str
    version: int
    client_id: str
    body: dict[str, Any]
    member_uuids: list[str] | UnsetType = UNSET


class CoordinatorResponse(_Rec, tag="coordinator_response", kw_only=True):
    """The coordinator answered the request ``handle`` (null: no request of that API from
    ``source`` was waiting) with ``response``: its compared fields in the driver's shape
    (``error_code``; JoinGroup ``generation_id``, ``protocol_type``, ``protocol_name``,
    ``leader``, ``member_id``, ``skip_assignment``, ``members`` [[id, instance id, base64
    metadata]]; SyncGroup ``protocol_type``, ``protocol_name``, ``assignment``; LeaveGroup
    ``members`` [[id, instance id, error code]])."""

    handle: int | None
    source: str
    api: str
    response: dict[str, Any]


class CoordinatorTimer(_Rec, tag="coordinator_timer", kw_only=True):
    """A coordinator timer fired (``key``: ``heartbeat:<member id>``, ``join``, ``sync``)."""

    key: str
