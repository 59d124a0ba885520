"""The coordinator's timer, pending-member and JoinGroup-answer contract checkers
(scenarios/check/coordinator_contracts.py): KIP-62's join-phase length, KIP-394's pending
members and the JoinGroup answer of an unknown member, each on a small hand-built log that
breaks the rule and on the same log obeying it, and through ``groupsim check``
(:func:`scenarios.check.log_check.check_records`)."""

from __future__ import annotations

from typing import Any

from scenarios.check import coordinator_contracts
from scenarios.check.coordinator_contracts import SERVE_TIMER_SLACK_MS
from scenarios.check.log_check import check_records

from .logs import complete, over_dicts, violation_names

check_join_answer_in_generation = over_dicts(coordinator_contracts.check_join_answer_in_generation)
check_join_phase_length = over_dicts(coordinator_contracts.check_join_phase_length)
check_pending_members = over_dicts(coordinator_contracts.check_pending_members)
check_pending_sync = over_dicts(coordinator_contracts.check_pending_sync)

Records = list[dict[str, Any]]


def _log(*records: dict[str, Any]) -> Records:
    return [
        {"t_ms": fields.pop("t", 0), "seq": i, **fields}
        for i, fields in enumerate(dict(r) for r in records)
    ]


def _names(found: list[Any]) -> list[str]:
    return violation_names(found)


def _prepare(t: int, timeout: int, frm: str = "Stable", **extra: Any) -> dict[str, Any]:
    return {
        "t": t,
        "kind": "group_state",
        "from": frm,
        "to": "PreparingRebalance",
        "generation": 3,
        "rebalance_timeout_ms": timeout,
        **extra,
    }


def _complete(t: int) -> dict[str, Any]:
    return {
        "t": t,
        "kind": "group_state",
        "from": "PreparingRebalance",
        "to": "CompletingRebalance",
        "generation": 4,
    }


def _not_rejoined(t: int) -> dict[str, Any]:
    return {
        "t": t,
        "kind": "member_removed",
        "member": "w3",
        "member_id": "w3-a",
        "reason": "not_rejoined",
    }


def test_kip62_the_join_phase_ends_by_the_rebalance_timeout() -> None:
    on_time = _log(_prepare(1_000, 60_000), _not_rejoined(61_000), _complete(61_000))
    assert check_join_phase_length(on_time) == []
    late = _log(_prepare(1_000, 60_000), _not_rejoined(61_001), _complete(61_001))
    assert _names(check_join_phase_length(late)) == ["join_phase_overran"]
    # a phase never closed is reported at the first record past its bound, once
    open_phase = _log(
        _prepare(1_000, 60_000), {"t": 70_000, "kind": "step"}, {"t": 80_000, "kind": "run_end"}
    )
    assert _names(check_join_phase_length(open_phase)) == ["join_phase_overran"]
    # only static stragglers left: the coordinator arms the timer again, and says so
    again = {
        "t": 61_000,
        "kind": "join_rescheduled",
        "generation": 3,
        "rebalance_timeout_ms": 60_000,
    }
    rescheduled = _log(_prepare(1_000, 60_000), again, _complete(100_000))
    assert check_join_phase_length(rescheduled) == []
    # a served log's timers fire on the wall clock, a little late
    served = _log(
        _prepare(1_000, 60_000, group="g"),
        {**_complete(61_000 + SERVE_TIMER_SLACK_MS), "group": "g"},
    )
    assert check_join_phase_length(served) == []


def test_kip62_the_initial_delay_bounds_a_phase_from_empty() -> None:
    delay = {"initial_rebalance_delay_ms": 3_000}
    # InitialDelayedJoin: the delay, repeated while members arrive, up to the rebalance timeout
    assert (
        check_join_phase_length(_log(_prepare(0, 10_000, "Empty", **delay), _complete(10_000)))
        == []
    )
    assert (
        check_join_phase_length(_log(_prepare(0, 1_000, "Empty", **delay), _complete(3_000))) == []
    )
    too_long = _log(_prepare(0, 1_000, "Empty", **delay), _complete(3_001))
    assert _names(check_join_phase_length(too_long)) == ["join_phase_overran"]


def test_kip62_a_join_completes_early_only_when_every_member_rejoined() -> None:
    early = _log(_prepare(1_000, 60_000), _not_rejoined(11_000), _complete(11_000))
    assert _names(check_join_phase_length(early)) == ["join_completed_early"]
    # every member rejoined (or left, or its session expired): completing at once is right
    for reason in ("leave", "session_timeout"):
        removed = {**_not_rejoined(11_000), "reason": reason}
        assert (
            check_join_phase_length(_log(_prepare(1_000, 60_000), removed, _complete(11_000))) == []
        )
    # records written before the field existed are not judged
    old = _log(_prepare(1_000, 60_000), _complete(90_000))
    del old[0]["rebalance_timeout_ms"]
    assert check_join_phase_length(old) == []


def _pending(t: int, mid: str = "w4-p") -> dict[str, Any]:
    return {
        "t": t,
        "kind": "member_pending",
        "member": "w4",
        "member_id": mid,
        "session_timeout_ms": 10_000,
    }


