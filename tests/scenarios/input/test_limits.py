"""Issue 14: every input size has a documented limit, checked before any work; a value above
it is one line naming the key, the value and the limit (docs/limits.md)."""

from __future__ import annotations

import pytest

from scenarios.assign.limits import check_assign_limits
from scenarios.input.errors import ScenarioError
from scenarios.input.limits import ENV_VAR, LimitExceeded, limits
from scenarios.input.loader import loads_scenario
from scenarios.input.streams import loads_streams_scenario

BIG = """
name = "big"
[cluster]
size = 3
[workload.generate]
count = 10000000
tasks = 1
"""


def test_generated_connectors_over_the_limit_are_rejected_before_building() -> None:
    with pytest.raises(ScenarioError) as info:
        loads_scenario(BIG, "big.toml")
    assert str(info.value) == (
        "big.toml: workload.generate.count: 10000000 exceeds the limit of 100000 connectors "
        f"(raise it with {ENV_VAR}=connectors=N)"
    )


def test_the_environment_variable_moves_a_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "connectors=5, tasks=7")
    assert limits()["connectors"] == 5
    with pytest.raises(ScenarioError, match=r"workload: 8 exceeds the limit of 7 tasks"):
        loads_scenario(BIG.replace("10000000", "4").replace("tasks = 1", "tasks = 2"), "b.toml")
    monkeypatch.setenv(ENV_VAR, "connectors")
    with pytest.raises(LimitExceeded, match=f"^{ENV_VAR}: expected name=N"):
        limits()


def test_rolling_restarts_count_once_per_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "steps=4")
    text = BIG.replace("10000000", "1") + (
        '[[timeline]]\nat_ms = 0\naction = "rolling_restart"\ninterval_ms = 10\n'
    ).replace("size = 3", "size = 5")
    text = text.replace("size = 3", "size = 5")
    with pytest.raises(ScenarioError, match=r"timeline: 5 exceeds the limit of 4 steps"):
        loads_scenario(text, "r.toml")


def test_streams_partitions() -> None:
    text = (
        'kind = "streams"\nname = "s"\n[[clients]]\nname = "a"\n'
        "[[subtopologies]]\nid = 0\npartitions = 100001\n"
    )
    with pytest.raises(ScenarioError, match=r"subtopologies\[0\].partitions: 100001 exceeds"):
        loads_streams_scenario(text, "s.toml")


def test_assign_sizes_are_checked_on_the_decoded_json() -> None:
    doc = {"assignor": "eager", "rounds": [{"connectors": {"ü": 1_000_000_000}}]}
    with pytest.raises(LimitExceeded) as info:
        check_assign_limits(doc)
    assert str(info.value).startswith(
        "rounds[0].connectors.ü: 1000000000 exceeds the limit of 10000 tasks per connector"
    )
    check_assign_limits({"assignor": "eager", "rounds": [{"connectors": {"c": 3}}]})
