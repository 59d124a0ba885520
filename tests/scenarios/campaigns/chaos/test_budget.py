"""Bounded runs: every chaos run has a budget (event-log records, CPU seconds); a run over it
ends with a ``run_budget_exceeded`` violation, shrunk like any other, instead of livelocking a
campaign; ``--fail-fast`` stops a campaign at its first failing run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scenarios.campaigns.chaos import ChaosConfig, run_campaign, run_one
from scenarios.campaigns.chaos.generate import default_max_records, generate
from scenarios.campaigns.chaos.render import spec_to_toml
from scenarios.input.library import load_any
from scenarios.input.loader import ScenarioError, loads_scenario
from scenarios.sim.runner import RUN_BUDGET_EXCEEDED, simulate

from .planted import by_name

ROOT = Path(__file__).resolve().parents[4]
RUN_WITH = Path(__file__).resolve().parent / "planted" / "run_with.py"
LIVELOCK = "worker-reclaims-withheld-task"
#: run 0 of campaign 1 livelocks with the planted bug (five sessioned workers, 10 min)
LIVELOCKED = ChaosConfig(members=(5, 5), protocols=("sessioned",), duration_ms=600_000)


def _budget_violations(records: list[dict[str, object]]) -> list[dict[str, object]]:
    return [
        r for r in records if r["kind"] == "violation" and r.get("invariant") == RUN_BUDGET_EXCEEDED
    ]


def test_a_planted_livelock_ends_within_its_record_budget() -> None:
    config = ChaosConfig(**{**LIVELOCKED.__dict__, "max_records": 20_000})
    started = time.process_time()
    with by_name(LIVELOCK).applied():
        outcome = run_one(config, 1, 0)
    assert outcome.first_new is not None
    assert outcome.first_new[0] == RUN_BUDGET_EXCEEDED
    assert "records, budget 20000" in outcome.first_new[1]
    # without the budget this run logs 1.2 million records in ~50 CPU s
    assert time.process_time() - started < 20


#: clean runs of ten workers; run 2 is long enough for the budget to be checked (every
#: 1,024 engine events)
BIG = ChaosConfig(members=(10, 10), protocols=("sessioned",))


def test_the_record_budget_is_the_scenario_files_and_deterministic() -> None:
    text = spec_to_toml(generate(ChaosConfig(**{**BIG.__dict__, "max_records": 300}), 1, 2))
    assert "max_records = 300" in text
    loaded = loads_scenario(text, "budget.toml")
    first, second = simulate(loaded, 7), simulate(loaded, 7)
    assert first.records == second.records
    (violation,) = _budget_violations(first.records)
    assert first.records[-2] == violation and first.records[-1]["kind"] == "run_end"
    # stopped within one check period (1,024 engine events) of the budget, end checks skipped
    assert 300 <= len(first.records) < 300 + 1_024
    assert not [r for r in first.records if r.get("invariant") == "liveness"]


def test_the_cpu_budget() -> None:
    loaded = loads_scenario(spec_to_toml(generate(BIG, 1, 2)), "cpu.toml")
    result = simulate(loaded, 1, max_cpu_s=1e-9)
    (violation,) = _budget_violations(result.records)
    assert "CPU s, budget" in str(violation["detail"])


def test_a_clean_run_is_far_below_the_default_budget() -> None:
    assert not _budget_violations(simulate(load_any("scale-out"), 1).records)
    assert default_max_records(5, 600_000) == 110_000
    assert default_max_records(10, 2 * 3_600_000) == 140_000
    assert generate(ChaosConfig(members=(4, 4)), 3, 0).max_records == 108_000


@pytest.mark.parametrize("value", ["0", "-1", '"many"'])
def test_a_bad_max_records_is_bad_input(value: str) -> None:
    with pytest.raises(ScenarioError, match="max_records"):
        loads_scenario(f'name = "x"\nmax_records = {value}\n', "x.toml")


def test_fail_fast_stops_at_the_first_failing_run() -> None:
    config = ChaosConfig(members=(5, 5), protocols=("eager",), duration_ms=600_000)
    with by_name("eager-assignor-skips-last-task").applied():
        result = run_campaign(config, 50, 1, jobs=1, shrink_failures=False, fail_fast=True)
    assert result.stopped_early
    assert result.runs < 50
    assert [o.index for o in result.failed] == [result.runs - 1]
    assert result.to_json()["stopped_at_first_failure"] is True


@pytest.mark.slow
def test_a_livelocked_campaign_ends_with_a_shrunk_budget_violation(tmp_path: Path) -> None:
    """As a user runs it: ``groupsim chaos`` against the planted livelock, 300 runs asked,
    ``--fail-fast``: it ends after run 0 with ``run_budget_exceeded`` and its reproducer."""
    out = tmp_path / "chaos"
    argv = [sys.executable, str(RUN_WITH), LIVELOCK, "chaos", "--runs", "300", "--jobs", "1"]
    argv += ["--members", "5", "--protocol", "sessioned", "--duration", "10m"]
    argv += ["--max-records", "20000", "--fail-fast", "--json", "--out", str(out)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    result = json.loads(done.stdout)
    assert result["runs"] == 1 and result["stopped_at_first_failure"]
    assert result["violations"].get(RUN_BUDGET_EXCEEDED) == 1
    (rep,) = result["reproducers"]
    assert rep["invariant"] == RUN_BUDGET_EXCEEDED and rep["verified"]
    assert rep["steps_after"] <= rep["steps_before"]
    assert sorted(p.name for p in out.iterdir()) == ["chaos-1-0.toml"]
    assert "max_records = 20000" in (out / "chaos-1-0.toml").read_text(encoding="utf-8")
