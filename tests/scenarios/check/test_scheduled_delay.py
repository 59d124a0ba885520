"""``scheduled_delay`` (KIP-415): the leader's delay never exceeds the max, counts down while
lost work waits, and is cleared once the delayed rebalance fired — on hand-made logs, on a
real run's log and mutated copies of it, through ``groupsim check``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scenarios.campaigns.chaos import ChaosConfig, generate
from scenarios.campaigns.chaos.run import run_spec
from scenarios.check.log_check import check_log, check_records
from scenarios.check.scheduled_delay import backoff_values
from scenarios.check.scheduled_delay import check_scheduled_delay as _check
from scenarios.check.violation import Violation
from scenarios.cli.main import app
from tests.scenarios.check.logs import complete, typed


def _log(rounds: list[tuple[int, int]], max_delay: int | None = 10_000) -> list[dict[str, Any]]:
    """A leader ``w1`` running the incremental assignor at each (t_ms, delay_ms)."""
    config: dict[str, Any] = {"connect.protocol": "sessioned"}
    if max_delay is not None:
        config["scheduled.rebalance.max.delay.ms"] = max_delay
    records: list[dict[str, Any]] = [
        {"t_ms": 0, "kind": "member_start", "member": "w1", "config": config}
    ]
    for generation, (t, delay) in enumerate(rounds, start=1):
        records.append(
            {
                "t_ms": t,
                "kind": "assignor",
                "member": "w1",
                "generation": generation,
                "protocol": "sessioned",
                "assignor": "incremental_cooperative",
                "error": 0,
                "delay_ms": delay,
            }
        )
    return [{"seq": i, **r} for i, r in enumerate(records)]


def check_scheduled_delay(records: list[dict[str, Any]]) -> list[Violation]:
    """The checker over hand-written records (decoded as the log is)."""
    return _check(typed(records))


def _names(records: list[dict[str, Any]]) -> list[str]:
    return [v.invariant for v in check_scheduled_delay(records)]


def test_kafkas_countdown_passes() -> None:
    # lost work first seen: max; a round later: the remaining time; fired: 0; then the
    # successive-revocation backoff 40 and its countdown, then a reset
    rounds = [(1000, 0), (2000, 10_000), (5000, 7000), (12_000, 0), (12_010, 40), (12_030, 20)]
    assert _names(_log(rounds)) == []
    # the lost worker came back holding its work: reset to 0 before the countdown ends
    assert _names(_log([(1000, 10_000), (3000, 0), (4000, 10_000)])) == []


def test_a_delay_above_the_max_is_a_violation() -> None:
    assert _names(_log([(1000, 10_001)])) == ["scheduled_delay"]
    # without the setting in member_start, Kafka's default 300000 applies
    assert _names(_log([(1000, 300_000)], max_delay=None)) == []
    assert _names(_log([(1000, 300_001)], max_delay=None)) == ["scheduled_delay"]


def test_a_delay_that_grows_during_the_countdown_is_a_violation() -> None:
    found = check_scheduled_delay(_log([(1000, 10_000), (4000, 10_000)]))
    assert [v.invariant for v in found] == ["scheduled_delay"]
    assert "count down" in found[0].detail and found[0].scheduled_ms == 11_000
    assert _names(_log([(1000, 10_000), (4000, 6000)])) == ["scheduled_delay"]


def test_a_delay_not_cleared_after_it_fired_is_a_violation() -> None:
    found = check_scheduled_delay(_log([(1000, 10_000), (11_000, 2000)]))
    assert [v.invariant for v in found] == ["scheduled_delay"]
    assert "fired" in found[0].detail


def test_an_unknown_starting_delay_is_a_violation() -> None:
    assert backoff_values(300_000) == {40, 1600, 64_000, 300_000}
    assert _names(_log([(1000, 1600)])) == []
    assert _names(_log([(1000, 1599)])) == ["scheduled_delay"]


def test_a_restart_and_a_config_mismatch_round_keep_kafkas_state() -> None:
    restarted = _log([(1000, 10_000)])
    restarted.append({"t_ms": 2000, "seq": 9, "kind": "member_start", "member": "w1", "config": {}})
    restarted.append(
        {
            "t_ms": 3000,
            "seq": 10,
            "kind": "assignor",
            "member": "w1",
            "generation": 3,
            "assignor": "incremental_cooperative",
            "error": 0,
            "delay_ms": 300_000,
        }
    )
    assert _names(restarted) == []  # a new process, a new assignor
    mismatch = _log([(1000, 10_000), (2000, 0), (3000, 8000)])
    mismatch[2]["error"] = 1  # CONFIG_MISMATCH: delay 0 on the wire, state untouched
    assert _names(mismatch) == []


def _lost_round(
    t: int, delay: int, handed: bool, present: bool = False, seq: int = 0
) -> dict[str, Any]:
    """An assignor round of w1 that found task c-0 lost, handing it out or not."""
    return {
        "t_ms": t,
        "seq": seq,
        "kind": "assignor",
        "member": "w1",
        "generation": seq,
        "assignor": "incremental_cooperative",
        "error": 0,
        "delay_ms": delay,
        "assigned": {"w2-x": {"connectors": [], "tasks": ["c-0"]}} if handed else {},
        "revoked": {},
        "lost": {"connectors": [], "tasks": ["c-0"]},
        "previous_members_present": present,
    }


def _with_rounds(*rounds: dict[str, Any]) -> list[dict[str, Any]]:
    return [*_log([]), *rounds]


def test_lost_work_waits_the_delay_and_is_handed_out_when_it_fires() -> None:
    ok = _with_rounds(
        _lost_round(1000, 10_000, handed=False, seq=1),
        _lost_round(4000, 7000, handed=False, seq=2),
        _lost_round(11_000, 0, handed=True, seq=3),
    )
    assert _names(ok) == []
    # work never delivered (every previous member is back) goes out at once
    assert _names(_with_rounds(_lost_round(1000, 0, handed=True, present=True, seq=1))) == []


def test_lost_work_handed_out_early_or_kept_after_the_delay_is_a_violation() -> None:
    at_once = _with_rounds(_lost_round(1000, 0, handed=True, seq=1))
    assert _names(at_once) == ["scheduled_delay"]
    early = _with_rounds(
        _lost_round(1000, 10_000, handed=False, seq=1), _lost_round(4000, 7000, True, seq=2)
    )
    assert _names(early) == ["scheduled_delay"]
    kept = _with_rounds(
        _lost_round(1000, 10_000, handed=False, seq=1), _lost_round(11_000, 0, False, seq=2)
    )
    found = check_scheduled_delay(kept)
    assert [v.invariant for v in found] == ["scheduled_delay"]
    assert "not handed out" in found[0].detail


def test_groupsim_check_reports_it_by_name() -> None:
    found = check_records(complete(_log([(1000, 10_000), (11_000, 2000)])))
    assert "scheduled_delay" in {v.invariant for v in found}


@pytest.fixture(scope="module")
def delayed_run() -> list[dict[str, Any]]:
    """A clean chaos run whose leader scheduled a delay (first one found)."""
    config = ChaosConfig(members=(4, 4), protocols=("sessioned",), duration_ms=600_000)
    for index in range(40):
        records = run_spec(generate(config, 1, index))[1].records
        if any(r.get("kind") == "assignor" and r.get("delay_ms") for r in records):
            return records
    raise AssertionError("no run with a scheduled delay in 40 runs")


def _write(records: list[dict[str, Any]], path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_real_run_passes_and_its_mutations_fail(
    delayed_run: list[dict[str, Any]], tmp_path: Path
) -> None:
    names = {v.invariant for v in check_log(_write(delayed_run, tmp_path / "clean.jsonl"))}
    assert "scheduled_delay" not in names
    first = next(
        i for i, r in enumerate(delayed_run) if r.get("kind") == "assignor" and r.get("delay_ms")
    )
    # the delay never cleared: every later round repeats it
    mutated = [dict(r) for r in delayed_run]
    for r in mutated[first + 1 :]:
        if r.get("kind") == "assignor":
            r["delay_ms"] = delayed_run[first]["delay_ms"]
    found = check_log(_write(mutated, tmp_path / "never-cleared.jsonl"))
    assert "scheduled_delay" in {v.invariant for v in found}


def test_the_check_command_names_it(delayed_run: list[dict[str, Any]], tmp_path: Path) -> None:
    first = next(
        i for i, r in enumerate(delayed_run) if r.get("kind") == "assignor" and r.get("delay_ms")
    )
    mutated = [dict(r) for r in delayed_run]
    mutated[first]["delay_ms"] = 10**9  # above any max
    result = CliRunner().invoke(app, ["check", str(_write(mutated, tmp_path / "e.jsonl"))])
    assert result.exit_code == 1
    assert "scheduled_delay" in result.output


def test_static_lost_work_with_no_wildcard_worker_stays_unassigned() -> None:
    fired = _lost_round(11_000, 0, handed=False, seq=2)
    fired["unassigned_static_jobs"] = {"connectors": [], "tasks": ["c-0"]}
    assert _names(_with_rounds(_lost_round(1000, 10_000, handed=False, seq=1), fired)) == []
