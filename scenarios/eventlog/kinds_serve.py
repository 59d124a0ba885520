"""The event-log record kinds only ``groupsim serve`` writes (docs/event-log.md, "Served
logs"; emitted by ``scenarios/serve/broker.py``). Shared kinds are in :mod:`.kinds`; a served
log's ``run_start``, ``run_end``, ``fault`` and coordinator records use those Structs (the
coordinator's carry ``group``).

``member`` in a served record is the connection's address ``"<client.id>#<n>"`` (the n-th
connection the server accepted; ``"?#<n>"`` before its first request was read); error codes
are Kafka's names (``"NONE"``, ``"REBALANCE_IN_PROGRESS"``, …).
"""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from scenarios.eventlog.kinds import _Rec

__all__ = [
    "AnswerDropped",
    "ConnectionErrorRecord",
    "Listening",
    "OffsetCommit",
    "WireRequest",
    "WireResponse",
]


class Listening(_Rec, tag="listening", kw_only=True):
    """The server is accepting connections at ``host``:``port`` (the bound port)."""

    host: str
    port: int


class WireRequest(_Rec, tag="wire_request", kw_only=True):
    """A group request came in (``api``: ``JoinGroup``, ``SyncGroup``, ``Heartbeat`` (only
    with heartbeat logging), ``LeaveGroup``; ``version`` its API version). LeaveGroup names
    ``member_ids`` (v3+ batches every ``members[].member_id``), the others ``member_id``;
    JoinGroup adds ``protocols`` (names, preference order) and ``group_instance_id`` (KIP-345,
    null when dynamic); SyncGroup and Heartbeat add ``generation``."""

    api: str
    version: int
    member: str
    client_id: str
    group: str
    member_ids: list[str] | UnsetType = UNSET
    member_id: str | UnsetType = UNSET
    protocols: list[str] | UnsetType = UNSET
    group_instance_id: str | None | UnsetType = UNSET
    generation: int | UnsetType = UNSET


class WireResponse(_Rec, tag="wire_response", kw_only=True):
    """A group request is answered (``error`` a Kafka error name). JoinGroup adds
    ``member_id``, ``generation``, ``protocol`` (null when none was chosen), ``leader_id`` and
    ``skip_assignment`` (true only when a static leader rejoining a Stable group on v9+ is told
    to keep the current assignment, KIP-814); SyncGroup adds ``member_id``, ``generation`` (of
    the request) and ``partitions`` (``"<topic>-<n>"`` decoded from the consumer-protocol
    assignment, null when the bytes are not one)."""

    api: str
    member: str
    group: str
    error: str
    member_id: str | UnsetType = UNSET
    generation: int | UnsetType = UNSET
    protocol: str | None | UnsetType = UNSET
    leader_id: str | UnsetType = UNSET
    skip_assignment: bool | UnsetType = UNSET
    partitions: list[str] | None | UnsetType = UNSET


class ConnectionErrorRecord(_Rec, tag="connection_error", kw_only=True):
    """The server closed a connection: a frame it cannot decode or serve (a ``WireError``) or
    an internal error (``"internal error: <type>: <message>"``)."""

    member: str
    error: str


class AnswerDropped(_Rec, tag="answer_dropped", kw_only=True):
    """The coordinator answered ``member`` (``api``: the response class, e.g.
    ``JoinGroupResponse``) but no request of that connection was waiting (it closed, or its
    parked request was already answered)."""

    group: str
    member: str
    api: str


class OffsetCommit(_Rec, tag="offset_commit", kw_only=True):
    """An OffsetCommit was answered: ``generation`` (−1: a simple commit outside the group
    protocol), ``error`` (``OffsetMetadataManager#validateOffsetCommit``'s, one for every
    partition), ``partitions`` (how many partitions it carried)."""

    member: str
    group: str
    member_id: str
    generation: int
    error: str
    partitions: int
