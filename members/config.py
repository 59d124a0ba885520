"""Connect worker configuration, with Kafka's names and defaults.

Kafka: ``DistributedConfig.java`` (Connect), ``GroupRebalanceConfig.java``. Times are virtual
milliseconds. The ``groupsim.*`` keys are not Kafka settings: they model how long the herder
takes to start and stop work and how far behind the config topic a worker reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from protocol.config_values import JAVA_INT_MAX, java_int_setting
from protocol.connect import ConfigError, ConnectorTaskId, ConnectProtocol
from protocol.kafka_configs import first_bad_setting

__all__ = ["WorkerConfig", "WORKER_CONFIG_KEYS", "WORKER_DEFAULTS", "LOGGED_TIMING_KEYS"]


#: A Java ``int`` setting of at least 0 (``ConfigDef.Range.atLeast(0)``).
JavaInt = Annotated[int, Meta(ge=0, le=JAVA_INT_MAX)]


class WorkerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One worker's settings: field ``encode_name`` is the Kafka (or ``groupsim.*``) key and the
    default is written here only. Build it with :meth:`from_mapping` from Kafka-named keys.

    Defaults: ``DistributedConfig`` (Connect) unless noted; virtual ms.
    """

    #: ``CONNECT_PROTOCOL_DEFAULT``: sessioned (KIP-507).
    connect_protocol: ConnectProtocol = msgspec.field(
        default=ConnectProtocol.SESSIONED, name="connect.protocol"
    )
    #: ``SCHEDULED_REBALANCE_MAX_DELAY_MS_DEFAULT``: 5 minutes (KIP-415).
    scheduled_rebalance_max_delay_ms: JavaInt = msgspec.field(
        default=300_000, name="scheduled.rebalance.max.delay.ms"
    )
    #: 10 seconds (Connect's own default, not the consumer's 45 s).
    session_timeout_ms: JavaInt = msgspec.field(default=10_000, name="session.timeout.ms")
    #: 3 seconds.
    heartbeat_interval_ms: JavaInt = msgspec.field(default=3_000, name="heartbeat.interval.ms")
    #: 1 minute.
    rebalance_timeout_ms: JavaInt = msgspec.field(default=60_000, name="rebalance.timeout.ms")
    #: 3 seconds.
    worker_sync_timeout_ms: JavaInt = msgspec.field(default=3_000, name="worker.sync.timeout.ms")
    #: ``WORKER_UNSYNC_BACKOFF_MS_DEFAULT``: 5 minutes.
    worker_unsync_backoff_ms: JavaInt = msgspec.field(
        default=300_000, name="worker.unsync.backoff.ms"
    )
    #: ``INTER_WORKER_KEY_TTL_MS_MS_DEFAULT``: 1 hour (KIP-507).
    inter_worker_key_ttl_ms: JavaInt = msgspec.field(
        default=3_600_000, name="inter.worker.key.ttl.ms"
    )
    #: The port of Connect's default ``listeners`` (``RestServerConfig``: ``http://:8083``).
    rest_advertised_port: JavaInt = msgspec.field(default=8083, name="rest.advertised.port")
    #: KIP-987 static connectors and tasks (none: a wildcard worker).
    static_connectors: tuple[str, ...] = msgspec.field(default=(), name="static.connectors")
    static_tasks: tuple[ConnectorTaskId, ...] = msgspec.field(default=(), name="static.tasks")
    # groupsim's herder model (not Kafka settings)
    connector_start_ms: JavaInt = msgspec.field(default=0, name="groupsim.connector.start.ms")
    connector_stop_ms: JavaInt = msgspec.field(default=0, name="groupsim.connector.stop.ms")
    task_start_ms: JavaInt = msgspec.field(default=0, name="groupsim.task.start.ms")
    task_stop_ms: JavaInt = msgspec.field(default=0, name="groupsim.task.stop.ms")
    config_read_lag_ms: JavaInt = msgspec.field(default=0, name="groupsim.config.read.lag.ms")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "config") -> WorkerConfig:
        """Build a config from ``{"connect.protocol": "eager", ...}``: Kafka's text forms
        first read as Kafka reads them (:func:`_as_kafka_reads`), then decoded once with
        ``msgspec.convert`` into this Struct, which owns names, types, bounds and defaults.

        Args:
            values: Kafka-named keys (see :data:`WORKER_CONFIG_KEYS`) to their values.
            where: a prefix naming the source, used in error messages.

        Raises:
            ConfigError: an unknown key, a value of the wrong type, a negative time, or a
                heartbeat interval not below the session timeout (Kafka rejects those too);
                the message names the first bad key.
        """
        for key in values:
            if key not in WORKER_CONFIG_KEYS:
                known = ", ".join(sorted(WORKER_CONFIG_KEYS))
                raise ConfigError(f"{where}.{key}: unknown worker setting (known: {known})")
        read = _as_kafka_reads(values, where)
        try:
            config = msgspec.convert(read, cls)
        except msgspec.ValidationError:
            bad = first_bad_setting(cls, read)
            assert bad is not None, read
            key, value, _ = bad
            raise ConfigError(_problem(key, value, f"{where}.{key}")) from None
        if config.heartbeat_interval_ms >= config.session_timeout_ms:
            raise ConfigError(
                f"{where}: heartbeat.interval.ms ({config.heartbeat_interval_ms}) must be lower "
                f"than session.timeout.ms ({config.session_timeout_ms})"
            )
        return config

    @property
    def is_static_worker(self) -> bool:
        """KIP-987: a worker that names static connectors or tasks (else a wildcard worker)."""
        return bool(self.static_connectors or self.static_tasks)

    def url(self, name: str) -> str:
        """The worker's advertised REST URL, ``http://<name>:<port>``."""
        return f"http://{name}:{self.rest_advertised_port}"


