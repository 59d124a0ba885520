"""End-to-end runs of every library scenario: expectations, determinism and KIP-415 facts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import msgspec
import pytest

from scenarios.input.library import library_dir
from scenarios.input.loader import load_scenario, loads_scenario
from scenarios.sim.runner import simulate

LIBRARY = sorted(p.stem for p in library_dir().glob("*.toml"))


@pytest.fixture(scope="module")
def runs() -> dict[str, object]:
    """Each library scenario simulated once with its own seed (shared by the tests below)."""
    out = {}
    for name in LIBRARY:
        loaded = load_scenario(library_dir() / f"{name}.toml")
        out[name] = simulate(loaded, loaded.scenario.seed)
    return out


def _kinds(records: list[dict]) -> Counter:
    return Counter(r["kind"] for r in records)


def test_library_has_the_scenarios_the_readme_promises() -> None:
    assert {
        "rolling-upgrade-eager-to-sessioned",
        "worker-bounce-within-delay",
        "worker-leaves-for-good",
        "scale-out",
        "connect-system-test-bounce",
    } <= set(LIBRARY)


@pytest.mark.parametrize("name", LIBRARY)
def test_every_expectation_holds(runs: dict, name: str) -> None:
    result = runs[name]
    assert result.failures == [], result.failures
    assert result.summary.converged is True
    expected = set(
        load_scenario(library_dir() / f"{name}.toml").scenario.expect.expected_violations
    )
    for r in result.records:
        if r["kind"] == "violation":
            assert r.get("known_issue") in expected, r


@pytest.mark.parametrize("name", LIBRARY)
def test_same_seed_gives_byte_identical_log(runs: dict, name: str) -> None:
    loaded = load_scenario(library_dir() / f"{name}.toml")
    again = simulate(loaded, loaded.scenario.seed)
    first = msgspec.json.encode(runs[name].records)
    assert msgspec.json.encode(again.records) == first


def test_another_seed_changes_member_ids() -> None:
    loaded = load_scenario(library_dir() / "scale-out.toml")
    a = simulate(loaded, 1)
    b = simulate(loaded, 2)
    ids_a = {r["member_id"] for r in a.records if r["kind"] == "member_added"}
    ids_b = {r["member_id"] for r in b.records if r["kind"] == "member_added"}
    assert ids_a and ids_a.isdisjoint(ids_b)


def test_flagship_protocols_follow_the_roll(runs: dict) -> None:
    result = runs["rolling-upgrade-eager-to-sessioned"]
    protocols = [
        r["protocol"] for r in result.records if r["kind"] == "generation" and r["protocol"]
    ]
    # The group runs "default" until the last eager worker is gone, then compatible, then
    # sessioned once the last compatible worker is gone (ConnectProtocolCompatibility vote).
    order = list(dict.fromkeys(protocols))
    assert order == ["default", "compatible", "sessioned"]
    phases = [p.name for p in result.summary.phases]
    assert phases == ["eager", "roll to compatible", "roll to sessioned"]
    assert result.summary.final_protocol == "sessioned"


def test_bounce_within_delay_returns_work_to_the_same_worker(runs: dict) -> None:
    result = runs["worker-bounce-within-delay"]
    records = result.records
    crash_t = next(r["t_ms"] for r in records if r["kind"] == "member_crash")
    delays = [r["delay_ms"] for r in records if r["kind"] == "assignment" and r["t_ms"] > crash_t]
    # The first round after the departure carries the whole scheduled delay (KIP-415).
    assert 300_000 in delays
    assert result.summary.task_movements == 0


def test_departed_workers_tasks_wait_for_the_delay_then_move(runs: dict) -> None:
    records = runs["worker-leaves-for-good"].records
    stop_t = next(r["t_ms"] for r in records if r["kind"] == "member_stop" and r["member"] == "w4")
    lost = {r["task"] for r in records if r["kind"] == "task_stopped" and r["member"] == "w4"}
    assert lost
    restarts = [
        r
        for r in records
        if r["kind"] == "task_started" and r["task"] in lost and r["t_ms"] > stop_t
    ]
    assert {r["task"] for r in restarts} == lost
    assert min(r["t_ms"] for r in restarts) - stop_t >= 300_000
    assert all(r["member"] != "w4" for r in restarts)


def test_scale_out_balances_new_workers(runs: dict) -> None:
    summary = runs["scale-out"].summary
    counts = [w.tasks for w in summary.workers_final.values()]
    assert len(counts) == 5 and max(counts) - min(counts) <= 1 and sum(counts) == 30


def test_downgrade_reproduces_kafka_13816_under_its_name(runs: dict) -> None:
    result = runs["downgrade-sessioned-to-eager"]
    flagged = [r for r in result.records if r["kind"] == "violation"]
    assert flagged and all(r.get("known_issue") == "KAFKA-13816" for r in flagged)
    assert all(r["invariant"] == "double_ownership" for r in flagged)
    assert result.summary.violations == {"KAFKA-13816": len(flagged)}
    assert result.failures == []  # the scenario names it as expected


def test_mixed_versions_keeps_kafka_13816_leftovers_until_their_worker_stops(runs: dict) -> None:
    """As the real run (docs/real-kafka.md): the compatible worker's cooperative tasks, given
    to others by the eager round, run on through later eager joins (which revoke the
    assignment snapshot only) until that worker leaves; the 4.x workers still run theirs at
    the end. Convergence is judged on the group's assignment, the leftovers are named."""
    result = runs["mixed-versions"]
    records = result.records
    kept = {"connector1-0", "connector1-3", "connector2-0", "connector3-0"}
    stops = [
        r
        for r in records
        if r["kind"] == "task_stop" and r["member"] == "old-compatible" and r["task"] in kept
    ]
    assert {r["task"] for r in stops} == kept
    assert {r["reason"] for r in stops} == {"shutdown"}  # not at its eager join (783 s)
    summary = result.summary
    assert summary.converged and summary.convergence.duplicate_tasks == []
    leftovers = summary.convergence.leftover_tasks
    assert len(leftovers) == 11 and {t.split("@")[1] for t in leftovers} == {"w1", "w2", "w3"}
    (end,) = [r for r in records if r["kind"] == "violation" and r["invariant"] == "liveness"]
    assert end["known_issue"] == "KAFKA-13816"
    assert set(summary.violations) == {"KAFKA-13816"} and result.failures == []


def test_kafka_13816_fails_the_run_unless_expected(tmp_path: Path) -> None:
    source = (library_dir() / "downgrade-sessioned-to-eager.toml").read_text()
    strict = source.replace('expected_violations = ["KAFKA-13816"]\n', "")
    assert strict != source
    result = simulate(loads_scenario(strict, tmp_path / "strict.toml"), 1)
    assert result.exit_code == 1
    assert any("KAFKA-13816" in line for line in result.failures)
