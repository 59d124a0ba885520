"""The classic group-membership RPCs between members and the group coordinator.

Requests and responses of JoinGroup, SyncGroup, Heartbeat and LeaveGroup, as values. Field
names follow Kafka's message JSON (``clients/src/main/resources/common/message/
{JoinGroup,SyncGroup,Heartbeat,LeaveGroup}{Request,Response}.json``); only the fields that
change the protocol's behaviour are kept. Member metadata and assignments are opaque bytes
here, exactly as the broker sees them.
"""

from __future__ import annotations

import enum

import msgspec

__all__ = [
    "ErrorCode",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "JoinGroupResponseMember",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "MemberIdentity",
    "LeaveGroupMemberResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "Request",
    "Response",
    "UNKNOWN_MEMBER_ID",
    "UNKNOWN_GENERATION_ID",
]

#: Member id of a member that has none yet (``JoinGroupRequest.UNKNOWN_MEMBER_ID``).
UNKNOWN_MEMBER_ID = ""
#: Generation of a member that has not joined (``OffsetCommitRequest.DEFAULT_GENERATION_ID``).
UNKNOWN_GENERATION_ID = -1


class ErrorCode(enum.IntEnum):
    """Kafka error codes used by the group RPCs (``org.apache.kafka.common.protocol.Errors``)."""

    NONE = 0
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82


class JoinGroupRequest(msgspec.Struct, frozen=True, tag=True):
    """JoinGroup. ``protocols`` is the member's ordered preference list of (name, metadata).

    ``api_version`` >= 4 makes a new dynamic member go through KIP-394 MEMBER_ID_REQUIRED.
    Timeouts are virtual milliseconds.
    """

    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str = ""
    group_instance_id: str | None = None
    reason: str | None = None
    api_version: int = 9


class JoinGroupResponseMember(msgspec.Struct, frozen=True):
    """One member in the leader's JoinGroup response, with its metadata for the chosen protocol."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


class JoinGroupResponse(msgspec.Struct, frozen=True, tag=True):
    """JoinGroup response. Only the leader's carries ``members`` (in coordinator order)."""

    error: ErrorCode
    generation_id: int = UNKNOWN_GENERATION_ID
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinGroupResponseMember, ...] = ()
    skip_assignment: bool = False


class SyncGroupRequest(msgspec.Struct, frozen=True, tag=True):
    """SyncGroup. The leader sends every member's assignment; followers send none."""

    group_id: str
    member_id: str
    generation_id: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[tuple[str, bytes], ...] = ()
    group_instance_id: str | None = None


class SyncGroupResponse(msgspec.Struct, frozen=True, tag=True):
    """SyncGroup response: this member's assignment bytes (empty on error)."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


class HeartbeatRequest(msgspec.Struct, frozen=True, tag=True):
    """Heartbeat for ``member_id`` at ``generation_id``. ``correlation_id`` stands for the
    request header's (``RequestHeader.correlationId``), which the response header echoes:
    several Heartbeats may be in flight, and the client matches each answer to its request."""

    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None
    correlation_id: int = 0


class HeartbeatResponse(msgspec.Struct, frozen=True, tag=True):
    """Heartbeat response; ``correlation_id`` echoes the request's (its response header)."""

    error: ErrorCode
    correlation_id: int = 0


class MemberIdentity(msgspec.Struct, frozen=True):
    """One member leaving in a LeaveGroup v3+ batch (``LeaveGroupRequest.json`` ``members``).

    ``member_id`` may be ``""`` together with a ``group_instance_id``: the administrative
    removal of a static member by its instance id (KIP-345).
    """

    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    reason: str | None = None


class LeaveGroupRequest(msgspec.Struct, frozen=True, tag=True):
    """LeaveGroup v3+: a batch of members leaving (Connect sends its own member id on close).

    ``member_ids`` are dynamic members given by id only (the shape every groupsim client
    sends); ``members`` are full identities (member id and/or ``group_instance_id``). The
    coordinator handles ``member_ids`` first, then ``members``, each in order.
    """

    group_id: str
    member_ids: tuple[str, ...] = ()
    reason: str | None = None
    members: tuple[MemberIdentity, ...] = ()

    def identities(self) -> tuple[MemberIdentity, ...]:
        """Every leaving member as a :class:`MemberIdentity`, in handling order."""
        return tuple(MemberIdentity(mid) for mid in self.member_ids) + self.members


class LeaveGroupMemberResponse(msgspec.Struct, frozen=True):
    """The answer for one leaving member (``LeaveGroupResponse.json`` ``members``)."""

    member_id: str
    group_instance_id: str | None
    error: ErrorCode


class LeaveGroupResponse(msgspec.Struct, frozen=True, tag=True):
    """LeaveGroup response: top-level error plus one answer per leaving member.

    ``member_errors`` is (member id, error) per member, ``members`` the same answers with
    the group instance id (both in request order).
    """

    error: ErrorCode
    member_errors: tuple[tuple[str, ErrorCode], ...] = ()
    members: tuple[LeaveGroupMemberResponse, ...] = ()


class FindCoordinatorRequest(msgspec.Struct, frozen=True, tag=True):
    """FindCoordinator for the group ``key`` (answered by the runtime, which knows whether a
    coordinator is loaded; the group coordinator itself never sees it)."""

    key: str


class FindCoordinatorResponse(msgspec.Struct, frozen=True, tag=True):
    """FindCoordinator response: NONE, or COORDINATOR_NOT_AVAILABLE while it is loading."""

    error: ErrorCode


Request = JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest
Response = JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse
