"""``docs/event-log.schema.json`` is generated from the record Structs and stays in sync.

When a record kind changes on purpose, regenerate the shipped file with
``GROUPSIM_UPDATE_SCHEMA=1 pytest tests/scenarios/test_event_log_schema.py`` and commit it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scenarios.eventlog import RECORD_TYPES, log_schema
from scenarios.input.library import library_dir, streams_library_dir
from scenarios.input.loader import load_scenario
from scenarios.input.streams import load_streams_scenario
from scenarios.sim.runner import simulate
from scenarios.sim.runner import simulate as simulate_streams

SHIPPED = Path(__file__).resolve().parents[3] / "docs" / "event-log.schema.json"


def _render() -> str:
    return json.dumps(log_schema(), indent=2, ensure_ascii=False) + "\n"


def test_shipped_schema_is_generated_from_the_structs() -> None:
    current = _render()
    if os.environ.get("GROUPSIM_UPDATE_SCHEMA"):
        SHIPPED.write_text(current, encoding="utf-8")
        pytest.skip("docs/event-log.schema.json rewritten")
    assert SHIPPED.read_text(encoding="utf-8") == current, (
        "docs/event-log.schema.json is stale: rerun with GROUPSIM_UPDATE_SCHEMA=1"
    )


def test_schema_has_one_closed_object_per_kind() -> None:
    schema = json.loads(SHIPPED.read_text(encoding="utf-8"))
    mapping = schema["discriminator"]["mapping"]
    assert schema["discriminator"]["propertyName"] == "kind"
    assert set(mapping) == set(RECORD_TYPES)
    for ref in mapping.values():
        definition = schema["$defs"][ref.rsplit("/", 1)[1]]
        assert definition["additionalProperties"] is False
        assert definition["required"][:3] == ["kind", "t_ms", "seq"]


def test_real_logs_validate_against_the_shipped_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SHIPPED.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    # the whole union is slow to try record by record: check each kind against its own $def
    by_kind = {
        kind: jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": ref})
        for kind, ref in schema["discriminator"]["mapping"].items()
    }
    connect = simulate(load_scenario(library_dir() / "kip-987-test-plan.toml"), 1)
    streams_path = streams_library_dir() / "version-probing-rolling-upgrade.toml"
    streams = simulate_streams(load_streams_scenario(streams_path), 1)
    for record in [*connect.records, *streams.records]:
        by_kind[record["kind"]].validate(record)
    first = {r["kind"]: r for r in [*connect.records, *streams.records]}
    for record in first.values():
        validator.validate(record)
    assert not validator.is_valid(dict(connect.records[-1], surprise=1))
    assert not validator.is_valid(dict(connect.records[0], seed="1"))
    assert not validator.is_valid({"t_ms": 0, "seq": 0, "kind": "teleport"})
