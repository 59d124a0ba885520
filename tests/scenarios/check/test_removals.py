"""scenarios.check.removals: the coordinator evicts only members that went silent."""

from __future__ import annotations

from typing import Any

from scenarios.check.removals import SLACK_MS, check_unexplained_removal


def _log(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    """w1 starts and joins as member id ``a``; then ``extra``; then the coordinator removes
    ``a`` by session timeout (10 s) at 100 s."""
    records = [
        {"t_ms": 0, "kind": "member_start", "member": "w1", "config": {}},
        {"t_ms": 5, "kind": "join_group_response", "member": "w1", "member_id": "a"},
        *extra,
        {
            "t_ms": 100_000,
            "seq": 99,
            "kind": "member_removed",
            "member": "w1",
            "member_id": "a",
            "reason": "session_timeout",
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 60_000,
        },
    ]
    return records


def _partition(at: int, duration: int) -> dict[str, Any]:
    return {
        "t_ms": at,
        "kind": "fault",
        "fault": "partition",
        "member": "w1",
        "duration_ms": duration,
    }


def test_a_healthy_running_member_removed_is_a_violation() -> None:
    [found] = check_unexplained_removal(_log())
    assert found["invariant"] == "unexplained_removal" and found["cause_seq"] == 99
    assert found["member"] == "w1"


def test_a_fault_within_the_session_timeout_explains_it() -> None:
    # the partition ends within session timeout + slack before the removal
    ended = 100_000 - 10_000 - SLACK_MS
    assert check_unexplained_removal(_log(_partition(ended - 5_000, 5_000))) == []
    assert len(check_unexplained_removal(_log(_partition(ended - 6_000, 5_000)))) == 1


def test_an_open_partition_lasts_until_its_heal() -> None:
    heal = {"t_ms": 99_000, "kind": "fault", "fault": "heal", "member": "w1"}
    assert check_unexplained_removal(_log(_partition(1_000, 0), heal)) == []


def test_a_delayed_request_counts_until_it_arrives() -> None:
    delay = {
        "t_ms": 30_000,
        "kind": "fault",
        "fault": "delay_request",
        "member": "w1",
        "delay_ms": 60_000,
        "until_ms": 31_000,
    }
    assert check_unexplained_removal(_log(delay)) == []


def test_an_earlier_incarnations_id_or_a_stopped_process_is_not_judged() -> None:
    restart = {"t_ms": 50_000, "kind": "member_start", "member": "w1", "config": {}}
    assert check_unexplained_removal(_log(restart)) == []
    crash = {"t_ms": 50_000, "kind": "member_crash", "member": "w1"}
    assert check_unexplained_removal(_log(crash)) == []


def test_a_failover_touches_every_member() -> None:
    failover = {"t_ms": 95_000, "kind": "fault", "fault": "coordinator_failover", "down_ms": 0}
    assert check_unexplained_removal(_log(failover)) == []
