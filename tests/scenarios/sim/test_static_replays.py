"""KIP-987 end to end: the static protocol in a running cluster."""

from __future__ import annotations

from scenarios.input.library import library_dir
from scenarios.input.loader import load_scenario, loads_scenario
from scenarios.sim.runner import simulate


def run_library(name: str):
    loaded = load_scenario(library_dir() / f"{name}.toml")
    return simulate(loaded, loaded.scenario.seed)


def protocols(result) -> list[str]:
    elected = [r["protocol"] for r in result.records if r["kind"] == "generation" and r["protocol"]]
    return [p for i, p in enumerate(elected) if i == 0 or elected[i - 1] != p]


def running_at(records: list[dict], t_ms: int) -> dict[str, set[str]]:
    """task -> members running it just before ``t_ms``."""
    running: dict[str, set[str]] = {}
    for r in records:
        if r["t_ms"] >= t_ms:
            break
        if r["kind"] == "task_started":
            running.setdefault(r["task"], set()).add(r["member"])
        elif r["kind"] in ("task_stop", "task_stopped"):
            running.get(r["task"], set()).discard(r["member"])
    return {task: members for task, members in running.items() if members}


def test_roll_to_static_elects_static_after_the_last_sessioned_worker() -> None:
    result = run_library("rolling-upgrade-sessioned-to-static")
    assert protocols(result) == ["sessioned", "static"]
    assignors = {r["assignor"] for r in result.records if r["kind"] == "assignor"}
    assert assignors == {"incremental_cooperative", "static"}
    assert result.failures == []


def test_mixed_versions_move_the_protocol_down_and_back_up() -> None:
    result = run_library("mixed-versions")
    assert protocols(result) == ["sessioned", "compatible", "default", "compatible", "sessioned"]
    assert result.failures == []


def test_kip_987_test_plan_keeps_data_flowing_at_every_step() -> None:
    result = run_library("kip-987-test-plan")
    assert result.failures == []
    records = result.records
    configured = {f"{c}-{i}" for c in ("orders", "payments", "audit") for i in range(4)}
    phases = result.summary.phases
    names = [p.name for p in phases]
    assert names[2:] == [
        "roll to static",
        "static worker with a static connector",
        "static worker with a static task",
        "static worker with duplicate assignments",
        "remove a wildcard worker",
        "static workers cover every job",
        "remove the remaining wildcard workers",
    ]
    # Just before each step after the roll, every task runs, exactly once.
    for phase in phases[3:]:
        running = running_at(records, phase.start_ms)
        assert set(running) == configured, phase.name
        assert all(len(m) == 1 for m in running.values()), phase.name
    # Per-step downtime is reported, and it is small once the roll is done.
    assert all(p.task_downtime_ms_total < 60_000 for p in phases[3:6])
    # At the end every job runs on a worker that names it.
    final = running_at(records, result.summary.end_ms + 1)
    claims = {
        r["member"]: set(r["config"].get("static.tasks", ()))
        for r in records
        if r["kind"] == "member_start" and r["config"].get("connect.protocol") == "static"
    }
    for task, members in final.items():
        (member,) = members
        assert task in claims.get(member, set()) or task.rsplit("-", 1)[0] in {
            c
            for r in records
            if r["kind"] == "member_start" and r["member"] == member
            for c in r["config"].get("static.connectors", ())
        }, (task, member)


SCALE_OUT = """
name = "same"
seed = 5
settle_ms = 400000
[cluster]
size = 3
[cluster.config]
"connect.protocol" = "{protocol}"
[workload.generate]
count = 5
tasks = 3
[[timeline]]
at_ms = 60000
action = "join"
member = "w4"
[[timeline]]
at_ms = 120000
action = "crash"
member = "w2"
"""


def test_static_without_static_workers_assigns_exactly_as_sessioned() -> None:
    def placements(protocol: str) -> list[tuple]:
        result = simulate(loads_scenario(SCALE_OUT.format(protocol=protocol), "s.toml"), 5)
        return [
            (
                r["t_ms"],
                r["member"],
                r["generation"],
                tuple(r["connectors"]),
                tuple(r["tasks"]),
                tuple(r["revoked_tasks"]),
                r["delay_ms"],
            )
            for r in result.records
            if r["kind"] == "assignment"
        ]

    assert placements("static") == placements("sessioned")


def test_a_member_without_static_pins_the_group_below_it_and_claims_are_ignored() -> None:
    text = """
name = "pinned"
[cluster.config]
"groupsim.task.start.ms" = 10
[[cluster.workers]]
name = "s1"
config = { "connect.protocol" = "static", "static.tasks" = ["c1-0", "c1-1", "c1-2", "c1-3"] }
[[cluster.workers]]
name = "w2"
config = { "connect.protocol" = "sessioned" }
[[workload.connectors]]
name = "c1"
tasks = 4
"""
    result = simulate(loads_scenario(text, "pinned.toml"), 1)
    assert protocols(result) == ["sessioned"]
    on_w2 = {
        r["task"] for r in result.records if r["kind"] == "task_started" and r["member"] == "w2"
    }
    assert on_w2, "the claims of s1 are ignored: w2 gets its share of c1's tasks"
    assert result.failures == []


def test_static_settings_on_an_older_protocol_are_ignored_and_noted() -> None:
    text = """
name = "ignored"
[cluster]
size = 1
[cluster.config]
"connect.protocol" = "sessioned"
"static.connectors" = ["c1"]
[[workload.connectors]]
name = "c1"
tasks = 1
"""
    result = simulate(loads_scenario(text, "ignored.toml"), 1)
    notes = [r for r in result.records if r["kind"] == "static_config_ignored"]
    assert notes and notes[0]["protocol"] == "sessioned"
    assert result.failures == []


def test_bad_static_settings_are_one_line_errors() -> None:
    import pytest

    from scenarios.input.loader import ScenarioError

    base = 'name = "bad"\n[cluster]\nsize = 1\n[cluster.config]\n'
    with pytest.raises(ScenarioError) as info:
        loads_scenario(
            base + '"connect.protocol" = "static"\n"static.tasks" = ["c1"]\n', "bad.toml"
        )
    assert "static.tasks" in str(info.value) and "'c1'" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(ScenarioError) as info:
        loads_scenario(base + '"connect.protocol" = "kip-987"\n', "bad.toml")
    assert "connect.protocol" in str(info.value) and "static" in str(info.value)


def test_static_job_without_its_worker_or_a_wildcard_worker_is_reported_unassigned() -> None:
    text = """
name = "orphan"
settle_ms = 120000
[cluster.config]
"connect.protocol" = "static"
[[cluster.workers]]
name = "s1"
config = { "static.connectors" = ["c1"], "static.tasks" = ["c1-0", "c1-1"] }
[[cluster.workers]]
name = "s2"
config = { "static.connectors" = ["c2"], "static.tasks" = ["c2-0"] }
[[workload.connectors]]
name = "c1"
tasks = 2
[[workload.connectors]]
name = "c2"
tasks = 1
[[timeline]]
at_ms = 30000
action = "leave"
member = "s1"
"""
    result = simulate(loads_scenario(text, "orphan.toml"), 1)
    rounds = [r for r in result.records if r["kind"] == "assignor" and r["t_ms"] > 30_000]
    assert rounds[-1]["unassigned_static_jobs"] == {
        "connectors": ["c1"],
        "tasks": ["c1-0", "c1-1"],
    }
    # Nothing can run them: the run reports it rather than hiding it.
    assert result.summary.converged is False
    assert result.summary.violations.get("liveness") == 1
