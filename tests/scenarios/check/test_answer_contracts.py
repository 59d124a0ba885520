"""The round-28 audit's rules (scenarios/check/answer_contracts.py): each is silent on a log
that keeps it and reports its invariant on one that breaks it (a hand-made log, as the planted
bug of ``tests/scenarios/campaigns/chaos/planted/audit28.py`` writes it), and runs in
``groupsim check`` (``check_records``)."""

from __future__ import annotations

from typing import Any

from scenarios.check import answer_contracts
from scenarios.check.answer_contracts import (
    ANSWER_CONTRACT_INVARIANTS,
    LEADER_REJOIN_NOT_REBALANCED,
    MEMBER_ID_DROPPED,
    REVOKED_WITHOUT_GENERATION,
    SESSION_EXPIRED_AFTER_HEARTBEAT,
    SYNC_UNKNOWN_TO_MEMBER,
)
from scenarios.check.coordinator_contracts import SERVE_TIMER_SLACK_MS
from scenarios.check.log_check import check_records
from scenarios.input.schema import INVARIANTS
from tests.scenarios.check.logs import complete, over_dicts
from tests.scenarios.check.logs import numbered as _log
from tests.scenarios.check.logs import violation_names as _names

check_leader_rejoin_rebalances = over_dicts(answer_contracts.check_leader_rejoin_rebalances)
check_lost_not_revoked = over_dicts(answer_contracts.check_lost_not_revoked)
check_member_id_kept = over_dicts(answer_contracts.check_member_id_kept)
check_session_after_heartbeat = over_dicts(answer_contracts.check_session_after_heartbeat)
check_sync_unknown_to_member = over_dicts(answer_contracts.check_sync_unknown_to_member)

Record = dict[str, Any]


def test_every_name_is_a_schema_invariant() -> None:
    assert set(ANSWER_CONTRACT_INVARIANTS) <= set(INVARIANTS)


# ---------------------------------------------------------------- sync_unknown_to_member


def _members(t_ms: int, *ids: str) -> Record:
    return {
        "t_ms": t_ms,
        "kind": "generation",
        "generation": 3,
        "protocol": "sessioned",
        "leader": "w1",
        "leader_id": ids[0],
        "members": [i.split("-")[0] for i in ids],
        "member_ids": list(ids),
    }


def _sync_answer(t_ms: int, member_id: str, error: str) -> Record:
    return {
        "t_ms": t_ms,
        "kind": "sync_group_response",
        "member": "w1",
        "member_id": member_id,
        "generation": 3,
        "error": error,
    }


def test_a_member_answered_unknown_member_id_to_its_sync_is_reported() -> None:
    log = _log(_members(10, "w1-a", "w2-b"), _sync_answer(20, "w1-a", "UNKNOWN_MEMBER_ID"))
    found = check_sync_unknown_to_member(log)
    assert _names(found) == [SYNC_UNKNOWN_TO_MEMBER]
    assert SYNC_UNKNOWN_TO_MEMBER in _names(check_records(complete(log)))


def test_unknown_member_id_after_the_removal_or_rebalancing_answers_are_kept() -> None:
    removed = {"t_ms": 15, "kind": "member_removed", "member_id": "w1-a", "reason": "leave"}
    log = _log(_members(10, "w1-a", "w2-b"), removed, _sync_answer(20, "w1-a", "UNKNOWN_MEMBER_ID"))
    assert check_sync_unknown_to_member(log) == []
    replaced = {"t_ms": 15, "kind": "member_replaced", "member_id": "w1-c", "old_member_id": "w1-a"}
    log = _log(_members(10, "w1-a"), replaced, _sync_answer(20, "w1-a", "UNKNOWN_MEMBER_ID"))
    assert check_sync_unknown_to_member(log) == []
    log = _log(_members(10, "w1-a"), _sync_answer(20, "w1-a", "REBALANCE_IN_PROGRESS"))
    assert check_sync_unknown_to_member(log) == []


# ---------------------------------------------------------------- session_expired_after_heartbeat


def _beat(t_ms: int, error: str, kind: str = "rebalance_heartbeat") -> Record:
    return {"t_ms": t_ms, "kind": kind, "member": "w1", "member_id": "w1-a", "error": error}


def _expired(t_ms: int) -> Record:
    return {
        "t_ms": t_ms,
        "kind": "member_removed",
        "member": "w1",
        "member_id": "w1-a",
        "reason": "session_timeout",
        "session_timeout_ms": 10_000,
    }


def test_a_session_expired_sooner_than_a_timeout_after_an_accepted_heartbeat() -> None:
    for kind, error in (
        ("rebalance_heartbeat", "REBALANCE_IN_PROGRESS"),
        ("completing_heartbeat", "NONE"),
    ):
        log = _log(_beat(5_000, error, kind), _expired(12_000))
        found = check_session_after_heartbeat(log)
        assert _names(found) == [SESSION_EXPIRED_AFTER_HEARTBEAT]
        assert SESSION_EXPIRED_AFTER_HEARTBEAT in _names(check_records(complete(log)))


