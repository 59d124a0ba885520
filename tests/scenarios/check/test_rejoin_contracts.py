"""The rejoin rules (scenarios/check/rejoin_contracts.py): each is silent on a log that keeps
it and reports its invariant on one that breaks it (hand-made logs, as a planted bug would
write them), runs in ``groupsim check`` (``check_records``), and finds its planted bug of the
catalogue in chaos (``KIP_RULE_BUGS``)."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios.campaigns.chaos.generate import generate
from scenarios.campaigns.chaos.run import run_spec
from scenarios.check import rejoin_contracts
from scenarios.check.log_check import check_records
from scenarios.check.rejoin_contracts import (
    COMPLETING_REJOIN_NOT_REBALANCED,
    COMPLETING_REJOIN_REBALANCED,
    FOLLOWUP_REJOIN_MISSED,
    REJOIN_CONTRACT_INVARIANTS,
)
from scenarios.input.schema import INVARIANTS
from tests.scenarios.campaigns.chaos.planted import chaos_config, detect
from tests.scenarios.campaigns.chaos.planted.kip_rules import KIP_RULE_BUGS
from tests.scenarios.check.logs import complete, over_dicts
from tests.scenarios.check.logs import numbered as _log
from tests.scenarios.check.logs import violation_names as _names

check_completing_rejoin = over_dicts(rejoin_contracts.check_completing_rejoin)
check_followup_rejoin = over_dicts(rejoin_contracts.check_followup_rejoin)

Record = dict[str, Any]


def test_every_name_is_a_schema_invariant() -> None:
    assert set(REJOIN_CONTRACT_INVARIANTS) <= set(INVARIANTS)


# ---------------------------------------------------------------- followup_rejoin_missed


def _assignment(t: int, member: str = "s1", next_ms: int | None = 0, error: int = 0) -> Record:
    return {
        "t_ms": t,
        "kind": "assignment",
        "member": member,
        "member_id": f"{member}-1",
        "generation": 3,
        "protocol": "stream",
        "leader_id": "s2-1",
        "error": error,
        "active": [],
        "standby": [],
        "revoked": [],
        "next_rebalance_ms": next_ms,
    }


def _rec(t: int, kind: str, member: str = "s1", **extra: Any) -> Record:
    return {"t_ms": t, "kind": kind, "member": member, **extra}


def _join(t: int, member: str = "s1") -> Record:
    return _rec(t, "join_group_request", member, member_id=f"{member}-1", protocols=["stream"])


def test_a_client_told_to_rejoin_at_once_sends_join_group_then() -> None:
    kept = _log(_assignment(100), _join(100), _rec(5_000, "heartbeat_request"))
    assert check_followup_rejoin(kept) == []
    # the planted bug: no JoinGroup; the group's next record, 3 s later, is the client's
    # heartbeat, and its JoinGroup comes only when the heartbeat says the group rebalances
    broken = _log(_assignment(100), _rec(3_100, "heartbeat_request"), _join(3_200))
    found = check_followup_rejoin(broken)
    assert _names(found) == [FOLLOWUP_REJOIN_MISSED]
    assert found[0].member == "s1" and found[0].cause_seq == 0
    # another member's record after the due time is enough to tell; the log's end is not
    assert _names(check_followup_rejoin(_log(_assignment(100), _join(101, "s2")))) == [
        FOLLOWUP_REJOIN_MISSED
    ]
    assert check_followup_rejoin(_log(_assignment(100))) == []


def test_only_an_at_once_request_without_error_obliges() -> None:
    for r in (
        _assignment(100, next_ms=None),
        _assignment(100, next_ms=900),
        _assignment(100, error=1),
    ):
        assert check_followup_rejoin(_log(r, _rec(5_000, "heartbeat_request"))) == []
    version = _rec(100, "subscription_version_update", from_version=11, to_version=12)
    assert _names(check_followup_rejoin(_log(version, _rec(200, "heartbeat_request")))) == [
        FOLLOWUP_REJOIN_MISSED
    ]
    # the version change logged after the JoinGroup the same assignment's follow-up sent
    both = _log(_assignment(100), _join(100), version, _rec(200, "heartbeat_request"))
    assert check_followup_rejoin(both) == []


def test_a_probing_rebalance_timer_obliges_a_join_group_then() -> None:
    probe = _rec(60_000, "timer_fired", key="probing-rebalance")
    assert check_followup_rejoin(_log(_assignment(100, next_ms=60_000), probe, _join(60_000))) == []
    silent = _log(_assignment(100, next_ms=60_000), probe, _rec(63_000, "heartbeat_request"))
    assert _names(check_followup_rejoin(silent)) == [FOLLOWUP_REJOIN_MISSED]
    # due while the member's own rebalance is under way: that rebalance is the probe
    during = _log(
        _assignment(100, next_ms=60_000), _join(59_000), probe, _rec(63_000, "heartbeat_request")
    )
    assert check_followup_rejoin(during) == []
    other = _rec(60_000, "timer_fired", key="session")
    assert (
        check_followup_rejoin(
            _log(_assignment(100, next_ms=None), other, _rec(90_000, "heartbeat_request"))
        )
        == []
    )


def test_a_stalled_stream_thread_or_a_lost_coordinator_defers_the_rejoin() -> None:
    stall = _rec(50, "stream_thread_stall", stall_ms=2_000)
    assert check_followup_rejoin(_log(stall, _assignment(100), _join(2_050))) == []
    late = _log(stall, _assignment(100), _rec(2_051, "heartbeat_request"), _join(2_060))
    assert _names(check_followup_rejoin(late)) == [FOLLOWUP_REJOIN_MISSED]
    lost = _rec(100, "coordinator_unknown", member_id="s1-1", reason="session timed out")
    found = _rec(9_000, "coordinator_found", member_id="s1-1")
    assert check_followup_rejoin(_log(_assignment(100), lost, found, _join(9_000))) == []
    unknown_first = _log(lost, _assignment(100), _rec(5_000, "heartbeat_request", "s2"))
    assert check_followup_rejoin(unknown_first) == []
    silent = _log(_assignment(100), lost, found, _rec(9_001, "heartbeat_request"))
    assert _names(check_followup_rejoin(silent)) == [FOLLOWUP_REJOIN_MISSED]


@pytest.mark.parametrize("kind", ["member_stop", "member_crash", "member_fatal", "leave_group"])
def test_a_client_that_stops_or_leaves_owes_no_rejoin(kind: str) -> None:
    log = _log(_assignment(100), _rec(100, kind), _rec(5_000, "heartbeat_request", "s2"))
    assert check_followup_rejoin(log) == []


# ---------------------------------------------------------------- completing_rejoin_rebalanced


def _completing_join(same: bool, error: str | None, generation: int | None) -> Record:
    return {
        "t_ms": 10,
        "kind": "completing_join",
        "member": "w1",
        "member_id": "w1-1",
        "same_metadata": same,
        "group_generation": 4,
        "error": error,
        "generation": generation,
    }


def test_a_lost_join_group_answer_is_answered_with_the_current_generation() -> None:
    assert check_completing_rejoin(_log(_completing_join(True, "NONE", 4))) == []
    # changed metadata: a new join phase (the answer parked) is Kafka's behaviour
    assert check_completing_rejoin(_log(_completing_join(False, None, None))) == []
    parked = check_completing_rejoin(_log(_completing_join(True, None, None)))
    assert _names(parked) == [COMPLETING_REJOIN_REBALANCED]
    assert parked[0].member_id == "w1-1" and parked[0].generation == 4
    wrong = _log(_completing_join(True, "REBALANCE_IN_PROGRESS", -1))
    assert _names(check_completing_rejoin(wrong)) == [COMPLETING_REJOIN_REBALANCED]


def test_a_rejoin_with_changed_metadata_starts_a_join_phase() -> None:
    # a group of one member completes the new phase at once: the next generation
    assert check_completing_rejoin(_log(_completing_join(False, "NONE", 5))) == []
    kept = check_completing_rejoin(_log(_completing_join(False, "NONE", 4)))
    assert _names(kept) == [COMPLETING_REJOIN_NOT_REBALANCED]


def test_the_rules_run_in_groupsim_check() -> None:
    log = _log(_assignment(100), _rec(200, "heartbeat_request"), _completing_join(True, None, None))
    names = set(_names(check_records(complete(log))))
    assert {FOLLOWUP_REJOIN_MISSED, COMPLETING_REJOIN_REBALANCED} <= names


# ---------------------------------------------------------------- the planted bugs


#: bug -> (seed, runs budget, the rule that must find it): docs/chaos.md "Planted bugs"
FOUND_BY_RULE: dict[str, tuple[int, int, str]] = {
    # run 0 of seeds 1-3 (seed 1 also in tests/scenarios/campaigns/chaos/test_planted.py)
    "streams-ignores-followup": (2, 3, FOLLOWUP_REJOIN_MISSED),
    # a SyncGroup held past request.timeout.ms (the delay fault): every member rejoins while
    # the group completes; seeds 1, 2, 3: runs 85, 21, 130
    "coordinator-completing-rejoin-rebalances": (2, 30, COMPLETING_REJOIN_REBALANCED),
}


def test_chaos_reaches_a_same_metadata_rejoin_of_a_completing_group() -> None:
    # run 21 of seed 2 on clean code: the leader's SyncGroup is held 58 s, past
    # request.timeout.ms, so every member rejoins with its metadata while the group completes
    bug = next(b for b in KIP_RULE_BUGS if b.name == "coordinator-completing-rejoin-rebalances")
    _, result = run_spec(generate(chaos_config(bug, 21), 2, 21))
    taps = [r for r in result.records if r["kind"] == "completing_join"]
    assert taps and all(r["same_metadata"] and r["error"] == "NONE" for r in taps)
    assert all(r["generation"] == r["group_generation"] for r in taps)
    assert not set(_names(check_records(result.records))) & set(REJOIN_CONTRACT_INVARIANTS)


@pytest.mark.parametrize("name", sorted(FOUND_BY_RULE))
def test_chaos_finds_the_rejoin_bug_by_its_rule(name: str) -> None:
    seed, budget, rule = FOUND_BY_RULE[name]
    bug = next(b for b in KIP_RULE_BUGS if b.name == name)
    found = detect(bug, budget, seed=seed)
    assert found.found_at is not None, f"{name} not found in {budget} runs"
    assert rule in found.new, found