#: Every default (e.g. ``WORKER_DEFAULTS.scheduled_rebalance_max_delay_ms``, 300000).
WORKER_DEFAULTS = WorkerConfig()

#: Kafka (or ``groupsim.*``) key → field name, in field order.
WORKER_CONFIG_KEYS: dict[str, str] = {
    f.encode_name: f.name for f in msgspec.structs.fields(WorkerConfig)
}

#: The time settings a worker's ``member_start`` record carries when they are not Kafka's
#: defaults (the log checkers bound their windows with them; docs/event-log.md).
LOGGED_TIMING_KEYS = (
    "scheduled.rebalance.max.delay.ms",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "rebalance.timeout.ms",
    "worker.sync.timeout.ms",
    "worker.unsync.backoff.ms",
    "groupsim.connector.start.ms",
    "groupsim.connector.stop.ms",
    "groupsim.task.start.ms",
    "groupsim.task.stop.ms",
    "groupsim.config.read.lag.ms",
)


#: The settings Kafka types as ``ConfigDef.Type.LIST`` (a list, or one comma-separated string).
_LISTS = ("static.connectors", "static.tasks")


def _as_kafka_reads(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``values`` with Kafka's text forms turned into what the Struct decodes: a
    ``connect.protocol`` name in any case (``ConfigDef.CaseInsensitiveValidString``), a
    comma-separated string for a list setting, ``"<connector>-<n>"`` task ids
    (``ConnectorTaskId``). Any other value is left for ``msgspec.convert`` to judge.

    Raises:
        ConfigError: an unknown ``connect.protocol`` or a malformed task id.
    """
    read = dict(values)
    protocol = read.get("connect.protocol")
    if isinstance(protocol, str):
        read["connect.protocol"] = ConnectProtocol.from_setting(protocol).value
    for key in _LISTS:
        listed = read.get(key)
        if isinstance(listed, str):
            read[key] = listed = [v.strip() for v in listed.split(",") if v.strip()]
        if key == "static.tasks" and isinstance(listed, list | tuple):
            read[key] = [_task_id(text, f"{where}.{key}[{i}]") for i, text in enumerate(listed)]
    return read


def _task_id(text: Any, where: str) -> Any:
    if not isinstance(text, str):
        return text  # msgspec names the wrong type
    try:
        return ConnectorTaskId.parse(text)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _problem(key: str, value: Any, where: str) -> str:
    """What is wrong with ``value`` for ``key`` (which its field rejects), worded as groupsim
    always has: :func:`protocol.config_values.java_int_setting`'s words for a time."""
    if key == "connect.protocol":
        return f"{where}: expected a string, got {type(value).__name__}"
    if key in _LISTS:
        return f"{where}: expected a list of strings"
    try:
        java_int_setting(value, where)
    except ConfigError as exc:
        return str(exc)
    raise AssertionError(f"{where}: {value!r} fits a Java int")  # first_bad_setting said not