def test_a_session_expiry_a_timeout_after_the_heartbeat_or_a_refused_one_is_kept() -> None:
    assert check_session_after_heartbeat(_log(_beat(5_000, "NONE"), _expired(15_000))) == []
    refused = _beat(5_000, "ILLEGAL_GENERATION")
    assert check_session_after_heartbeat(_log(refused, _expired(12_000))) == []
    # a served log's records name their group, and its timers get the serve slack
    beat = {**_beat(5_000, "NONE"), "group": "g"}
    served = {**_expired(15_000 - 1), "group": "g"}
    assert check_session_after_heartbeat(_log(beat, served)) == []
    early = {**_expired(15_000 - 1 - SERVE_TIMER_SLACK_MS), "group": "g"}
    assert _names(check_session_after_heartbeat(_log(beat, early))) == [
        SESSION_EXPIRED_AFTER_HEARTBEAT
    ]
    # another group's beat says nothing of this group's member
    assert check_session_after_heartbeat(_log({**beat, "group": "h"}, early)) == []


# ---------------------------------------------------------------- member_id_dropped


def _join(
    t_ms: int, member_id: str, reason: str = "SyncGroup failed: ILLEGAL_GENERATION"
) -> Record:
    return {
        "t_ms": t_ms,
        "kind": "join_group_request",
        "member": "w1",
        "member_id": member_id,
        "reason": reason,
    }


def test_a_member_that_forgets_its_id_after_illegal_generation_is_reported() -> None:
    log = _log(_sync_answer(10, "w1-a", "ILLEGAL_GENERATION"), _join(11, ""))
    found = check_member_id_kept(log)
    assert _names(found) == [MEMBER_ID_DROPPED]
    assert MEMBER_ID_DROPPED in _names(check_records(complete(log)))
    heartbeat = "heartbeat failed: ILLEGAL_GENERATION"
    log = _log(_sync_answer(10, "w1-a", "NONE"), _join(50, "", heartbeat))
    assert _names(check_member_id_kept(log)) == [MEMBER_ID_DROPPED]


def test_the_id_kept_or_reset_by_a_later_answer_is_not_reported() -> None:
    assert (
        check_member_id_kept(
            _log(_sync_answer(10, "w1-a", "ILLEGAL_GENERATION"), _join(11, "w1-a"))
        )
        == []
    )
    unknown = {
        "t_ms": 12,
        "kind": "join_group_response",
        "member": "w1",
        "error": "UNKNOWN_MEMBER_ID",
    }
    log = _log(
        _sync_answer(10, "w1-a", "ILLEGAL_GENERATION"), _join(11, "w1-a"), unknown, _join(13, "")
    )
    assert check_member_id_kept(log) == []
    # a JoinGroup since the last successful SyncGroup: the heartbeat reason is an old one
    heartbeat = "heartbeat failed: ILLEGAL_GENERATION"
    log = _log(
        _sync_answer(10, "w1-a", "NONE"),
        _join(50, "w1-a", heartbeat),
        unknown,
        _join(60, "", heartbeat),
    )
    assert check_member_id_kept(log) == []


# ---------------------------------------------------------------- revoked_without_generation


def _revoked(generation: int) -> Record:
    return {
        "t_ms": 10,
        "kind": "partitions_revoked",
        "member": "c1",
        "generation": generation,
        "partitions": ["t1-0"],
        "reason": "unknown member id",
    }


def test_partitions_revoked_without_a_generation_are_reported() -> None:
    log = _log(_revoked(-1))
    assert _names(check_lost_not_revoked(log)) == [REVOKED_WITHOUT_GENERATION]
    assert REVOKED_WITHOUT_GENERATION in _names(check_records(complete(log)))
    assert check_lost_not_revoked(_log(_revoked(4))) == []


# ---------------------------------------------------------------- leader_rejoin_not_rebalanced


def _stable() -> Record:
    return {
        "t_ms": 11,
        "kind": "group_state",
        "from": "CompletingRebalance",
        "to": "Stable",
        "generation": 3,
    }


def _join_answer(member_id: str, generation: int) -> Record:
    return {
        "t_ms": 30,
        "kind": "join_group_response",
        "member": "w1",
        "member_id": member_id,
        "error": "NONE",
        "generation": generation,
        "protocol": "sessioned",
        "leader_id": "w1-a",
        "is_leader": True,
    }


def test_a_leader_rejoining_stable_answered_the_same_generation_is_reported() -> None:
    rejoin = _join(20, "w1-a", "the leader wants a rebalance")
    log = _log(_members(10, "w1-a", "w2-b"), _stable(), rejoin, _join_answer("w1-a", 3))
    assert _names(check_leader_rejoin_rebalances(log)) == [LEADER_REJOIN_NOT_REBALANCED]
    assert LEADER_REJOIN_NOT_REBALANCED in _names(check_records(complete(log)))


def test_a_rebalancing_leader_rejoin_or_a_follower_rejoin_is_kept() -> None:
    rejoin = _join(20, "w1-a", "the leader wants a rebalance")
    log = _log(_members(10, "w1-a", "w2-b"), _stable(), rejoin, _join_answer("w1-a", 4))
    assert check_leader_rejoin_rebalances(log) == []
    follower = {**_join(20, "w2-b", "lost answer"), "member": "w2"}
    answer = {**_join_answer("w2-b", 3), "member": "w2"}
    assert (
        check_leader_rejoin_rebalances(
            _log(_members(10, "w1-a", "w2-b"), _stable(), follower, answer)
        )
        == []
    )
    # CompletingRebalance: a rejoin with unchanged metadata is answered the current generation
    log = _log(_members(10, "w1-a", "w2-b"), rejoin, _join_answer("w1-a", 3))
    assert check_leader_rejoin_rebalances(log) == []
