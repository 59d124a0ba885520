"""``deleted-not-revoked`` (scenarios.check.deleted_work): deleted work that a leader with no
view of the previous assignment neither revokes nor leaves out of its owner's load is named,
and only while no leader that knew it has run."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from scenarios.campaigns.chaos import ChaosSpec, classify, run_spec
from scenarios.check.deleted_work import DELETED_NOT_REVOKED
from scenarios.check.deleted_work import deleted_not_revoked as _deleted_not_revoked
from scenarios.check.metrics import summarize
from scenarios.check.summary_types import ConnectSummary, WorkerCounts
from scenarios.eventlog.records import decode_log
from scenarios.input.loader import load_scenario
from scenarios.sim.runner import simulate

REPRO = Path(__file__).parents[1] / "campaigns" / "chaos" / "repro"


def deleted_not_revoked(records: list[dict[str, Any]], summary: ConnectSummary) -> str | None:
    """The predicate over a log's dicts (decoded as the runtime does)."""
    return _deleted_not_revoked(decode_log(records), summary)


def _records(name: str) -> list[dict[str, Any]]:
    loaded = load_scenario(REPRO / name)
    result = simulate(loaded, loaded.scenario.seed)
    return [r for r in result.records if r["kind"] not in ("violation", "run_end")]


def test_the_crashed_leaders_successor_leaves_the_deleted_tasks_in_w2s_load() -> None:
    records = _records("crash-leader-deleted-tasks-not-discounted.toml")
    summary = summarize(records)
    # w2 owns c1-1 and c1-3 (never started: config offset mismatch), c1 is gone
    assert summary.workers_final == {
        "w1": WorkerCounts(connectors=2, tasks=3),
        "w2": WorkerCounts(connectors=1, tasks=0),
    }
    assert deleted_not_revoked(records, summary) == DELETED_NOT_REVOKED


def test_a_later_leader_that_knew_the_ghosts_ends_the_window() -> None:
    records = _records("crash-leader-deleted-tasks-not-discounted.toml")
    last = max(r["t_ms"] for r in records)
    generation = next(r for r in reversed(records) if r["kind"] == "generation")
    assignor = next(r for r in reversed(records) if r["kind"] == "assignor")
    applied = next(
        r for r in reversed(records) if r["kind"] == "assignment" and r["member"] == "w2"
    )
    # w1 led generation 3 and applied it: a generation-4 round by w1 has a valid view that
    # holds w2's c1-1 and c1-3, so Kafka would have revoked them
    later = [
        {**copy.deepcopy(generation), "t_ms": last + 1, "generation": 4},
        {**copy.deepcopy(assignor), "t_ms": last + 2, "generation": 4},
    ]
    extended = records + later
    # ... but only once w2 applies generation 4 does the revocation reach it
    assert deleted_not_revoked(extended, summarize(extended)) == DELETED_NOT_REVOKED
    extended.append({**copy.deepcopy(applied), "t_ms": last + 3, "generation": 4})
    assert deleted_not_revoked(extended, summarize(extended)) is None


def test_ghosts_that_do_not_explain_the_spread_are_not_named() -> None:
    records = _records("crash-leader-deleted-tasks-not-discounted.toml")
    summary = summarize(records)
    summary.workers_final["w1"].tasks = 5  # 5 beside 0 + 2 ghosts
    assert deleted_not_revoked(records, summary) is None


#: Cases the Connect-group state machine's long profile found (2 workers, no delay).
_LEADER_CRASH = [
    # c1's tasks go from 2 to 0 while the leader w1 crashes; its restarted process leads
    # with no previous view
    {"at_ms": 0, "action": "join", "member": "w3"},
    {"at_ms": 6005, "action": "add_connector", "connector": "c2", "tasks": 3},
    {"at_ms": 6005, "action": "set_tasks", "connector": "c1", "tasks": 0},
    {"at_ms": 6005, "action": "restart", "member": "w1", "clean": False, "down_ms": 0},
]
_REVOCATION_LOST = [
    # generation 2's leader knew c1-1 was gone and revoked it, but w2 never applied
    # generation 2 (the leader's SyncGroup was held, then it crashed); generation 3's leader
    # is w1's new process
    {"at_ms": 6002, "action": "add_connector", "connector": "c2", "tasks": 0},
    {"at_ms": 6002, "action": "add_connector", "connector": "c3", "tasks": 0},
    {"at_ms": 6002, "action": "set_tasks", "connector": "c1", "tasks": 0},
    {"at_ms": 6002, "action": "set_tasks", "connector": "c2", "tasks": 2},
    {
        "at_ms": 6005,
        "action": "delay_request",
        "member": "w1",
        "request": "sync_group",
        "delay_ms": 500,
        "duration_ms": 1000,
    },
    {"at_ms": 6009, "action": "restart", "member": "w1", "clean": False, "down_ms": 0},
]


