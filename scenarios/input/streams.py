"""Kafka Streams scenario files: schema and loader (docs/streams.md).

A Streams scenario is a TOML file with the top-level key ``kind = "streams"``. Everything
else mirrors the Connect format (``docs/scenario-format.md``): Kafka-named settings, integer
virtual milliseconds, unknown keys rejected, and every problem reported as one line
``"<file>: <key path>: <problem>"`` (:class:`scenarios.input.errors.ScenarioError`). The
timeline accepts every fault action of the Connect format; every step, faults included,
names its client with ``client``.

Entry points: :func:`load_streams_scenario`, :func:`loads_streams_scenario`; the library and
loading a file of either kind: :mod:`scenarios.input.library`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from coordinator.config import CoordinatorConfig
from members.assignors.streams import (
    AssignmentConfigs,
    StreamsAssignmentError,
    TaskId,
    validate_client_tags,
)
from members.assignors.streams.model import STRATEGIES
from members.streams_client import StreamsClientConfig
from members.streams_state import StreamsTopology, Subtopology, process_uuid
from protocol.kafka_configs import (
    MIN_EMULATED_VERSION,
    STREAMS_DEFAULTS,
    StreamsSettings,
    first_bad_setting,
)
from protocol.streams_versions import LATEST_SUPPORTED_VERSION
from scenarios.input import schema
from scenarios.input.errors import (
    ScenarioError,
    convert_scenario,
    parse_toml,
    read_text_file,
)
from scenarios.input.limits import LimitExceeded, check_streams_scenario
from scenarios.input.schema import (
    INT64_MAX,
    CoordinatorSettings,
    ExpectBase,
    NetworkSettings,
    NonNegInt,
    Phase,
    PositiveCount,
    StepBase,
)
from scenarios.input.steps import LoadedView, Planned

__all__ = [
    "STREAMS_CONFIG_KEYS",
    "StreamsScenario",
    "ClientSpec",
    "LoadedStreamsScenario",
    "load_streams_scenario",
    "loads_streams_scenario",
]

ClientName = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
PosInt = Annotated[int, Meta(ge=1, le=2**31 - 1)]

#: Settings of ``[config]`` / ``clients[i].config`` with their Kafka defaults (besides these,
#: ``client.tag.<key>`` = string): :class:`protocol.kafka_configs.StreamsSettings`, which owns
#: names, bounds and defaults.
STREAMS_CONFIG_KEYS: dict[str, Any] = {
    f.encode_name: getattr(STREAMS_DEFAULTS, f.name)
    for f in msgspec.structs.fields(StreamsSettings)
}
#: The order the settings are checked in (the first bad one is reported).
_CHECK_ORDER = (
    "num.stream.threads",
    "acceptable.recovery.lag",
    "max.warmup.replicas",
    "num.standby.replicas",
    "probing.rebalance.interval.ms",
    "rack.aware.assignment.strategy",
    "rack.aware.assignment.tags",
    "rack.aware.assignment.traffic_cost",
    "rack.aware.assignment.non_overlap_cost",
    "client.rack",
    "group.instance.id",
)
_TAG_PREFIX = "client.tag."


class _Base(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class ClientEntry(_Base, frozen=True):
    """``[[clients]]``: one Streams instance."""

    name: ClientName
    process_id: str | None = None
    start_ms: NonNegInt = 0
    autostart: bool = True
    config: dict[str, Any] = {}
    state: dict[str, NonNegInt] = {}


class SubtopologyEntry(_Base, frozen=True):
    """``[[subtopologies]]``."""

    id: Annotated[int, Meta(ge=0, le=2**31 - 1)]
    partitions: PosInt
    stateful: bool = True
    changelog_records: NonNegInt = 0
    changelog_rate: NonNegInt = 0
    source_racks: list[list[str]] = []
    changelog_racks: list[list[str]] = []
    changelog_topic: str | None = None


class ChangelogOverride(_Base, frozen=True):
    records: NonNegInt = 0
    rate: NonNegInt = 0


class JoinStep(StepBase, frozen=True, tag="join"):
    client: ClientName


class LeaveStep(StepBase, frozen=True, tag="leave"):
    client: ClientName
    leave_group: bool = False


class CrashStep(StepBase, frozen=True, tag="crash"):
    client: ClientName


class RestartStep(StepBase, frozen=True, tag="restart"):
    client: ClientName
    down_ms: NonNegInt = 0
    clean: bool = True
    wipe_state: bool = False
    latest_supported_version: int | None = None


# The Connect format's fault steps, naming the client with ``client`` as every other Streams
# step does (the attribute stays ``member``: the engine and the log are the Connect ones).
# The field stays required; mypy takes msgspec.field() for a default (the ignores below).
_CLIENT = msgspec.field(name="client")


class PartitionStep(schema.Partition, frozen=True, tag="partition"):
    member: ClientName = _CLIENT


class HealStep(schema.Heal, frozen=True, tag="heal"):
    member: ClientName = _CLIENT


class LossStep(schema.Loss, frozen=True, tag="loss"):  # type: ignore[misc]
    member: ClientName = _CLIENT


class LatencyStep(schema.Latency, frozen=True, tag="latency"):  # type: ignore[misc]
    member: ClientName = _CLIENT


class SlowStep(schema.Slow, frozen=True, tag="slow"):  # type: ignore[misc]
    member: ClientName = _CLIENT


class DelayRequestStep(schema.DelayRequest, frozen=True, tag="delay_request"):  # type: ignore[misc]
    member: ClientName = _CLIENT


#: A Streams timeline step: a client's lifecycle, a phase label, or any fault a Connect
#: scenario accepts; every step names its client with ``client``.
StepEntry = (
    JoinStep
    | LeaveStep
    | CrashStep
    | RestartStep
    | Phase
    | PartitionStep
    | HealStep
    | LossStep
    | LatencyStep
    | SlowStep
    | DelayRequestStep
    | schema.CoordinatorFailover
)


class ClientAssignment(_Base, frozen=True):
    active: list[str] = []
    standby: list[str] = []


class StreamsExpect(ExpectBase, frozen=True):
    """``[expect]``: the checks both kinds share (:class:`scenarios.input.schema.ExpectBase`)
    plus Streams ones."""

    max_probing_rebalances: NonNegInt | None = None
    distinct_tags: list[str] = []
    max_final_cost: NonNegInt | None = None
    assignments: list[dict[str, ClientAssignment]] = []
    final_assignment: dict[str, ClientAssignment] | None = None


class StreamsScenario(_Base, frozen=True):
    """A whole Streams scenario file."""

    kind: Literal["streams"]
    name: Annotated[str, Meta(min_length=1)]
    description: str = ""
    seed: NonNegInt = 0
    settle_ms: NonNegInt | None = None
    #: the run's record budget (as a Connect scenario's ``max_records``)
    max_records: PositiveCount | None = None
    log_heartbeats: bool = False
    coordinator: CoordinatorSettings = msgspec.field(default_factory=CoordinatorSettings)
    network: NetworkSettings = msgspec.field(default_factory=NetworkSettings)
    config: dict[str, Any] = {}
    clients: list[ClientEntry] = []
    subtopologies: list[SubtopologyEntry] = []
    changelog_overrides: dict[str, ChangelogOverride] = {}
    timeline: list[StepEntry] = []
    expect: StreamsExpect = msgspec.field(default_factory=StreamsExpect)


@dataclass(frozen=True)
class ClientSpec:
    """A client ready to start: its config and its initial state directory
    (task → lag behind the changelog end at ``start_ms``)."""

    name: str
    config: StreamsClientConfig
    start_ms: int
    autostart: bool
    state: dict[TaskId, int]


@dataclass
class LoadedStreamsScenario(LoadedView):
    """A validated Streams scenario (what :func:`scenarios.sim.runner.simulate`
    runs).

    Attributes:
        scenario: the decoded file; source: its path.
        clients: every client in file order; topology: the application.
        steps: the timeline sorted by ``at_ms`` (file order at equal times).
        settle_ms / end_ms: the run ends ``settle_ms`` after the last step or client start
            (default ``settle_ms``: 5 × the largest ``probing.rebalance.interval.ms`` +
            120000).
        coordinator_config: ``[coordinator]`` with the broker defaults.
    """

    scenario: StreamsScenario
    source: Path
    clients: list[ClientSpec]
    topology: StreamsTopology
    steps: list[Planned]
    settle_ms: int
    end_ms: int
    coordinator_config: CoordinatorConfig = field(default_factory=CoordinatorConfig)


# --------------------------------------------------------------------------- loading


def load_streams_scenario(path: str | Path) -> LoadedStreamsScenario:
    """Read, decode and validate a Streams scenario file (for a library name, see
    :func:`scenarios.input.library.load_any`).

    Raises:
        ScenarioError: unreadable, not TOML, not ``kind = "streams"``, or a bad key/value
            (the message names the key path).
    """
    return loads_streams_scenario(read_text_file(path), source=path)


def loads_streams_scenario(text: str, source: str | Path = "<string>") -> LoadedStreamsScenario:
    """Like :func:`load_streams_scenario` for TOML text; ``source`` names it in errors."""
    source = Path(source)
    file = source.name
    raw = parse_toml(text, file)
    if raw.get("kind") != "streams":
        raise ScenarioError(file, "kind", 'a Streams scenario needs kind = "streams"')
    scenario = convert_scenario(raw, StreamsScenario, file)
    try:
        check_streams_scenario(scenario)  # sizes before any work (docs/limits.md)
    except LimitExceeded as exc:
        raise ScenarioError(file, exc.key, exc.problem) from None
    return _build(file, source, scenario)


# --------------------------------------------------------------------------- building


def _fail(file: str, path: str, problem: str) -> ScenarioError:
    return ScenarioError(file, path, problem)


def _int(file: str, path: str, value: Any, low: int, high: int = INT64_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(file, path, f"expected an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise _fail(file, path, f"must be between {low} and {high}, got {value}")
    return value


def _client_config(
    file: str, path: str, merged: dict[str, tuple[str, Any]], process_id: str
) -> StreamsClientConfig:
    values = {k: v for k, (_, v) in merged.items()}
    where = {k: p for k, (p, _) in merged.items()}
    tags: dict[str, str] = {}
    for key, value in values.items():
        p = where[key]
        if key.startswith(_TAG_PREFIX):
            tag = key[len(_TAG_PREFIX) :]
            if not tag or not isinstance(value, str):
                raise _fail(file, p, "client.tag.<key> needs a non-empty key and a string value")
            tags[tag] = value
        elif key not in STREAMS_CONFIG_KEYS:
            known = ", ".join(sorted(STREAMS_CONFIG_KEYS))
            raise _fail(file, p, f"unknown Streams setting (known: {known}, client.tag.<key>)")
    try:
        validate_client_tags(tags)
    except StreamsAssignmentError as exc:
        raise _fail(file, path + ".config", str(exc)) from None
    tags_keys = {k for k in values if k.startswith(_TAG_PREFIX)}

    def at(key: str) -> str:
        return where.get(key, path + ".config." + key)

    settings = _streams_settings(file, {k: v for k, v in values.items() if k not in tags_keys}, at)
    if len(settings.rack_aware_assignment_tags) > 5:
        raise _fail(file, at("rack.aware.assignment.tags"), "at most 5 tags are allowed")
    if settings.heartbeat_interval_ms >= settings.session_timeout_ms:
        raise _fail(file, at("heartbeat.interval.ms"), "must be lower than session.timeout.ms")
    if settings.future_process_id is not None:
        try:
            process_uuid(settings.future_process_id)
        except ValueError:
            raise _fail(
                file,
                at("groupsim.future.process.id"),
                f"expected PID_<n> or a UUID, got {settings.future_process_id!r}",
            ) from None
    assignment = AssignmentConfigs(
        acceptable_recovery_lag=settings.acceptable_recovery_lag,
        max_warmup_replicas=settings.max_warmup_replicas,
        num_standby_replicas=settings.num_standby_replicas,
        probing_rebalance_interval_ms=settings.probing_rebalance_interval_ms,
        rack_aware_assignment_strategy=settings.rack_aware_assignment_strategy,
        rack_aware_assignment_tags=tuple(settings.rack_aware_assignment_tags),
        traffic_cost=settings.traffic_cost,
        non_overlap_cost=settings.non_overlap_cost,
    )
    return StreamsClientConfig(
        process_id=process_id,
        num_stream_threads=settings.num_stream_threads,
        client_rack=settings.client_rack,
        client_tags=tags,
        group_instance_id=settings.group_instance_id,
        assignment=assignment,
        session_timeout_ms=settings.session_timeout_ms,
        heartbeat_interval_ms=settings.heartbeat_interval_ms,
        max_poll_interval_ms=settings.max_poll_interval_ms,
        restore_records_per_sec=settings.restore_records_per_sec,
        max_partition_fetch_bytes=settings.max_partition_fetch_bytes,
        changelog_record_bytes=settings.changelog_record_bytes,
        latest_supported_version=settings.latest_supported_version,
        future_process_id=settings.future_process_id,
    )


def _streams_settings(
    file: str, values: dict[str, Any], at: Callable[[str], str]
) -> StreamsSettings:
    """Decode the Kafka-named settings through :class:`StreamsSettings`; a bad value is
    reported on the first bad key (in :data:`_CHECK_ORDER`), worded as the loader always has."""
    try:
        return msgspec.convert(values, StreamsSettings)
    except msgspec.ValidationError:
        bad = first_bad_setting(StreamsSettings, values, _CHECK_ORDER)
        assert bad is not None, values
        key, value, typ = bad
        raise _fail(file, at(key), _problem(value, typ)) from None


def _problem(value: Any, typ: msgspec.inspect.Type) -> str:
    options = typ.types if isinstance(typ, msgspec.inspect.UnionType) else (typ,)
    for option in options:
        if isinstance(option, msgspec.inspect.IntType):
            if isinstance(value, bool) or not isinstance(value, int):
                return f"expected an integer, got {type(value).__name__}"
            return f"must be between {option.ge} and {option.le}, got {value}"
        if isinstance(option, msgspec.inspect.ListType):
            return "expected a list of tag keys"
        if isinstance(option, msgspec.inspect.LiteralType):
            return f"expected one of {', '.join(STRATEGIES)}, got {value!r}"
    return "expected a non-empty string"


def _build(file: str, source: Path, sc: StreamsScenario) -> LoadedStreamsScenario:
    try:
        coordinator_config = CoordinatorConfig.from_mapping(
            sc.coordinator.to_mapping(), where="coordinator"
        )
    except Exception as exc:  # ConfigError: one line naming the key
        raise ScenarioError(file, None, str(exc)) from None

    if not sc.subtopologies:
        raise _fail(file, "subtopologies", "a Streams scenario needs at least one subtopology")
    subs: list[Subtopology] = []
    seen_ids: set[int] = set()
    named: set[str] = set()
    for i, entry in enumerate(sc.subtopologies):
        if entry.id in seen_ids:
            raise _fail(file, f"subtopologies[{i}].id", f"duplicate subtopology id {entry.id}")
        seen_ids.add(entry.id)
        if entry.changelog_topic is not None:
            where = f"subtopologies[{i}].changelog_topic"
            if not entry.stateful:
                raise _fail(file, where, "a stateless subtopology has no changelog")
            # Kafka's rules (org.apache.kafka.common.internals.Topic#validate)
            if entry.changelog_topic in (".", "..") or not re.fullmatch(
                r"[a-zA-Z0-9._-]{1,249}", entry.changelog_topic
            ):
                raise _fail(
                    file,
                    where,
                    f"{entry.changelog_topic!r} is not a legal Kafka topic name (1 to 249 of "
                    "letters, digits, '.', '_' and '-'; not '.' or '..')",
                )
            if entry.changelog_topic in named:
                raise _fail(file, where, f"changelog topic {entry.changelog_topic!r} twice")
            named.add(entry.changelog_topic)
        for key in ("source_racks", "changelog_racks"):
            for k, racks in enumerate(getattr(entry, key)):
                if not racks:
                    raise _fail(
                        file, f"subtopologies[{i}].{key}[{k}]", "a partition needs >= 1 rack"
                    )
        subs.append(
            Subtopology(
                id=entry.id,
                partitions=entry.partitions,
                stateful=entry.stateful,
                changelog_records=entry.changelog_records,
                changelog_rate=entry.changelog_rate,
                source_racks=tuple(frozenset(r) for r in entry.source_racks),
                changelog_racks=tuple(frozenset(r) for r in entry.changelog_racks),
                changelog_topic=entry.changelog_topic,
            )
        )
    overrides: dict[TaskId, tuple[int, int]] = {}
    for key, value in sc.changelog_overrides.items():
        try:
            task = TaskId.parse(key)
        except StreamsAssignmentError as exc:
            raise _fail(file, f"changelog_overrides.{key}", str(exc)) from None
        overrides[task] = (value.records, value.rate)
    try:
        topology = StreamsTopology(subs, overrides)
    except ValueError as exc:
        raise _fail(file, "changelog_overrides", str(exc)) from None

    if not sc.clients:
        raise _fail(file, "clients", "a Streams scenario needs at least one client")
    clients: list[ClientSpec] = []
    names: set[str] = set()
    pids: set[int] = set()
    futures: list[tuple[str, str]] = []  # (where, groupsim.future.process.id)
    for i, client in enumerate(sc.clients):
        path = f"clients[{i}]"
        if client.name in names:
            raise _fail(file, f"{path}.name", f"duplicate client name {client.name!r}")
        names.add(client.name)
        pid = client.process_id or f"PID_{i + 1}"
        try:
            pid_value = process_uuid(pid).int
        except ValueError:
            raise _fail(
                file, f"{path}.process_id", f"expected PID_<n> or a UUID, got {pid!r}"
            ) from None
        if pid_value in pids:
            raise _fail(file, f"{path}.process_id", f"duplicate process id {pid}")
        pids.add(pid_value)
        merged: dict[str, tuple[str, Any]] = {k: (f"config.{k}", v) for k, v in sc.config.items()}
        merged.update({k: (f"{path}.config.{k}", v) for k, v in client.config.items()})
        config = _client_config(file, path, merged, pid)
        state: dict[TaskId, int] = {}
        for key, lag in client.state.items():
            try:
                task = TaskId.parse(key)
            except StreamsAssignmentError as exc:
                raise _fail(file, f"{path}.state.{key}", str(exc)) from None
            if not topology.is_stateful(task):
                raise _fail(file, f"{path}.state.{key}", "not a stateful task of the topology")
            state[task] = lag
        clients.append(ClientSpec(client.name, config, client.start_ms, client.autostart, state))
        if config.future_process_id is not None:
            futures.append((merged["groupsim.future.process.id"][0], config.future_process_id))
    for where, future in futures:
        if process_uuid(future).int in pids:
            # Kafka's FUTURE_ID is random: it never names a client of the group
            raise _fail(file, where, f"{future} is a client's process id")

    steps: list[Planned] = []
    for i, s in enumerate(sc.timeline):
        origin = f"timeline[{i}]"
        if isinstance(s, JoinStep | LeaveStep | CrashStep | RestartStep) and s.client not in names:
            raise _fail(file, f"{origin}.client", f"no client named {s.client!r}")
        member = getattr(s, "member", None)  # a fault step's client
        if member is not None and member not in names:
            raise _fail(file, f"{origin}.client", f"no client named {member!r}")
        if isinstance(s, RestartStep) and s.latest_supported_version is not None:
            _int(
                file,
                f"{origin}.latest_supported_version",
                s.latest_supported_version,
                MIN_EMULATED_VERSION,
                LATEST_SUPPORTED_VERSION,
            )
        steps.append(Planned(s.at_ms, s, origin))
    order = sorted(range(len(steps)), key=lambda k: (steps[k].at_ms, k))
    steps = [steps[k] for k in order]

    for key, table in [
        *((f"expect.assignments[{i}]", t) for i, t in enumerate(sc.expect.assignments)),
        *(
            [("expect.final_assignment", sc.expect.final_assignment)]
            if sc.expect.final_assignment is not None
            else []
        ),
    ]:
        for name, expected in table.items():
            if name not in names:
                raise _fail(file, f"{key}.{name}", f"no client named {name!r}")
            for role in ("active", "standby"):
                for t in getattr(expected, role):
                    try:
                        TaskId.parse(t)
                    except StreamsAssignmentError as exc:
                        raise _fail(file, f"{key}.{name}.{role}", str(exc)) from None

    probing = max(c.config.assignment.probing_rebalance_interval_ms for c in clients)
    settle = sc.settle_ms if sc.settle_ms is not None else 5 * probing + 120_000
    last = max([c.start_ms for c in clients if c.autostart] + [s.end_ms for s in steps] + [0])
    return LoadedStreamsScenario(
        scenario=sc,
        source=source,
        clients=clients,
        topology=topology,
        steps=steps,
        settle_ms=settle,
        end_ms=last + settle,
        coordinator_config=coordinator_config,
    )
