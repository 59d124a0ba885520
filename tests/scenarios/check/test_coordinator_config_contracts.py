"""The ``[coordinator]`` settings' rules (scenarios/check/coordinator_config_contracts.py):
each is silent on a log that keeps it and reports its invariant on one that breaks it, and a
simulated group with a ``group.max.size`` below its member count and a member outside the
session bounds logs ``bounded_join`` records that decode, refuses the right members, and is
judged clean (the refused members die of the fatal error, the others stay live)."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios.check import coordinator_config_contracts as ccc
from scenarios.check.coordinator_config_contracts import (
    COORDINATOR_CONFIG_INVARIANTS,
    GENERATION_OVER_MAX_SIZE,
    INITIAL_DELAY_NOT_EXTENDED,
    MAX_SIZE_EXCEEDED,
    MAX_SIZE_REFUSED_WITH_ROOM,
    SESSION_TIMEOUT_ACCEPTED,
    SESSION_TIMEOUT_REFUSED,
    accepts_joining_member,
    initial_delay_completion,
)
from scenarios.check.log_check import check_records
from scenarios.input.library import loads_any
from scenarios.input.schema import INVARIANTS
from scenarios.sim.runner import simulate
from tests.scenarios.check.logs import numbered as _log
from tests.scenarios.check.logs import over_dicts
from tests.scenarios.check.logs import violation_names as _names

Record = dict[str, Any]

# the checkers read typed records: run them on the hand-written ones
check_generation_size = over_dicts(ccc.check_generation_size)
check_initial_delay_extended = over_dicts(ccc.check_initial_delay_extended)
check_max_size_answers = over_dicts(ccc.check_max_size_answers)
check_session_bounds = over_dicts(ccc.check_session_bounds)


def test_every_name_is_a_schema_invariant() -> None:
    assert set(COORDINATOR_CONFIG_INVARIANTS) <= set(INVARIANTS)


def _join(error: str | None, **fields: Any) -> Record:
    record: Record = {
        "t_ms": 1_000,
        "kind": "bounded_join",
        "member": "c3",
        "member_id": "",
        "session_timeout_ms": 45_000,
        "min_session_timeout_ms": 6_000,
        "max_session_timeout_ms": 45_000,
        "max_size": 2,
        "state": "Stable",
        "size": 2,
        "awaiting": 0,
        "known": False,
        "awaiting_member": False,
        "error": error,
    }
    record.update(fields)
    return record


# ---------------------------------------------------------------- session bounds


@pytest.mark.parametrize("session", [6_000, 20_000, 45_000])
def test_a_session_inside_the_inclusive_bounds_is_let_in(session: int) -> None:
    assert check_session_bounds(_log(*[_join(None, session_timeout_ms=session)])) == []
    refused = _log(*[_join("INVALID_SESSION_TIMEOUT", session_timeout_ms=session)])
    assert _names(check_session_bounds(refused)) == [SESSION_TIMEOUT_REFUSED]


@pytest.mark.parametrize("session", [5_999, 45_001])
def test_a_session_outside_the_bounds_is_refused(session: int) -> None:
    refused = _log(*[_join("INVALID_SESSION_TIMEOUT", session_timeout_ms=session)])
    assert check_session_bounds(refused) == []
    for answer in (None, "MEMBER_ID_REQUIRED", "NONE", "GROUP_MAX_SIZE_REACHED"):
        let_in = _log(*[_join(answer, session_timeout_ms=session)])
        assert _names(check_session_bounds(let_in)) == [SESSION_TIMEOUT_ACCEPTED], answer
    # answers that come before the bounds (a coordinator moving) are not judged
    moving = _log(*[_join("COORDINATOR_NOT_AVAILABLE", session_timeout_ms=session)])
    assert check_session_bounds(moving) == []


# ---------------------------------------------------------------- group.max.size


def test_accepts_joining_member_follows_kafka() -> None:
    # Empty and Dead take anyone
    assert accepts_joining_member("Empty", 0, 0, False, False, 1)
    assert accepts_joining_member("Dead", 5, 5, False, False, 1)
    # PreparingRebalance counts who awaits: a member already awaiting stays, others queue
    assert accepts_joining_member("PreparingRebalance", 3, 2, True, True, 2)
    assert not accepts_joining_member("PreparingRebalance", 3, 2, True, False, 2)
    assert accepts_joining_member("PreparingRebalance", 3, 1, False, False, 2)
    # CompletingRebalance and Stable count members: a member keeps its place
    assert accepts_joining_member("Stable", 2, 0, True, False, 2)
    assert not accepts_joining_member("CompletingRebalance", 2, 0, False, False, 2)
    assert accepts_joining_member("Stable", 1, 0, False, False, 2)


def test_a_newcomer_to_a_full_group_is_refused() -> None:
    assert check_max_size_answers(_log(*[_join("GROUP_MAX_SIZE_REACHED")])) == []
    for answer in (None, "MEMBER_ID_REQUIRED", "NONE"):
        let_in = _log(*[_join(answer)])
        assert _names(check_max_size_answers(let_in)) == [MAX_SIZE_EXCEEDED], answer
    # the last member to rejoin a group whose awaiting members fill it is turned away too
    late = _join(None, state="PreparingRebalance", size=3, awaiting=2, known=True)
    assert _names(check_max_size_answers(_log(*[late]))) == [MAX_SIZE_EXCEEDED]


def test_a_joiner_with_room_is_let_in() -> None:
    room = [
        _join(None, size=1),
        _join("MEMBER_ID_REQUIRED", size=1),
        _join(None, known=True),  # a member of a full Stable group keeps its place
        _join(
            None, state="PreparingRebalance", size=3, awaiting=2, known=True, awaiting_member=True
        ),
        _join(None, state="Empty", size=0),
    ]
    assert check_max_size_answers(_log(*room)) == []
    for record in room:
        refused = _log(*[{**record, "error": "GROUP_MAX_SIZE_REACHED"}])
        assert _names(check_max_size_answers(refused)) == [MAX_SIZE_REFUSED_WITH_ROOM]


def test_a_refused_session_is_not_judged_for_the_max_size() -> None:
    log = _log(*[_join("INVALID_SESSION_TIMEOUT", session_timeout_ms=90_000)])
    assert check_max_size_answers(log) == []


def _generation(ids: list[str], not_rejoined: list[str] | None = None) -> Record:
    record: Record = {
        "t_ms": 2_000,
        "kind": "generation",
        "generation": 4,
        "protocol": "range",
        "leader": "c1",
        "leader_id": ids[0],
        "members": [i.split("-")[0] for i in ids],
        "member_ids": ids,
        "rebalance_timeout_ms": 60_000,
    }
    if not_rejoined:
        record["not_rejoined"] = not_rejoined
    return record


def test_a_generation_never_holds_more_members_that_joined_than_the_max_size() -> None:
    full = _log(*[_join("GROUP_MAX_SIZE_REACHED"), _generation(["c1-1", "c2-1"])])
    assert check_generation_size(full) == []
    over = _log(*[_join(None), _generation(["c1-1", "c2-1", "c3-1"])])
    assert _names(check_generation_size(over)) == [GENERATION_OVER_MAX_SIZE]
    # a static member kept without a rejoin (KIP-345) does not count
    kept = _log(*[_join(None), _generation(["c1-1", "c2-1", "c3-1"], not_rejoined=["c3-1"])])
    assert check_generation_size(kept) == []
    # without a bounded_join (the default group.max.size) nothing is judged
    assert check_generation_size(_log(*[_generation(["c1-1", "c2-1", "c3-1"])])) == []


def test_a_served_group_is_judged_by_its_own_bounded_joins() -> None:
    # groupsim serve tags both records with their group: each group against its own
    over = [_join(None, group="g"), {**_generation(["c1-1", "c2-1", "c3-1"]), "group": "g"}]
    assert _names(check_generation_size(_log(*over))) == [GENERATION_OVER_MAX_SIZE]
    other = [_join(None, group="h"), {**_generation(["c1-1", "c2-1", "c3-1"]), "group": "g"}]
    assert check_generation_size(_log(*other)) == []


# ---------------------------------------------------------------- a simulated group

_GROUP = """
kind = "consumer"
name = "max-size"
seed = 1
settle_ms = 120000

