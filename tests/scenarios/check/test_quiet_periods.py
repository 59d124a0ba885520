"""``quiet_period_balance``: converged and balanced at the end of every quiet period longer
than the liveness bound, not only at the end of the run."""

from __future__ import annotations

from typing import Any

from scenarios.check.bounds import bound_from_log, liveness_bound_ms
from scenarios.check.log_check import check_records
from scenarios.check.quiet_periods import check_quiet_period_balance, quiet_periods
from tests.scenarios.check.logs import complete, typed

BOUND = bound_from_log(
    typed(
        [
            {"kind": "run_start", "connectors": {"c": 4}},
            {"kind": "member_start", "member": "w1", "config": {}},
        ]
    )
)


def _log(placement: dict[str, str], gap_ms: int) -> list[dict[str, Any]]:
    """Two workers, connector ``c`` on w1 and its four tasks where ``placement`` says, a
    ``slow`` fault at 1 s and another ``gap_ms`` after it ends, then the run ends."""
    records: list[dict[str, Any]] = [
        {"t_ms": 0, "kind": "run_start", "workers": ["w1", "w2"], "connectors": {"c": 4}},
        {"t_ms": 0, "kind": "member_start", "member": "w1", "config": {}},
        {"t_ms": 0, "kind": "member_start", "member": "w2", "config": {}},
        {"t_ms": 1000, "kind": "step", "action": "slow", "member": "w2", "stall_ms": 500},
        {"t_ms": 2000, "kind": "connector_started", "member": "w1", "connector": "c"},
    ]
    for task, member in placement.items():
        records.append({"t_ms": 2000, "kind": "task_started", "member": member, "task": task})
    later = 1500 + gap_ms
    records.append({"t_ms": later, "kind": "step", "action": "slow", "member": "w1", "stall_ms": 1})
    records.append({"t_ms": later + 1, "kind": "run_end"})
    return complete(records)


BALANCED = {"c-0": "w1", "c-1": "w1", "c-2": "w2", "c-3": "w2"}
LOPSIDED = {"c-0": "w1", "c-1": "w1", "c-2": "w1", "c-3": "w1"}


def test_the_bound_is_the_chaos_formula_with_defaults() -> None:
    assert (
        liveness_bound_ms(
            max_delay_ms=300_000,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=60_000,
            heartbeat_interval_ms=3000,
            initial_rebalance_delay_ms=3000,
            network_ms=100,
        )
        == BOUND
    )


def test_quiet_periods_are_the_gaps_longer_than_the_bound() -> None:
    log = _log(BALANCED, BOUND + 1)
    assert quiet_periods(typed(log), BOUND) == [(1500, 1500 + BOUND + 1)]
    assert quiet_periods(typed(_log(BALANCED, BOUND)), BOUND) == []


def test_an_unbalanced_group_after_a_quiet_period_is_a_violation() -> None:
    found = check_quiet_period_balance(typed(_log(LOPSIDED, BOUND + 1)))
    assert [v.invariant for v in found] == ["quiet_period_balance"]
    assert found[0].checked_at_ms == 1500 + BOUND
    assert found[0].task_counts == {"w1": 4, "w2": 0}
    assert found[0].known is None
    # groupsim check reports it by name
    assert "quiet_period_balance" in {
        v.invariant for v in check_records(complete(_log(LOPSIDED, BOUND + 1)))
    }


def test_a_balanced_group_or_a_short_gap_passes() -> None:
    assert check_quiet_period_balance(typed(_log(BALANCED, BOUND + 1))) == []
    assert check_quiet_period_balance(typed(_log(LOPSIDED, BOUND))) == []


def test_a_task_not_running_after_a_quiet_period_is_a_violation() -> None:
    missing = {"c-0": "w1", "c-1": "w2", "c-2": "w2"}
    found = check_quiet_period_balance(typed(_log(missing, BOUND + 1)))
    assert [v.invariant for v in found] == ["quiet_period_balance"]
    assert found[0].tasks == ["c-3"]
    assert "not converged" in found[0].detail


def test_streams_logs_are_not_judged() -> None:
    log = _log(LOPSIDED, BOUND + 1)
    log[0]["app"] = "streams"
    assert check_quiet_period_balance(typed(log)) == []


def test_a_duplicate_left_by_kafka_13816_keeps_its_label() -> None:
    # w1 runs c-0 and c-1 under sessioned; the group downgrades and w2 starts them too (w1 did
    # not revoke: KAFKA-13816), and nothing rebalances during the quiet period
    log = _log(BALANCED, BOUND + 1)
    gen = {"kind": "generation", "leader": "w1", "leader_id": "w1-x"}
    nothing = {"config_offset": 0, "delay_ms": 0}
    nothing |= dict.fromkeys(("connectors", "tasks", "revoked_connectors", "revoked_tasks"), [])
    extra: list[dict[str, Any]] = [
        {"t_ms": 1900, **gen, "generation": 1, "protocol": "sessioned"},
        {
            "t_ms": 1900,
            "kind": "assignment",
            "member": "w1",
            "generation": 1,
            "protocol": "sessioned",
            "leader_id": "w1-x",
            **nothing,
            "connectors": ["c"],
            "tasks": ["c-0", "c-1"],
        },
        *[
            {"t_ms": 1900, "kind": "task_start", "member": "w1", "task": t, "generation": 1}
            for t in ("c-0", "c-1")
        ],
        {"t_ms": 2100, **gen, "generation": 2, "protocol": "default"},
        {
            "t_ms": 2100,
            "kind": "assignment",
            "member": "w2",
            "generation": 2,
            "protocol": "default",
            "leader_id": "w1-x",
            **nothing,
            "tasks": ["c-0", "c-1", "c-2", "c-3"],  # w1's snapshot keeps c-0, c-1: no leftover
        },
        *[
            {"t_ms": 2100, "kind": k, "member": "w2", "task": t, "generation": 2}
            for t in ("c-0", "c-1")
            for k in ("task_start", "task_started")
        ],
    ]
    records = sorted(log[:-2] + extra, key=lambda r: r["t_ms"]) + log[-2:]
    records = complete([{**r, "seq": i} for i, r in enumerate(records)])
    found = check_quiet_period_balance(typed(records))
    assert [v.invariant for v in found] == ["quiet_period_balance"] * 2  # liveness, balance
    assert {v.known for v in found} == {"KAFKA-13816"}
