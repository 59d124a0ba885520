"""Connect worker configuration, with Kafka's names and defaults.

Kafka: ``DistributedConfig.java`` (Connect), ``GroupRebalanceConfig.java``. Times are virtual
milliseconds. The ``groupsim.*`` keys are not Kafka settings: they model how long the herder
takes to start and stop work and how far behind the config topic a worker reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from protocol.config_values import java_int_setting, string_setting
from protocol.connect import ConfigError, ConnectorTaskId, ConnectProtocol

__all__ = ["WorkerConfig", "WORKER_CONFIG_KEYS", "LOGGED_TIMING_KEYS"]


class WorkerConfig(msgspec.Struct, frozen=True):
    """One worker's settings. Build it with :meth:`from_mapping` from Kafka-named keys."""

    connect_protocol: ConnectProtocol = ConnectProtocol.SESSIONED
    scheduled_rebalance_max_delay_ms: int = 300_000
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 60_000
    worker_sync_timeout_ms: int = 3_000
    worker_unsync_backoff_ms: int = 300_000
    inter_worker_key_ttl_ms: int = 3_600_000
    rest_advertised_port: int = 8083
    static_connectors: tuple[str, ...] = ()
    static_tasks: tuple[ConnectorTaskId, ...] = ()
    # groupsim's herder model (not Kafka settings)
    connector_start_ms: int = 0
    connector_stop_ms: int = 0
    task_start_ms: int = 0
    task_stop_ms: int = 0
    config_read_lag_ms: int = 0

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "config") -> WorkerConfig:
        """Build a config from ``{"connect.protocol": "eager", ...}``.

        Args:
            values: Kafka-named keys (see :data:`WORKER_CONFIG_KEYS`) to their values.
            where: a prefix naming the source, used in error messages.

        Raises:
            ConfigError: an unknown key, a value of the wrong type, a negative time, or a
                heartbeat interval not below the session timeout (Kafka rejects those too).
        """
        kwargs: dict[str, Any] = {}
        for key, value in values.items():
            field = WORKER_CONFIG_KEYS.get(key)
            if field is None:
                known = ", ".join(sorted(WORKER_CONFIG_KEYS))
                raise ConfigError(f"{where}.{key}: unknown worker setting (known: {known})")
            kwargs[field] = _convert(field, value, f"{where}.{key}")
        config = cls(**kwargs)
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


WORKER_CONFIG_KEYS: dict[str, str] = {
    "connect.protocol": "connect_protocol",
    "scheduled.rebalance.max.delay.ms": "scheduled_rebalance_max_delay_ms",
    "session.timeout.ms": "session_timeout_ms",
    "heartbeat.interval.ms": "heartbeat_interval_ms",
    "rebalance.timeout.ms": "rebalance_timeout_ms",
    "worker.sync.timeout.ms": "worker_sync_timeout_ms",
    "worker.unsync.backoff.ms": "worker_unsync_backoff_ms",
    "inter.worker.key.ttl.ms": "inter_worker_key_ttl_ms",
    "rest.advertised.port": "rest_advertised_port",
    "static.connectors": "static_connectors",
    "static.tasks": "static_tasks",
    "groupsim.connector.start.ms": "connector_start_ms",
    "groupsim.connector.stop.ms": "connector_stop_ms",
    "groupsim.task.start.ms": "task_start_ms",
    "groupsim.task.stop.ms": "task_stop_ms",
    "groupsim.config.read.lag.ms": "config_read_lag_ms",
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


def _convert(field: str, value: Any, where: str) -> Any:
    if field == "connect_protocol":
        return ConnectProtocol.from_setting(string_setting(value, where))
    if field in ("static_connectors", "static_tasks"):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: expected a list of strings")
        if field == "static_connectors":
            return tuple(value)
        # KIP-987: static.tasks names task ids "<connector>-<n>".
        tasks = []
        for i, text in enumerate(value):
            try:
                tasks.append(ConnectorTaskId.parse(text))
            except ValueError as exc:
                raise ConfigError(f"{where}[{i}]: {exc}") from None
        return tuple(tasks)
    return java_int_setting(value, where)
