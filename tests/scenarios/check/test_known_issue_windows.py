"""KAFKA-9184's label needs its trigger: a member removed while it could not hear the
coordinator (a network fault on its link or a coordinator failover shortly before). A member
removed while its link was fine that keeps its work is a new violation."""

from __future__ import annotations

from typing import Any

from scenarios.check.invariants import InvariantChecker
from scenarios.check.violation import Violation


def _run(records: list[dict[str, Any]]) -> list[Violation]:
    checker = InvariantChecker()
    found: list[Violation] = []
    for seq, record in enumerate(records):
        found += checker.feed({"seq": seq, **record})
    return found


def _log(fault: dict[str, Any] | None) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [
        {"t_ms": 0, "kind": "member_start", "member": "w1", "config": {}},
        {"t_ms": 0, "kind": "member_start", "member": "w2", "config": {}},
        {
            "t_ms": 6000,
            "kind": "generation",
            "generation": 1,
            "protocol": "sessioned",
            "leader": "w2",
            "leader_id": "w2-x",
            "members": ["w1", "w2"],
            "member_ids": ["w1-x", "w2-x"],
        },
        {
            "t_ms": 6001,
            "kind": "assignment",
            "member": "w1",
            "generation": 1,
            "protocol": "sessioned",
            "leader_id": "w2-x",
            "tasks": ["c-0"],
        },
        {"t_ms": 6001, "kind": "task_start", "member": "w1", "task": "c-0", "generation": 1},
    ]
    if fault is not None:
        records.append(fault)
    records += [
        {
            "t_ms": 40000,
            "kind": "member_removed",
            "member": "w1",
            "member_id": "w1-x",
            "reason": "session_timeout",
        },
        {
            "t_ms": 43000,
            "kind": "generation",
            "generation": 2,
            "protocol": "sessioned",
            "leader": "w2",
            "leader_id": "w2-x",
            "members": ["w2"],
            "member_ids": ["w2-x"],
        },
        {
            "t_ms": 43001,
            "kind": "assignment",
            "member": "w2",
            "generation": 2,
            "protocol": "sessioned",
            "leader_id": "w2-x",
            "tasks": ["c-0"],
        },
        {"t_ms": 43001, "kind": "task_start", "member": "w2", "task": "c-0", "generation": 2},
    ]
    return records


def _double(found: list[Violation]) -> Violation:
    return next(v for v in found if v.invariant == "double_ownership")


def test_a_partitioned_member_removed_is_kafka_9184() -> None:
    partition = {
        "t_ms": 25000,
        "kind": "step",
        "action": "partition",
        "member": "w1",
        "duration_ms": 30000,
    }
    assert _double(_run(_log(partition))).known == "KAFKA-9184"


def test_a_member_removed_while_it_heard_the_coordinator_is_a_new_violation() -> None:
    assert _double(_run(_log(None))).known is None
    # a fault on another member's link, or one long over, does not explain w1's removal
    other = {
        "t_ms": 25000,
        "kind": "step",
        "action": "partition",
        "member": "w2",
        "duration_ms": 30000,
    }
    assert _double(_run(_log(other))).known is None


def test_a_partition_until_heal_counts_until_the_heal() -> None:
    log = _log({"t_ms": 1000, "kind": "step", "action": "partition", "member": "w1"})
    assert _double(_run(log)).known == "KAFKA-9184"
