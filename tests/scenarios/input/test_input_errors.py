"""One translator for every input: scenario TOML files and groupsim assign JSON documents."""

from __future__ import annotations

import msgspec
import pytest

from scenarios.assign.connect import AssignInputError, run_assign
from scenarios.assign.streams import StreamsAssignInputError, run_assign_streams
from scenarios.input import loader
from scenarios.input.assign_schema import ConnectAssignInput, StreamsAssignInput
from scenarios.input.errors import ScenarioError, translate_validation_error
from scenarios.input.json_input import decode_json_input


def test_loader_reexports_the_error() -> None:
    assert loader.ScenarioError is ScenarioError


def _connect(**round_: object) -> dict:
    members = {"w1": {}, "w2": {}}
    return {
        "assignor": "eager",
        "rounds": [{"connectors": {"a": 1, "b": 2}, "members": members, **round_}],
    }


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            _connect(connectors={"a": 1, "b.x": -1}),
            "rounds[0].connectors.b.x: must be >= 0, got -1",
        ),
        (
            _connect(members={"w1": {}, "w2": {"config_offset": "7"}}),
            "rounds[0].members.w2.config_offset: expected an integer, got a string",
        ),
        (
            _connect(members={"w1": {"tasks": ["a-0"], "url": None}}),
            "rounds[0].members.w1.url: expected a string, got null",
        ),
        ({"assignor": "eager"}, "rounds: missing"),
        ([1], "expected an object, got an array"),
        (
            {"assignor": "eager", "rounds": [], "protocl": "eager"},
            "protocl: unknown key (expected one of assignor, config, protocol, rounds)",
        ),
    ],
    ids=["dict-value-by-key", "nested-dict-value", "null", "missing", "not-an-object", "typo"],
)
def test_connect_input_errors_are_path_qualified_one_liners(doc: object, message: str) -> None:
    with pytest.raises(AssignInputError) as info:
        run_assign(doc)  # type: ignore[arg-type]
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"assignor": "high_availability", "config": {"max.warmup.replicas": 0}},
            "config.max.warmup.replicas: must be >= 1, got 0",
        ),
        (
            {"assignor": "high_availability", "tasks": {}, "clients": [{"id": "a", "rack": 3}]},
            "clients[0].rack: expected a string or null, got an integer",
        ),
        (
            {
                "assignor": "high_availability",
                "tasks": {"stateful": ["0_0", "0_1"]},
                "clients": [{"id": "a", "task_lags": {"0_0": 0, "0_1": -4}}],
            },
            "clients[0].task_lags.0_1: must be >= -3, got -4",
        ),
        (
            {"assignor": "rack_aware", "optimize": "active_tasks", "tasks": {"stateful": []}},
            "clients: missing",
        ),
    ],
    ids=["config-bound", "union", "lag-by-key", "clients-missing"],
)
def test_streams_input_errors_are_path_qualified_one_liners(doc: dict, message: str) -> None:
    with pytest.raises(StreamsAssignInputError) as info:
        run_assign_streams(doc)
    assert str(info.value) == message


def test_decode_json_input_returns_the_struct() -> None:
    doc = {"assignor": "eager", "rounds": [{"members": {"w1": {}}}]}
    typed = decode_json_input(doc, ConnectAssignInput, AssignInputError)
    assert typed.rounds[0].members["w1"].config_offset == 0
    assert typed.config.scheduled_rebalance_max_delay_ms == 300_000
    streams = decode_json_input({"assignor": "x"}, StreamsAssignInput, AssignInputError)
    assert streams.clients is msgspec.UNSET


def test_toml_spelling_is_unchanged_and_quotes_dotted_keys() -> None:
    class Root(msgspec.Struct, forbid_unknown_fields=True):
        coordinator: dict[str, int]

    raw = {"coordinator": {"group.max.size": "x"}}
    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.convert(raw, Root)
    assert translate_validation_error(str(info.value), raw, Root) == (
        'coordinator."group.max.size"',
        "expected an integer, got a string ('x')",
    )
    assert translate_validation_error(str(info.value), raw, Root, json=True) == (
        "coordinator.group.max.size",
        "expected an integer, got a string",
    )
