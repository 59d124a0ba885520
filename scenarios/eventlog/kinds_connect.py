"""The event-log record kinds only Kafka Connect workers write (docs/event-log.md; emitted by
``members/worker.py``, ``members/herder.py`` and ``members/session_keys.py``): connector and
task lifecycle, KIP-987 static config, KIP-507 session keys and internal requests, herder
stalls and protocol downgrades. Shared kinds are in :mod:`.kinds`."""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from scenarios.eventlog.kinds import _Rec

__all__ = [
    "ConnectorStart",
    "ConnectorStarted",
    "ConnectorStop",
    "ConnectorStopped",
    "TaskStart",
    "TaskStarted",
    "TaskStop",
    "TaskStopped",
    "ConnectorStartFailed",
    "TaskStartFailed",
    "StaticConfigIgnored",
    "SessionKey",
    "InternalRequest",
    "InternalRequestVerified",
    "InternalRequestRejected",
    "HerderStall",
    "ProtocolDowngrade",
]


class ConnectorStart(_Rec, tag="connector_start", kw_only=True):
    """The herder starts a connector of its generation's assignment; ``config_offset``: the
    worker's config topic offset it runs the assignment under (KIP-415: the assignment's
    offset, read first if the worker was behind)."""

    connector: str
    generation: int
    config_offset: int | UnsetType = UNSET
    member: str


class ConnectorStarted(_Rec, tag="connector_started", kw_only=True):
    connector: str
    generation: int
    member: str


class ConnectorStop(_Rec, tag="connector_stop", kw_only=True):
    connector: str
    reason: str
    member: str


class ConnectorStopped(_Rec, tag="connector_stopped", kw_only=True):
    connector: str
    reason: str
    member: str


class TaskStart(_Rec, tag="task_start", kw_only=True):
    """As :class:`ConnectorStart`, for a task."""

    task: str
    generation: int
    config_offset: int | UnsetType = UNSET
    member: str


class TaskStarted(_Rec, tag="task_started", kw_only=True):
    task: str
    generation: int
    member: str


class TaskStop(_Rec, tag="task_stop", kw_only=True):
    task: str
    reason: str
    member: str


class TaskStopped(_Rec, tag="task_stopped", kw_only=True):
    task: str
    reason: str
    member: str


class ConnectorStartFailed(_Rec, tag="connector_start_failed", kw_only=True):
    """The herder started a connector of its generation's assignment that the worker already
    runs (a KAFKA-13816 leftover): Kafka's ``Worker#startConnector`` refuses it and the
    connector is reported FAILED, while the first instance runs on (now owned again)."""

    connector: str
    generation: int
    error: str
    member: str


class TaskStartFailed(_Rec, tag="task_start_failed", kw_only=True):
    """As :class:`ConnectorStartFailed`, for a task (``Worker#startTask``: "Task already
    exists in this worker")."""

    task: str
    generation: int
    error: str
    member: str


class StaticConfigIgnored(_Rec, tag="static_config_ignored", kw_only=True):
    protocol: str
    member: str


class SessionKey(_Rec, tag="session_key", kw_only=True):
    key_id: int
    created_ms: int
    reason: str
    member: str


class InternalRequest(_Rec, tag="internal_request", kw_only=True):
    """``to`` is null when the worker knows no leader; ``key_id`` null when unsigned."""

    to: str | None
    connector: str
    tasks: int
    key_id: int | None
    signed: bool
    member: str


class InternalRequestVerified(_Rec, tag="internal_request_verified", kw_only=True):
    origin: str
    connector: str
    tasks: int
    validation: bool
    reason: str | None
    member: str


class InternalRequestRejected(_Rec, tag="internal_request_rejected", kw_only=True):
    origin: str
    connector: str
    tasks: int
    validation: bool
    reason: str | None
    member: str


class HerderStall(_Rec, tag="herder_stall", kw_only=True):
    stall_ms: int
    member: str


class ProtocolDowngrade(_Rec, tag="protocol_downgrade", kw_only=True):
    from_version: int
    to_version: int
    member: str
