"""Kafka-named settings Structs: each default lives in one Struct and every copy reads it.

Kafka's defaults checked here: ``ConsumerConfig`` (session.timeout.ms 45000,
heartbeat.interval.ms 3000, max.poll.interval.ms 300000), ``StreamsConfig``
(acceptable.recovery.lag 10000, max.warmup.replicas 2, num.standby.replicas 0,
probing.rebalance.interval.ms 600000), ``DistributedConfig`` (scheduled.rebalance.max.delay.ms
300000, session.timeout.ms 10000) and ``GroupCoordinatorConfig``
(group.initial.rebalance.delay.ms 3000).
"""

from __future__ import annotations

import msgspec
import pytest

from coordinator.config import COORDINATOR_CONFIG_KEYS, CoordinatorConfig
from members.assignors import create_assignor
from members.assignors.streams import AssignmentConfigs
from members.config import WORKER_CONFIG_KEYS, WORKER_DEFAULTS, WorkerConfig
from members.consumer import ConsumerClientConfig
from members.streams_client import StreamsClientConfig
from protocol.connect import ConfigError, ConnectorTaskId, ConnectProtocol
from protocol.kafka_configs import (
    CONSUMER_DEFAULTS,
    STREAMS_DEFAULTS,
    ConsumerGroupSettings,
    StreamsSettings,
    first_bad_setting,
    setting_names,
)
from scenarios.input.assign_schema import ConnectAssignConfig


def test_kafka_defaults() -> None:
    assert (
        CONSUMER_DEFAULTS.session_timeout_ms,
        CONSUMER_DEFAULTS.heartbeat_interval_ms,
        CONSUMER_DEFAULTS.max_poll_interval_ms,
    ) == (45_000, 3_000, 300_000)
    assert (
        STREAMS_DEFAULTS.acceptable_recovery_lag,
        STREAMS_DEFAULTS.max_warmup_replicas,
        STREAMS_DEFAULTS.num_standby_replicas,
        STREAMS_DEFAULTS.probing_rebalance_interval_ms,
    ) == (10_000, 2, 0, 600_000)
    assert (
        WORKER_DEFAULTS.scheduled_rebalance_max_delay_ms,
        WORKER_DEFAULTS.session_timeout_ms,
    ) == (
        300_000,
        10_000,
    )
    assert CoordinatorConfig().initial_rebalance_delay_ms == 3_000


def test_copies_read_the_struct() -> None:
    """The dataclasses and registries that hold a default take it from the settings Struct."""
    streams = StreamsClientConfig(process_id="PID_1")
    assert (streams.session_timeout_ms, streams.max_poll_interval_ms) == (
        STREAMS_DEFAULTS.session_timeout_ms,
        STREAMS_DEFAULTS.max_poll_interval_ms,
    )
    consumer = ConsumerClientConfig(topics=("t",))
    assert consumer.max_poll_interval_ms == CONSUMER_DEFAULTS.max_poll_interval_ms
    assert AssignmentConfigs().probing_rebalance_interval_ms == (
        STREAMS_DEFAULTS.probing_rebalance_interval_ms
    )
    delay = WORKER_DEFAULTS.scheduled_rebalance_max_delay_ms
    assert ConnectAssignConfig().scheduled_rebalance_max_delay_ms == delay
    assert create_assignor("incremental_cooperative", max_delay_ms=delay).max_delay_ms == delay


def test_kafka_names_are_the_encode_names() -> None:
    assert WORKER_CONFIG_KEYS["scheduled.rebalance.max.delay.ms"] == (
        "scheduled_rebalance_max_delay_ms"
    )
    assert COORDINATOR_CONFIG_KEYS["group.max.size"] == "max_size"
    assert setting_names(StreamsSettings)["max.warmup.replicas"] == "max_warmup_replicas"
    decoded = msgspec.convert(
        {"session.timeout.ms": 6_000, "num.standby.replicas": 1}, StreamsSettings
    )
    assert (decoded.session_timeout_ms, decoded.num_standby_replicas) == (6_000, 1)
    assert WorkerConfig.from_mapping({"session.timeout.ms": 20_000}).session_timeout_ms == 20_000


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"max.warmup.replicas": 0}, "max.warmup.replicas"),
        ({"probing.rebalance.interval.ms": 59_999}, "probing.rebalance.interval.ms"),
        ({"groupsim.latest.supported.version": 12}, "groupsim.latest.supported.version"),
        ({"client.rack": ""}, "client.rack"),
        ({"rack.aware.assignment.strategy": "nearest"}, "rack.aware.assignment.strategy"),
        ({"session.timeout.ms": True}, "session.timeout.ms"),
    ],
)
def test_bounds_reject(values: dict[str, object], key: str) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(values, StreamsSettings)
    bad = first_bad_setting(StreamsSettings, values)
    assert bad is not None and bad[0] == key


def test_first_bad_setting_follows_the_given_order() -> None:
    values = {"session.timeout.ms": 0, "num.stream.threads": 0}
    bad = first_bad_setting(StreamsSettings, values)
    assert bad is not None and bad[0] == "session.timeout.ms"
    bad = first_bad_setting(StreamsSettings, values, ["num.stream.threads"])
    assert bad is not None and bad[0] == "num.stream.threads"
    assert first_bad_setting(ConsumerGroupSettings, {"max.poll.interval.ms": 1}) is None


def test_the_worker_config_decodes_with_msgspec_after_kafkas_text_forms() -> None:
    """``connect.protocol`` in any case (``CaseInsensitiveValidString``), LIST settings as one
    comma-separated string, ``<connector>-<n>`` task ids; the Struct decodes and encodes the
    protocol as its setting name."""
    config = WorkerConfig.from_mapping(
        {"connect.protocol": " Static ", "static.connectors": "a, b", "static.tasks": "a-0,b-1"}
    )
    assert config.connect_protocol is ConnectProtocol.STATIC
    assert config.static_connectors == ("a", "b")
    assert config.static_tasks == (ConnectorTaskId("a", 0), ConnectorTaskId("b", 1))
    assert msgspec.convert({"connect.protocol": "eager"}, WorkerConfig).connect_protocol is (
        ConnectProtocol.EAGER
    )
    assert msgspec.to_builtins(config)["connect.protocol"] == "static"
    assert (ConnectProtocol.EAGER.protocol_name, ConnectProtocol.EAGER.version) == ("default", 0)


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"session.timeout.ms": -1}, "w.session.timeout.ms: must be >= 0, got -1"),
        ({"session.timeout.ms": "3"}, "w.session.timeout.ms: expected an integer, got str"),
        ({"session.timeout.ms": True}, "w.session.timeout.ms: expected an integer, got bool"),
        ({"connect.protocol": 3}, "w.connect.protocol: expected a string, got int"),
        ({"static.connectors": [1]}, "w.static.connectors: expected a list of strings"),
        ({"static.tasks": ["c"]}, "w.static.tasks[0]: task id 'c' is not of the form"),
        ({"bogus": 1}, "w.bogus: unknown worker setting (known: connect.protocol,"),
    ],
)
def test_a_bad_worker_setting_is_named(values: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        WorkerConfig.from_mapping(values, where="w")
    assert str(info.value).startswith(problem)
