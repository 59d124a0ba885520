"""The JSON inputs of ``groupsim assign`` as msgspec Structs (unknown keys are rejected).

:func:`scenarios.input.json_input.decode_json_input` converts a decoded JSON document into
:class:`ConnectAssignInput` (``scenarios/assign/connect.py``) or :class:`StreamsAssignInput`
(``scenarios/assign/streams.py``); a wrong type, an unknown key, a value out of range or a
missing key is one line ``"<key path>: <problem>"``
(:func:`scenarios.input.errors.translate_validation_error`, JSON spelling). What a schema
cannot say (an unknown assignor, a leader that is not a member, malformed task ids, time going
backwards, ...) the engines check after decoding. Keys that default from other values (a
round's ``time_ms``, ``generation``, ``leader``, ...) are :data:`msgspec.UNSET` when absent.
The shapes and meanings are in those modules' docstrings.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import UNSET, Meta, UnsetType

from members.config import WORKER_DEFAULTS
from scenarios.input.schema import INT64_MAX, INT_MAX

__all__ = [
    "ConnectAssignConfig",
    "ConnectAssignInput",
    "ConnectMemberInput",
    "ConnectRoundInput",
    "StreamsAssignConfig",
    "StreamsAssignInput",
    "StreamsClientInput",
    "StreamsTasksInput",
]

NonEmpty = Annotated[str, Meta(min_length=1)]
Int32 = Annotated[int, Meta(ge=0, le=INT_MAX)]
Int64 = Annotated[int, Meta(ge=0, le=INT64_MAX)]
#: a generation id: -1 (none yet) up to a Java int
GenerationId = Annotated[int, Meta(ge=-1, le=INT_MAX)]


class _Input(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """A JSON object of ``groupsim assign`` input."""


# ----------------------------------------------------------------------------- Connect


class ConnectAssignConfig(_Input, kw_only=True, frozen=True):
    """``config``: the worker setting the incremental cooperative assignors read."""

    scheduled_rebalance_max_delay_ms: Int32 = msgspec.field(
        default=WORKER_DEFAULTS.scheduled_rebalance_max_delay_ms,
        name="scheduled.rebalance.max.delay.ms",
    )


class ConnectMemberInput(_Input, kw_only=True, frozen=True):
    """One member's JoinGroup metadata (``WorkerState``): its URL, config offset, previous
    allocation (cooperative protocols) and, under ``static``, its KIP-987 static jobs."""

    url: str | UnsetType = UNSET
    config_offset: Int64 = 0
    connectors: list[NonEmpty] | UnsetType = UNSET
    tasks: list[str] | UnsetType = UNSET
    static_connectors: list[NonEmpty] | UnsetType = UNSET
    static_tasks: list[str] | UnsetType = UNSET


class ConnectRoundInput(_Input, kw_only=True, frozen=True):
    """One rebalance: the leader's config snapshot and the members' metadata."""

    time_ms: Int64 | UnsetType = UNSET
    generation: GenerationId | UnsetType = UNSET
    last_completed_generation: GenerationId | UnsetType = UNSET
    leader: str | UnsetType = UNSET
    config_offset: Int64 = 0
    connectors: dict[str, Int32] = {}
    members: dict[str, ConnectMemberInput]


class ConnectAssignInput(_Input, kw_only=True, frozen=True):
    """A Connect ``groupsim assign`` document."""

    assignor: str
    protocol: str | UnsetType = UNSET
    config: ConnectAssignConfig = ConnectAssignConfig()
    rounds: list[ConnectRoundInput]


# ----------------------------------------------------------------------------- Kafka Streams


class StreamsAssignConfig(_Input, kw_only=True, frozen=True):
    """``config``: Kafka Streams' ``AssignmentConfigs`` settings, bounded by Kafka's config
    validators (``StreamsConfig``); absent keys keep Kafka's defaults."""

    acceptable_recovery_lag: Int64 | UnsetType = msgspec.field(
        default=UNSET, name="acceptable.recovery.lag"
    )
    max_warmup_replicas: Annotated[int, Meta(ge=1, le=INT_MAX)] | UnsetType = msgspec.field(
        default=UNSET, name="max.warmup.replicas"
    )
    num_standby_replicas: Int32 | UnsetType = msgspec.field(
        default=UNSET, name="num.standby.replicas"
    )
    probing_rebalance_interval_ms: Annotated[int, Meta(ge=60_000, le=INT64_MAX)] | UnsetType = (
        msgspec.field(default=UNSET, name="probing.rebalance.interval.ms")
    )
    rack_aware_assignment_strategy: NonEmpty | UnsetType = msgspec.field(
        default=UNSET, name="rack.aware.assignment.strategy"
    )
    rack_aware_assignment_tags: list[NonEmpty] | UnsetType = msgspec.field(
        default=UNSET, name="rack.aware.assignment.tags"
    )
    traffic_cost: Int32 | None = msgspec.field(
        default=None, name="rack.aware.assignment.traffic_cost"
    )
    non_overlap_cost: Int32 | None = msgspec.field(
        default=None, name="rack.aware.assignment.non_overlap_cost"
    )


class StreamsClientInput(_Input, kw_only=True, frozen=True):
    """One Streams client (``ClientState``): task ids are ``"<subtopology>_<partition>"``;
    a lag is -2 (ran as active), -3 (unknown) or >= 0."""

    id: NonEmpty
    capacity: Annotated[int, Meta(ge=1, le=INT_MAX)] = 1
    rack: NonEmpty | None = None
    tags: dict[str, NonEmpty] = {}
    prev_active: list[NonEmpty] = []
    prev_standby: list[NonEmpty] = []
    task_lags: dict[str, Annotated[int, Meta(ge=-3, le=INT64_MAX)]] = {}
    current_active: list[NonEmpty] = []
    current_standby: list[NonEmpty] = []


#: a task's partition racks: one list of rack names, or one list per partition
PartitionRacks = list[NonEmpty | list[NonEmpty]]


class StreamsTasksInput(_Input, kw_only=True, frozen=True):
    """The topology's tasks and, for rack awareness, their partitions' racks."""

    stateful: list[NonEmpty] = []
    stateless: list[NonEmpty] = []
    subtopologies: dict[str, list[NonEmpty]] | UnsetType = UNSET
    task_source_partition_racks: dict[str, PartitionRacks] = {}
    task_changelog_partition_racks: dict[str, PartitionRacks] = {}


class StreamsAssignInput(_Input, kw_only=True, frozen=True):
    """A Streams ``groupsim assign`` document. ``clients`` and ``tasks`` are required; the
    engine reports them missing after checking ``assignor`` and ``optimize``."""

    assignor: NonEmpty
    optimize: NonEmpty | UnsetType = UNSET
    config: StreamsAssignConfig = StreamsAssignConfig()
    clients: list[StreamsClientInput] | UnsetType = UNSET
    tasks: StreamsTasksInput | UnsetType = UNSET
