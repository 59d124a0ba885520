"""groupsim chaos: option parsing, one-line errors (exit 2), a small run (exit 0/1, JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from scenarios.cli.chaos_cmd import (
    ChaosInputError,
    chaos,
    parse_duration_ms,
    parse_faults,
    parse_members,
    parse_protocols,
)
from scenarios.cli.choices import OneLineErrors

app = typer.Typer(cls=OneLineErrors)  # groupsim's group: bad values in one line
app.command()(chaos)


@app.command()
def _other() -> None:  # a second command keeps `chaos` a subcommand, as in groupsim
    pass


def test_parsers() -> None:
    assert parse_duration_ms("1h") == 3_600_000
    assert parse_duration_ms("30m") == 1_800_000
    assert parse_duration_ms("90s") == 90_000
    assert parse_duration_ms("500ms") == 500
    assert parse_duration_ms("250") == 250
    assert parse_members("10") == (10, 10)
    assert parse_members("3..50") == (3, 50)
    assert parse_protocols("eager, static,eager") == ("eager", "static")
    assert parse_faults("none") == ()
    assert parse_faults("crash,failover") == ("crash", "failover")
    for bad in ("0s", "1d", "-5m", "h"):
        with pytest.raises(ChaosInputError):
            parse_duration_ms(bad)
    for bad in ("0", "5..3", "3..", "1001", "a"):
        with pytest.raises(ChaosInputError):
            parse_members(bad)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--members", "5..3"], "--members: expected 1 <= A <= B <= 1000, got 5..3"),
        (
            ["--protocol", "default"],
            "--protocol: unknown value 'default' (expected some of eager, compatible, "
            "sessioned, static)",
        ),
        (["--faults", "crash,meteor"], "--faults: unknown value 'meteor'"),
        (["--duration", "1d"], "--duration: expected a number with a unit"),
        (
            ["--assignor", "eager", "--protocol", "eager,sessioned"],
            "--assignor: eager does not match --protocol (sessioned runs incremental_cooperative)",
        ),
        (
            ["--assignor", "round_robin"],
            "Invalid value for '--assignor': Value error, 'round_robin' is not one of 'eager', "
            "'incremental_cooperative', 'static'",
        ),
        (["--runs", "0"], "--runs: must be at least 1, got 0"),
        (["--jobs", "0"], "--jobs: must be 1..256, got 0"),
        (
            ["--kind", "streams", "--protocol", "eager"],
            "--protocol: Connect only; a Streams campaign (--kind streams) runs Kafka Streams'",
        ),
        (["--kind", "streams", "--assignor", "eager"], "--assignor: Connect only"),
        (["--kind", "ksql"], "Invalid value for '--kind'"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["chaos", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("groupsim: error: " + message)


def test_a_small_clean_campaign(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "chaos",
            "--runs",
            "4",
            "--members",
            "3",
            "--protocol",
            "sessioned",
            "--assignor",
            "incremental_cooperative",
            "--faults",
            "crash,leave",
            "--duration",
            "5m",
            "--jobs",
            "1",
            "--out",
            str(tmp_path),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["runs"] == 4 and doc["failed_runs"] == []
    assert set(doc["faults_injected"]) <= {"crash", "leave"}
    assert list(tmp_path.iterdir()) == []


def test_a_failing_campaign_exits_1_and_names_its_reproducer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No groupsim bug is open, so plant one: the checker reports every connector start as a
    # double ownership. With --jobs 1 the campaign and the shrinker run in this process.
    from scenarios.check.invariants import InvariantChecker
    from scenarios.check.violation import Violation

    original = InvariantChecker.feed

    def planted(self: InvariantChecker, record: dict) -> list[Violation]:
        found = original(self, record)
        if record.get("kind") == "connector_start":
            found.append(Violation(invariant="double_ownership", detail="planted", cause_seq=0))
        return found

    monkeypatch.setattr(InvariantChecker, "feed", planted)
    result = CliRunner().invoke(
        app,
        [
            "chaos",
            "--runs",
            "2",
            "--members",
            "2",
            "--faults",
            "crash",
            "--protocol",
            "eager",
            "--duration",
            "2m",
            "--jobs",
            "1",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 1, result.output
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written and all(n.startswith("chaos-1-") and n.endswith(".toml") for n in written)
    assert "groupsim run" in result.output and "reproduces" in result.output
