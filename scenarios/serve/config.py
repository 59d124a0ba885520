"""What ``groupsim serve`` serves: topics, broker settings, seed and a fault timeline.

A serve scenario is a TOML file (decoded by msgspec, unknown keys rejected)::

    name = "partition-one-consumer"
    seed = 7
    [broker]                            # the broker's own settings (Kafka names)
    "connections.max.idle.ms" = 600000
    [coordinator]                       # Kafka names, as in a simulation scenario
    "group.initial.rebalance.delay.ms" = 200
    "group.min.session.timeout.ms" = 1000
    [topics]
    orders = 6                          # topic name = partition count
    [[timeline]]                        # the Connect scenario format's fault steps
    action = "partition"                # partition/heal/loss/latency/slow/coordinator_failover
    at_ms = 5000                        # real ms since the server started
    member = "c1"                       # a client.id
    duration_ms = 8000

Fault steps are :mod:`scenarios.input.schema`'s own Structs; ``member`` names a ``client.id``.
Other timeline actions (join, crash, add_connector, ...) describe groupsim's own workers and
are refused here: real clients are started by the user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from coordinator.config import CoordinatorConfig
from protocol.connect import ConfigError
from protocol.errors import InputError
from scenarios.input.schema import (
    CoordinatorFailover,
    CoordinatorSettings,
    Heal,
    Latency,
    Loss,
    NonNegInt,
    Partition,
    PosMs,
    Slow,
)

__all__ = [
    "FaultStep",
    "Partition",
    "Heal",
    "Loss",
    "Latency",
    "Slow",
    "CoordinatorFailover",
    "ServeScenario",
    "ServeOptions",
    "ServeInputError",
    "BrokerSettings",
    "broker_settings",
    "load_serve_scenario",
    "parse_topic",
    "parse_fault_command",
]

#: A fault step of the scenario format (``member`` is a Kafka ``client.id`` here).
FaultStep = Partition | Heal | Loss | Latency | Slow | CoordinatorFailover

TopicName = Annotated[str, Meta(pattern=r"^[A-Za-z0-9._-]{1,249}$")]
Partitions = Annotated[int, Meta(ge=1, le=100_000)]


class ServeInputError(InputError):
    """Bad serve input (scenario file, ``--topic``, ``--set`` or a control command): one line."""


class BrokerSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """The served broker's own settings (Kafka names): a scenario's ``[broker]`` table, or
    ``--set KEY=VALUE``.

    Attributes:
        connections_max_idle_ms: ``connections.max.idle.ms`` (Kafka's default, 10 min): a
            connection that sends no request for this long is closed, as Kafka's
            ``Selector`` closes idle connections (real ms).
    """

    connections_max_idle_ms: PosMs = msgspec.field(default=600_000, name="connections.max.idle.ms")


#: The ``--set`` keys that are broker settings (the others are coordinator settings).
BROKER_SETTING_KEYS = ("connections.max.idle.ms",)


class ServeScenario(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A serve scenario file (see the module docstring)."""

    name: str = "serve"
    description: str = ""
    seed: NonNegInt = 0
    broker: BrokerSettings = msgspec.field(default_factory=BrokerSettings)
    coordinator: CoordinatorSettings = msgspec.field(default_factory=CoordinatorSettings)
    topics: dict[TopicName, Partitions] = {}
    timeline: list[FaultStep] = []


class ServeOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the broker needs (built by the command line or by tests).

    Attributes:
        host / port: where to listen (port 0: an ephemeral port, see ``Broker.port``).
        advertised_host: the host clients are told to connect to for node 0 (Metadata,
            FindCoordinator); ``None``: ``host``. Kafka's ``advertised.listeners``.
        topics: topic name -> partition count (served by Metadata, empty for Fetch).
        coordinator: the group coordinators' broker settings.
        seed: seeds member ids (``<client.id>-<uuid>``) and ``loss`` draws.
        timeline: fault steps, ``at_ms`` in real ms since the server started.
        name: the run's name in ``run_start``.
        log_heartbeats: also log Heartbeat requests and responses.
        fetch_wait_cap_ms: a Fetch with no data is answered after
            ``min(max_wait_ms, fetch_wait_cap_ms)`` (topics are always empty).
        connections_max_idle_ms: close a connection that sends no request for this long
            (``connections.max.idle.ms``, real ms).
    """

    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    topics: dict[str, int] = {}
    coordinator: CoordinatorConfig = msgspec.field(default_factory=CoordinatorConfig)
    seed: int = 0
    timeline: tuple[FaultStep, ...] = ()
    name: str = "serve"
    log_heartbeats: bool = False
    fetch_wait_cap_ms: int = 1000
    connections_max_idle_ms: int = BrokerSettings().connections_max_idle_ms


def load_serve_scenario(path: str | Path) -> ServeScenario:
    """Read a serve scenario file.

    Raises:
        ServeInputError: ``"<file>: <problem>"`` (unreadable file, bad TOML, unknown key,
            wrong type; msgspec's message names the key path).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ServeInputError(f"{path}: {exc.strerror or exc}") from None
    try:
        scenario = msgspec.toml.decode(data, type=ServeScenario)
    except msgspec.ValidationError as exc:
        raise ServeInputError(f"{path}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ServeInputError(f"{path}: malformed TOML: {exc}") from None
    try:
        CoordinatorConfig.from_mapping(
            scenario.coordinator.to_mapping(), where=f"{path}: coordinator"
        )
    except ConfigError as exc:
        raise ServeInputError(str(exc)) from None
    return scenario


def coordinator_config(scenario: ServeScenario, overrides: dict[str, Any]) -> CoordinatorConfig:
    """The scenario's ``[coordinator]`` settings with ``--set`` overrides on top.

    Raises:
        ServeInputError: an unknown key or bad value (the message names it).
    """
    values = {**scenario.coordinator.to_mapping(), **overrides}
    try:
        return CoordinatorConfig.from_mapping(values, where="coordinator")
    except ConfigError as exc:
        raise ServeInputError(str(exc)) from None


def broker_settings(scenario: ServeScenario, overrides: dict[str, Any]) -> BrokerSettings:
    """The scenario's ``[broker]`` settings with the broker keys of ``overrides`` (``--set``)
    on top; those keys are removed from ``overrides`` (the rest are coordinator settings).

    Raises:
        ServeInputError: a bad value (``--set connections.max.idle.ms=0``).
    """
    values = {"connections.max.idle.ms": scenario.broker.connections_max_idle_ms}
    values.update({key: overrides.pop(key) for key in BROKER_SETTING_KEYS if key in overrides})
    try:
        return msgspec.convert(values, BrokerSettings)
    except msgspec.ValidationError as exc:
        raise ServeInputError(f"--set: {exc}") from None


def parse_topic(text: str) -> tuple[str, int]:
    """``"NAME:PARTITIONS"`` -> (name, partitions).

    Raises:
        ServeInputError: not that shape, or partitions not a positive integer.
    """
    name, sep, count = text.rpartition(":")
    try:
        value = msgspec.convert({name: int(count)}, dict[TopicName, Partitions])
    except (ValueError, msgspec.ValidationError):
        value = None
    if not sep or value is None:
        raise ServeInputError(f"--topic {text!r}: expected NAME:PARTITIONS (e.g. orders:6)")
    return name, value[name]


def parse_setting(text: str) -> tuple[str, Any]:
    """``"group.initial.rebalance.delay.ms=200"`` -> (key, 200) (integers when they parse)."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise ServeInputError(f"--set {text!r}: expected KEY=VALUE")
    value: Any = int(raw) if raw.strip().lstrip("-").isdigit() else raw
    return key.strip(), value


def parse_fault_command(line: str, now_ms: int) -> FaultStep:
    """A control line ``ACTION key=value ...`` (e.g. ``partition member=c1 duration_ms=5000``)
    as a fault step at ``now_ms``.

    Raises:
        ServeInputError: an unknown action, a malformed pair or a bad value.
    """
    words = line.split()
    if not words:
        raise ServeInputError("empty control command")
    fields: dict[str, Any] = {"action": words[0], "at_ms": now_ms}
    for word in words[1:]:
        key, sep, raw = word.partition("=")
        if not sep:
            raise ServeInputError(f"control command {line!r}: expected key=value, got {word!r}")
        value: Any = raw
        for cast in (int, float):
            try:
                value = cast(raw)
                break
            except ValueError:
                continue
        fields[key] = value
    try:
        return msgspec.convert(fields, FaultStep)  # type: ignore[arg-type]
    except msgspec.ValidationError as exc:
        raise ServeInputError(f"control command {line!r}: {exc}") from None
