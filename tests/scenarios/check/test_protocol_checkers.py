"""The protocol checkers (scenarios/check/protocol_checkers.py): each one is silent on the
logs of clean library runs and reports its invariant by name, through ``groupsim check``, on a
log that breaks it (a clean log with one record changed or added, as a planted bug would)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scenarios.check.log_check import check_records
from scenarios.check.protocol_checkers import (
    PROTOCOL_INVARIANTS,
    check_stale_generation_accepted,
    protocol_violations,
)
from scenarios.check.violation import Violation
from scenarios.cli.main import app
from scenarios.eventlog.records import decode_log
from scenarios.input.library import load_any
from scenarios.input.schema import INVARIANTS
from scenarios.sim.runner import simulate
from tests.scenarios.check.logs import numbered, over_dicts, violation_names

Records = list[dict[str, Any]]


@pytest.fixture(scope="module")
def connect_log() -> Records:
    # heartbeats are logged in this library scenario
    return simulate(load_any("worker-bounce-within-delay"), 1, log_heartbeats=True).records


@pytest.fixture(scope="module")
def streams_log() -> Records:
    return simulate(load_any("kip-441-scale-out"), 1).records


def _names(records: Records) -> set[str]:
    return {v.invariant for v in check_records(records)}


def _first(records: Records, kind: str, **match: Any) -> int:
    return next(
        i
        for i, r in enumerate(records)
        if r["kind"] == kind and all(r.get(k) == v for k, v in match.items())
    )


def test_every_name_is_a_schema_invariant() -> None:
    assert set(PROTOCOL_INVARIANTS) <= set(INVARIANTS)


def test_clean_library_logs_break_no_protocol_rule(
    connect_log: Records, streams_log: Records
) -> None:
    assert protocol_violations(connect_log) == []
    assert protocol_violations(streams_log) == []


def test_generation_must_increase_except_after_a_failover_reload(connect_log: Records) -> None:
    log = copy.deepcopy(connect_log)
    gens = [r for r in log if r["kind"] == "generation"]
    gens[-1]["generation"] = gens[-2]["generation"]  # "bumped only on the first rebalance"
    assert "generation_regressed" in _names(log)
    # the same generation after a group_loaded of an older one is legitimate
    i = log.index(gens[-1])
    keep = ("t_ms", "seq", "protocol", "leader", "leader_id", "members", "member_ids")
    loaded = {key: gens[-2][key] for key in keep}
    loaded.update(kind="group_loaded", generation=gens[-2]["generation"] - 1, state="Stable")
    log.insert(i, loaded)
    found = protocol_violations(log)
    assert [v for v in found if v.invariant == "generation_regressed"] == []


def test_a_member_never_applies_an_older_generation(connect_log: Records) -> None:
    log = copy.deepcopy(connect_log)
    assignments = [r for r in log if r["kind"] == "assignment"]
    last = assignments[-1]
    older = next(
        a
        for a in assignments
        if a["member"] == last["member"] and a["generation"] < last["generation"]
    )
    log.append({**older, "seq": log[-1]["seq"] + 1, "t_ms": log[-1]["t_ms"]})
    found = [v for v in check_records(log) if v.invariant == "member_generation_regressed"]
    assert found and found[0].member == last["member"]


def test_coordinator_answers_sync_only_for_the_current_generation(connect_log: Records) -> None:
    log = copy.deepcopy(connect_log)
    # a SyncGroup for generation 1 sent once generation 2 exists, answered NONE
    g2 = _first(log, "generation", generation=2)
    sync = log[_first(log, "sync_group_request")]
    member, member_id = sync["member"], sync["member_id"]
    t = log[g2]["t_ms"]
    log[g2 + 1 : g2 + 1] = [
        {
            "t_ms": t,
            "seq": -1,
            "kind": "sync_group_request",
            "member_id": member_id,
            "generation": 1,
            "is_leader": False,
            "member": member,
        },
        {
            "t_ms": t + 2,
            "seq": -2,
            "kind": "sync_group_response",
            "member_id": member_id,
            "generation": 1,
            "error": "NONE",
            "member": member,
        },
    ]
    assert "stale_generation_accepted" in _names(log)
    log[g2 + 2]["error"] = "ILLEGAL_GENERATION"
    assert "stale_generation_accepted" not in _names(log)


def test_coordinator_answers_heartbeat_only_for_the_current_generation(
    connect_log: Records,
) -> None:
    log = copy.deepcopy(connect_log)
    g2 = _first(log, "generation", generation=2)
    hb = _first(log, "heartbeat_request")
    assert log[hb]["generation"] < 2
    member, member_id, t = log[hb]["member"], log[hb]["member_id"], log[g2]["t_ms"]
    log[g2 + 1 : g2 + 1] = [
        {
            "t_ms": t,
            "seq": -1,
            "kind": "heartbeat_request",
            "member_id": member_id,
            "generation": 1,
            "member": member,
        },
        {
            "t_ms": t + 2,
            "seq": -2,
            "kind": "heartbeat_response",
            "member_id": member_id,
            "generation": 1,
            "error": "NONE",
            "member": member,
        },
    ]
    found = [v for v in check_records(log) if v.invariant == "stale_generation_accepted"]
    assert found and "Heartbeat" in found[0].detail


def _generation_record(t_ms: int, generation: int) -> dict[str, Any]:
    return {
        "t_ms": t_ms,
        "kind": "generation",
        "generation": generation,
        "protocol": "sessioned",
        "leader": "w2",
        "leader_id": "w2-1",
        "members": ["w1", "w2"],
        "member_ids": ["w1-1", "w2-1"],
    }


def _sync(t_ms: int, kind: str, generation: int, error: str = "NONE") -> dict[str, Any]:
    record: dict[str, Any] = {
        "t_ms": t_ms,
        "kind": kind,
        "member_id": "w1-1",
        "generation": generation,
        "member": "w1",
    }
    if kind == "sync_group_request":
        record["is_leader"] = False
    else:
        record["error"] = error
    return record


@pytest.mark.parametrize(("answered", "fires"), [(3, False), (1, True)])
def test_a_syncgroup_answer_pairs_with_the_request_of_its_generation(
    answered: int, fires: bool
) -> None:
    """A member that rejoined with a SyncGroup still in flight (its answer held back, then
    dropped: chaos connect seed 1, run 63, a JoinGroup answer held through a herder stall)
    logs only its newest SyncGroup's answer: that answer is judged against that request, not
    against the older one, which was already stale when sent."""
    log = numbered(
        _generation_record(0, 1),
        _generation_record(100, 2),
        _sync(200, "sync_group_request", 1),  # sent when the group was at 2
        _generation_record(300, 3),
        _sync(300, "sync_group_request", 3),
        _sync(302, "sync_group_response", answered),
    )
    found = over_dicts(check_stale_generation_accepted)(log)
    assert violation_names(found) == (["stale_generation_accepted"] if fires else [])


@pytest.mark.parametrize(
    ("request_kind", "generation", "error", "fires"),
    [
        ("sync_group", 1, "NONE", True),
        ("sync_group", 1, None, True),  # parked: the coordinator took it as current
        ("heartbeat", 1, "REBALANCE_IN_PROGRESS", True),
        ("heartbeat", 3, "NONE", True),  # newer than the group's: not its generation either
        ("heartbeat", 1, "ILLEGAL_GENERATION", False),
        ("sync_group", 1, "UNKNOWN_MEMBER_ID", False),
        ("heartbeat", 2, "NONE", False),  # the current generation
        ("join_group", None, "NONE", False),  # a JoinGroup carries no generation
    ],
)
def test_a_late_request_is_judged_when_it_arrives(
    connect_log: Records, request_kind: str, generation: int | None, error: str | None, fires: bool
) -> None:
    log = copy.deepcopy(connect_log)
    g2 = _first(log, "generation", generation=2)
    late: dict[str, Any] = {
        "t_ms": log[g2]["t_ms"],
        "seq": -1,
        "kind": "late_request",
        "member": log[g2]["members"][0],
        "request": request_kind,
        "sent_ms": 0,
        "delay_ms": 5000,
        "error": error,
        "dropped": False,
    }
    if generation is not None:
        late["generation"] = generation
    log.insert(g2 + 1, late)
    found = [v for v in check_records(log) if v.invariant == "stale_generation_accepted"]
    assert [v.cause_seq for v in found] == ([-1] if fires else [])


def test_every_member_runs_the_elected_protocol(connect_log: Records) -> None:
    log = copy.deepcopy(connect_log)
    a = _first(log, "assignment")
    log[a]["protocol"] = "default" if log[a]["protocol"] != "default" else "sessioned"
    assert "protocol_mismatch" in _names(log)


def test_the_elected_protocol_must_win_the_members_vote(connect_log: Records) -> None:
    log = copy.deepcopy(connect_log)
    g = _first(log, "generation")
    assert log[g]["protocol"] != "default"  # every worker speaks the newer protocols
    assert protocol_violations(log) == []
    log[g]["protocol"] = "default"  # supported by all, but nobody's first choice
    found = [v for v in protocol_violations(log) if v.invariant == "protocol_vote"]
    assert [v.cause_seq for v in found] == [log[g]["seq"]]
    assert "elected 'default'" in found[0].detail


def test_the_vote_counts_first_candidates_and_accepts_any_tied_winner() -> None:
    from scenarios.check.log_rules import protocol_vote as _vote

    # ClassicGroup#selectProtocol: candidates are common to all; each votes its first one
    lists = [["sessioned", "compatible", "default"], ["compatible", "default"], ["default"]]
    assert _vote(lists) == (["default"], {"default"})
    assert _vote([["a", "b"], ["b", "a"]]) == (["a", "b"], {"a", "b"})  # a tie: either
    assert _vote([["a", "b"], ["b", "a"], ["b"]]) == (["b"], {"b"})


def test_a_stateful_active_goes_to_a_caught_up_client(streams_log: Records) -> None:
    """KIP-441 (TaskMovement#assignActiveTaskMovements): an active stays on a client that is
    not caught up only while no client has a smaller lag."""
    from scenarios.check import protocol_checkers
    from tests.scenarios.check.logs import over_dicts

    check_streams_active_caught_up = over_dicts(protocol_checkers.check_streams_active_caught_up)

    log = copy.deepcopy(streams_log)
    a = _first(log, "streams_assignment")
    record = log[a]
    client, decision = sorted(record["clients"].items())[0]
    task = decision["active"][0]
    acceptable = record["acceptable_recovery_lag"]
    assert check_streams_active_caught_up(log) == []
    # the holder falls behind, but every client is as far behind: still the best it has
    for lags in record["lags"].values():
        lags[task] = acceptable + 5
    assert check_streams_active_caught_up(log) == []
    # another client is caught up: Kafka would have moved the task there
    other = next(c for c in record["lags"] if c != client)
    record["lags"][other][task] = 0
    found = check_streams_active_caught_up(log)
    assert [(v.invariant, v.task) for v in found] == [("active_not_caught_up", task)]
    assert "active_not_caught_up" in _names(log)


def check_leader_continuity(records: Records) -> list[Violation]:
    """:func:`scenarios.check.leadership.check_leader_continuity` over a log's dicts."""
    from scenarios.check.leadership import check_leader_continuity

    return check_leader_continuity(decode_log(records))


def test_a_dynamic_leader_that_stays_a_member_keeps_the_leadership(
    connect_log: Records,
) -> None:
    log = copy.deepcopy(connect_log)
    gens = [i for i, r in enumerate(log) if r["kind"] == "generation" and r["member_ids"]]
    later = next(i for i in gens[1:] if log[gens[0]]["leader_id"] in log[i]["member_ids"])
    assert check_leader_continuity(log) == []
    old = log[later]["leader_id"]
    log[later]["leader_id"] = next(m for m in log[later]["member_ids"] if m != old)
    found = check_leader_continuity(log)
    assert found[0].cause_seq == log[later]["seq"]
    assert "still a member" in found[0].detail
    log[later]["leader_id"] = "nobody"
    assert "not a member" in check_leader_continuity(log)[0].detail


def test_every_member_is_told_the_generations_leader(connect_log: Records) -> None:
    log = copy.deepcopy(connect_log)
    j = next(
        i
        for i, r in enumerate(log)
        if r["kind"] == "join_group_response" and r["error"] == "NONE" and not r["is_leader"]
    )
    log[j]["leader_id"] = log[j]["member_id"]  # a follower told it leads
    [found] = check_leader_continuity(log)
    assert found.invariant == "leader_changed" and "was told leader" in found.detail


def test_streams_client_runs_only_its_latest_assignment(streams_log: Records) -> None:
    log = copy.deepcopy(streams_log)
    # a client keeps an active task the leader took away: drop the stop of a revoked task
    stops = [i for i, r in enumerate(log) if r["kind"] == "active_task_stopped"]
    assert stops, "the scenario moves at least one active task"
    del log[stops[0]]
    found = [v for v in check_records(log) if v.invariant == "stale_active_task"]
    assert found and found[0].task == streams_log[stops[0]]["task"]


def test_groupsim_check_names_the_new_invariant(connect_log: Records, tmp_path: Path) -> None:
    log = copy.deepcopy(connect_log)
    a = _first(log, "assignment")
    log[a]["protocol"] = "default" if log[a]["protocol"] != "default" else "sessioned"
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in log) + "\n")
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 1
    assert "protocol_mismatch" in result.output


