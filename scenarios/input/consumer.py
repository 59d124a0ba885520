"""Plain consumer-group scenarios: the TOML format with ``kind = "consumer"`` (docs/consumer.md).

A consumer scenario names the topics (``[topics]``: name → partition count), the consumers
(``[[consumers]]``: ``name``, ``start_ms``, ``autostart``, ``config``) with shared settings in
``config``, and a timeline of the Connect format's member steps (``join``, ``leave``,
``crash``, ``restart`` with a new ``config``, ``phase``), ``subscribe`` (the consumer
subscribes to another list of the scenario's topics), ``add_partitions`` (a topic grows, as
``Admin#createPartitions`` does) and faults (``slow`` stalls the
consumer's poll loop, KIP-62), each naming its consumer with ``member``. Config keys are
Kafka's: ``partition.assignment.strategy`` (a list or a
comma-separated string), ``group.instance.id``, ``client.rack``, ``session.timeout.ms``,
``heartbeat.interval.ms``, ``max.poll.interval.ms``; the consumer subscribes to every topic.
``[partition_racks]`` (optional) gives, per topic, each partition's replica racks (KIP-881:
``Node.rack()`` of the brokers holding it; a broker without ``broker.rack`` is left out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from coordinator.config import CoordinatorConfig
from members.consumer import ConsumerClientConfig, rebalance_protocol
from protocol.kafka_configs import ConsumerGroupSettings, first_bad_setting, setting_names
from scenarios.input import schema
from scenarios.input.errors import (
    ScenarioError,
    convert_scenario,
    parse_toml,
    read_text_file,
)
from scenarios.input.schema import (
    CoordinatorSettings,
    InvariantName,
    NetworkSettings,
    NonNegInt,
    PositiveCount,
    WorkerName,
)
from scenarios.input.steps import LoadedView, Planned

__all__ = [
    "Subscribe",
    "AddPartitions",
    "ConsumerScenario",
    "ConsumerSpec",
    "LoadedConsumerScenario",
    "consumer_config",
    "loads_consumer_scenario",
]

#: Partitions per topic, bounded like Kafka's ``num.partitions`` in practice.
PartitionCount = Annotated[int, Meta(ge=1, le=10_000)]
#: One partition's replica racks (``broker.rack`` of each replica's broker; empty: its
#: replicas' brokers have no rack).
ReplicaRacks = Annotated[list[Annotated[str, Meta(min_length=1)]], Meta(max_length=16)]


class Subscribe(schema.StepBase, frozen=True, tag="subscribe"):
    """The consumer calls ``subscribe(topics)`` with another list (each topic of
    ``[topics]``): it rejoins the group (docs/consumer.md)."""

    member: WorkerName
    topics: Annotated[list[str], Meta(min_length=1)]


class AddPartitions(schema.StepBase, frozen=True, tag="add_partitions"):
    """``Admin#createPartitions`` (``kafka-topics --alter --partitions``): ``topic`` grows to
    ``count`` partitions (more than it has then); ``racks`` gives the new partitions' replica
    racks in partition order (KIP-881; none: one replica on a broker without
    ``broker.rack``). Every running consumer's metadata refresh sees it at once; the leader
    rejoins (docs/consumer.md)."""

    topic: Annotated[str, Meta(min_length=1)]
    count: PartitionCount
    racks: list[ReplicaRacks] = []


ConsumerStep = (
    Subscribe
    | AddPartitions
    | schema.Join
    | schema.Leave
    | schema.Crash
    | schema.Restart
    | schema.Phase
    | schema.Slow
    | schema.Partition
    | schema.Heal
    | schema.Loss
    | schema.Latency
    | schema.CoordinatorFailover
    | schema.DelayRequest
)


class _Base(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class ConsumerEntry(_Base, frozen=True):
    """``[[consumers]]``: one ``KafkaConsumer``, started at ``start_ms`` with ``config`` on top
    of the scenario's ``config``."""

    name: WorkerName
    start_ms: NonNegInt = 0
    autostart: bool = True
    config: dict[str, Any] = {}


class ConsumerExpect(_Base, frozen=True):
    """``[expect]``: ``no_violations`` (default true); and, when given, the protocol the group
    ends on (``final_protocol``, an assignor name), bounds on the number of generations that
    handed out assignments (``min_rebalances`` / ``max_rebalances``), and the consumers that die
    of a fatal JoinGroup/SyncGroup error, in order of death (``fatal_members``, e.g. KIP-429's
    one-bounce upgrade: ``INCONSISTENT_GROUP_PROTOCOL``). ``expected_violations`` names
    violations (an invariant, or the known behaviour a violation is named after, e.g.
    ``consumer-zombie``) that do not fail ``no_violations``; chaos reproducers list every
    known one."""

    no_violations: bool = True
    expected_violations: list[InvariantName] = []
    final_protocol: str | None = None
    min_rebalances: NonNegInt | None = None
    max_rebalances: NonNegInt | None = None
    fatal_members: list[WorkerName] | None = None


