"""Kafka-named client settings as typed Structs: each default written once, with its source.

One Struct per config group a group member reads; field names are Python's, ``encode_name``
is Kafka's (``msgspec.field(name="session.timeout.ms")``) and bounds are Kafka's validators
(``Meta(ge=...)``). The scenario loaders decode a Kafka-named table with
``msgspec.convert(table, <Struct>)``; :func:`first_bad_setting` tells which key was wrong, in
field order, so each loader words the problem as it always has. The Connect worker's
settings are :class:`members.config.WorkerConfig`, the broker's
:class:`coordinator.config.CoordinatorConfig`.

Times are virtual milliseconds.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from protocol.config_values import JAVA_INT_MAX
from protocol.primitives import INT64_MAX
from protocol.streams_versions import LATEST_SUPPORTED_VERSION

__all__ = [
    "ConsumerGroupSettings",
    "StreamsSettings",
    "CONSUMER_DEFAULTS",
    "STREAMS_DEFAULTS",
    "MIN_EMULATED_VERSION",
    "RackAwareStrategy",
    "first_bad_setting",
    "setting_names",
]

#: A Java ``int`` setting of at least 1 (``ConfigDef.Range.atLeast(1)`` or a positive timeout).
PositiveInt = Annotated[int, Meta(ge=1, le=JAVA_INT_MAX)]
#: A Java ``int`` setting of at least 0.
NonNegInt = Annotated[int, Meta(ge=0, le=JAVA_INT_MAX)]
#: A Java ``long`` setting of at least 0.
NonNegLong = Annotated[int, Meta(ge=0, le=INT64_MAX)]
NonEmpty = Annotated[str, Meta(min_length=1)]
#: ``rack.aware.assignment.strategy`` values (``StreamsConfig``, KIP-925).
RackAwareStrategy = Literal["none", "min_traffic", "balance_subtopology"]
#: The oldest ``groupsim.latest.supported.version``: HATA (KIP-441) and offset-sum
#: subscriptions start at v7.
MIN_EMULATED_VERSION = 7


class ConsumerGroupSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The group settings of a ``KafkaConsumer`` (Kafka ``ConsumerConfig``; a Kafka Streams
    client's consumers read the same ones).

    Attributes:
        session_timeout_ms: ``session.timeout.ms`` (45000 since KIP-735).
        heartbeat_interval_ms: ``heartbeat.interval.ms`` (3000).
        max_poll_interval_ms: ``max.poll.interval.ms`` (300000): also the JoinGroup rebalance
            timeout.
        client_rack: ``client.rack`` (KIP-881), ``None``: no rack.
        group_instance_id: ``group.instance.id`` (KIP-345), ``None``: a dynamic member.
    """

    session_timeout_ms: PositiveInt = msgspec.field(default=45_000, name="session.timeout.ms")
    heartbeat_interval_ms: PositiveInt = msgspec.field(default=3_000, name="heartbeat.interval.ms")
    max_poll_interval_ms: PositiveInt = msgspec.field(default=300_000, name="max.poll.interval.ms")
    client_rack: NonEmpty | None = msgspec.field(default=None, name="client.rack")
    group_instance_id: NonEmpty | None = msgspec.field(default=None, name="group.instance.id")


