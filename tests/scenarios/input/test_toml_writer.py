"""scenarios.input.toml_writer: the one TOML writer (tomli-w) reads back as written."""

from __future__ import annotations

import math
import tomllib

import pytest

from scenarios.campaigns.chaos import ChaosConfig, generate, spec_to_toml
from scenarios.input import toml_writer
from scenarios.input.loader import loads_scenario


def test_dumps_round_trips_with_awkward_keys_and_values() -> None:
    doc = {
        "name": 'we"ird\\\n<é>',
        "x": 1.5,
        "b": True,
        "t": {"a.b": [1, 2], "c": {"d": "e"}},
        "timeline": [{"at_ms": 0, "action": "restart", "config": {"connect.protocol": "eager"}}],
        "empty": {},
    }
    assert tomllib.loads(toml_writer.dumps(doc)) == doc


def test_comments_come_first_and_are_comments() -> None:
    text = toml_writer.dumps({"a": 1}, comments=["first", "", "name = 2"])
    assert text.splitlines()[:3] == ["# first", "#", "# name = 2"]
    assert tomllib.loads(text) == {"a": 1}


def test_a_comment_with_a_newline_is_refused() -> None:
    with pytest.raises(ValueError, match="newline"):
        toml_writer.dumps({}, comments=["two\nlines"])


@pytest.mark.parametrize(
    ("literal", "text"),
    [(True, "true"), (3, "3"), (1.5, "1.5"), ('a"b', '"a\\"b"')],
)
def test_value_literals(literal: object, text: str) -> None:
    assert toml_writer.value(literal) == text
    assert tomllib.loads(f"v = {text}")["v"] == literal


def test_value_of_nan_and_an_array_reads_back() -> None:
    assert math.isnan(tomllib.loads(f"v = {toml_writer.value(math.nan)}")["v"])
    assert tomllib.loads(f"v = {toml_writer.value([1, 'x'])}")["v"] == [1, "x"]


@pytest.mark.parametrize("bad", [None, object(), {"a": 1}])
def test_what_toml_cannot_hold_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        toml_writer.value(bad)


def test_a_chaos_reproducer_keeps_its_header_and_loads() -> None:
    config = ChaosConfig(members=(6, 6), protocols=("static",), duration_ms=600_000)
    for index in range(6):
        spec = generate(config, 11, index)
        text = spec_to_toml(spec)
        lines = text.splitlines()
        assert lines[0] == f"# {spec.description}"
        assert lines[1].startswith(f"# Reproduce: groupsim run {spec.name}.toml")
        assert lines[2].startswith("# settle_ms is the liveness bound")
        loaded = loads_scenario(text, f"{spec.name}.toml")
        assert loaded.scenario.seed == spec.seed
        assert len(loaded.steps) >= len([s for s in spec.steps if s["action"] != "phase"]) > 0
        doc = tomllib.loads(text)
        assert doc["timeline"] == spec.steps
        if spec.worker_configs:
            own = {w["name"]: w.get("config") for w in doc["cluster"]["workers"]}
            assert {k: v for k, v in own.items() if v} == spec.worker_configs
