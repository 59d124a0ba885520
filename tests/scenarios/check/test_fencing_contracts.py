"""``sync_not_fenced`` (scenarios/check/fencing_contracts.py): silent on a log whose replaced
static member id hears FENCED_INSTANCE_ID on SyncGroup, reported when the coordinator answers
otherwise — a held SyncGroup (``late_request``), one sent after the replacement, a served
``wire_response`` — not after the instance's holder left, registered with the protocol
checkers, and finding its planted bug of the catalogue in chaos."""

from __future__ import annotations

from typing import Any

from scenarios.campaigns.chaos.generate import generate
from scenarios.campaigns.chaos.run import run_spec
from scenarios.check import fencing_contracts
from scenarios.check.fencing_contracts import FENCING_CONTRACT_INVARIANTS, SYNC_NOT_FENCED
from scenarios.check.log_check import check_records
from scenarios.check.protocol_checkers import PROTOCOL_INVARIANTS
from scenarios.input.schema import INVARIANTS
from tests.scenarios.campaigns.chaos.planted import by_name, chaos_config, detect
from tests.scenarios.check.logs import numbered as _log
from tests.scenarios.check.logs import over_dicts
from tests.scenarios.check.logs import violation_names as _names

Record = dict[str, Any]

# the checker reads typed records: run it on the hand-written ones
check_sync_fenced = over_dicts(fencing_contracts.check_sync_fenced)


def _rec(t: int, kind: str, member: str = "c1", **extra: Any) -> Record:
    return {"t_ms": t, "kind": kind, "member": member, **extra}


def _replaced(t: int) -> Record:
    return _rec(t, "member_replaced", "c1n", member_id="B", old_member_id="A")


def _held_sync(error: str | None, *, replaced_first: bool = True) -> list[Record]:
    """c1 sends a SyncGroup with A at 100, held until 9,100; c1n takes the instance at 5,000."""
    records = [_rec(100, "sync_group_request", member_id="A", generation=4, is_leader=False)]
    late = _rec(
        9_100,
        "late_request",
        request="sync_group",
        generation=4,
        sent_ms=100,
        delay_ms=9_000,
        error=error,
        dropped=False,
    )
    records += [_replaced(5_000), late] if replaced_first else [late, _replaced(9_200)]
    return records


def test_every_name_is_a_schema_invariant_and_registered() -> None:
    assert set(FENCING_CONTRACT_INVARIANTS) <= set(INVARIANTS)
    assert set(FENCING_CONTRACT_INVARIANTS) <= set(PROTOCOL_INVARIANTS)


def test_a_held_sync_group_of_a_replaced_id_answered_fenced_is_clean() -> None:
    assert check_sync_fenced(_log(*_held_sync("FENCED_INSTANCE_ID"))) == []
    assert check_sync_fenced(_log(*_held_sync("NOT_COORDINATOR"))) == []


def test_a_held_sync_group_of_a_replaced_id_answered_otherwise_is_reported() -> None:
    for error in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", None):
        found = check_sync_fenced(_log(*_held_sync(error)))
        assert _names(found) == [SYNC_NOT_FENCED], error
        assert found[0].member_id == "A"


def test_a_sync_group_that_arrived_before_the_replacement_is_not_judged() -> None:
    assert check_sync_fenced(_log(*_held_sync("NONE", replaced_first=False))) == []


def test_a_sync_group_sent_after_the_replacement_is_judged_by_its_answer() -> None:
    def log(error: str) -> list[Record]:
        return _log(
            _replaced(5_000),
            _rec(6_000, "sync_group_request", member_id="A", generation=4, is_leader=False),
            _rec(6_003, "sync_group_response", member_id="A", generation=4, error=error),
        )

    assert check_sync_fenced(log("FENCED_INSTANCE_ID")) == []
    assert _names(check_sync_fenced(log("UNKNOWN_MEMBER_ID"))) == [SYNC_NOT_FENCED]


def test_the_fence_follows_the_instance_and_lifts_when_its_holder_is_removed() -> None:
    again = _rec(7_000, "member_replaced", "c1m", member_id="C", old_member_id="B")
    unknown = _held_sync("UNKNOWN_MEMBER_ID")
    assert _names(check_sync_fenced(_log(*unknown[:2], again, unknown[2]))) == [SYNC_NOT_FENCED]
    removed = _rec(7_000, "member_removed", "c1n", member_id="B", reason="session_timeout")
    assert check_sync_fenced(_log(*unknown[:2], removed, unknown[2])) == []


def _parked_sync(error: str, *, before: list[Record] | None = None) -> list[Record]:
    """The group completes generation 4 at 50; c1 sends its SyncGroup with A at 100 (a
    follower's: parked until the leader's); c1n takes the instance at 5,000; c1 hears ``error``
    at 5,001. ``before``: records between the SyncGroup and the takeover."""
    return [
        {"t_ms": 50, "kind": "group_state", "from": "PreparingRebalance"}
        | {"to": "CompletingRebalance", "generation": 4},
        _rec(100, "sync_group_request", member_id="A", generation=4, is_leader=False),
        *(before or []),
        _replaced(5_000),
        _rec(5_001, "sync_group_response", member_id="A", generation=4, error=error),
    ]