class StreamsSettings(ConsumerGroupSettings, frozen=True, kw_only=True):
    """A Kafka Streams client's settings (Kafka ``StreamsConfig``, the assignment ones read
    through ``AssignorConfiguration.AssignmentConfigs``), on top of its consumers' group
    settings. ``client.tag.<key>`` settings are free-form and not fields here.

    Attributes:
        num_stream_threads: ``num.stream.threads`` (1): the client's capacity.
        acceptable_recovery_lag: ``acceptable.recovery.lag`` (10000 records, a long).
        max_warmup_replicas: ``max.warmup.replicas`` (2, at least 1).
        num_standby_replicas: ``num.standby.replicas`` (0).
        probing_rebalance_interval_ms: ``probing.rebalance.interval.ms`` (600000, at least
            60000, a long).
        rack_aware_assignment_strategy: ``rack.aware.assignment.strategy`` (``"none"``; KIP-925).
        rack_aware_assignment_tags: ``rack.aware.assignment.tags`` (none; KIP-708).
        traffic_cost / non_overlap_cost: ``rack.aware.assignment.{traffic,non_overlap}_cost``
            (``None``: the assignor's own default).
        restore_records_per_sec: ``groupsim.restore.records.per.sec`` (10000): groupsim's
            restore speed of one stream thread's restore consumer, records per virtual second,
            shared by every changelog the thread restores or keeps updated
            (:mod:`members.restore`; not a Kafka setting).
        max_partition_fetch_bytes: ``max.partition.fetch.bytes`` (1048576, the consumer's
            default, which Streams keeps for its restore consumers): bytes of one changelog
            partition a restore consumer's fetch brings at most.
        changelog_record_bytes: ``groupsim.changelog.record.bytes`` (100): the size of one
            changelog record in a fetch (key, value and record overhead; Kafka has no such
            setting), so a fetch brings ``max.partition.fetch.bytes / this`` records of a
            changelog (10485 by default).
        latest_supported_version: ``groupsim.latest.supported.version`` (11, Kafka 4.0's
            ``LATEST_SUPPORTED_VERSION``; 7-11): the Streams release the client plays.
        future_process_id: ``groupsim.future.process.id`` (none): the process id this client,
            as leader, groups future subscriptions under (Kafka's ``FUTURE_ID`` in
            ``StreamsPartitionAssignor``, a random UUID per JVM, so where the future client
            stands in the process-id order is not on the wire): ``PID_<n>`` or a UUID string;
            none: after every UUID (groupsim's fixed place).
    """

    num_stream_threads: PositiveInt = msgspec.field(default=1, name="num.stream.threads")
    acceptable_recovery_lag: NonNegLong = msgspec.field(
        default=10_000, name="acceptable.recovery.lag"
    )
    max_warmup_replicas: PositiveInt = msgspec.field(default=2, name="max.warmup.replicas")
    num_standby_replicas: NonNegInt = msgspec.field(default=0, name="num.standby.replicas")
    probing_rebalance_interval_ms: Annotated[int, Meta(ge=60_000, le=INT64_MAX)] = msgspec.field(
        default=600_000, name="probing.rebalance.interval.ms"
    )
    rack_aware_assignment_strategy: RackAwareStrategy = msgspec.field(
        default="none", name="rack.aware.assignment.strategy"
    )
    rack_aware_assignment_tags: list[str] = msgspec.field(
        default_factory=list, name="rack.aware.assignment.tags"
    )
    traffic_cost: NonNegInt | None = msgspec.field(
        default=None, name="rack.aware.assignment.traffic_cost"
    )
    non_overlap_cost: NonNegInt | None = msgspec.field(
        default=None, name="rack.aware.assignment.non_overlap_cost"
    )
    restore_records_per_sec: NonNegLong = msgspec.field(
        default=10_000, name="groupsim.restore.records.per.sec"
    )
    max_partition_fetch_bytes: PositiveInt = msgspec.field(
        default=1_048_576, name="max.partition.fetch.bytes"
    )
    changelog_record_bytes: PositiveInt = msgspec.field(
        default=100, name="groupsim.changelog.record.bytes"
    )
    latest_supported_version: Annotated[
        int, Meta(ge=MIN_EMULATED_VERSION, le=LATEST_SUPPORTED_VERSION)
    ] = msgspec.field(default=LATEST_SUPPORTED_VERSION, name="groupsim.latest.supported.version")
    future_process_id: NonEmpty | None = msgspec.field(
        default=None, name="groupsim.future.process.id"
    )


#: Kafka's defaults, for code that needs one value without decoding a table.
CONSUMER_DEFAULTS = ConsumerGroupSettings()
STREAMS_DEFAULTS = StreamsSettings()


def setting_names(cls: type[msgspec.Struct]) -> dict[str, str]:
    """Kafka name → field name of a settings Struct, in field order."""
    return {f.encode_name: f.name for f in msgspec.structs.fields(cls)}


@functools.cache
def _field_types(
    cls: type[msgspec.Struct],
) -> dict[str, tuple[msgspec.inspect.Type, Any]]:
    """Kafka name → (the field's msgspec type, its declared type) of a settings Struct
    (inspected once per class: ``msgspec.inspect.type_info`` costs milliseconds, and every
    scenario load asks for it)."""
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    return {
        field.encode_name: (field.type, declared.type)
        for field, declared in zip(info.fields, msgspec.structs.fields(cls), strict=True)
    }


def first_bad_setting(
    cls: type[msgspec.Struct], values: Mapping[str, Any], order: Iterable[str] = ()
) -> tuple[str, Any, msgspec.inspect.Type] | None:
    """The first key of ``values`` whose value its field of ``cls`` rejects: the keys of
    ``order`` first, then the others in ``cls``'s field order.

    Returns:
        ``(Kafka name, value, the field's msgspec type)`` (e.g. an ``IntType`` carrying the
        ``ge``/``le`` bounds), or ``None`` when every value known to ``cls`` fits its field.
    """
    fields = _field_types(cls)
    for key in dict.fromkeys([*order, *fields]):
        if key not in values or key not in fields:
            continue
        inspected, declared_type = fields[key]
        try:
            msgspec.convert(values[key], declared_type)
        except msgspec.ValidationError:
            return key, values[key], inspected
    return None
