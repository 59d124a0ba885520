"""The Connect worker's reactions, observed end to end in small scenarios.

Each test runs a tiny cluster through the real coordinator and checks the event log for one
behaviour of ``WorkerCoordinator`` / ``DistributedHerder``.
"""

from __future__ import annotations

from typing import Any

from scenarios.input.loader import loads_scenario
from scenarios.sim.runner import simulate

BASE = """
name = "t"
seed = 3
settle_ms = {settle}
[cluster]
size = {size}
[cluster.config]
"connect.protocol" = "{protocol}"
"groupsim.task.start.ms" = {start}
"groupsim.task.stop.ms" = {stop}
{extra_config}
[workload.generate]
count = {connectors}
tasks = {tasks}
prefix = "c"
"""


def run(
    timeline: str = "",
    *,
    size: int = 2,
    protocol: str = "sessioned",
    start: int = 100,
    stop: int = 50,
    connectors: int = 2,
    tasks: int = 3,
    settle: int = 400_000,
    extra_config: str = "",
    tail: str = "",
) -> Any:
    text = BASE.format(
        size=size,
        protocol=protocol,
        start=start,
        stop=stop,
        connectors=connectors,
        tasks=tasks,
        settle=settle,
        extra_config=extra_config,
    )
    return simulate(loads_scenario(text + timeline + tail, "t.toml"), 3)


def kinds(result: Any, kind: str, **match: Any) -> list[dict]:
    return [
        r
        for r in result.records
        if r["kind"] == kind and all(r.get(k) == v for k, v in match.items())
    ]


def test_eager_worker_stops_everything_before_it_rejoins() -> None:
    result = run('[[timeline]]\nat_ms = 30000\naction = "join"\nmember = "w3"\n', protocol="eager")
    join_t = 30_000
    revokes = [r for r in kinds(result, "revoke", reason="eager_rejoin") if r["t_ms"] >= join_t]
    assert {r["member"] for r in revokes} == {"w1", "w2"}
    for member in ("w1", "w2"):
        stopped = [
            r["t_ms"] for r in kinds(result, "task_stopped", member=member, reason="eager_rejoin")
        ]
        rejoin = next(
            r["t_ms"]
            for r in kinds(result, "join_group_request", member=member)
            if r["t_ms"] >= join_t
        )
        # The herder stops every task (50 ms) before JoinGroup goes out.
        assert stopped and max(stopped) <= rejoin
        assert rejoin - min(r["t_ms"] for r in revokes if r["member"] == member) >= 50
    assert result.summary.converged and not result.failures


def test_cooperative_revocation_is_followed_by_a_rejoin() -> None:
    result = run('[[timeline]]\nat_ms = 30000\naction = "join"\nmember = "w3"\n')
    revoked = [r for r in kinds(result, "revoke", reason="revoked")]
    assert revoked, "a new worker takes work away from the others"
    follow_ups = kinds(result, "join_group_request", reason="revocation follow-up")
    assert {r["member"] for r in follow_ups} == {r["member"] for r in revoked}
    # Revoked tasks start elsewhere only after they stopped (KIP-415 happens-before).
    for r in kinds(result, "task_stopped", reason="revoked"):
        restart = next(
            x for x in kinds(result, "task_start", task=r["task"]) if x["t_ms"] >= r["t_ms"]
        )
        assert restart["member"] == "w3"
    assert not kinds(result, "violation")


def test_scheduled_delay_expiry_makes_the_worker_rejoin() -> None:
    result = run(
        '[[timeline]]\nat_ms = 30000\naction = "crash"\nmember = "w2"\n',
        extra_config='"scheduled.rebalance.max.delay.ms" = 20000',
        settle=200_000,
    )
    delayed = [r for r in kinds(result, "assignment", member="w1") if r["delay_ms"] > 0]
    assert delayed and delayed[0]["delay_ms"] == 20_000
    fired = kinds(result, "timer_fired", member="w1", key="scheduled-rebalance")
    assert fired and fired[0]["t_ms"] == delayed[0]["t_ms"] + 20_000
    rejoin = kinds(
        result, "join_group_request", member="w1", reason="scheduled rebalance delay expired"
    )
    assert rejoin and rejoin[0]["t_ms"] == fired[0]["t_ms"]
    # w2's work ends up on w1 after the delay.
    assert result.summary.workers_final["w1"].tasks == 6


def test_crash_is_noticed_after_the_session_timeout_and_leave_at_once() -> None:
    result = run(
        '[[timeline]]\nat_ms = 30000\naction = "crash"\nmember = "w2"\n'
        '[[timeline]]\nat_ms = 30000\naction = "leave"\nmember = "w1"\n',
        size=3,
        settle=400_000,
    )
    removed = {r["member"]: r for r in kinds(result, "member_removed")}
    assert removed["w1"]["reason"] == "leave" and removed["w1"]["t_ms"] - 30_000 < 1_000
    assert removed["w2"]["reason"] == "session_timeout"
    # The broker's session timer runs from w2's last heartbeat (every 3 s) before the crash.
    assert 10_000 - 3_000 <= removed["w2"]["t_ms"] - 30_000 <= 10_000 + 10
    assert not kinds(result, "leave_group", member="w2")
    assert kinds(result, "leave_group", member="w1")