def test_kip_987_static_job_goes_only_to_a_worker_that_names_it() -> None:
    log = copy.deepcopy(simulate(load_any("kip-987-test-plan"), 1).records)
    assert protocol_violations(log) == []
    starts = {r["member"]: r["config"] for r in log if r["kind"] == "member_start"}
    rounds = [r for r in log if r["kind"] == "assignor" and r["protocol"] == "static"]
    gen = {r["generation"]: r for r in log if r["kind"] == "generation"}
    # the static assignor gives a static task to a worker that does not name it
    for rnd in rounds:
        g = gen[rnd["generation"]]
        ids = dict(zip(g["member_ids"], g["members"], strict=True))
        static = [m for m in ids.values() if starts[m].get("static.tasks")]
        wildcard = [i for i, m in ids.items() if not starts[m].get("static.tasks")]
        if static and wildcard:
            job = starts[static[0]]["static.tasks"][0]
            given = rnd["assigned"].setdefault(wildcard[0], {"connectors": [], "tasks": []})
            given["tasks"] = [*given["tasks"], job]
            break
    else:
        pytest.fail("no static round with a static and a wildcard worker")
    found = [v for v in check_records(log) if v.invariant == "static_placement"]
    assert found and found[0].job == job


def test_a_streams_assignment_never_lists_a_task_as_active_and_standby(
    streams_log: Records,
) -> None:
    log = copy.deepcopy(streams_log)
    a = next(r for r in log if r["kind"] == "assignment" and r["active"])
    a["standby"] = [*a["standby"], a["active"][0]]
    found = [v for v in check_records(log) if v.invariant == "active_and_standby"]
    assert found and found[0].task == a["active"][0]


