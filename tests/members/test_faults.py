"""The fault model end to end: each fault is seeded, in virtual time and in the event log."""

from __future__ import annotations

from test_worker_scenarios import kinds

from scenarios.input.loader import loads_scenario
from scenarios.sim.runner import simulate

BASE = """
name = "faults"
seed = 2
settle_ms = 400000
[cluster]
size = 3
[cluster.config]
"connect.protocol" = "{protocol}"
"groupsim.task.start.ms" = 100
"groupsim.task.stop.ms" = 50
[workload.generate]
count = 3
tasks = 3
"""


def run(timeline: str, protocol: str = "sessioned"):
    return simulate(loads_scenario(BASE.format(protocol=protocol) + timeline, "f.toml"), 2)


def test_partitioned_worker_is_removed_revokes_everything_then_returns() -> None:
    result = run(
        '[[timeline]]\nat_ms = 30000\naction = "partition"\nmember = "w2"\nduration_ms = 30000\n'
    )
    (fault,) = kinds(result, "fault", fault="partition")
    removed = kinds(result, "member_removed", member="w2")
    assert removed and removed[0]["reason"] == "session_timeout"
    unknown = kinds(result, "coordinator_unknown", member="w2")[0]
    (revoke,) = kinds(result, "revoke", member="w2", reason="coordinator_lost")
    # WorkerCoordinator.poll: discovery gets heartbeat.interval.ms, then everything is revoked.
    assert revoke["t_ms"] - unknown["t_ms"] == 3_000
    assert kinds(result, "fault", fault="heal", member="w2")[0]["t_ms"] == 60_000
    assert kinds(result, "coordinator_found", member="w2")
    assert result.summary.converged and not result.failures


def test_stalled_herder_leaves_on_poll_timeout_and_kafka_16056_is_named() -> None:
    result = run(
        '[[timeline]]\nat_ms = 30000\naction = "slow"\nmember = "w2"\nstall_ms = 70000\n',
        protocol="eager",
    )
    (leave,) = kinds(result, "leave_group", member="w2", reason="poll timeout expired")
    assert leave["t_ms"] == 30_000 + 60_000  # rebalance.timeout.ms
    flagged = kinds(result, "violation")
    # The leaving worker keeps running its tasks while the eager group reassigns them.
    assert flagged and {r.get("known_issue") for r in flagged} == {"KAFKA-16056"}
    assert result.summary.violations == {"KAFKA-16056": len(flagged)}


def test_coordinator_failover_reloads_the_group_and_members_carry_on() -> None:
    result = run(
        '[[timeline]]\nat_ms = 30000\naction = "coordinator_failover"\ndown_ms = 2000\n'
        '[[timeline]]\nat_ms = 60000\naction = "join"\nmember = "w4"\n'
        '[[timeline]]\nat_ms = 60010\naction = "coordinator_failover"\ndown_ms = 500\n'
    )
    loads = kinds(result, "group_loaded")
    assert [r["t_ms"] for r in loads] == [32_000, 60_510]
    assert all(r["state"] == "Stable" for r in loads)
    # The join in flight at the second failover was answered NOT_COORDINATOR and retried.
    assert any(
        "NOT_COORDINATOR" in r["reason"] for r in kinds(result, "coordinator_unknown", member="w4")
    )
    assert "w4" in result.summary.workers_final
    assert result.summary.converged and not result.failures


def test_lossy_and_slow_links_are_seeded() -> None:
    timeline = (
        '[[timeline]]\nat_ms = 30000\naction = "loss"\nmember = "w2"\nprobability = 0.5\n'
        "duration_ms = 60000\n"
        '[[timeline]]\nat_ms = 100000\naction = "latency"\nmember = "w3"\nextra_ms = 2000\n'
        "duration_ms = 30000\n"
    )
    first, second = run(timeline), run(timeline)
    assert first.records == second.records
    assert kinds(first, "fault", fault="loss")[0]["until_ms"] == 90_000
    assert kinds(first, "fault", fault="latency")[0]["extra_ms"] == 2_000
    assert first.summary.converged and not first.failures
