"""The Streams library scenarios end to end: KIP-441's three examples, KIP-708's nine nodes,
KIP-925's rack-aware optimisation; determinism; outputs."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from scenarios.check.streams_summary import tag_conflicts
from scenarios.cli.outputs import write_outputs
from scenarios.input.library import library_names, load_any, streams_library_dir
from scenarios.sim.runner import simulate as simulate_streams

NAMES = library_names("streams")


def _run(name: str, seed: int = 1):
    return simulate_streams(load_any(name), seed)


def test_library_lists_the_streams_scenarios() -> None:
    assert set(NAMES) >= {
        "kip-441-scale-out",
        "kip-441-scale-in-in-sync",
        "kip-441-scale-in-lagging",
        "kip-708-nine-nodes",
        "rack-aware-min-traffic",
    }
    for name in NAMES:
        assert load_any(name).scenario.kind == "streams"
        assert load_any(streams_library_dir() / f"{name}.toml").scenario.kind == "streams"


@pytest.mark.parametrize("name", NAMES)
def test_scenario_meets_its_expectations(name: str) -> None:
    result = _run(name)
    assert result.failures == []
    assert result.summary.converged
    assert result.summary.violations == {}
    assert result.summary.never_started == []


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_log(name: str) -> None:
    a = _run(name, seed=7)
    b = _run(name, seed=7)
    assert json.dumps(a.records) == json.dumps(b.records)


def _history(name: str) -> list[dict]:
    """The leader's assignments as ``{client: {"active": [...], "standby": [...]}}``."""
    return msgspec.to_builtins(_run(name).summary.streams.assignment_history)


def test_kip441_scale_out_tables() -> None:
    history = _history("kip-441-scale-out")
    # initial state; first rebalance: I3 only warms up; stable state: one active each.
    assert history[0] == {
        "I1": {"active": ["0_0", "0_2"], "standby": ["0_1"]},
        "I2": {"active": ["0_1"], "standby": ["0_0", "0_2"]},
    }
    assert history[1]["I3"] == {"active": [], "standby": ["0_1", "0_2"]}
    assert {c: a["active"] for c, a in history[1].items()} == {
        "I1": ["0_0", "0_2"],
        "I2": ["0_1"],
        "I3": [],
    }
    assert {c: a["active"] for c, a in history[-1].items()} == {
        "I1": ["0_0"],
        "I2": ["0_1"],
        "I3": ["0_2"],
    }
    assert len(history) == 3


def test_kip441_scale_out_moves_t3_cooperatively() -> None:
    records = _run("kip-441-scale-out").records
    stop = next(r for r in records if r["kind"] == "active_task_stopped" and r["task"] == "0_2")
    start = next(
        r
        for r in records
        if r["kind"] == "active_task_start" and r["task"] == "0_2" and r["member"] == "I3"
    )
    assert stop["member"] == "I1" and stop["seq"] < start["seq"]
    # the revocation round and the follow-up are two generations
    withheld = [
        r
        for r in records
        if r["kind"] == "streams_assignment"
        and r["clients"].get("PID_3", {}).get("withheld") == ["0_2"]
    ]
    assert len(withheld) == 1
    assert start["generation"] == withheld[0]["generation"] + 1
    scheduled = [r for r in records if r["kind"] == "probing_rebalance_scheduled"]
    assert scheduled and all(r["at_ms"] - r["t_ms"] == 60_000 for r in scheduled)


def test_kip441_scale_in_lagging_keeps_i2_busy_until_i3_restores() -> None:
    result = _run("kip-441-scale-in-lagging")
    history = result.summary.streams.assignment_history
    assert history[1]["I2"].active == ["0_0", "0_1", "0_3"]
    assert history[2]["I3"].active == ["0_2", "0_3"]
    caught_up = [
        r for r in result.records if r["kind"] == "standby_task_caught_up" and r["member"] == "I3"
    ]
    assert caught_up[0]["task"] == "0_3"  # the small store first
    assert result.summary.streams.probing_rebalances >= 2


def test_kip708_every_copy_in_a_distinct_cluster_and_zone() -> None:
    summary = _run("kip-708-nine-nodes").summary
    final = summary.streams.final_assignment
    tags = summary.streams.client_tags
    assert tag_conflicts(final, tags, ["zone", "cluster"]) == []
    copies: dict[str, int] = {}
    for roles in final.values():
        for t in roles.active + roles.standby:
            copies[t] = copies.get(t, 0) + 1
    assert {t: n for t, n in copies.items() if t.startswith("0_")} == {
        f"0_{p}": 3 for p in range(9)
    }


def test_rack_aware_reports_cost_before_and_after() -> None:
    result = _run("rack-aware-min-traffic")
    records = [r for r in result.records if r["kind"] == "streams_assignment"]
    assert records[0]["cost"] == {"before": 123, "after": 66}
    final = result.summary.streams.final_assignment
    # every active task reads its input from its own rack (partition p on r((p+1) mod 3))
    racks = {"app-0": 0, "app-1": 1, "app-2": 2}
    for client, roles in final.items():
        for task in roles.active:
            assert (int(task.split("_")[1]) + 1) % 3 == racks[client]


def test_write_outputs(tmp_path: Path) -> None:
    result = _run("kip-441-scale-in-in-sync")
    write_outputs(result, tmp_path)
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["log_version"] == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["converged"] is True
    assert (tmp_path / "timeline.png").exists()


@pytest.mark.parametrize("seed", [1, 7])
def test_scale_out_with_faults_survives_a_failover_and_a_partition(seed: int) -> None:
    """The Streams world takes Connect's faults: a coordinator failover while I3's warm-ups
    restore (the group is reloaded from its stored record) and I2 partitioned during a probing
    rebalance (its unanswered heartbeat times out, it finds the coordinator again and rejoins)
    — and still ends in KIP-441's stable state with no task active twice."""
    result = _run("kip-441-scale-out-with-faults", seed)
    kinds = [(r["kind"], r.get("fault")) for r in result.records]
    assert ("fault", "coordinator_failover") in kinds
    assert ("fault", "partition") in kinds and ("fault", "heal") in kinds
    assert any(r["kind"] == "group_loaded" for r in result.records)
    lost = [
        r
        for r in result.records
        if r["kind"] == "coordinator_unknown" and r["member"] == "I2" and r["t_ms"] > 122_000
    ]
    assert lost and lost[0]["reason"] == "heartbeat request timed out"
    assert 122_000 + 30_000 <= lost[0]["t_ms"] <= 122_000 + 30_000 + 3_000
    assert result.failures == []
    assert result.summary.violations == {}
    assert result.summary.streams.final_assignment["I3"].active == ["0_2"]
