"""``parked_sync_unanswered`` (scenarios/check/parked_sync_contracts.py): silent on a log whose
parked SyncGroup is answered when the group leaves CompletingRebalance, or times out while the
group stays there, or whose member was removed, or that a fault or a failover touched;
reported when a SyncGroup times out although the group left CompletingRebalance at its
generation, or its member id was replaced, well before; registered with the contract checkers,
and finding its planted bug of the catalogue in chaos."""

from __future__ import annotations

from typing import Any

from scenarios.check import parked_sync_contracts
from scenarios.check.parked_sync_contracts import PARKED_SYNC_INVARIANTS, PARKED_SYNC_UNANSWERED
from scenarios.check.protocol_checkers import PROTOCOL_INVARIANTS
from scenarios.input.schema import INVARIANTS
from tests.scenarios.campaigns.chaos.planted import by_name, detect
from tests.scenarios.check.logs import numbered as _log
from tests.scenarios.check.logs import over_dicts
from tests.scenarios.check.logs import violation_names as _names

Record = dict[str, Any]

# the checker reads typed records: run it on the hand-written ones
check = over_dicts(parked_sync_contracts.check_parked_sync_answered)

_TIMEOUT = 40_000  # Connect's request.timeout.ms


def _rec(t: int, kind: str, member: str = "w2", **extra: Any) -> Record:
    return {"t_ms": t, "kind": kind, "member": member, **extra}


def _state(t: int, frm: str, to: str, generation: int = 4) -> Record:
    return {"t_ms": t, "kind": "group_state", "from": frm, "to": to, "generation": generation}


def _parked(*between: Record, answered: str | None = None) -> list[Record]:
    """w2's follower SyncGroup for generation 4 sent at 1,000 into a CompletingRebalance group,
    then ``between``, then its answer (``answered``) or, with none, its request timeout."""
    records = [
        _state(500, "PreparingRebalance", "CompletingRebalance"),
        _rec(1_000, "sync_group_request", member_id="B", generation=4, is_leader=False),
        *between,
    ]
    if answered is not None:
        records.append(
            _rec(5_002, "sync_group_response", member_id="B", generation=4, error=answered)
        )
    else:
        end = 1_000 + _TIMEOUT
        records += [
            _rec(end, "timer_fired", key="request-timeout"),
            _rec(end, "coordinator_unknown", member_id="B", reason="request timed out"),
        ]
    return records


def test_every_name_is_a_schema_invariant_and_registered() -> None:
    assert set(PARKED_SYNC_INVARIANTS) <= set(INVARIANTS)
    assert set(PARKED_SYNC_INVARIANTS) <= set(PROTOCOL_INVARIANTS)


def test_a_parked_sync_group_answered_when_the_group_rebalances_is_clean() -> None:
    log = _parked(
        _state(5_000, "CompletingRebalance", "PreparingRebalance"),
        answered="REBALANCE_IN_PROGRESS",
    )
    assert check(_log(*log)) == []


def test_a_parked_sync_group_left_unanswered_when_the_group_rebalances_is_reported() -> None:
    # prepareRebalance -> resetAndPropagateAssignmentWithError answers it at 5,000
    log = _parked(_state(5_000, "CompletingRebalance", "PreparingRebalance"))
    found = check(_log(*log))
    assert _names(found) == [PARKED_SYNC_UNANSWERED]
    assert found[0].member == "w2" and found[0].member_id == "B" and found[0].generation == 4


def test_a_parked_sync_group_left_unanswered_when_the_group_goes_stable_is_reported() -> None:
    assert _names(check(_log(*_parked(_state(5_000, "CompletingRebalance", "Stable"))))) == [
        PARKED_SYNC_UNANSWERED
    ]


def test_a_parked_sync_group_left_unanswered_when_its_instance_is_taken_over_is_reported() -> None:
    replaced = _rec(5_000, "member_replaced", "w2n", member_id="C", old_member_id="B")
    assert _names(check(_log(*_parked(replaced)))) == [PARKED_SYNC_UNANSWERED]


