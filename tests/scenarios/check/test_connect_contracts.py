"""The KIP-415 bounds on the Connect leader's incremental round
(scenarios/check/connect_contracts.py): silent on groupsim's own library runs, each reports
its rule on a real ``assignor`` record changed to break it, and runs in ``groupsim check``."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import msgspec

from scenarios.check import connect_contracts
from scenarios.check.connect_contracts import _held
from scenarios.check.log_check import check_records
from scenarios.eventlog.kinds import AssignorInputs
from scenarios.input.library import load_any
from scenarios.sim.runner import simulate
from tests.scenarios.campaigns.chaos.planted import by_name

from .logs import over_dicts, violation_names

check_lost_work_dealt_evenly = over_dicts(connect_contracts.check_lost_work_dealt_evenly)
check_lost_work_to_candidates = over_dicts(connect_contracts.check_lost_work_to_candidates)
check_revocation_floor = over_dicts(connect_contracts.check_revocation_floor)
check_revocation_leaves_excess = over_dicts(connect_contracts.check_revocation_leaves_excess)
check_revoked_while_balanced = over_dicts(connect_contracts.check_revoked_while_balanced)

Record = dict[str, Any]


@cache
def _log(name: str) -> tuple[Record, ...]:
    return tuple(r for r in simulate(load_any(name), 1).records if r["kind"] != "violation")


def _first(name: str, key: str) -> Record:
    return copy.deepcopy(next(r for r in _log(name) if r["kind"] == "assignor" and r.get(key)))


def _names(found: list[Any]) -> list[str]:
    return violation_names(found)


def test_library_runs_keep_both_rules() -> None:
    for name in ("scale-out", "worker-bounce-within-delay", "rolling-upgrade-eager-to-sessioned"):
        log = list(_log(name))
        assert check_revocation_floor(log) == []
        assert check_lost_work_to_candidates(log) == []
        assert check_revoked_while_balanced(log) == []
        assert check_revocation_leaves_excess(log) == []


def test_a_load_balancing_revocation_past_the_floor_is_reported() -> None:
    # scale-out, generation 2: a fourth worker joins three; w1 gives up two tasks, keeping
    # at least floor(tasks / workers). Revoking all but floor - 1 of what it keeps breaks it.
    r = _first("scale-out", "revoked")
    assert check_revocation_floor([r]) == []
    member = next(m for m, w in r["revoked"].items() if w["tasks"])
    tasks = sum(r["inputs"]["snapshot"]["connectors"].values())
    floor = tasks // len(r["inputs"]["members"])
    held = _held(msgspec.convert(r["inputs"], AssignorInputs))
    assert held is not None
    mine = sorted(held[member]["tasks"] - set(r["revoked"][member]["tasks"]))
    assert len(mine) >= floor > 0
    r["revoked"][member]["tasks"].extend(mine[: len(mine) - floor + 1])
    found = check_revocation_floor([r])
    assert _names(found) == ["revoked_below_floor"]
    assert found[0].member == member
    assert "revoked_below_floor" in _names(check_records([r]))


def test_revocations_of_duplicates_and_deleted_work_are_not_load_balancing() -> None:
    r = _first("scale-out", "revoked")
    member = next(m for m, w in r["revoked"].items() if w["tasks"])
    # revoking an unconfigured (deleted) task too is not a load-balancing revocation
    r["revoked"][member]["tasks"] = ["gone-0"]
    assert check_revocation_floor([r]) == []


def test_lost_work_given_past_a_present_candidate_is_reported() -> None:
    # worker-bounce-within-delay: w2 came back empty within the delay, so at expiry all of
    # the lost work goes to it; handing one lost task to another member breaks the rule
    r = _first("worker-bounce-within-delay", "candidates")
    assert check_lost_work_to_candidates([r]) == []
    (candidate,) = r["candidates"]
    other = next(m for m, _ in r["inputs"]["members"] if m != candidate)
    task = r["assigned"][candidate]["tasks"].pop()
    r["assigned"][other] = {"connectors": [], "tasks": [task]}
    found = check_lost_work_to_candidates([r])
    assert _names(found) == ["lost_work_not_returned"]
    assert found[0].member == other
    assert "lost_work_not_returned" in _names(check_records([r]))


def test_candidates_absent_from_the_round_free_the_lost_work() -> None:
    r = _first("worker-bounce-within-delay", "candidates")
    other = next(m for m, _ in r["inputs"]["members"] if m not in r["candidates"])
    r["candidates"] = ["w9-gone"]
    r["assigned"][other] = {"connectors": [], "tasks": list(r["lost"]["tasks"])}
    assert check_lost_work_to_candidates([r]) == []


def test_a_revocation_from_a_balanced_load_is_reported() -> None:
    # the planted bug revokes one task of a worker above the floor when the load is already
    # balanced: scale-out's follow-up round (after the fourth worker got its share) does so
    bug = by_name("cooperative-revokes-when-balanced")
    with bug.applied():
        log = [r for r in simulate(load_any("scale-out"), 1).records if r["kind"] != "violation"]
    found = check_revoked_while_balanced(log)
    assert found and set(_names(found)) == {"revoked_while_balanced"}
    judged = next(r for r in log if r["seq"] == found[0].cause_seq)
    assert judged["kind"] == "assignor" and found[0].member in judged["revoked"]
    # nothing else in the log breaks a revocation rule
    assert check_revocation_floor(log) == []
    # the same round without its revocations is silent
    judged = copy.deepcopy(judged)
    judged["revoked"] = {}
    assert check_revoked_while_balanced([judged]) == []


def test_a_revocation_round_that_leaves_an_excess_is_reported() -> None:
    # scale-out, generation 2: the revocations take every worker to the ceiling. Giving one
    # revoked task back to the most loaded of them leaves it above what the round allows.
    r = _first("scale-out", "revoked")
    assert check_revocation_leaves_excess([r]) == []
    member = max(r["revoked"], key=lambda m: (len(r["revoked"][m]["tasks"]), m))
    r["revoked"][member]["tasks"] = r["revoked"][member]["tasks"][1:]
    found = check_revocation_leaves_excess([r])
    assert _names(found) == ["revocation_leaves_excess"]
    assert "revocation_leaves_excess" in _names(check_records([r]))
    # the planted bug (one worker too many keeps floor + 1) in a library run
    with by_name("cooperative-revocation-leaves-excess").applied():
        log = [x for x in simulate(load_any("scale-out"), 1).records if x["kind"] != "violation"]
    assert set(_names(check_revocation_leaves_excess(log))) == {"revocation_leaves_excess"}
    assert check_revoked_while_balanced(log) == check_revocation_floor(log) == []


def test_lost_work_dealt_unevenly_over_the_candidates_is_reported() -> None:
    # two present candidates: the round robin gives each half of the lost tasks (±1)
    r = _first("worker-bounce-within-delay", "candidates")
    members = [m for m, _ in r["inputs"]["members"]]
    first, second = members[0], members[1]
    lost = list(r["lost"]["tasks"]) + ["extra-0", "extra-1"]
    r["lost"] = {"connectors": [], "tasks": lost}
    r["candidates"] = [first, second]
    r["assigned"] = {
        first: {"connectors": [], "tasks": lost[0::2]},
        second: {"connectors": [], "tasks": lost[1::2]},
    }
    assert check_lost_work_dealt_evenly([r]) == []
    r["assigned"] = {first: {"connectors": [], "tasks": lost}}
    r["assigned"][second] = {"connectors": [], "tasks": []}
    assert _names(check_lost_work_dealt_evenly([r])) == ["lost_work_dealt_unevenly"]
    assert "lost_work_dealt_unevenly" in _names(check_records([r]))


def test_a_candidate_left_short_while_lost_work_is_withheld_is_reported() -> None:
    # at the expiry Kafka deals every lost item: a round that gives the first candidate its
    # round-robin share and withholds the second's is uneven too (the planted
    # cooperative-lost-work-to-first-candidate under chaos); lost work given to no one at all
    # is not judged here (scheduled_delay judges when it is handed out)
    r = _first("worker-bounce-within-delay", "candidates")
    members = [m for m, _ in r["inputs"]["members"]]
    first, second = members[0], members[1]
    lost = ["t-0", "t-1", "t-2", "t-3"]
    r["lost"] = {"connectors": [], "tasks": lost}
    r["candidates"] = [first, second]
    r["assigned"] = {first: {"connectors": [], "tasks": lost[0::2]}}
    assert _names(check_lost_work_dealt_evenly([r])) == ["lost_work_dealt_unevenly"]
    r["assigned"] = {first: {"connectors": [], "tasks": lost[:1]}}
    r["assigned"][second] = {"connectors": [], "tasks": lost[1:2]}
    assert check_lost_work_dealt_evenly([r]) == []
    r["assigned"] = {}
    assert check_lost_work_dealt_evenly([r]) == []
