"""Kafka Connect group-protocol vocabulary: protocol names, versions and message values.

These are plain values; the byte layouts live in :mod:`protocol.connect_codec`.

Kafka sources: ``ConnectProtocolCompatibility.java`` (protocol names and versions),
``ConnectProtocol.java`` / ``IncrementalCooperativeConnectProtocol.java`` (message fields),
``ExtendedAssignment.java``, ``ConnectorTaskId.java``. ``static`` (v3) is KIP-987, which Kafka
has not implemented; groupsim's encoding for it is in docs/upgrades.md.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import msgspec

from protocol.errors import InputError

__all__ = [
    "PROTOCOL_TYPE",
    "CONNECTOR_TASK",
    "NO_ERROR",
    "CONFIG_MISMATCH",
    "ConnectProtocol",
    "ConnectorTaskId",
    "ConnectAssignment",
    "WorkerSubscription",
    "ConfigError",
]

#: JoinGroup protocol type of every Connect worker (``WorkerCoordinator.protocolType()``).
PROTOCOL_TYPE = "connect"

#: Task number that marks the connector instance itself inside a ConnectorAssignment entry.
CONNECTOR_TASK = -1

#: Connect assignment error codes (``ConnectProtocol.Assignment``): the only two that exist.
NO_ERROR = 0
CONFIG_MISMATCH = 1


class ConfigError(InputError):
    """An impossible or unknown configuration value (e.g. ``connect.protocol=foo``)."""


class ConnectProtocol(enum.Enum):
    """A ``connect.protocol`` setting, declared as (setting name, JoinGroup protocol name,
    header version). Its ``value`` is the setting name alone, so a config Struct decodes
    ``"eager"`` into it with ``msgspec.convert`` (msgspec takes enums of str values) and
    encodes it back to the same text; the other two are attributes.

    Kafka: ``ConnectProtocolCompatibility`` (EAGER/COMPATIBLE/SESSIONED); STATIC is KIP-987.
    """

    _value_: str
    protocol_name: str
    version: int

    EAGER = ("eager", "default", 0)
    COMPATIBLE = ("compatible", "compatible", 1)
    SESSIONED = ("sessioned", "sessioned", 2)
    STATIC = ("static", "static", 3)

    def __new__(cls, setting: str, protocol_name: str, version: int) -> ConnectProtocol:
        member = object.__new__(cls)
        member._value_ = setting
        member.protocol_name = protocol_name
        member.version = version
        return member

    @property
    def setting(self) -> str:
        """The ``connect.protocol`` value (``eager``, ``compatible``, ...)."""
        return self._value_

    @property
    def is_eager(self) -> bool:
        """True for the stop-the-world protocol (``default``, v0)."""
        return self is ConnectProtocol.EAGER

    def advertised(self) -> list[ConnectProtocol]:
        """Protocols a worker with this setting lists in JoinGroup, most preferred first.

        Kafka ``WorkerCoordinator.metadata()``: a suffix of
        ``[static, sessioned, compatible, default]`` starting at this setting.
        """
        order = [
            ConnectProtocol.STATIC,
            ConnectProtocol.SESSIONED,
            ConnectProtocol.COMPATIBLE,
            ConnectProtocol.EAGER,
        ]
        return order[order.index(self) :]

    @classmethod
    def from_setting(cls, setting: str) -> ConnectProtocol:
        """Parse a ``connect.protocol`` value, case-insensitively as Kafka does.

        Raises:
            ConfigError: the value names no known protocol.
        """
        wanted = setting.strip().lower()
        for proto in cls:
            if proto.setting == wanted:
                return proto
        names = ", ".join(p.setting for p in cls)
        raise ConfigError(f"connect.protocol: unknown value {setting!r} (expected one of {names})")

    @classmethod
    def from_protocol_name(cls, name: str) -> ConnectProtocol:
        """The protocol for a JoinGroup protocol name (``default``, ``compatible``, ...).

        Raises:
            ConfigError: the name is not a Connect protocol.
        """
        wanted = name.lower()
        for proto in cls:
            if proto.protocol_name == wanted:
                return proto
        raise ConfigError(f"unknown Connect protocol name {name!r}")


class ConnectorTaskId(NamedTuple):
    """Kafka's ``ConnectorTaskId``: a connector name and a task number (>= 0).

    Ordering is (connector, task); for non-ASCII names Java orders by UTF-16 code units, see
    :func:`protocol.java_strings.java_string_key`.
    """

    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"

    @classmethod
    def parse(cls, text: str) -> ConnectorTaskId:
        """Parse ``"<connector>-<n>"`` (the connector name may itself contain dashes).

        Raises:
            ValueError: no ``-<n>`` suffix with a non-negative integer.
        """
        connector, sep, number = text.rpartition("-")
        if not sep or not connector or not number.isdigit():
            raise ValueError(f"task id {text!r} is not of the form '<connector>-<n>'")
        return cls(connector, int(number))


class ConnectAssignment(msgspec.Struct, frozen=True):
    """A Connect assignment as carried in SyncGroup (``ExtendedAssignment``).

    ``connectors``/``tasks`` and the revoked lists keep wire order (duplicates kept).
    ``version`` is the header the bytes carried (0 for eager; 1, 2, 3 for the cooperative
    layouts); ``revoked_*`` and ``delay_ms`` do not exist in v0 and read as empty / 0.
    ``delay_ms`` is virtual milliseconds until the member must rejoin (KIP-415).
    """

    version: int
    error: int
    leader: str | None
    leader_url: str | None
    config_offset: int
    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()
    revoked_connectors: tuple[str, ...] = ()
    revoked_tasks: tuple[ConnectorTaskId, ...] = ()
    delay_ms: int = 0

    @property
    def failed(self) -> bool:
        """Kafka ``ConnectProtocol.Assignment.failed()``: any error other than NO_ERROR."""
        return self.error != NO_ERROR


class WorkerSubscription(msgspec.Struct, frozen=True):
    """A worker's JoinGroup metadata for one protocol (``ExtendedWorkerState``).

    ``allocation`` is the worker's cumulative assignment embedded from v1 on; ``None`` is the
    wire null (no assignment yet). ``static_connectors``/``static_tasks`` exist only in v3
    (KIP-987, docs/upgrades.md).
    """

    version: int
    url: str
    config_offset: int
    allocation: ConnectAssignment | None = None
    static_connectors: tuple[str, ...] = ()
    static_tasks: tuple[ConnectorTaskId, ...] = ()
