"""scenarios.check.expect.evaluate: one line per failed expectation."""

from __future__ import annotations

import msgspec
import pytest

from scenarios.check.expect import evaluate
from scenarios.check.metrics import summarize
from scenarios.input.schema import Expect

SUMMARY = msgspec.structs.replace(
    summarize([]),
    converged=True,
    rebalances=53,
    task_downtime_ms_max=70000,
    task_downtime_ms_total=900000,
    task_movements=4,
    final_protocol="compatible",
    time_to_converge_ms=500000,
    violations={"double_ownership": 2, "stale_generation": 1},
)


def test_all_failures_reported() -> None:
    expect = Expect(
        converged=False,
        max_rebalances=40,
        min_rebalances=60,
        max_task_downtime_ms=60000,
        max_total_downtime_ms=600000,
        max_task_movements=0,
        final_protocol="sessioned",
        max_time_to_converge_ms=400000,
    )
    assert evaluate(expect, SUMMARY) == [
        "converged: expected false, got true",
        "no_violations: expected none, got 2 double_ownership, 1 stale_generation",
        "max_rebalances: expected <= 40, got 53",
        "min_rebalances: expected >= 60, got 53",
        "max_task_downtime_ms: expected <= 60000 ms, got 70000 ms",
        "max_total_downtime_ms: expected <= 600000 ms, got 900000 ms",
        "max_task_movements: expected <= 0, got 4",
        "final_protocol: expected 'sessioned', got 'compatible'",
        "max_time_to_converge_ms: expected <= 400000 ms, got 500000 ms",
    ]


def test_all_hold() -> None:
    expect = Expect(
        converged=True,
        max_rebalances=53,
        min_rebalances=53,
        max_task_downtime_ms=70000,
        max_total_downtime_ms=900000,
        max_task_movements=4,
        final_protocol="compatible",
        max_time_to_converge_ms=500000,
        expected_violations=["double_ownership", "stale_generation"],
    )
    assert evaluate(expect, SUMMARY) == []


def test_expected_violations_only_excuse_their_invariant() -> None:
    expect = Expect(expected_violations=["double_ownership"])
    assert evaluate(expect, SUMMARY) == ["no_violations: expected none, got 1 stale_generation"]
    assert evaluate(Expect(no_violations=False), SUMMARY) == []


def test_defaults_check_only_violations() -> None:
    assert evaluate(None, SUMMARY) == [
        "no_violations: expected none, got 2 double_ownership, 1 stale_generation"
    ]
    assert evaluate(None, msgspec.structs.replace(SUMMARY, violations={"liveness": 0})) == []


def test_eager_means_default_and_not_converged_time() -> None:
    summary = msgspec.structs.replace(
        SUMMARY, final_protocol="default", time_to_converge_ms=None, violations={}
    )
    assert evaluate({"final_protocol": "eager"}, summary) == []
    assert evaluate({"max_time_to_converge_ms": 10}, summary) == [
        "max_time_to_converge_ms: expected <= 10 ms, got null (not converged)"
    ]


def test_mapping_is_validated() -> None:
    with pytest.raises(msgspec.ValidationError):
        evaluate({"max_rebalance": 3}, SUMMARY)
