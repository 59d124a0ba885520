"""KAFKA-13816's leftovers in the checkers (scenarios/check/snapshots.py): an instance a worker
runs outside its assignment snapshot is the known issue for as long as it runs — a double
ownership it is part of, and the end of the run — while convergence is judged on the group's
assignment."""

from __future__ import annotations

from typing import Any

from scenarios.check.invariants import InvariantChecker
from scenarios.check.liveness import liveness_violations
from scenarios.check.metrics import summarize

from .logs import Log, typed


def _assign(log: Log, t: int, member: str, gen: int, protocol: str, tasks: list[str]) -> None:
    log.add(
        t,
        "assignment",
        member=member,
        member_id=f"{member}-1",
        generation=gen,
        protocol=protocol,
        leader_id="w1-1",
        error=0,
        config_offset=1,
        connectors=[],
        tasks=tasks,
        revoked_connectors=[],
        revoked_tasks=[],
        delay_ms=0,
    )


def _downgrade_then_up(w1_eager_snapshot: list[str]) -> Log:
    """w1 runs c-0 under sessioned; an eager round gives c-0 to w2 while w1, joining as a
    cooperative worker, keeps it (w1's eager assignment: ``w1_eager_snapshot``); w1's next
    eager join revokes its snapshot only; then the group is cooperative again, w2 leaves and
    w3 is given c-0."""
    log = Log().start({"c": 1}, ["w1", "w2", "w3"])
    log.generation(1000, 1)
    _assign(log, 1010, "w1", 1, "sessioned", ["c-0"])
    log.run_task(1010, "w1", "c-0", 1)
    _assign(log, 1010, "w3", 1, "sessioned", [])
    log.run_connector(1010, "w3", "c", 1)
    log.generation(5000, 2, protocol="default")
    _assign(log, 5010, "w1", 2, "default", w1_eager_snapshot)
    _assign(log, 5010, "w2", 2, "default", ["c-0"])
    log.run_task(5010, "w2", "c-0", 2)  # KAFKA-13816: w1 did not revoke at its join
    log.add(
        9000,
        "revoke",
        member="w1",
        generation=2,
        connectors=[],
        tasks=w1_eager_snapshot,
        reason="eager_rejoin",
    )
    for task in w1_eager_snapshot:
        log.stop_task(9000, "w1", task, reason="eager_rejoin")
    log.add(
        9000,
        "revoke",
        member="w2",
        generation=2,
        connectors=[],
        tasks=["c-0"],
        reason="eager_rejoin",
    )
    log.stop_task(9000, "w2", "c-0", reason="eager_rejoin")
    log.generation(9100, 3, protocol="compatible")
    _assign(log, 9110, "w1", 3, "compatible", [])
    _assign(log, 9110, "w2", 3, "compatible", [])
    log.add(20_000, "member_stop", member="w2")
    log.generation(21_000, 4, protocol="compatible")
    _assign(log, 21_010, "w3", 4, "compatible", ["c-0"])
    log.run_task(21_010, "w3", "c-0", 4)
    log.add(30_000, "run_end")
    return log


_W1_STOP = ("revoke", "task_stop", "task_stopped")


def _violations(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checker = InvariantChecker()
    return [v.fields() for r in records for v in checker.feed(r)]


def test_a_leftover_is_kafka_13816_whatever_the_group_runs_by_then() -> None:
    log = _downgrade_then_up(w1_eager_snapshot=[])
    found = _violations(log.records)
    assert [(v["invariant"], v["member"], v.get("known_issue")) for v in found] == [
        ("double_ownership", "w2", "KAFKA-13816"),  # the eager round (the protocol rule)
        ("double_ownership", "w3", "KAFKA-13816"),  # a cooperative round: w1's leftover
    ]
    summary = summarize(log.records)
    # judged on the group's assignment (w3 runs c-0) with w1's leftover listed apart
    assert summary.converged
    assert summary.convergence.leftover_tasks == ["c-0@w1"]
    assert summary.convergence.duplicate_tasks == []
    end = liveness_violations(typed(log.records), summary)
    assert [(v.invariant, v.known_issue, v.tasks) for v in end] == [
        ("liveness", "KAFKA-13816", ["c-0"])
    ]


def test_an_instance_in_its_owners_snapshot_is_a_new_violation() -> None:
    # the same, but w1's eager assignment holds c-0: its next eager join stops it, and a
    # second owner in a cooperative round would be groupsim's bug, not Kafka's
    log = _downgrade_then_up(w1_eager_snapshot=["c-0"])
    log.records = [
        r for r in log.records if not (r.get("member") == "w1" and r["kind"] in _W1_STOP)
    ]
    found = _violations(log.records)
    late = [v for v in found if v["member"] == "w3"]
    assert [(v["invariant"], v.get("known_issue")) for v in late] == [("double_ownership", None)]
    summary = summarize(log.records)
    assert not summary.converged and summary.convergence.duplicate_tasks == ["c-0"]
    assert summary.convergence.leftover_tasks == []
