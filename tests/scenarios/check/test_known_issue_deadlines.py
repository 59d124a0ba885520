"""Known-issue labels hold only inside Kafka's window: KAFKA-9184 and KAFKA-16056 close when
Kafka's client would have given up by its own timers; KAFKA-13816 closes at the owner's first
eager rejoin. Outside, the double ownership is a new violation."""

from __future__ import annotations

from typing import Any

from scenarios.check.invariants import InvariantChecker
from scenarios.check.log_check import check_records
from scenarios.check.violation import Violation
from tests.scenarios.check.logs import complete


def _run(records: list[dict[str, Any]]) -> Violation:
    checker = InvariantChecker()
    found: list[Violation] = []
    for seq, record in enumerate(records):
        found += checker.feed({"seq": seq, **record})
    return next(v for v in found if v.invariant == "double_ownership")


def _generation(t: int, generation: int, protocol: str, members: list[str]) -> dict[str, Any]:
    return {
        "t_ms": t,
        "kind": "generation",
        "generation": generation,
        "protocol": protocol,
        "leader": members[0],
        "leader_id": f"{members[0]}-x",
        "members": members,
        "member_ids": [f"{m}-x" for m in members],
    }


def _takes(
    t: int, member: str, generation: int, protocol: str, leader: str
) -> list[dict[str, Any]]:
    return [
        {
            "t_ms": t,
            "kind": "assignment",
            "member": member,
            "generation": generation,
            "protocol": protocol,
            "leader_id": f"{leader}-x",
            "member_id": f"{member}-x",
            "error": 0,
            "config_offset": 1,
            "connectors": [],
            "tasks": ["c-0"],
            "revoked_connectors": [],
            "revoked_tasks": [],
            "delay_ms": 0,
        },
        {
            "t_ms": t,
            "kind": "task_start",
            "member": member,
            "task": "c-0",
            "generation": generation,
        },
    ]


def _zombie_log(middle: list[dict[str, Any]], taken_at: int) -> list[dict[str, Any]]:
    """w1 runs c-0, then ``middle`` (faults, its removal), then w2 starts c-0 at ``taken_at``."""
    return [
        {"t_ms": 0, "kind": "member_start", "member": "w1", "config": {}},
        {"t_ms": 0, "kind": "member_start", "member": "w2", "config": {}},
        _generation(6000, 1, "sessioned", ["w2", "w1"]),
        *_takes(6001, "w1", 1, "sessioned", "w2"),
        *middle,
        _generation(taken_at - 1, 2, "sessioned", ["w2"]),
        *_takes(taken_at, "w2", 2, "sessioned", "w2"),
    ]


def _removed(t: int, member: str = "w1") -> dict[str, Any]:
    return {
        "t_ms": t,
        "kind": "member_removed",
        "member": member,
        "member_id": f"{member}-x",
        "reason": "session_timeout",
    }


PARTITION = {"t_ms": 25_000, "kind": "step", "action": "partition", "member": "w1"}


def test_kafka_9184_ends_when_the_cut_off_worker_gives_up() -> None:
    # partitioned 25 s..185 s, removed at 40 s: its session timer (10 s) and then
    # heartbeat.interval.ms (3 s) without a coordinator make it revoke by 40.1 + 10 + 3 s
    cut = [{**PARTITION, "duration_ms": 160_000}, _removed(40_000)]
    assert _run(_zombie_log(cut, 43_001)).known == "KAFKA-9184"
    assert _run(_zombie_log(cut, 53_000)).known == "KAFKA-9184"
    late = _run(_zombie_log(cut, 54_000))
    assert late.known is None
    log = complete(_zombie_log(cut, 54_000))
    assert "double_ownership" in {v.invariant for v in check_records(log)}


def test_kafka_9184_waits_out_a_joingroup_in_flight() -> None:
    # a JoinGroup sent at 30 s (lost in the partition): the heartbeat thread is off during a
    # rebalance, so the worker waits for its timeout (rebalance.timeout.ms + 5 s), then 3 s
    join = {"t_ms": 30_000, "kind": "join_group_request", "member": "w1", "member_id": "w1-x"}
    cut = [{**PARTITION, "duration_ms": 160_000}, join, _removed(40_000)]
    assert _run(_zombie_log(cut, 98_000)).known == "KAFKA-9184"
    assert _run(_zombie_log(cut, 98_100)).known is None


def test_kafka_9184_timers_come_from_the_members_config() -> None:
    cut = [{**PARTITION, "duration_ms": 160_000}, _removed(40_000)]
    log = _zombie_log(cut, 54_000)
    log[0] = {**log[0], "config": {"session.timeout.ms": 30_000}}
    assert _run(log).known == "KAFKA-9184"


def test_kafka_9184_after_a_partial_fault_lasts_until_the_rejoin_could_finish() -> None:
    # a lossy link lets FindCoordinator through: the worker never gives up by its timers; a
    # JoinGroup lost meanwhile is retried after rebalance.timeout.ms + 5 s, then one join phase
    lossy = {
        "t_ms": 25_000,
        "kind": "step",
        "action": "loss",
        "member": "w1",
        "duration_ms": 30_000,
        "probability": 0.25,
    }
    assert _run(_zombie_log([lossy, _removed(40_000)], 150_000)).known == ("KAFKA-9184")
    # 55 s + 3 s + 65 s + 60 s + 4 × 0.1 s = 183.4 s
    assert _run(_zombie_log([lossy, _removed(40_000)], 184_000)).known is None


def test_kafka_16056_ends_a_rejoin_after_the_stall() -> None:
    stall = [
        {"t_ms": 1000, "kind": "herder_stall", "member": "w1", "stall_ms": 70_000},
        {"t_ms": 61_000, "kind": "leave_group", "member": "w1", "reason": "poll timeout expired"},
    ]
    assert _run(_zombie_log(stall, 100_000)).known == "KAFKA-16056"
    # stall end 71 s + 3 s + 65 s + 60 s + 0.4 s
    assert _run(_zombie_log(stall, 200_000)).known is None


def _downgrade(revoked_first: bool) -> list[dict[str, Any]]:
    records = [
        {"t_ms": 0, "kind": "member_start", "member": "w1", "config": {}},
        {"t_ms": 0, "kind": "member_start", "member": "w2", "config": {}},
        _generation(6000, 1, "sessioned", ["w1", "w2"]),
        *_takes(6001, "w1", 1, "sessioned", "w1"),
    ]
    if revoked_first:
        # w1's eager rejoin revokes c-0 but (a bug) it keeps running
        records.append(
            {
                "t_ms": 7000,
                "kind": "revoke",
                "member": "w1",
                "tasks": ["c-0"],
                "reason": "eager_rejoin",
            }
        )
    records += [
        _generation(9000, 2, "default", ["w2", "w1"]),
        *_takes(9001, "w2", 2, "default", "w2"),
    ]
    return records


def test_kafka_13816_holds_until_the_owners_first_eager_rejoin() -> None:
    assert _run(_downgrade(revoked_first=False)).known == "KAFKA-13816"
    assert _run(_downgrade(revoked_first=True)).known is None
