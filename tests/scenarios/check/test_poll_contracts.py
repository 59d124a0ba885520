"""``poll_timer_off_deadline``, ``poll_timeout_not_left`` and ``join_timeout_off_bound``
(scenarios/check/poll_contracts.py, KIP-266 last):
KIP-62's poll timer, judged on the ``poll_timeout`` record — silent on a timer that expires at
its deadline and the leave it brings, reported on each way of breaking it (hand-made logs),
silent on a real poll-timeout run, registered, and finding its planted bugs in chaos."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios.check import poll_contracts
from scenarios.check.poll_contracts import (
    JOIN_TIMEOUT_OFF_BOUND,
    POLL_CONTRACT_INVARIANTS,
    POLL_TIMEOUT_NOT_LEFT,
    POLL_TIMER_OFF_DEADLINE,
)
from scenarios.check.protocol_checkers import PROTOCOL_INVARIANTS
from scenarios.input.library import consumer_library_dir, load_any
from scenarios.input.schema import INVARIANTS
from scenarios.sim.runner import simulate
from tests.scenarios.campaigns.chaos.planted import by_name, detect
from tests.scenarios.check.logs import numbered as _log
from tests.scenarios.check.logs import over_dicts
from tests.scenarios.check.logs import violation_names as _names

Record = dict[str, Any]

check = over_dicts(poll_contracts.check_poll_timeout)


def _stall(t_ms: int, stall_ms: int, kind: str = "poll_stall") -> Record:
    return {"t_ms": t_ms, "kind": kind, "stall_ms": stall_ms, "member": "c1"}


def _expired(
    t_ms: int, last_poll_ms: int = 1_000, *, in_group: bool = True, static: bool = False
) -> Record:
    return {
        "t_ms": t_ms,
        "kind": "poll_timeout",
        "last_poll_ms": last_poll_ms,
        "max_poll_interval_ms": 60_000,
        "in_group": in_group,
        "static": static,
        "member": "c1",
    }


def _leave(t_ms: int, reason: str = "poll timeout expired") -> Record:
    return {
        "t_ms": t_ms,
        "kind": "leave_group",
        "member_id": "c1-1",
        "reason": reason,
        "member": "c1",
    }


def test_every_name_is_a_schema_invariant_and_registered() -> None:
    assert set(POLL_CONTRACT_INVARIANTS) <= set(INVARIANTS)
    assert set(POLL_CONTRACT_INVARIANTS) <= set(PROTOCOL_INVARIANTS)


@pytest.mark.parametrize("kind", ["poll_stall", "stream_thread_stall", "herder_stall"])
def test_an_expiry_at_the_deadline_and_its_leave_are_clean(kind: str) -> None:
    assert check(_log(_stall(1_000, 90_000, kind), _expired(61_000), _leave(61_000))) == []


def test_an_expiry_with_no_stall_record_is_judged_on_its_deadline_alone() -> None:
    # a Connect herder job (a connector start, a task stop) blocks the herder unlogged
    assert check(_log(_expired(61_000), _leave(61_000))) == []


def test_a_late_expiry_is_reported() -> None:
    log = _log(_stall(1_000, 90_000), _expired(64_000), _leave(64_000))
    assert _names(check(log)) == [POLL_TIMER_OFF_DEADLINE]


def _found(t_ms: int) -> Record:
    return {"t_ms": t_ms, "kind": "coordinator_found", "member_id": "c1-1", "member": "c1"}


def test_a_late_expiry_noticed_when_the_coordinator_is_found_is_clean() -> None:
    # HeartbeatThread.run tests coordinatorUnknown() before pollTimeoutExpired: an expiry
    # while the coordinator was unknown is noticed once FindCoordinator answers
    log = _log(_stall(1_000, 90_000), _found(64_000), _expired(64_000), _leave(64_000))
    assert check(log) == []


def test_a_late_expiry_after_a_coordinator_found_in_another_ms_is_reported() -> None:
    log = _log(_stall(1_000, 90_000), _found(63_000), _expired(64_000), _leave(64_000))
    assert _names(check(log)) == [POLL_TIMER_OFF_DEADLINE]


def test_a_late_expiry_after_the_stall_ended_is_reported_even_on_a_coordinator_found() -> None:
    # the poll that ended the stall reset the timer: nothing is left to notice
    log = _log(_stall(1_000, 62_000), _found(64_000), _expired(64_000), _leave(64_000))
    assert _names(check(log)) == [POLL_TIMER_OFF_DEADLINE]


def test_an_early_expiry_is_reported() -> None:
    log = _log(_stall(1_000, 90_000), _expired(60_999), _leave(60_999))
    assert _names(check(log)) == [POLL_TIMER_OFF_DEADLINE]


def test_an_expiry_after_the_stall_ended_is_reported() -> None:
    # the poll at 31 000 reset the timer: it must not expire at 61 000
    log = _log(_stall(1_000, 30_000), _expired(61_000), _leave(61_000))
    assert _names(check(log)) == [POLL_TIMER_OFF_DEADLINE]


def test_an_expiry_from_a_poll_before_the_latest_stall_is_reported() -> None:
    log = _log(_stall(1_000, 90_000), _stall(20_000, 90_000), _expired(61_000), _leave(61_000))
    assert _names(check(log)) == [POLL_TIMER_OFF_DEADLINE]


def test_a_poll_timeout_leave_without_an_expiry_is_reported() -> None:
    log = _log(_stall(1_000, 90_000), _leave(50_000))
    assert _names(check(log)) == [POLL_TIMER_OFF_DEADLINE]


def test_a_poll_timeout_leave_in_a_later_ms_is_reported_twice() -> None:
    # the expiry brought no leave, and the leave came without an expiry
    log = _log(_stall(1_000, 90_000), _expired(61_000), _leave(61_001))
    assert _names(check(log)) == [POLL_TIMEOUT_NOT_LEFT, POLL_TIMER_OFF_DEADLINE]


def test_other_leaves_are_not_judged() -> None:
    assert check(_log(_leave(5_000, "shutdown"))) == []


def test_a_dynamic_member_in_the_group_that_does_not_leave_is_reported() -> None:
    for log in (
        _log(_expired(61_000)),
        _log(_expired(61_000), _stall(61_000, 5_000), _leave(61_000, "shutdown")),
    ):
        assert _names(check(log)) == [POLL_TIMEOUT_NOT_LEFT]


def test_a_static_member_or_one_out_of_the_group_sends_no_leave() -> None:
    assert check(_log(_expired(61_000, static=True))) == []
    assert check(_log(_expired(61_000, in_group=False))) == []
    for expired in (_expired(61_000, static=True), _expired(61_000, in_group=False)):
        assert _names(check(_log(expired, _leave(61_000)))) == [POLL_TIMEOUT_NOT_LEFT]


def test_a_second_expiry_in_the_same_ms_settles_the_first() -> None:
    log = _log(_expired(61_000), _expired(61_000), _leave(61_000))
    assert _names(check(log)) == [POLL_TIMEOUT_NOT_LEFT]


def test_the_library_poll_timeout_run_is_clean_and_judged() -> None:
    path = consumer_library_dir() / "slow-consumer-poll-timeout.toml"
    records = [dict(r) for r in simulate(load_any(path), 1).records]
    assert [r["member"] for r in records if r["kind"] == "poll_timeout"] == ["c3"]
    assert check(records) == []


@pytest.mark.parametrize(
    ("name", "invariant"),
    [
        # runs 16, 5, 4 of seeds 1-3
        ("consumer-poll-timeout-one-heartbeat-late", POLL_TIMER_OFF_DEADLINE),
        # runs 16, 51, 4 of seeds 1-3; no other checker finds it
        ("consumer-poll-timeout-without-leave", POLL_TIMEOUT_NOT_LEFT),
    ],
)
def test_chaos_finds_the_planted_bug_by_its_rule(name: str, invariant: str) -> None:
    found = detect(by_name(name), 30)
    assert found.found_at is not None, f"{name} not found in 30 runs"
    assert invariant in found.new, found


# ---------------------------------------------------------------- join_timeout_off_bound

check_join = over_dicts(poll_contracts.check_join_timeout)


def _join(t_ms: int) -> Record:
    return {
        "t_ms": t_ms,
        "kind": "join_group_request",
        "member_id": "c1-1",
        "protocols": ["range"],
        "reason": "",
        "member": "c1",
    }


def _join_timeout(t_ms: int, sent_ms: int = 1_000, rebalance_ms: int = 60_000) -> Record:
    return {
        "t_ms": t_ms,
        "kind": "join_timeout",
        "sent_ms": sent_ms,
        "rebalance_timeout_ms": rebalance_ms,
        "request_timeout_ms": 30_000,
        "member": "c1",
    }


def test_a_join_timeout_at_the_rebalance_timeout_and_lapse_is_clean() -> None:
    assert check_join(_log(_join(1_000), _join_timeout(66_000))) == []


def test_a_short_rebalance_timeout_waits_the_request_timeout() -> None:
    # max(request.timeout.ms 30 s, 10 s + 5 s)
    assert check_join(_log(_join(1_000), _join_timeout(31_000, rebalance_ms=10_000))) == []
    found = check_join(_log(_join(1_000), _join_timeout(16_000, rebalance_ms=10_000)))
    assert _names(found) == [JOIN_TIMEOUT_OFF_BOUND]


def test_a_join_timeout_off_its_bound_is_reported() -> None:
    for t_ms in (31_000, 65_999, 66_001):
        assert _names(check_join(_log(_join(1_000), _join_timeout(t_ms)))) == [
            JOIN_TIMEOUT_OFF_BOUND
        ]


def test_a_join_timeout_of_an_earlier_join_group_is_reported() -> None:
    log = _log(_join(1_000), _join(20_000), _join_timeout(66_000))
    assert _names(check_join(log)) == [JOIN_TIMEOUT_OFF_BOUND]


def test_chaos_finds_a_join_group_under_the_request_timeout() -> None:
    # runs 1, 2, 0 of seeds 1-3
    found = detect(by_name("consumer-join-under-request-timeout"), 10)
    assert found.found_at is not None
    assert JOIN_TIMEOUT_OFF_BOUND in found.new, found
