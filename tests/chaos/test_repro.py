"""Reproducers found by chaos campaigns (tests/chaos/repro/): each still fails as its header
describes. They are strict xfails: once the bug is fixed (or the Kafka behaviour is named as a
known issue in scenarios/invariants.py) the test passes, xfail(strict) reports it, and the
reproducer's marker here — and its entry in test_group_machine.PENDING — should go."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.chaos import classify
from scenarios.loader import load_scenario
from scenarios.runner import simulate

REPRO = Path(__file__).parent / "repro"

#: file -> (the violation it shows, why it is open)
OPEN = {
    "failover-no-rejoin.toml": (
        "liveness",
        "groupsim bug: no rejoin after a coordinator-lost revoke",
    ),
    "latency-no-rejoin.toml": (
        "liveness",
        "groupsim bug: no rejoin after a coordinator-lost revoke",
    ),
    "failover-then-protocol-change-balance.toml": ("balance", "groupsim bug after a failover"),
    "latency-late-sync-double-ownership.toml": (
        "double_ownership",
        "Kafka behaviour to name: session expired while a SyncGroup answer is in flight",
    ),
    "latency-late-sync-stale-generation.toml": (
        "stale_generation",
        "Kafka behaviour the checker flags: a late SyncGroup answer applied",
    ),
}


def test_every_reproducer_is_listed() -> None:
    assert sorted(p.name for p in REPRO.glob("*.toml")) == sorted(OPEN)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=why))
        for n, (_, why) in OPEN.items()
    ],
)
def test_reproducer_runs_clean(name: str) -> None:
    loaded = load_scenario(REPRO / name)
    result = simulate(loaded, loaded.scenario.seed)
    violations, first_new = classify(result)
    assert first_new is None, (OPEN[name][0], first_new)


@pytest.mark.parametrize("name", sorted(OPEN))
def test_reproducer_still_shows_its_violation(name: str) -> None:
    loaded = load_scenario(REPRO / name)
    result = simulate(loaded, loaded.scenario.seed)
    _, first_new = classify(result)
    if first_new is None:
        pytest.skip(f"{name} no longer fails: remove it (and its xfail) once confirmed")
    assert first_new[0] == OPEN[name][0]