def test_a_sync_group_parked_when_the_twin_took_over_is_judged_by_its_answer() -> None:
    # ClassicGroup#replaceStaticMember answers the parked SyncGroup FENCED_INSTANCE_ID
    assert check_sync_fenced(_log(*_parked_sync("FENCED_INSTANCE_ID"))) == []
    assert check_sync_fenced(_log(*_parked_sync("COORDINATOR_NOT_AVAILABLE"))) == []
    for error in ("REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID", "NONE"):
        found = check_sync_fenced(_log(*_parked_sync(error)))
        assert _names(found) == [SYNC_NOT_FENCED], error
        assert found[0].member_id == "A" and "replaceStaticMember" in found[0].detail


def test_a_sync_group_answered_before_the_takeover_is_not_judged_as_parked() -> None:
    # the group left CompletingRebalance (the leader's SyncGroup completed it, or a new join
    # phase began): the SyncGroup was answered then, its answer may arrive after the takeover
    for state in ("Stable", "PreparingRebalance"):
        moved = {"t_ms": 200, "kind": "group_state", "from": "CompletingRebalance"}
        moved |= {"to": state, "generation": 4}
        assert check_sync_fenced(_log(*_parked_sync("NONE", before=[moved]))) == []
    # a SyncGroup of an older generation, or a coordinator reload before the answer
    stale = _parked_sync("ILLEGAL_GENERATION")
    stale[1] = stale[1] | {"generation": 3}
    assert check_sync_fenced(_log(*stale)) == []
    loaded = {"t_ms": 5_000, "kind": "group_loaded", "generation": 4, "protocol": "range"}
    loaded |= {"state": "Stable"}
    reloaded = _parked_sync("NONE")
    reloaded.insert(
        3, loaded | {"leader": None, "leader_id": None, "members": [], "member_ids": []}
    )
    assert check_sync_fenced(_log(*reloaded)) == []


def test_a_served_sync_group_of_a_replaced_id_is_judged_by_the_wire_response() -> None:
    def log(error: str) -> list[Record]:
        request = {"api": "SyncGroup", "version": 3, "client_id": "c", "group": "g"}
        return _log(
            _rec(10, "member_replaced", "c#2", member_id="B", old_member_id="A"),
            _rec(20, "wire_request", "c#1", member_id="A", generation=1, **request),
            _rec(20, "wire_response", "c#1", api="SyncGroup", group="g", error=error),
        )

    assert check_sync_fenced(log("FENCED_INSTANCE_ID")) == []
    assert _names(check_sync_fenced(log("UNKNOWN_MEMBER_ID"))) == [SYNC_NOT_FENCED]


# Consumer seed 1, run 15 of detect's config (5 consumers, 10 virtual minutes): the zombie
# fault's SyncGroup variant; the first run that finds the planted bug.
_RUN = 15


def test_chaos_reaches_a_fenced_sync_group_and_judges_it_clean() -> None:
    bug = by_name("coordinator-sync-ignores-fencing")
    spec = generate(chaos_config(bug, _RUN), 1, _RUN)
    assert any(s["action"] == "delay_request" and s["request"] == "any" for s in spec.steps)
    _, result = run_spec(spec)
    late = [r for r in result.records if r["kind"] == "late_request"]
    assert any(r["request"] == "sync_group" and r["error"] == "FENCED_INSTANCE_ID" for r in late)
    assert SYNC_NOT_FENCED not in _names(check_records(result.records))


def test_the_planted_sync_group_that_ignores_fencing_is_found_by_the_rule() -> None:
    found = detect(by_name("coordinator-sync-ignores-fencing"), _RUN + 5)
    assert found.found_at == _RUN
    assert SYNC_NOT_FENCED in found.new


# Consumer seed 1, run 19 of detect's config: the zombie fault's parked SyncGroup variant; the
# first run that finds the planted replacement that keeps the parked SyncGroup.
_PARKED_RUN = 19


def test_chaos_reaches_a_parked_sync_group_fenced_by_the_takeover_and_judges_it_clean() -> None:
    bug = by_name("coordinator-replace-keeps-parked-sync")
    spec = generate(chaos_config(bug, _PARKED_RUN), 1, _PARKED_RUN)
    holds = [
        s
        for s, k in zip(spec.steps, spec.kinds, strict=True)
        if k == "zombie" and s["action"] == "delay_request"
    ]
    assert holds and {s["request"] for s in holds} == {"sync_group"}
    _, result = run_spec(spec)
    answers = [r for r in result.records if r["kind"] == "sync_group_response"]
    assert any(r["error"] == "FENCED_INSTANCE_ID" for r in answers)
    assert SYNC_NOT_FENCED not in _names(check_records(result.records))


def test_the_planted_replacement_that_keeps_a_parked_sync_group_is_found_by_the_rule() -> None:
    found = detect(by_name("coordinator-replace-keeps-parked-sync"), _PARKED_RUN + 5)
    assert found.found_at == _PARKED_RUN
    assert found.new == (SYNC_NOT_FENCED,)