class ConsumerScenario(_Base, frozen=True):
    """A whole consumer scenario file."""

    kind: Literal["consumer"]
    name: Annotated[str, Meta(min_length=1)]
    description: str = ""
    seed: NonNegInt = 0
    settle_ms: NonNegInt = 120_000
    max_records: PositiveCount | None = None
    log_heartbeats: bool = False
    coordinator: CoordinatorSettings = msgspec.field(default_factory=CoordinatorSettings)
    network: NetworkSettings = msgspec.field(default_factory=NetworkSettings)
    topics: dict[str, PartitionCount] = {}
    #: topic → per partition (index = partition number) its replicas' racks (KIP-881); a
    #: topic not listed has one replica per partition, on a broker without ``broker.rack``
    partition_racks: dict[str, list[ReplicaRacks]] = {}
    config: dict[str, Any] = {}
    consumers: list[ConsumerEntry] = []
    timeline: list[ConsumerStep] = []
    expect: ConsumerExpect = msgspec.field(default_factory=ConsumerExpect)


@dataclass(frozen=True)
class ConsumerSpec:
    """A consumer ready to start."""

    name: str
    config: ConsumerClientConfig
    start_ms: int
    autostart: bool


@dataclass
class LoadedConsumerScenario(LoadedView):
    """A validated consumer scenario (what :func:`scenarios.sim.runner.simulate` runs).

    Attributes:
        scenario: the decoded file; source: its path.
        consumers: every consumer in file order.
        cluster: topic → partitions' replica racks (no racks: one replica without a rack).
        steps: the timeline sorted by ``at_ms`` (file order at equal times); ``join`` and
            ``restart`` carry the consumer's merged config in ``Planned.config``.
        end_ms: ``settle_ms`` after the last step or start (virtual ms).
        coordinator_config: ``[coordinator]`` with the broker defaults.
    """

    scenario: ConsumerScenario
    source: Path
    consumers: list[ConsumerSpec]
    cluster: dict[str, tuple[tuple[str | None, ...], ...]]
    steps: list[Planned]
    end_ms: int
    coordinator_config: CoordinatorConfig = field(default_factory=CoordinatorConfig)


