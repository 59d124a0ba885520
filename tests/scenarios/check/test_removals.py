"""scenarios.check.removals: the coordinator evicts only members that went silent."""

from __future__ import annotations

from typing import Any

from scenarios.check.removals import SLACK_MS
from scenarios.check.removals import check_unexplained_removal as _check
from scenarios.check.violation import Violation
from tests.scenarios.check.logs import typed


def check_unexplained_removal(records: list[dict[str, Any]]) -> list[Violation]:
    """The checker over hand-written records (decoded as the log is)."""
    return _check(typed(records))


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
    assert found.invariant == "unexplained_removal" and found.cause_seq == 99
    assert found.member == "w1"


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


def _answers_lost(at: int) -> dict[str, Any]:
    return {
        "t_ms": at,
        "kind": "fault",
        "fault": "loss",
        "member": "w1",
        "direction": "from_coordinator",
        "probability": 1.0,
        "until_ms": at + 30_000,
    }


def _connect_log(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    """_log for a Connect worker (heartbeat.interval.ms 3 s) that became Stable at 10 ms."""
    records = _log(*extra)
    records[0]["config"] = {"connect.protocol": "sessioned"}
    stable = {"t_ms": 10, "kind": "sync_group_response", "member": "w1", "error": "NONE"}
    records.insert(2, stable)
    return records


def test_lost_answers_explain_a_stable_workers_removal_only_after_its_own_session_ran_out() -> None:
    # answers lost from L: the worker's session timer runs out by L + 10 s - 3 s, its last
    # Heartbeat arrives by then, the coordinator's deadline 10 s later: not before
    # L + 2 * (10 s - 3 s), less the slack
    earliest = 100_000 - 2 * (10_000 - 3_000) + SLACK_MS
    assert check_unexplained_removal(_connect_log(_answers_lost(earliest))) == []
    [found] = check_unexplained_removal(_connect_log(_answers_lost(earliest + 1)))
    assert found.invariant == "unexplained_removal"
    # both directions, or a worker rejoining since the loss began: explained as before
    both = {**_answers_lost(earliest + 1), "direction": "both"}
    assert check_unexplained_removal(_connect_log(both)) == []
    rejoin = {"t_ms": earliest + 500, "kind": "join_group_request", "member": "w1"}
    assert check_unexplained_removal(_connect_log(_answers_lost(earliest + 1), rejoin)) == []
    # a Streams log does not carry its heartbeat interval: any loss explains
    assert check_unexplained_removal(_log(_answers_lost(earliest + 1))) == []


def test_a_join_phase_that_keeps_the_crashed_member_restarts_its_deadline() -> None:
    """completeClassicGroupJoin reschedules every member's heartbeat expiry, a kept static
    member's too: the session then counts from the new generation (consumer chaos seed 1
    run 69)."""
    crash = {"t_ms": 80_000, "kind": "member_crash", "member": "w1"}
    generation = {"t_ms": 85_000, "kind": "generation", "member_ids": ["a", "b"]}
    late = _connect_log(crash, generation)
    assert check_unexplained_removal(late[:-1] + [{**late[-1], "t_ms": 94_000}]) == []
    [found] = check_unexplained_removal(late[:-1] + [{**late[-1], "t_ms": 99_000}])
    assert "after its process crashed" in found.detail
    # a generation without it changes nothing
    other = {**generation, "member_ids": ["b"]}
    late = _connect_log(crash, other)
    assert len(check_unexplained_removal(late[:-1] + [{**late[-1], "t_ms": 94_000}])) == 1


def test_a_member_crashed_while_stable_is_evicted_within_its_session_timeout() -> None:
    # w1 Stable from 10 ms, crashes at 80 s: its deadline expires by 90 s (+ slack)
    crash = {"t_ms": 80_000, "kind": "member_crash", "member": "w1"}
    late = _connect_log(crash)
    assert (
        check_unexplained_removal(late[:-1] + [{**late[-1], "t_ms": 80_000 + 10_000 + SLACK_MS}])
        == []
    )
    [found] = check_unexplained_removal(late[:-1] + [{**late[-1], "t_ms": 94_000}])
    assert "after its process crashed" in found.detail
    # a fault on its link from the crash on (a Heartbeat delayed in flight) explains it
    slow = {
        "t_ms": 79_000,
        "kind": "fault",
        "fault": "latency",
        "member": "w1",
        "extra_ms": 9_000,
        "until_ms": 80_500,
    }
    assert (
        check_unexplained_removal(_connect_log(slow, crash)[:-1] + [{**late[-1], "t_ms": 94_000}])
        == []
    )
    # a JoinGroup parked at the coordinator when it crashed: not judged
    join = {"t_ms": 70_000, "kind": "join_group_request", "member": "w1"}
    assert (
        check_unexplained_removal(_connect_log(join, crash)[:-1] + [{**late[-1], "t_ms": 94_000}])
        == []
    )


def test_a_member_that_sent_leave_group_is_removed_by_it() -> None:
    leave = {"t_ms": 80_000, "kind": "leave_group", "member": "w1", "member_id": "a"}
    stop = {"t_ms": 80_000, "kind": "member_stop", "member": "w1"}
    [found] = check_unexplained_removal(_log(leave, stop))  # evicted at 100 s instead
    assert "sent LeaveGroup at 80000 ms" in found.detail
    assert check_unexplained_removal(_log(leave, stop, _partition(80_001, 5_000))) == []


def test_a_join_group_sent_in_a_fault_and_still_unanswered_explains_the_removal() -> None:
    # consumer chaos seed 1 run 133 (clean code): the JoinGroup of a member the join phase kept
    # was lost in a loss fault that ended 61 s before the removal; the client waits for its
    # answer (rebalance timeout + 5 s) without heartbeating, longer than its session
    loss = {"t_ms": 20_000, "kind": "fault", "fault": "loss", "member": "w1", "until_ms": 40_000}
    join = {"t_ms": 30_000, "kind": "join_group_request", "member": "w1", "member_id": "a"}
    assert check_unexplained_removal(_log(loss, join)) == []
    # answered (or sent outside the fault): not explained
    answer = {"t_ms": 31_000, "kind": "join_group_response", "member": "w1", "member_id": "a"}
    assert len(check_unexplained_removal(_log(loss, join, answer))) == 1
    late = {**join, "t_ms": 50_000}
    assert len(check_unexplained_removal(_log(loss, late))) == 1