def test_start_and_stop_take_their_configured_virtual_time() -> None:
    result = run(start=700, stop=300)
    for started in kinds(result, "task_started"):
        begun = next(
            r for r in kinds(result, "task_start", task=started["task"], member=started["member"])
        )
        assert started["t_ms"] - begun["t_ms"] == 700


def test_herder_stall_longer_than_rebalance_timeout_leaves_the_group() -> None:
    # A task start that blocks the herder past rebalance.timeout.ms expires the poll timer
    # (Heartbeat.pollTimer): the member sends LeaveGroup (KAFKA-16056's path).
    result = run(
        start=70_000,
        connectors=1,
        tasks=1,
        size=1,
        extra_config='"rebalance.timeout.ms" = 60000',
        settle=200_000,
    )
    leaves = kinds(result, "leave_group", reason="poll timeout expired")
    assert leaves
    assert kinds(result, "member_removed", reason="leave")


def test_config_changes_trigger_rebalances() -> None:
    result = run(
        '[[timeline]]\nat_ms = 30000\naction = "add_connector"\nconnector = "new"\ntasks = 4\n'
        '[[timeline]]\nat_ms = 60000\naction = "set_tasks"\nconnector = "new"\ntasks = 2\n'
        '[[timeline]]\nat_ms = 90000\naction = "remove_connector"\nconnector = "c1"\n',
        settle=120_000,
    )
    started = {r["task"] for r in kinds(result, "task_started")}
    assert {"new-0", "new-1", "new-2", "new-3"} <= started
    stopped_deleted = {
        r["task"] for r in kinds(result, "task_stopped") if r["task"].startswith("c1-")
    }
    assert stopped_deleted == {"c1-0", "c1-1", "c1-2"}
    final = result.summary.workers_final
    assert sum(w.tasks for w in final.values()) == 3 + 2  # c2's 3 tasks + new's 2
    assert result.summary.converged and not result.failures


def test_lagging_leader_gets_config_mismatch_and_recovers() -> None:
    # w1 (the leader: it joins first) reads the config topic 5 s late; w2 at once. A new
    # connector reaches w2 first, so the leader cannot reach the largest offset: every member
    # gets CONFIG_MISMATCH, the leader reads to the end and everyone rejoins.
    text = BASE.format(
        size=0,
        protocol="sessioned",
        start=10,
        stop=10,
        connectors=1,
        tasks=2,
        settle=60_000,
        extra_config="",
    ).replace("size = 0\n", "")
    text += """
[[cluster.workers]]
name = "w1"
config = { "groupsim.config.read.lag.ms" = 5000 }
[[cluster.workers]]
name = "w2"
start_ms = 100
[[timeline]]
at_ms = 30000
action = "add_connector"
connector = "late"
tasks = 2
[[timeline]]
at_ms = 45000
action = "add_connector"
connector = "later"
tasks = 2
"""
    result = simulate(loads_scenario(text, "t.toml"), 3)
    mismatches = [r for r in kinds(result, "assignment") if r["error"] == 1]
    assert mismatches, "the lagging leader must answer CONFIG_MISMATCH"
    assert {r["member"] for r in mismatches} == {"w1", "w2"}
    assert result.summary.converged and not result.failures
    assert {"late-0", "late-1"} <= {r["task"] for r in kinds(result, "task_started")}
    # Work survives the failed round: the snapshot keeps it (WorkerCoordinator merges into a
    # failed assignment too), so nothing that ran before the mismatch moves or restarts.
    assert not [
        r for r in kinds(result, "task_start") if r["task"].startswith("c1-") and r["t_ms"] > 30_000
    ]
    assert result.summary.task_movements == 0


def test_one_eager_worker_pins_the_group_to_default_and_others_warn() -> None:
    # The vote elects the lowest common protocol; workers that ran v2 in their previous
    # generation log that KIP-507 validation is off (DistributedHerder's warning). The
    # restarted worker never ran v2, so it does not.
    result = run(
        '[[timeline]]\nat_ms = 30000\naction = "restart"\nmember = "w3"\n'
        'config = { "connect.protocol" = "eager" }\n',
        size=3,
        connectors=3,
        tasks=4,
    )
    protocols = [r["protocol"] for r in kinds(result, "generation")]
    assert protocols[0] == "sessioned" and protocols[-1] == "default"
    downgrades = kinds(result, "protocol_downgrade")
    assert {(r["member"], r["from_version"], r["to_version"]) for r in downgrades} == {
        ("w1", 2, 0),
        ("w2", 2, 0),
    }