_ALL_DELETED = [
    # both connectors are deleted while w1 (which runs c1, c2-0 and c2-4) is cut off; it is
    # expired and rejoins still running them, and the leader's previous generation had no w1:
    # nothing is "deleted" for it, and with nothing configured it balances nothing
    {"at_ms": 0, "action": "latency", "member": "w1", "extra_ms": 1, "duration_ms": 1},
    {"at_ms": 6006, "action": "coordinator_failover", "down_ms": 0},
    {"at_ms": 6006, "action": "remove_connector", "connector": "c1"},
    {
        "at_ms": 6006,
        "action": "loss",
        "member": "w1",
        "probability": 0.1,
        "direction": "to_coordinator",
        "duration_ms": 1,
    },
    {"at_ms": 6006, "action": "remove_connector", "connector": "c2"},
    {
        "at_ms": 6006,
        "action": "delay_request",
        "member": "w1",
        "request": "heartbeat",
        "delay_ms": 500,
        "duration_ms": 1000,
    },
]


def _spec(
    protocol: str, size: int, connectors: list[tuple[str, int]], steps: list[dict[str, Any]]
) -> ChaosSpec:
    """A jitter-free chaos run of ``size`` workers under ``protocol`` (no scheduled delay)
    with ``steps`` as its whole timeline."""
    return ChaosSpec(
        name="deleted-work",
        seed=1,
        campaign_seed=0,
        index=0,
        protocol=protocol,
        members=size,
        cluster_config={"connect.protocol": protocol, "scheduled.rebalance.max.delay.ms": 0},
        worker_configs={},
        jitter_ms=0,
        connectors=connectors,
        steps=steps,
        kinds=[str(step["action"]) for step in steps],
        duration_ms=steps[-1]["at_ms"] + 1,
    )


@pytest.mark.parametrize(
    ("protocol", "size", "connectors", "steps"),
    [
        ("compatible", 2, [("c1", 2)], _LEADER_CRASH),
        ("static", 2, [("c1", 2)], _LEADER_CRASH),
        ("compatible", 2, [("c1", 2)], _REVOCATION_LOST),
        ("compatible", 4, [("c1", 0), ("c2", 5)], _ALL_DELETED),
    ],
)
def test_the_state_machines_cases_are_named(
    protocol: str, size: int, connectors: list[tuple[str, int]], steps: list[dict[str, Any]]
) -> None:
    _, result = run_spec(_spec(protocol, size, connectors, steps))
    counts, first_new = classify(result)
    assert first_new is None
    assert counts.get(DELETED_NOT_REVOKED, 0) >= 1


def test_a_deleted_task_kept_across_a_downgrade_to_eager_is_kafka_13816() -> None:
    # w2 starts c1-1 from a config view that has not seen c1's deletion; then w1 restarts as
    # eager and the group goes eager: w2's first eager join keeps what it runs (KAFKA-13816),
    # so the deleted c1-1 runs on beside the duplicated connector c2, both outside w2's
    # assignment snapshot: leftovers, aside from convergence and named at the end
    steps = [
        {"at_ms": 6005, "action": "join", "member": "w3"},
        {"at_ms": 6006, "action": "remove_connector", "connector": "c1"},
        {
            "at_ms": 6006,
            "action": "restart",
            "member": "w1",
            "config": {"connect.protocol": "eager"},
        },
    ]
    _, result = run_spec(_spec("compatible", 2, [("c1", 2), ("c2", 0)], steps))
    counts, first_new = classify(result)
    assert first_new is None
    conv = result.summary.convergence
    assert conv.unconfigured_running_tasks == [] and result.summary.converged
    assert (conv.leftover_tasks, conv.leftover_connectors) == (["c1-1@w2"], ["c2@w2"])
    end = [r for r in result.records if r["kind"] == "violation" and r["invariant"] == "liveness"]
    assert [r.get("known_issue") for r in end] == ["KAFKA-13816"]
