"""Messages between workers, the simulated Connect config topic, and the operator.

Kafka Connect workers share configuration through a compacted Kafka topic
(``KafkaConfigBackingStore``). groupsim models it as an address ``"config"``: the runtime
delivers every new record to every worker after that worker's read lag, and answers a
read-to-end request (``configBackingStore.refresh``) with the latest snapshot.

Workers also talk to each other over their REST APIs. groupsim models the one internal request
that KIP-507 protects: a worker that runs a connector forwards the connector's new task
configurations to the leader (``DistributedHerder.reconfigureConnector`` →
``POST /connectors/<name>/tasks``), signed with the session key the leader distributes
through the config topic. A worker is addressed as ``"worker:<name>"``.
"""

from __future__ import annotations

import msgspec

__all__ = [
    "CONFIG_ADDRESS",
    "worker_address",
    "SessionKey",
    "ConfigUpdate",
    "ReadConfigToEnd",
    "WriteSessionKey",
    "WriteTaskConfigs",
    "ReconfigureTasks",
    "TaskConfigsRequest",
    "TaskConfigsResponse",
]

#: Network address of the simulated config topic.
CONFIG_ADDRESS = "config"


def worker_address(name: str) -> str:
    """The REST address of the worker called ``name`` (whatever its current incarnation)."""
    return f"worker:{name}"


class SessionKey(msgspec.Struct, frozen=True):
    """KIP-507 session key: HMAC-SHA256 secret, created at ``created_ms`` (virtual ms)."""

    key_id: int
    secret: bytes
    created_ms: int


class ConfigUpdate(msgspec.Struct, frozen=True):
    """The config topic as of ``offset``: every connector, its task count, the session key."""

    offset: int
    connectors: dict[str, int]
    session_key: SessionKey | None = None


class ReadConfigToEnd(msgspec.Struct, frozen=True):
    """A worker asks to read the config topic to its end (answered with a ConfigUpdate)."""


class WriteSessionKey(msgspec.Struct, frozen=True):
    """The leader writes a new session key to the config topic (KIP-507)."""

    key: SessionKey


class WriteTaskConfigs(msgspec.Struct, frozen=True):
    """The leader writes a connector's task configurations (here: its task count)."""

    connector: str
    tasks: int


class ReconfigureTasks(msgspec.Struct, frozen=True):
    """The connector running on this worker now wants ``tasks`` tasks (a timeline step)."""

    connector: str
    tasks: int


class TaskConfigsRequest(msgspec.Struct, frozen=True):
    """Task configs forwarded to the leader, signed with session key ``key_id``.

    ``signature`` is HMAC-SHA256 over the body, or None when the group runs below v2 and
    requests are not signed.
    """

    origin: str
    connector: str
    tasks: int
    key_id: int | None
    signature: bytes | None


class TaskConfigsResponse(msgspec.Struct, frozen=True):
    """The leader's answer: accepted, or rejected with a reason (HTTP 403 / 409 in Kafka)."""

    connector: str
    tasks: int
    accepted: bool
    reason: str = ""
