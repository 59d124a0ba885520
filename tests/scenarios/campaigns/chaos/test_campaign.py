"""scenarios.campaigns.chaos: campaigns (clean, deterministic across process counts), the shrinker,
and
the reproducers it writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.campaigns.chaos import (
    ChaosConfig,
    ChaosSpec,
    classify,
    ddmin,
    failure_signature,
    generate,
    percentile,
    run_campaign,
    run_spec,
    shrink,
    spec_to_toml,
    write_reproducer,
)
from scenarios.check.invariants import KNOWN_ISSUES
from scenarios.input.loader import load_scenario, loads_scenario
from scenarios.sim.runner import simulate

#: Fault kinds with no open groupsim bug (see tests/scenarios/campaigns/chaos/repro/ for the
#: others).
CLEAN_FAULTS = ("crash", "leave", "partition", "loss")


def test_small_campaign_is_clean_or_known_issues_only() -> None:
    config = ChaosConfig(members=(3, 6), faults=CLEAN_FAULTS, duration_ms=1_200_000)
    result = run_campaign(config, 20, 11, jobs=1)
    assert result.runs == 20
    assert [o.index for o in result.outcomes] == list(range(20))
    assert sum(result.faults.values()) > 20
    assert set(result.violations) <= set(KNOWN_ISSUES), result.to_json()
    assert not result.failed
    # every run converged within the bound: the runner's end-of-run check passed
    assert all(o.converged and o.converge_ms is not None for o in result.outcomes)


def test_campaign_result_does_not_depend_on_process_count() -> None:
    config = ChaosConfig(members=(3, 4), duration_ms=300_000)
    one = run_campaign(config, 8, 5, jobs=1, shrink_failures=False)
    two = run_campaign(config, 8, 5, jobs=2, shrink_failures=False)
    strip = [
        (o.index, o.seed, o.faults, o.violations, o.task_downtime_max_ms, o.converge_ms)
        for o in one.outcomes
    ]
    assert strip == [
        (o.index, o.seed, o.faults, o.violations, o.task_downtime_max_ms, o.converge_ms)
        for o in two.outcomes
    ]
    doc = two.to_json()
    assert doc["runs"] == 8 and doc["seed"] == 5


def test_a_chaos_run_is_deterministic_and_is_its_reproducer_s_run() -> None:
    """Faults, jitter and loss draw from the run's seed only: the run a campaign makes and
    the run of its written reproducer file give the same log and summary."""
    config = ChaosConfig(members=(3, 5), duration_ms=600_000)
    for index in range(3):
        spec = generate(config, 2, index)
        _, in_campaign = run_spec(spec)
        again = simulate(loads_scenario(spec_to_toml(spec), "s.toml"), spec.seed)
        assert in_campaign.records == again.records
        assert in_campaign.summary == again.summary


# ----------------------------------------------------------------------------- ddmin


def test_ddmin_finds_a_one_minimal_subset() -> None:
    calls = 0

    def fails(items: list[int]) -> bool:
        nonlocal calls
        calls += 1
        return {3, 11, 17} <= set(items)

    assert ddmin(list(range(20)), fails) == [3, 11, 17]
    assert ddmin([5], lambda items: True) == []
    assert ddmin([5], lambda items: bool(items)) == [5]
    assert calls < 200


def test_percentile() -> None:
    assert percentile([], 50) == 0
    assert percentile([5], 99) == 5
    assert percentile(list(range(1, 101)), 50) == 50
    assert percentile(list(range(1, 101)), 99) == 99


# ----------------------------------------------------------------------------- shrinking


def _noisy_downgrade() -> ChaosSpec:
    """Three sessioned workers; among harmless faults, w2 is restarted with eager: the group
    falls to ``default`` and KAFKA-13816 shows (a planted double ownership)."""
    steps = [
        {
            "at_ms": 20_000,
            "action": "loss",
            "member": "w3",
            "probability": 0.2,
            "duration_ms": 5_000,
            "direction": "both",
        },
        {"at_ms": 25_000, "action": "add_connector", "connector": "c3", "tasks": 2},
        {"at_ms": 30_000, "action": "partition", "member": "w3", "duration_ms": 2_000},
        {
            "at_ms": 40_000,
            "action": "restart",
            "member": "w2",
            "config": {"connect.protocol": "eager"},
        },
        {"at_ms": 50_000, "action": "set_tasks", "connector": "c1", "tasks": 3},
        {"at_ms": 60_000, "action": "slow", "member": "w1", "stall_ms": 500},
        {"at_ms": 70_000, "action": "restart", "member": "w3", "clean": True, "down_ms": 1_000},
    ]
    return ChaosSpec(
        name="planted",
        seed=3,
        campaign_seed=99,
        index=4,
        protocol="sessioned",
        members=5,
        cluster_config={"connect.protocol": "sessioned", "scheduled.rebalance.max.delay.ms": 0},
        worker_configs={},
        jitter_ms=0,
        connectors=[("c1", 6), ("c2", 4)],
        steps=steps,
        kinds=["loss", "config", "partition", "config", "config", "slow", "leave"],
        duration_ms=80_000,
    )


def _kafka_13816(spec: ChaosSpec) -> tuple[str, str] | None:
    """A synthetic failure signature: the known downgrade double ownership."""
    _, result = run_spec(spec)
    for record in result.records:
        if record.get("kind") == "violation" and record.get("known_issue") == "KAFKA-13816":
            return "KAFKA-13816", str(record.get("detail"))
    return None


def test_shrinker_reduces_a_planted_double_ownership(tmp_path: Path) -> None:
    spec = _noisy_downgrade()
    assert _kafka_13816(spec) is not None
    shrunk = shrink(spec, reproduces=_kafka_13816, budget=120)
    assert shrunk.invariant == "KAFKA-13816"
    assert shrunk.original_steps == 7
    # the one step that matters: w2 restarted with connect.protocol = eager
    assert [(s["action"], s.get("config")) for s in shrunk.spec.steps] == [
        ("restart", {"connect.protocol": "eager"})
    ]
    assert shrunk.spec.members < spec.members
    assert shrunk.spec.steps[0]["at_ms"] <= spec.steps[3]["at_ms"]
    path = write_reproducer(tmp_path, shrunk.spec, shrunk.text)
    assert path.name == "chaos-99-4.toml"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left
    # the written file reproduces with the runner, and `groupsim run` would pass it
    loaded = load_scenario(path)
    result = simulate(loaded, loaded.scenario.seed)
    assert result.summary.violations.get("KAFKA-13816", 0) > 0
    # nothing else: with no later rebalance the duplicate is still there at the end, and
    # that liveness violation belongs to KAFKA-13816 too
    violations, first_new = classify(result)
    assert first_new is None
    assert set(violations) == {"KAFKA-13816"}


def test_shrinker_on_a_fake_signature_and_number_simplification() -> None:
    spec = generate(ChaosConfig(members=(6, 6), duration_ms=3_600_000), 8, 1)
    target = next(i for i, s in enumerate(spec.steps) if "member" in s)
    member = spec.steps[target]["member"]
    action = spec.steps[target]["action"]

    def fake(candidate: ChaosSpec) -> tuple[str, str] | None:
        loads_scenario(spec_to_toml(candidate), "c.toml")  # must still load
        hit = [s for s in candidate.steps if s["action"] == action]
        return ("balance", "planted") if hit else None

    shrunk = shrink(spec, reproduces=fake, budget=300)
    assert len(shrunk.spec.steps) == 1
    assert shrunk.spec.steps[0]["action"] == action
    assert shrunk.spec.steps[0]["member"] == "w1"  # members renamed, the rest dropped
    assert shrunk.spec.members == 1
    assert shrunk.spec.steps[0]["at_ms"] == 30_000
    for key in ("duration_ms", "stall_ms", "down_ms"):
        if key in spec.steps[target]:
            assert shrunk.spec.steps[0][key] < spec.steps[target][key] or key == "down_ms"
    assert member  # the original member may have had any name
    loads_scenario(shrunk.text, "shrunk.toml")


def test_shrink_rejects_a_passing_scenario() -> None:
    spec = _noisy_downgrade().with_steps([0, 1])
    with pytest.raises(ValueError):
        shrink(spec, reproduces=lambda s: None)


def test_failing_campaign_writes_verified_reproducers(tmp_path: Path) -> None:
    # a real failure found by a real campaign: whatever groupsim bug is open, each failing
    # run must be shrunk to a file that reproduces the same invariant with `simulate`
    config = ChaosConfig(members=(3, 4), faults=("latency", "failover"), duration_ms=600_000)
    result = run_campaign(config, 6, 1, jobs=2, out_dir=tmp_path, shrink_budget=40)
    assert [r.index for r in result.reproducers] == [o.index for o in result.failed]
    for rep in result.reproducers:
        assert rep.verified and rep.path is not None and rep.path.is_file()
        loaded = load_scenario(rep.path)
        found = failure_signature(simulate(loaded, loaded.scenario.seed))
        assert found is not None and found[0] == rep.invariant


def test_time_to_converge_counts_from_where_the_last_step_ends() -> None:
    """A worker down 30 s from t=10 s is back at 40 s and takes its tasks back after that: the
    run converges after the last step's end, so ``converge_ms`` (from the end of the last
    fault to the last change of the running set) is positive. Counted from the step's start
    instead, the change would seem to come before the fault ended (0)."""
    spec = ChaosSpec(
        name="converge-after-restart",
        seed=1,
        campaign_seed=0,
        index=0,
        protocol="compatible",
        members=3,
        cluster_config={"connect.protocol": "compatible", "scheduled.rebalance.max.delay.ms": 0},
        worker_configs={},
        jitter_ms=0,
        connectors=[("c1", 6)],
        steps=[{"at_ms": 10_000, "action": "restart", "member": "w2", "clean": False,
                "down_ms": 30_000}],
        kinds=["restart"],
        duration_ms=120_000,
    )  # fmt: skip
    outcome, result = run_spec(spec)
    assert outcome.converged
    last_change = max(
        r["t_ms"] for r in result.records if r["kind"] == "task_started" and r["member"] == "w2"
    )
    assert last_change > 40_000
    assert outcome.converge_ms == last_change - 40_000