def test_a_member_loaded_from_the_group_record_votes_only_for_the_group_protocol() -> None:
    """After a coordinator failover, the loaded group knows each member's subscription for the
    group's protocol only (GroupMetadataManager#replay of a GroupMetadataValue): a static
    member kept in the next generation without rejoining supports that protocol alone, so
    ``range`` wins although the others put ``cooperative-sticky`` first (chaos, consumer kind,
    seed 8 run 190)."""
    from scenarios.check import protocol_checkers
    from tests.scenarios.check.logs import over_dicts

    check_protocol_vote = over_dicts(protocol_checkers.check_protocol_vote)

    both = ["cooperative-sticky", "range"]
    log = [
        {
            "seq": 1,
            "kind": "join_group_request",
            "member": "a",
            "member_id": "a-1",
            "protocols": both,
        },
        {
            "seq": 2,
            "kind": "join_group_request",
            "member": "b",
            "member_id": "b-1",
            "protocols": both,
        },
        {"seq": 3, "kind": "group_loaded", "protocol": "range", "member_ids": ["a-1", "b-1"]},
        {
            "seq": 4,
            "kind": "join_group_request",
            "member": "a",
            "member_id": "a-1",
            "protocols": both,
        },
        {
            "seq": 5,
            "kind": "generation",
            "generation": 3,
            "protocol": "range",
            "member_ids": ["a-1", "b-1"],
        },
    ]
    assert check_protocol_vote(log) == []
    # b rejoins with its own list: the vote is its again
    rejoined = [*log[:4], {**log[1], "seq": 4}, {**log[4], "seq": 6}]
    assert [v.invariant for v in check_protocol_vote(rejoined)] == ["protocol_vote"]