def test_a_sync_group_sent_outside_its_completing_rebalance_timing_out_is_reported() -> None:
    # the group already went Stable at generation 4: the SyncGroup is answered on arrival
    log = _parked()
    log.insert(1, _state(800, "CompletingRebalance", "Stable"))
    assert _names(check(_log(*log))) == [PARKED_SYNC_UNANSWERED]


def test_a_sync_group_parked_while_the_group_stays_completing_may_time_out() -> None:
    # the leader's SyncGroup never came: Kafka keeps it parked (the pending-sync timeout, the
    # rebalance timeout, comes later)
    assert check(_log(*_parked())) == []


def test_a_sync_group_answered_just_before_its_timeout_is_not_judged() -> None:
    late = _state(1_000 + _TIMEOUT - 1_000, "CompletingRebalance", "PreparingRebalance")
    assert check(_log(*_parked(late))) == []


def test_a_removed_members_parked_sync_group_may_stay_unanswered() -> None:
    # ClassicGroup#remove answers no SyncGroup; propagateAssignment answers the members left
    removed = _rec(
        4_000,
        "member_removed",
        member_id="B",
        reason="leave",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=60_000,
    )
    log = _parked(removed, _state(4_000, "CompletingRebalance", "PreparingRebalance"))
    assert check(_log(*log)) == []


def test_a_fault_on_the_link_or_a_failover_excuses_the_timeout() -> None:
    rebalanced = _state(5_000, "CompletingRebalance", "PreparingRebalance")
    loss = _rec(
        3_000,
        "fault",
        fault="loss",
        direction="from_coordinator",
        probability=1.0,
        until_ms=9_000,
    )
    assert check(_log(*_parked(loss, rebalanced))) == []
    other = dict(loss, member="w3")
    assert _names(check(_log(*_parked(other, rebalanced)))) == [PARKED_SYNC_UNANSWERED]
    failover = {"t_ms": 3_000, "kind": "fault", "fault": "coordinator_failover", "down_ms": 500}
    assert check(_log(*_parked(failover, rebalanced))) == []
    # an open partition lasts until its heal
    partition = _rec(3_000, "fault", fault="partition")
    assert check(_log(*_parked(partition, rebalanced))) == []
    # a stall of the member anywhere before it gives up
    stall = _rec(30_000, "fault", fault="slow", stall_ms=1_000)
    assert check(_log(*_parked(rebalanced, stall))) == []


def test_a_network_fault_away_from_the_request_and_the_answer_excuses_nothing() -> None:
    # the request reached the coordinator at about 1,000 and the answer left at 5,000: a loss
    # from 20,000 to 25,000 is long after both
    rebalanced = _state(5_000, "CompletingRebalance", "PreparingRebalance")
    loss = _rec(20_000, "fault", fault="loss", direction="both", probability=1.0, until_ms=25_000)
    assert _names(check(_log(*_parked(rebalanced, loss)))) == [PARKED_SYNC_UNANSWERED]
    # one within 3 s of the answer (not of the sending) excuses it: the slack is generous
    near = dict(loss, t_ms=4_500, until_ms=4_600)
    assert check(_log(*_parked(near, rebalanced))) == []


def test_a_sync_group_cut_off_by_another_cause_is_not_judged() -> None:
    rebalanced = _state(5_000, "CompletingRebalance", "PreparingRebalance")
    lost = _rec(6_000, "coordinator_unknown", member_id="B", reason="session timed out")
    assert check(_log(*_parked(rebalanced, lost))) == []


# Connect seed 1, run 6 of detect's config (5 workers, 10 virtual minutes): the first run that
# finds the planted prepareRebalance that drops the parked SyncGroups.
_RUN = 6


def test_the_planted_rebalance_that_drops_parked_sync_groups_is_found_by_the_rule() -> None:
    found = detect(by_name("coordinator-prepare-drops-parked-sync"), _RUN + 5)
    assert found.found_at == _RUN
    assert found.new == (PARKED_SYNC_UNANSWERED,)