def _strategies(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(s.strip() for s in value.split(",") if s.strip())
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise ValueError("partition.assignment.strategy must be a list of names or a string")


#: Kafka name → field of :class:`ConsumerGroupSettings`, which owns their bounds and defaults.
_SETTINGS = setting_names(ConsumerGroupSettings)


def consumer_config(raw: dict[str, Any], topics: tuple[str, ...]) -> ConsumerClientConfig:
    """A consumer's Kafka-named ``config`` table, decoded once.

    Raises:
        ValueError: an unknown key, a value of the wrong type, or an unknown or incompatible
            ``partition.assignment.strategy`` (the message names the key).
    """
    kwargs: dict[str, Any] = {"topics": topics}
    settings: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "partition.assignment.strategy":
            kwargs["strategies"] = _strategies(value)
            rebalance_protocol(kwargs["strategies"])
        elif key not in _SETTINGS:
            raise ValueError(f"unknown consumer config key {key!r}")
        elif bad := first_bad_setting(ConsumerGroupSettings, {key: value}):
            if isinstance(bad[2], msgspec.inspect.UnionType):  # client.rack, group.instance.id
                raise ValueError(f"{key} must be a non-empty string")
            raise ValueError(f"{key} must be a positive integer (virtual ms)")
        else:
            settings[key] = value
    decoded = msgspec.convert(settings, ConsumerGroupSettings)
    kwargs.update({field: getattr(decoded, field) for field in _SETTINGS.values()})
    return ConsumerClientConfig(**kwargs)


def _fail(file: str, path: str, problem: str) -> ScenarioError:
    return ScenarioError(file, path, problem)


def loads_consumer_scenario(text: str, source: str | Path = "<string>") -> LoadedConsumerScenario:
    """Read, decode and validate a consumer scenario from TOML text (``source`` names it in
    errors).

    Raises:
        ScenarioError: not TOML, not ``kind = "consumer"``, or a bad key/value (the message
            names the key path).
    """
    source = Path(source)
    file = source.name
    raw = parse_toml(text, file)
    if raw.get("kind") != "consumer":
        raise ScenarioError(file, "kind", 'a consumer scenario needs kind = "consumer"')
    sc = convert_scenario(raw, ConsumerScenario, file)
    try:
        coordinator_config = CoordinatorConfig.from_mapping(
            sc.coordinator.to_mapping(), where="coordinator"
        )
    except Exception as exc:  # ConfigError: one line naming the key
        raise ScenarioError(file, None, str(exc)) from None
    if not sc.topics:
        raise _fail(file, "topics", "a consumer scenario needs at least one topic")
    if not sc.consumers:
        raise _fail(file, "consumers", "a consumer scenario needs at least one consumer")
    topics = tuple(sorted(sc.topics))

    def config(path: str, *tables: dict[str, Any]) -> ConsumerClientConfig:
        merged: dict[str, Any] = {}
        for t in tables:
            merged.update(t)
        try:
            return consumer_config(merged, topics)
        except ValueError as exc:
            raise _fail(file, path, str(exc)) from None

    consumers: list[ConsumerSpec] = []
    current: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(sc.consumers):
        if entry.name in current:
            raise _fail(file, f"consumers[{i}].name", f"duplicate consumer {entry.name!r}")
        current[entry.name] = {**sc.config, **entry.config}
        spec_config = config(f"consumers[{i}].config", current[entry.name])
        consumers.append(ConsumerSpec(entry.name, spec_config, entry.start_ms, entry.autostart))

    steps: list[Planned] = []
    for i, step in enumerate(sc.timeline):
        origin = f"timeline[{i}]"
        member = getattr(step, "member", None)
        planned_config = None
        if isinstance(step, (schema.Join, schema.Restart)):
            assert member is not None
            current[member] = {**current.get(member, sc.config), **step.config}
            planned_config = config(f"{origin}.config", current[member])
        elif member is not None and member not in current:
            raise _fail(file, f"{origin}.member", f"no consumer named {member!r}")
        if isinstance(step, Subscribe):
            unknown = sorted(set(step.topics) - set(topics))
            if unknown:
                raise _fail(file, f"{origin}.topics", f"no such topic: {', '.join(unknown)}")
        steps.append(Planned(step.at_ms, step, origin, planned_config))
    order = sorted(range(len(steps)), key=lambda k: (steps[k].at_ms, k))
    steps = [steps[k] for k in order]
    _check_added_partitions(sc, steps, file)
    last = max([c.start_ms for c in consumers if c.autostart] + [s.end_ms for s in steps] + [0])
    cluster = _cluster(sc, file)
    return LoadedConsumerScenario(
        scenario=sc,
        source=source,
        consumers=consumers,
        cluster=cluster,
        steps=steps,
        end_ms=last + sc.settle_ms,
        coordinator_config=coordinator_config,
    )


def _check_added_partitions(sc: ConsumerScenario, steps: list[Planned], file: str) -> None:
    """Each ``add_partitions`` step (in time order) names a topic of ``[topics]``, grows it
    (Kafka: ``INVALID_PARTITIONS`` otherwise) and lists racks for no more than its new
    partitions.

    Raises:
        ScenarioError: naming the step's key.
    """
    counts = dict(sc.topics)
    for planned in steps:
        step = planned.step
        if not isinstance(step, AddPartitions):
            continue
        if step.topic not in counts:
            raise _fail(file, f"{planned.origin}.topic", f"no such topic: {step.topic}")
        if step.count <= counts[step.topic]:
            raise _fail(
                file,
                f"{planned.origin}.count",
                f"{step.topic} has {counts[step.topic]} partitions then; count must be more",
            )
        if len(step.racks) > step.count - counts[step.topic]:
            raise _fail(
                file,
                f"{planned.origin}.racks",
                f"{len(step.racks)} racks listed for {step.count - counts[step.topic]} new "
                "partitions",
            )
        counts[step.topic] = step.count


def grown_topic(
    cluster: dict[str, tuple[tuple[str | None, ...], ...]], step: AddPartitions
) -> tuple[tuple[str | None, ...], ...]:
    """``step.topic``'s partitions' replica racks after ``step``: the old partitions', then
    one entry per new partition (its ``racks`` entry; none: one rackless replica)."""
    no_rack: tuple[str | None, ...] = (None,)
    old = cluster[step.topic]
    added = [
        tuple(step.racks[i]) if i < len(step.racks) and step.racks[i] else no_rack
        for i in range(step.count - len(old))
    ]
    return (*old, *added)


def _cluster(sc: ConsumerScenario, file: str) -> dict[str, tuple[tuple[str | None, ...], ...]]:
    """Topic → each partition's replica racks: ``[partition_racks]`` where given (a partition
    with no rack listed has one replica on a broker without ``broker.rack``), else one rackless
    replica per partition.

    Raises:
        ScenarioError: ``[partition_racks]`` names an unknown topic or lists another number of
            partitions than ``[topics]``.
    """
    no_rack: tuple[str | None, ...] = (None,)
    for topic, racks in sc.partition_racks.items():
        if topic not in sc.topics:
            raise _fail(file, f"partition_racks.{topic}", f"no such topic: {topic}")
        if len(racks) != sc.topics[topic]:
            raise _fail(
                file,
                f"partition_racks.{topic}",
                f"{len(racks)} partitions listed, the topic has {sc.topics[topic]}",
            )
    return {
        t: tuple(tuple(r) or no_rack for r in sc.partition_racks[t])
        if t in sc.partition_racks
        else (no_rack,) * n
        for t, n in sorted(sc.topics.items())
    }


def load_consumer_scenario(path: str | Path) -> LoadedConsumerScenario:
    """:func:`loads_consumer_scenario` of a file.

    Raises:
        ScenarioError: unreadable, or as :func:`loads_consumer_scenario`.
    """
    return loads_consumer_scenario(read_text_file(path), source=path)
