"""``summary.json`` of every library run (Connect, Kafka Streams, plain consumers) and chaos
reproducer matches the summary Structs of scenarios/check/summary_types.py, which the
summarizers build."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from scenarios.check.summary_types import (
    ConnectSummary,
    ConsumerSummary,
    StreamsSummary,
    SummaryBase,
    summary_dict,
    summary_struct,
    validate_summary,
)
from scenarios.cli.outputs import write_outputs
from scenarios.input.library import (
    consumer_library_dir,
    library_dir,
    load_any,
    streams_library_dir,
)
from scenarios.input.loader import load_scenario
from scenarios.input.streams import load_streams_scenario
from scenarios.sim.runner import RunResult, simulate
from scenarios.sim.runner import simulate as simulate_streams

REPRO = Path(__file__).resolve().parents[1] / "campaigns" / "chaos" / "repro"


def _cases() -> list[tuple[str, Path]]:
    connect = [(f"connect/{p.stem}", p) for p in sorted(library_dir().glob("*.toml"))]
    streams = [(f"streams/{p.stem}", p) for p in sorted(streams_library_dir().glob("*.toml"))]
    consumer = [(f"consumer/{p.stem}", p) for p in sorted(consumer_library_dir().glob("*.toml"))]
    repro = [(f"repro/{p.stem}", p) for p in sorted(REPRO.glob("*.toml"))]
    return connect + streams + consumer + repro


def _run(key: str, path: Path) -> RunResult:
    if key.startswith("streams/"):
        return simulate_streams(load_streams_scenario(path), 1)
    return simulate(load_any(path), 1)


@pytest.mark.parametrize(("key", "path"), _cases(), ids=[k for k, _ in _cases()])
def test_summary_json_matches_its_struct(key: str, path: Path, tmp_path: Path) -> None:
    result = _run(key, path)
    write_outputs(result, tmp_path, plot=False)
    data = (tmp_path / "summary.json").read_bytes()
    want = {"streams": StreamsSummary, "consumer": ConsumerSummary}.get(key.split("/")[0])
    want = want or type(result.summary)  # a reproducer: its own kind's summary
    assert want in (ConnectSummary, StreamsSummary, ConsumerSummary)
    typed = msgspec.json.decode(data, type=want)
    assert typed.expectation_failures == result.failures
    # the in-memory summary is its kind's Struct; its builtins read back to it (nothing dropped)
    assert type(result.summary) is want
    builtins = summary_dict(result.summary)
    assert validate_summary(builtins) == result.summary
    assert summary_struct(json.loads(data)) == msgspec.structs.replace(
        result.summary,
        scenario=result.scenario,
        seed=result.seed,
        expectation_failures=result.failures,
    )


def test_the_base_has_the_keys_both_apps_share() -> None:
    shared = set(ConnectSummary.__struct_fields__) & set(StreamsSummary.__struct_fields__)
    assert shared == set(SummaryBase.__struct_fields__) | {"convergence"}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"surprise": 1}, "Object contains unknown field `surprise`"),
        ({"rebalances": "3"}, "Expected `int`, got `str` - at `$.rebalances`"),
        (
            {"phases": [{"name": "start"}]},
            "Object missing required field `start_ms` - at `$.phases[0]`",
        ),
    ],
    ids=["unknown-key", "wrong-type", "nested-missing"],
)
def test_a_malformed_summary_is_rejected(change: dict, problem: str) -> None:
    summary = summary_dict(simulate(load_scenario(library_dir() / "scale-out.toml"), 1).summary)
    validate_summary(summary)
    summary.update(change)
    with pytest.raises(msgspec.ValidationError) as info:
        validate_summary(summary)
    assert str(info.value) == problem