def test_kip394_a_pending_member_is_forgotten_within_its_session_timeout() -> None:
    forgotten = {
        "t": 15_000,
        "kind": "member_pending_removed",
        "member": "w4",
        "member_id": "w4-p",
        "reason": "session_timeout",
    }
    assert (
        check_pending_members(_log(_pending(5_000), forgotten, {"t": 40_000, "kind": "run_end"}))
        == []
    )
    rejoined = {"t": 6_000, "kind": "member_added", "member": "w4", "member_id": "w4-p"}
    assert (
        check_pending_members(_log(_pending(5_000), rejoined, {"t": 40_000, "kind": "run_end"}))
        == []
    )
    kept = _log(_pending(5_000), {"t": 15_001, "kind": "step"}, {"t": 40_000, "kind": "run_end"})
    assert _names(check_pending_members(kept)) == ["pending_member_kept"]
    # a coordinator that goes Dead forgets its pending members
    dead = {"t": 7_000, "kind": "group_state", "from": "Stable", "to": "Dead", "generation": 2}
    assert (
        check_pending_members(_log(_pending(5_000), dead, {"t": 40_000, "kind": "run_end"})) == []
    )


def test_kip394_a_pending_member_is_not_listed_in_a_generation() -> None:
    generation = {
        "t": 6_000,
        "kind": "generation",
        "generation": 2,
        "member_ids": ["w1-a", "w4-p"],
    }
    listed = _log(_pending(5_000), generation)
    assert _names(check_pending_members(listed)) == ["pending_member_listed"]
    added = {"t": 5_500, "kind": "member_added", "member": "w4", "member_id": "w4-p"}
    assert check_pending_members(_log(_pending(5_000), added, generation)) == []


def test_groupsim_check_runs_the_timer_checkers() -> None:
    found = check_records(
        complete(
            _log(
                {"kind": "run_start"},
                _prepare(1_000, 60_000),
                _not_rejoined(11_000),
                _complete(11_000),
                _pending(12_000),
                {"t": 30_000, "kind": "run_end"},
            )
        )
    )
    names = {v.invariant for v in found}
    assert {"join_completed_early", "pending_member_kept"} <= names


def test_a_join_answer_goes_to_a_member_of_its_generation() -> None:
    generation = {"kind": "generation", "generation": 4, "member_ids": ["w1-a", "w2-a"]}
    answer = {
        "kind": "join_group_response",
        "member": "w3",
        "member_id": "w3-old",
        "error": "NONE",
        "generation": 4,
    }
    outside = _log(generation, answer)
    assert _names(check_join_answer_in_generation(outside)) == ["join_answer_outside_generation"]
    assert check_join_answer_in_generation(_log(generation, {**answer, "member_id": "w2-a"})) == []
    assert (
        check_join_answer_in_generation(_log(generation, {**answer, "error": "UNKNOWN_MEMBER_ID"}))
        == []
    )
    # a static member that took over an id of the generation is answered it (KIP-345)
    replaced = {"kind": "member_replaced", "member": "w3", "member_id": "w3-old"}
    assert check_join_answer_in_generation(_log(generation, replaced, answer)) == []
    # a generation the log never named (before a failover reload) is not judged
    assert check_join_answer_in_generation(_log({**answer, "generation": 9})) == []


def _generation(t: int, timeout: int = 60_000) -> dict[str, Any]:
    return {
        "t": t,
        "kind": "generation",
        "generation": 4,
        "member_ids": ["w1-a", "w2-a"],
        "rebalance_timeout_ms": timeout,
    }


def test_kip814_members_sync_within_the_rebalance_timeout_or_are_removed() -> None:
    synced = {"t": 2_000, "kind": "pending_sync_complete", "generation": 4}
    assert (
        check_pending_sync(_log(_generation(1_000), synced, {"t": 90_000, "kind": "run_end"})) == []
    )
    expired = [
        {**_not_rejoined(61_000), "reason": "sync_timeout"},
        {"t": 61_000, "kind": "group_state", "from": "Stable", "to": "PreparingRebalance"},
    ]
    assert (
        check_pending_sync(_log(_generation(1_000), *expired, {"t": 90_000, "kind": "run_end"}))
        == []
    )
    kept = _log(_generation(1_000), {"t": 61_001, "kind": "step"})
    assert _names(check_pending_sync(kept)) == ["pending_sync_kept"]
    early = _log(_generation(1_000), {**expired[0], "t": 30_000}, expired[1])
    assert _names(check_pending_sync(early)) == ["pending_sync_expired_early"]
    # an Empty generation waits for nobody; a record without the field is not judged
    empty = {**_generation(1_000), "member_ids": []}
    assert check_pending_sync(_log(empty, {"t": 90_000, "kind": "run_end"})) == []
    old = _log(_generation(1_000), {"t": 90_000, "kind": "run_end"})
    del old[0]["rebalance_timeout_ms"]
    assert check_pending_sync(old) == []
