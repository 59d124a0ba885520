"""scenarios.check.invariants: each safety invariant on hand-written record sequences."""

from __future__ import annotations

from typing import Any

from scenarios.check.invariants import InvariantChecker

from .logs import Log


def run(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checker = InvariantChecker()
    found = []
    for record in records:
        found.extend(checker.feed(record))
    found.extend(checker.finish())
    return [v.fields() for v in found]  # the violation records' fields, as the log holds them


def clean_log() -> Log:
    log = Log().start({"c": 2}, ["w1", "w2"])
    for src, dst in (
        ("Empty", "PreparingRebalance"),
        ("PreparingRebalance", "CompletingRebalance"),
        ("CompletingRebalance", "Stable"),
    ):
        log.add(3000, "group_state", **{"from": src, "to": dst, "generation": 1})
    log.generation(3000, 1)
    log.assignment(3010, "w1", 1)
    log.assignment(3010, "w2", 1)
    log.run_connector(3010, "w1", "c", 1)
    log.run_task(3010, "w1", "c-0", 1, start_ms=100)
    log.run_task(3010, "w2", "c-1", 1, start_ms=100)
    # cooperative move of c-1 from w2 to w1: revoke, stop, then start elsewhere
    log.add(9000, "group_state", **{"from": "Stable", "to": "PreparingRebalance", "generation": 1})
    log.add(
        9100,
        "group_state",
        **{"from": "PreparingRebalance", "to": "CompletingRebalance", "generation": 2},
    )
    log.generation(9100, 2)
    log.add(9100, "group_state", **{"from": "CompletingRebalance", "to": "Stable", "generation": 2})
    log.assignment(9110, "w2", 2)
    log.stop_task(9110, "w2", "c-1", stop_ms=50)
    log.assignment(9200, "w1", 2)
    log.run_task(9200, "w1", "c-1", 2)
    log.add(9300, "violation", invariant="double_ownership", detail="ignored by the checker")
    log.add(20000, "run_end")
    return log


def test_clean_sequence_passes() -> None:
    assert run(clean_log().records) == []


def test_double_ownership_while_previous_owner_still_stopping() -> None:
    log = Log().start({"c": 1}, ["w1", "w2"])
    log.generation(1, 1)
    log.assignment(2, "w1", 1)
    log.run_task(2, "w1", "c-0", 1)
    log.generation(10, 2)
    log.assignment(11, "w1", 2)
    log.add(11, "task_stop", member="w1", task="c-0", reason="revoked")  # stopping, still owned
    log.assignment(12, "w2", 2)
    log.run_task(12, "w2", "c-0", 2)
    found = run(log.records)
    assert found == [
        {
            "invariant": "double_ownership",
            "detail": "task c-0 starts on w2 while w1 still owns it",
            "task": "c-0",
            "member": "w2",
            "owners": ["w1", "w2"],
            "generation": 2,
            "cause_seq": log.records[-2]["seq"],
        }
    ]


def test_double_ownership_of_a_connector() -> None:
    log = Log().start({"c": 0}, ["w1", "w2"])
    log.generation(1, 1)
    log.assignment(2, "w1", 1)
    log.assignment(2, "w2", 1)
    log.run_connector(3, "w1", "c", 1)
    log.run_connector(4, "w2", "c", 1)
    found = run(log.records)
    assert [(v["invariant"], v["connector"], v["owners"]) for v in found] == [
        ("double_ownership", "c", ["w1", "w2"])
    ]


def test_stopped_or_crashed_owner_releases() -> None:
    log = Log().start({"c": 1}, ["w1", "w2", "w3"])
    log.generation(1, 1)
    for w in ("w1", "w2", "w3"):
        log.assignment(2, w, 1)
    log.run_task(2, "w1", "c-0", 1)
    log.add(5, "member_crash", member="w1")  # all of w1's work is gone
    log.run_task(6, "w2", "c-0", 1)
    log.stop_task(7, "w2", "c-0")
    log.run_task(8, "w3", "c-0", 1)
    log.add(9, "member_stop", member="w3")
    log.run_task(10, "w2", "c-0", 1)
    assert run(log.records) == []


def test_stale_assignment_generation() -> None:
    log = Log().start({"c": 1}, ["w1", "w2"])
    log.generation(1, 1)
    log.generation(5, 2)
    log.assignment(6, "w2", 1)
    found = run(log.records)
    assert found == [
        {
            "invariant": "stale_generation",
            "detail": "w2 applies an assignment of generation 1; "
            "the group's latest generation is 2",
            "member": "w2",
            "generation": 1,
            "group_generation": 2,
            "cause_seq": log.records[-1]["seq"],
        }
    ]


def test_assignment_before_any_generation_is_stale() -> None:
    log = Log().start({}, ["w1"])
    log.assignment(1, "w1", 1)
    found = run(log.records)
    assert [(v["invariant"], v["group_generation"]) for v in found] == [("stale_generation", None)]


def test_task_start_on_stale_generation() -> None:
    log = Log().start({"c": 1}, ["w1"])
    log.generation(1, 1)
    log.assignment(2, "w1", 1)
    log.generation(3, 2)
    log.add(4, "task_start", member="w1", task="c-0", generation=2)  # w1 applied only gen 1
    found = run(log.records)
    assert [(v["invariant"], v["generation"], v["assignment_generation"]) for v in found] == [
        ("stale_generation", 2, 1)
    ]
    assert found[0]["detail"] == (
        "w1 starts task c-0 in generation 2 but its latest applied assignment is generation 1"
    )


def test_task_start_after_restart_without_assignment() -> None:
    log = Log().start({"c": 1}, ["w1"])
    log.generation(1, 1)
    log.assignment(2, "w1", 1)
    log.add(3, "member_crash", member="w1")
    log.add(4, "member_start", member="w1", config={})
    log.add(5, "task_start", member="w1", task="c-0", generation=1)
    found = run(log.records)
    assert [v["invariant"] for v in found] == ["stale_generation"]
    assert found[0]["assignment_generation"] is None


def test_illegal_transition_not_in_table() -> None:
    log = Log()
    log.add(0, "group_state", **{"from": "Empty", "to": "PreparingRebalance", "generation": 0})
    log.add(1, "group_state", **{"from": "PreparingRebalance", "to": "Stable", "generation": 1})
    found = run(log.records)
    assert found == [
        {
            "invariant": "illegal_transition",
            "detail": "group_state PreparingRebalance -> Stable: "
            "PreparingRebalance -> Stable is not a valid transition",
            "from": "PreparingRebalance",
            "to": "Stable",
            "previous": "PreparingRebalance",
            "generation": 1,
            "cause_seq": 1,
        }
    ]


def test_illegal_transition_from_mismatch() -> None:
    log = Log()
    log.add(0, "group_state", **{"from": "Empty", "to": "PreparingRebalance", "generation": 0})
    log.add(1, "group_state", **{"from": "Stable", "to": "PreparingRebalance", "generation": 1})
    found = run(log.records)
    assert [v["detail"] for v in found] == [
        "group_state Stable -> PreparingRebalance: from Stable but the group was in "
        "PreparingRebalance"
    ]


def test_every_legal_transition_passes_and_dead_from_anywhere() -> None:
    chain = [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "PreparingRebalance",
        "Empty",
        "Dead",
        "Dead",
    ]
    log = Log()
    for a, b in zip(chain, chain[1:], strict=False):
        log.add(0, "group_state", **{"from": a, "to": b, "generation": 0})
    assert run(log.records) == []
    bad = Log()
    bad.add(0, "group_state", **{"from": "Dead", "to": "Empty", "generation": 0})
    bad.add(0, "group_state", **{"from": "Empty", "to": "Bogus", "generation": 0})
    assert [v["detail"] for v in run(bad.records)] == [
        "group_state Dead -> Empty: Dead -> Empty is not a valid transition",
        "group_state Empty -> Bogus: unknown state Bogus",
    ]


def test_foreign_assignment() -> None:
    log = Log().start({"c": 1}, ["w1", "w2"])
    log.generation(1, 1, leader_id="w1-1")
    log.assignment(2, "w2", 1, leader_id="w2-9")
    found = run(log.records)
    assert found == [
        {
            "invariant": "foreign_assignment",
            "detail": "w2 applies an assignment from leader w2-9 but the leader of generation 1 "
            "is w1-1",
            "member": "w2",
            "generation": 1,
            "leader_id": "w2-9",
            "group_leader_id": "w1-1",
            "cause_seq": log.records[-1]["seq"],
        }
    ]


def test_owners_query() -> None:
    checker = InvariantChecker()
    log = Log().start({"c": 1}, ["w1"])
    log.generation(1, 1)
    log.assignment(1, "w1", 1)
    log.add(2, "task_start", member="w1", task="c-0", generation=1)
    for record in log.records:
        checker.feed(record)
    assert checker.owners("task", "c-0") == ["w1"]
    checker.feed({"t_ms": 3, "seq": 99, "kind": "task_stopped", "member": "w1", "task": "c-0"})
    assert checker.owners("task", "c-0") == []