[coordinator]
"group.max.size" = 3
"group.min.session.timeout.ms" = 10000
"group.max.session.timeout.ms" = 45000

[topics]
t1 = 6

[config]
"partition.assignment.strategy" = ["range"]

[[consumers]]
name = "c1"

[[consumers]]
name = "c2"
config = { "session.timeout.ms" = 10000 }

[[consumers]]
name = "c3"

[[consumers]]
name = "c4"
autostart = false

[[consumers]]
name = "c5"
config = { "session.timeout.ms" = 60000 }

[[timeline]]
at_ms = 30000
action = "join"
member = "c4"
"""


def test_a_group_over_its_limits_refuses_the_right_members_and_is_judged_clean() -> None:
    records = simulate(loads_any(_GROUP, "max-size.toml"), 1).records
    joins = [r for r in records if r["kind"] == "bounded_join"]
    assert joins and {r["max_size"] for r in joins} == {3}
    answers = {(r["member"], r["error"]) for r in joins}
    # c5's session is above the maximum; c2's equals the minimum (inclusive)
    assert ("c5", "INVALID_SESSION_TIMEOUT") in answers
    assert not any(m == "c2" and e == "INVALID_SESSION_TIMEOUT" for m, e in answers)
    # c4 joins a full group of three
    assert ("c4", "GROUP_MAX_SIZE_REACHED") in answers
    fatal = {r["member"]: r["error"] for r in records if r["kind"] == "member_fatal"}
    assert fatal == {"c5": "INVALID_SESSION_TIMEOUT", "c4": "GROUP_MAX_SIZE_REACHED"}
    assert [r for r in records if r["kind"] == "violation"] == []
    clean = [r for r in records if r["kind"] != "violation"]
    assert check_records(clean) == []
    # the same log with c4 let in breaks the rule
    i = next(i for i, r in enumerate(clean) if r["kind"] == "bounded_join" and r["member"] == "c4")
    planted = [*clean[:i], {**clean[i], "error": None}, *clean[i + 1 :]]
    assert MAX_SIZE_EXCEEDED in _names(check_records(planted))


# ---------------------------------------------------------------- KIP-134's extension


def test_the_initial_delay_chain_follows_kafka() -> None:
    # nobody added: one delay
    assert initial_delay_completion(0, 3_000, 60_000, []) == 3_000
    # one member added during the first delay: extended once by min(3 s, 57 s)
    assert initial_delay_completion(0, 3_000, 60_000, [1_000]) == 6_000
    # added in the very millisecond of a firing: counted for neither side (earliest)
    assert initial_delay_completion(0, 3_000, 60_000, [3_000]) == 3_000
    # members keep arriving: the chain stops by the rebalance timeout (3+3+3+1 of 10 s)
    arrivals = list(range(500, 20_000, 500))
    assert initial_delay_completion(0, 3_000, 10_000, arrivals) == 10_000
    # a delay as long as the rebalance timeout has nothing left to extend
    assert initial_delay_completion(0, 60_000, 60_000, [1_000]) == 60_000


def _phase(*events: Record) -> list[Record]:
    begin: Record = {
        "t_ms": 100,
        "kind": "group_state",
        "from": "Empty",
        "to": "PreparingRebalance",
        "generation": 0,
        "rebalance_timeout_ms": 60_000,
        "initial_rebalance_delay_ms": 3_000,
    }
    return _log(begin, *events)


def _added(t_ms: int, member: str) -> Record:
    return {"t_ms": t_ms, "kind": "member_added", "member": member, "member_id": f"{member}-1"}


def _completed(t_ms: int) -> Record:
    return _generation(["c1-1", "c2-1"]) | {"t_ms": t_ms, "generation": 1}


def test_a_phase_with_members_arriving_is_extended() -> None:
    kept = _phase(_added(100, "c1"), _added(1_100, "c2"), _completed(6_100))
    assert check_initial_delay_extended(kept) == []
    cut = _phase(_added(100, "c1"), _added(1_100, "c2"), _completed(3_100))
    assert _names(check_initial_delay_extended(cut)) == [INITIAL_DELAY_NOT_EXTENDED]
    # nobody arrived after the first: one delay is right
    alone = _phase(_added(100, "c1"), _completed(3_100))
    assert check_initial_delay_extended(alone) == []
    # a removal may complete the phase at once: not judged
    removed = {"t_ms": 2_000, "kind": "member_removed", "member": "c2", "member_id": "c2-1"}
    early = _phase(_added(100, "c1"), _added(1_100, "c2"), removed | {"reason": "leave"})
    assert check_initial_delay_extended([*early, {**_completed(3_100), "seq": 9}]) == []
