"""The contract checkers (scenarios/check/contracts.py): each reports its rule on a small
hand-built log that breaks it, stays silent on the same log obeying the rule, and runs in
``groupsim check`` (through :func:`scenarios.check.log_check.check_records`)."""

from __future__ import annotations

from typing import Any

from scenarios.check import contracts, coordinator_contracts, zombie_contracts
from scenarios.check.log_check import check_records

from .logs import complete, over_dicts, violation_names

check_assignment_once = over_dicts(coordinator_contracts.check_assignment_once)
check_completing_heartbeat = over_dicts(coordinator_contracts.check_completing_heartbeat)
check_rebalance_heartbeat = over_dicts(coordinator_contracts.check_rebalance_heartbeat)
check_static_rejoin = over_dicts(coordinator_contracts.check_static_rejoin)
check_zombie_instance = over_dicts(zombie_contracts.check_zombie_instance)
check_delay_shared = over_dicts(contracts.check_delay_shared)
check_fenced_member = over_dicts(contracts.check_fenced_member)
check_followup_for_withheld = over_dicts(contracts.check_followup_for_withheld)
check_generation_step = over_dicts(contracts.check_generation_step)
check_member_id_required = over_dicts(contracts.check_member_id_required)
check_probing_after_warmups = over_dicts(contracts.check_probing_after_warmups)
check_revoked_and_reassigned = over_dicts(contracts.check_revoked_and_reassigned)

Records = list[dict[str, Any]]


def _log(*records: dict[str, Any]) -> Records:
    out = []
    for i, record in enumerate(records):
        fields = dict(record)
        out.append({"t_ms": fields.pop("t", 0), "seq": i, **fields})
    return out


def _names(found: list[Any]) -> list[str]:
    return violation_names(found)


def _assignor(protocol: str, assigned: dict[str, Any], revoked: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "assignor",
        "member": "w1",
        "generation": 3,
        "protocol": protocol,
        "assignor": "incremental_cooperative",
        "error": 0,
        "delay_ms": 0,
        "config_offset": 1,
        "assigned": assigned,
        "revoked": revoked,
    }


def test_kip415_revoked_work_is_reassigned_only_in_a_later_round() -> None:
    moved = _log(
        _assignor(
            "sessioned",
            {"w2-id": {"connectors": [], "tasks": ["c-0"]}},
            {"w1-id": {"connectors": [], "tasks": ["c-0"]}},
        )
    )
    found = check_revoked_and_reassigned(moved)
    assert _names(found) == ["revoked_and_reassigned"]
    assert found[0].member == "w1-id" and found[0].cause_seq == 0
    assert "revoked_and_reassigned" in _names(check_records(moved))
    # revoked only, or reassigned under eager (everything is revoked there): no rule broken
    assert (
        check_revoked_and_reassigned(
            _log(_assignor("sessioned", {}, {"w1-id": {"connectors": [], "tasks": ["c-0"]}}))
        )
        == []
    )
    eager = _assignor(
        "default",
        {"w2-id": {"connectors": [], "tasks": ["c-0"]}},
        {"w1-id": {"connectors": [], "tasks": ["c-0"]}},
    )
    assert check_revoked_and_reassigned(_log(eager)) == []


def _decision(warmups: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "kind": "streams_assignment",
        "member": "s1",
        "t": 1000,
        "generation": 4,
        "version": 12,
        "commonly_supported_version": 12,
        "version_probing": False,
        "clients": {
            "s1": {"member_id": "s1-a", "active": [], "standby": [], "warmups": [], "withheld": []},
            "s2": {
                "member_id": "s2-a",
                "active": [],
                "standby": warmups,
                "warmups": warmups,
                "withheld": [],
            },
        },
        "lags": {},
        "probing_rebalance_needed": True,
        "active_movements": 1,
        "standby_movements": 0,
        "followup_for_revocation": False,
        **extra,
    }


def _probing(at_ms: int, generation: int = 4) -> dict[str, Any]:
    return {
        "kind": "probing_rebalance_scheduled",
        "member": "s1",
        "t": 1000,
        "generation": generation,
        "at_ms": at_ms,
        "interval_ms": 600_000,
    }


def test_kip441_warmups_schedule_a_probing_rebalance() -> None:
    assert check_probing_after_warmups(_log(_decision(["0_1"]), _probing(601_000))) == []
    # none scheduled: at the leader's next record, and at the end of the log
    next_one = {"kind": "timer_fired", "member": "s1", "key": "heartbeat", "t": 1001}
    missing = _log(_decision(["0_1"]), next_one)
    assert _names(check_probing_after_warmups(missing)) == ["probing_rebalance_missing"]
    assert _names(check_probing_after_warmups(_log(_decision(["0_1"])))) == [
        "probing_rebalance_missing"
    ]
    # scheduled at the wrong time, or warm-ups without probing_rebalance_needed
    late = _log(_decision(["0_1"]), _probing(1_201_000))
    assert _names(check_probing_after_warmups(late)) == ["probing_rebalance_missing"]
    flag = _log(_decision(["0_1"], probing_rebalance_needed=False))
    assert _names(check_probing_after_warmups(flag)) == ["probing_rebalance_missing"]
    # a follow-up for revocation replaces the probing rebalance; no warm-ups, nothing needed
    assert check_probing_after_warmups(_log(_decision(["0_1"], followup_for_revocation=True))) == []
    assert check_probing_after_warmups(_log(_decision([]))) == []


def _generation(gen: int, ids: list[str], protocol: str = "stream") -> dict[str, Any]:
    return {
        "kind": "generation",
        "generation": gen,
        "protocol": protocol,
        "leader": "a",
        "leader_id": ids[0],
        "members": [i.split("-")[0] for i in ids],
        "member_ids": ids,
    }


def test_classic_group_generation_adds_exactly_one_per_join() -> None:
    ok = _log(_generation(1, ["a-1"]), _generation(2, ["a-1"]))
    assert check_generation_step(ok) == []
    skipped = _log(_generation(1, ["a-1"]), _generation(3, ["a-1"]))
    assert _names(check_generation_step(skipped)) == ["generation_skipped"]
    loaded = _log(
        _generation(1, ["a-1"]),
        {**_generation(5, ["a-1"]), "kind": "group_loaded", "state": "Stable"},
        _generation(6, ["a-1"]),
    )
    assert check_generation_step(loaded) == []


def _join(member: str, member_id: str = "") -> dict[str, Any]:
    return {
        "kind": "join_group_request",
        "member": member,
        "member_id": member_id,
        "protocols": ["stream"],
        "reason": "",
    }


def _join_answer(member: str, member_id: str, error: str) -> dict[str, Any]:
    return {
        "kind": "join_group_response",
        "member": member,
        "member_id": member_id,
        "error": error,
        "generation": 1,
        "protocol": "stream",
        "leader_id": member_id,
        "is_leader": True,
    }


def _start(member: str, instance: str | None = None) -> dict[str, Any]:
    config = {} if instance is None else {"group.instance.id": instance}
    return {"kind": "member_start", "member": member, "config": config}


def test_kip394_a_new_dynamic_member_first_hears_member_id_required() -> None:
    ok = _log(
        _start("a"),
        _join("a"),
        _join_answer("a", "a-1", "MEMBER_ID_REQUIRED"),
        _join("a", "a-1"),
        _join_answer("a", "a-1", "NONE"),
    )
    assert check_member_id_required(ok) == []
    admitted = _log(_start("a"), _join("a"), _join_answer("a", "a-1", "NONE"))
    assert _names(check_member_id_required(admitted)) == ["member_id_not_required"]
    # a static member (KIP-345) is admitted at once
    assert (
        check_member_id_required(
            _log(_start("a", "i-a"), _join("a"), _join_answer("a", "a-1", "NONE"))
        )
        == []
    )
    # a served JoinGroup v4+ without an instance id; v3 is admitted at once
    wire = {
        "kind": "wire_request",
        "api": "JoinGroup",
        "member": "127.0.0.1:5",
        "client_id": "c",
        "group": "g",
        "member_id": "",
        "protocols": ["range"],
        "group_instance_id": None,
    }
    answer = {
        "kind": "wire_response",
        "api": "JoinGroup",
        "member": "127.0.0.1:5",
        "group": "g",
        "error": "NONE",
        "member_id": "c-1",
    }
    assert _names(check_member_id_required(_log({**wire, "version": 5}, dict(answer)))) == [
        "member_id_not_required"
    ]
    assert check_member_id_required(_log({**wire, "version": 3}, dict(answer))) == []


def _state(src: str, dst: str, t: int = 0) -> dict[str, Any]:
    return {"kind": "group_state", "from": src, "to": dst, "generation": 2, "t": t}


def _replaced(member: str, new: str, old: str, t: int = 50) -> dict[str, Any]:
    return {
        "kind": "member_replaced",
        "member": member,
        "member_id": new,
        "old_member_id": old,
        "t": t,
    }


def _stable_pair() -> list[dict[str, Any]]:
    return [
        _join("a", "a-1"),
        _join("b", "b-1"),
        _generation(2, ["a-1", "b-1"]),
        _state("PreparingRebalance", "CompletingRebalance"),
        _state("CompletingRebalance", "Stable"),
    ]


def test_kip345_a_static_rejoin_in_stable_keeps_the_generation() -> None:
    rejoin = [{**_join("b"), "t": 50}, _replaced("b", "b-2", "b-1")]
    ok = _log(*_stable_pair(), *rejoin)
    assert check_static_rejoin(ok) == []
    rebalanced = _log(*_stable_pair(), *rejoin, _state("Stable", "PreparingRebalance", t=50))
    found = check_static_rejoin(rebalanced)
    assert _names(found) == ["static_rejoin_rebalanced"] and found[0].member == "b"
    assert "static_rejoin_rebalanced" in _names(check_records(rebalanced))
    # a changed protocol list that changes the vote: the rebalance is Kafka's
    changed = [{**_join("b"), "protocols": ["other"], "t": 50}, _replaced("b", "b-2", "b-1")]
    assert (
        check_static_rejoin(
            _log(*_stable_pair(), *changed, _state("Stable", "PreparingRebalance", t=50))
        )
        == []
    )
    # a later rebalance (another member's JoinGroup) is not the rejoin's
    later = _log(
        *_stable_pair(), *rejoin, _join("a", "a-1"), _state("Stable", "PreparingRebalance", t=50)
    )
    assert check_static_rejoin(later) == []


def test_kip345_the_rebalance_goes_to_the_last_static_rejoin_of_its_instant() -> None:
    """Two static members rejoin in the same millisecond; the second one's list changes the
    vote and the group rebalances: that is the second rejoin's rebalance, not the first's
    (clean consumer chaos seed 1 run 80: two consumers of a whole-group outage back at once)."""
    joins = [{**_join("a"), "t": 50}, {**_join("b"), "protocols": ["other"], "t": 50}]
    replaced = [_replaced("a", "a-2", "a-1"), _replaced("b", "b-2", "b-1")]
    log = _log(*_stable_pair(), *joins, *replaced, _state("Stable", "PreparingRebalance", t=50))
    assert check_static_rejoin(log) == []


def test_kip345_a_rebalance_beside_another_members_rejoin_in_flight_is_not_the_static_ones() -> (
    None
):
    """After a coordinator failover every member rejoins the reloaded Stable group in one
    millisecond: a known member's JoinGroup (a leader's, or with changed metadata) rebalances
    it, right after a static twin took its instance over (clean Streams chaos seed 3 run 29)."""
    rejoin = [{**_join("b"), "t": 50}, _replaced("b", "b-2", "b-1")]
    other = {**_join("a", "a-1"), "t": 50}
    rebalance = _state("Stable", "PreparingRebalance", t=50)
    assert check_static_rejoin(_log(*_stable_pair(), other, *rejoin, rebalance)) == []
    # answered before the static rejoin: the rebalance is still the rejoin's
    answered = _join_answer("a", "a-1", "NONE")
    found = check_static_rejoin(_log(*_stable_pair(), other, answered, *rejoin, rebalance))
    assert _names(found) == ["static_rejoin_rebalanced"]


def test_kip345_a_static_rejoin_that_changes_the_vote_rebalances() -> None:
    lists = ["roundrobin", "range"]
    running_range = [
        {**_join("a", "a-1"), "protocols": lists},
        {**_join("b", "b-1"), "protocols": ["range", "roundrobin"]},
        _generation(2, ["a-1", "b-1"], protocol="range"),
        _state("PreparingRebalance", "CompletingRebalance"),
        _state("CompletingRebalance", "Stable"),
    ]
    rejoin = [{**_join("b"), "protocols": lists, "t": 50}, _replaced("b", "b-2", "b-1")]
    answer = {**_join_answer("b", "b-2", "NONE"), "t": 51}
    rebalanced = _log(*running_range, *rejoin, _state("Stable", "PreparingRebalance", t=50))
    assert check_static_rejoin(rebalanced) == []
    kept = _log(*running_range, *rejoin, answer)
    found = check_static_rejoin(kept)
    assert _names(found) == ["static_rejoin_not_rebalanced"] and found[0].member == "b"
    assert "static_rejoin_not_rebalanced" in _names(check_records(kept))
    # a tie that includes the running protocol is the tie-break's (the referee's): not judged
    tie = [{**_join("b"), "protocols": lists, "t": 50}, _replaced("b", "b-2", "b-1")]
    tied = [{**running_range[0], "protocols": ["range", "roundrobin"]}, *running_range[1:]]
    assert check_static_rejoin(_log(*tied, *tie, answer)) == []


def test_kip345_a_replaced_member_id_is_fenced() -> None:
    heartbeat = {
        "kind": "heartbeat_request",
        "member": "b",
        "member_id": "b-1",
        "generation": 2,
        "t": 60,
    }
    answer = {
        "kind": "heartbeat_response",
        "member": "b",
        "member_id": "b-1",
        "generation": 2,
        "t": 61,
    }
    accepted = _log(_replaced("b", "b-2", "b-1"), heartbeat, {**answer, "error": "NONE"})
    assert _names(check_fenced_member(accepted)) == ["fenced_member_accepted"]
    fenced = _log(
        _replaced("b", "b-2", "b-1"), dict(heartbeat), {**answer, "error": "FENCED_INSTANCE_ID"}
    )
    assert check_fenced_member(fenced) == []
    # sent before the replacement: the coordinator may have answered it first
    early = _log({**heartbeat, "t": 40}, _replaced("b", "b-2", "b-1"), {**answer, "error": "NONE"})
    assert check_fenced_member(early) == []
    # a served log: the coordinator's own answer
    wire = {
        "kind": "wire_response",
        "api": "SyncGroup",
        "member": "127.0.0.1:7",
        "group": "g",
        "error": "NONE",
        "member_id": "b-1",
        "generation": 2,
    }
    assert _names(check_fenced_member(_log(_replaced("b", "b-2", "b-1"), wire))) == [
        "fenced_member_accepted"
    ]


def test_kip345_a_zombie_instance_owns_no_work_after_fencing() -> None:
    # s1 joined as s1-1; its twin s1n (same group.instance.id) took the id over as s1n-1
    added = _join_answer("s1", "s1-1", "NONE")
    takeover = _replaced("s1n", "s1n-1", "s1-1")
    fenced_answer = {
        "kind": "heartbeat_response",
        "member": "s1",
        "member_id": "s1-1",
        "generation": 2,
        "error": "FENCED_INSTANCE_ID",
        "t": 60,
    }
    work = {"kind": "active_task_start", "member": "s1", "task": "0_0", "generation": 2, "t": 70}
    ok = _log(added, takeover, fenced_answer, {"kind": "member_fatal", "member": "s1"})
    assert check_zombie_instance(ok) == []
    started = _log(added, takeover, fenced_answer, work)
    found = check_zombie_instance(started)
    assert _names(found) == ["zombie_owns_work"] and found[0].member == "s1"
    assert "zombie_owns_work" in _names(check_records(complete(started)))
    # not told yet: its old generation's tasks are the zombie window Kafka accepts
    assert check_zombie_instance(_log(added, takeover, work)) == []
    # a coordinator that does not fence: UNKNOWN_MEMBER_ID, and the zombie takes the id back
    unknown = {**fenced_answer, "error": "UNKNOWN_MEMBER_ID"}
    rejoined = _log(
        added,
        takeover,
        unknown,
        _replaced("s1", "s1-2", "s1n-1", t=80),
        {**_join_answer("s1", "s1-2", "NONE"), "t": 80},
    )
    assert _names(check_zombie_instance(rejoined)) == ["zombie_owns_work"] * 2
    # a zombie that forgot its id by itself (poll timer, a lost answer) is a restart to Kafka
    forgot = _log(added, takeover, {**_join("s1"), "t": 70}, *rejoined[3:])
    assert check_zombie_instance(forgot) == []
    told_then_rejoins = _log(added, takeover, fenced_answer, {**_join("s1"), "t": 70})
    assert check_zombie_instance(told_then_rejoins) == []  # sending is not owning ...
    assert _names(check_zombie_instance(_log(*told_then_rejoins, *rejoined[3:]))) == [
        "zombie_owns_work"  # ... being admitted again is
    ]
    # the same process rejoining under a new id (a restart) is no zombie ...
    assert check_zombie_instance(_log(added, _replaced("s1", "s1-2", "s1-1"), work)) == []
    # ... nor is the old process once it started anew, or once the twin's member is gone
    restarted = _log(added, takeover, fenced_answer, _start("s1", "i"), work)
    assert check_zombie_instance(restarted) == []
    removed = {"kind": "member_removed", "member": "s1n", "member_id": "s1n-1", "reason": "x"}
    freed = _log(added, takeover, removed, {**_join_answer("s1", "s1-3", "NONE"), "t": 90})
    assert check_zombie_instance(freed) == []
    # a process whose JoinGroup answer was lost never knew its id: Kafka cannot fence it
    unheard = {"kind": "member_added", "member": "s1", "member_id": "s1-1"}
    assert check_zombie_instance(_log(unheard, takeover, *rejoined[3:])) == []
    # s1 restarted before the takeover (its JoinGroup, sent with no member id, still in
    # flight): the takeover fences its dead predecessor, and s1's join arriving last takes
    # the instance back as the newest joiner (chaos streams seed 11 run 255)
    in_flight = _log(added, _start("s1", "i"), takeover, *rejoined[3:])
    assert check_zombie_instance(in_flight) == []
    # a Heartbeat's fence heard after the zombie forgot its id by itself (its poll timer
    # expired) is stale: HeartbeatResponseHandler ignores it (generationUnchanged() is false),
    # so its JoinGroup with no id takes the instance back, as Kafka's client does (chaos
    # consumer seed 21 run 5895) ...
    stale = {**fenced_answer, "member_id": "", "generation": -1}
    held = {"kind": "late_request", "member": "s1", "request": "heartbeat", "sent_ms": 50}
    held |= {"delay_ms": 10, "generation": 2, "error": "FENCED_INSTANCE_ID", "dropped": False}
    rejoins = [{**_join("s1"), "t": 70}, *rejoined[3:]]
    assert check_zombie_instance(_log(added, takeover, held, stale, *rejoins)) == []
    # the answer of a join that completed with its old id before the takeover, late on the
    # wire (a latency fault), is no admission: replaceStaticMember fences a parked JoinGroup,
    # so it was sent before (chaos streams seed 21 runs 734, 7756) ...
    formed = {"kind": "generation", "generation": 2, "protocol": "stream", "leader": "s1"}
    formed |= {"leader_id": "s1-1", "members": ["s1"], "member_ids": ["s1-1"], "t": 40}
    late = {**_join_answer("s1", "s1-1", "NONE"), "generation": 2, "t": 70}
    assert check_zombie_instance(_log(added, formed, takeover, late)) == []
    # ... but one for a generation formed after the takeover still listing its old id is
    reformed = {**formed, "generation": 3, "t": 60}
    again = {**late, "generation": 3}
    found = check_zombie_instance(_log(added, formed, takeover, reformed, again))
    assert _names(found) == ["zombie_owns_work"]
    # ... while one heard under its own id is a fence it keeps
    assert _names(check_zombie_instance(_log(added, takeover, held, fenced_answer, *rejoins))) == [
        "zombie_owns_work"
    ]


def test_kip345_a_fenced_consumer_owns_no_partition_afterwards() -> None:
    # c1 owns t-0 and t-1; its twin c1n took its group.instance.id over
    added = {**_join_answer("c1", "c1-1", "NONE"), "t": 10}
    owned = {
        "kind": "consumer_assignment",
        "member": "c1",
        "member_id": "c1-1",
        "generation": 1,
        "owned": ["t-0", "t-1"],
        "t": 20,
    }
    takeover = _replaced("c1n", "c1n-1", "c1-1", t=50)
    told = {
        "kind": "heartbeat_response",
        "member": "c1",
        "member_id": "c1-1",
        "generation": 1,
        "error": "FENCED_INSTANCE_ID",
        "t": 60,
    }
    lost = {"kind": "partitions_lost", "member": "c1", "partitions": ["t-0", "t-1"], "t": 60}
    fatal = {"kind": "member_fatal", "member": "c1", "error": "FENCED_INSTANCE_ID", "t": 60}
    # Kafka: FencedInstanceIdException is fatal, the consumer is closed and loses them
    assert check_zombie_instance(_log(added, owned, takeover, told, lost, fatal)) == []
    # still holding them at the end of the log: never closed
    kept = check_zombie_instance(_log(added, owned, takeover, told))
    assert _names(kept) == ["zombie_owns_work"] and "still owns t-0, t-1" in kept[0].detail
    assert kept[0].cause_seq == 3  # the fencing answer
    # holding them while not told yet is Kafka's zombie window; a lost answer then an end
    assert check_zombie_instance(_log(added, owned, takeover)) == []
    # a new assignment after the fence
    again = {**owned, "t": 70}
    assert (
        _names(check_zombie_instance(_log(added, owned, takeover, told, lost, again)))
        == ["zombie_owns_work"] * 2
    )


def test_kip415_every_member_gets_the_leaders_delay() -> None:
    leader = {**_assignor("sessioned", {}, {}), "delay_ms": 300_000}
    member = {
        "kind": "assignment",
        "member": "w2",
        "member_id": "w2-id",
        "generation": 3,
        "protocol": "sessioned",
        "leader_id": "w1-id",
        "error": 0,
        "config_offset": 1,
        "connectors": [],
        "tasks": [],
        "revoked_connectors": [],
        "revoked_tasks": [],
        "delay_ms": 300_000,
    }
    assert check_delay_shared(_log(leader, member)) == []
    found = check_delay_shared(_log(leader, {**member, "delay_ms": 0}))
    assert _names(found) == ["scheduled_delay_not_shared"] and found[0].member == "w2"
    # another generation's assignment, or eager: not this leader's round
    assert check_delay_shared(_log(leader, {**member, "delay_ms": 0, "generation": 4})) == []
    assert check_delay_shared(_log(leader, {**member, "delay_ms": 0, "protocol": "default"})) == []


def test_kip429_a_client_given_withheld_actives_rejoins_at_once() -> None:
    decision = _decision([])
    decision["clients"]["s2"]["withheld"] = ["0_1"]
    answer = {
        "kind": "assignment",
        "member": "s2",
        "member_id": "s2-a",
        "generation": 4,
        "protocol": "stream",
        "leader_id": "s1-a",
        "error": 0,
        "active": [],
        "standby": [],
        "revoked": [],
        "next_rebalance_ms": 0,
    }
    assert check_followup_for_withheld(_log(decision, answer)) == []
    late = _log(decision, {**answer, "next_rebalance_ms": 601_000})
    assert _names(check_followup_for_withheld(late)) == ["followup_rebalance_missing"]
    # another client of the same round has nothing withheld: any time is fine
    other = {**answer, "member": "s1", "member_id": "s1-a", "next_rebalance_ms": 601_000}
    assert check_followup_for_withheld(_log(decision, other)) == []
    # a coordinator failover lost that round and the next one reused generation 4: its own
    # decision (the old owner lost its tasks, nothing withheld) is the one the answer follows
    redone = _decision([])
    stale = {**answer, "next_rebalance_ms": 601_000}
    assert check_followup_for_withheld(_log(decision, redone, stale)) == []


def test_a_heartbeat_in_preparing_rebalance_is_never_answered_none() -> None:
    heartbeat = {
        "kind": "rebalance_heartbeat",
        "member": "w2",
        "member_id": "w2-1",
        "generation": 4,
        "group_generation": 4,
    }
    hidden = _log({**heartbeat, "error": "NONE"})
    assert _names(check_rebalance_heartbeat(hidden)) == ["heartbeat_not_rebalancing"]
    for error in ("REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", None):
        assert check_rebalance_heartbeat(_log({**heartbeat, "error": error})) == []


def test_a_heartbeat_in_completing_rebalance_is_answered_as_in_stable() -> None:
    heartbeat = {
        "kind": "completing_heartbeat",
        "member": "w2",
        "member_id": "w2-1",
        "generation": 4,
        "group_generation": 4,
    }
    refused = _log({**heartbeat, "error": "REBALANCE_IN_PROGRESS"})
    assert _names(check_completing_heartbeat(refused)) == ["heartbeat_completing_refused"]
    for error in ("NONE", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", None):
        assert check_completing_heartbeat(_log({**heartbeat, "error": error})) == []
    # the PreparingRebalance record is the other rule's
    preparing = _log({**heartbeat, "kind": "rebalance_heartbeat", "error": "REBALANCE_IN_PROGRESS"})
    assert check_completing_heartbeat(preparing) == []


def test_kip814_a_static_leader_rejoining_a_stable_group_runs_no_assignor() -> None:
    generation = {"kind": "generation", "generation": 3, "leader": "s1", "leader_id": "s1-a"}
    stable = {"kind": "group_state", "from": "CompletingRebalance", "to": "Stable"}
    replaced = {
        "kind": "member_replaced",
        "member": "s1",
        "member_id": "s1-b",
        "old_member_id": "s1-a",
    }
    decision = {"kind": "streams_assignment", "member": "s1", "generation": 3}
    sync = {"kind": "sync_group_request", "member": "s1", "member_id": "s1-b", "generation": 3}
    recomputed = _log(generation, stable, replaced, decision)
    assert _names(check_assignment_once(recomputed)) == ["assignment_recomputed"]
    assert check_assignment_once(_log(generation, stable, replaced, sync, decision)) == []
    # a follower replaced, or the leader replaced while the group rebalances anyway
    follower = {**replaced, "member": "s2", "member_id": "s2-b", "old_member_id": "s2-a"}
    assert (
        check_assignment_once(_log(generation, stable, follower, {**decision, "member": "s2"}))
        == []
    )
    rebalance = {"kind": "group_state", "from": "Stable", "to": "PreparingRebalance"}
    assert check_assignment_once(_log(generation, stable, replaced, rebalance, decision)) == []
    # a leader that rejoins in CompletingRebalance is given the member list again (Kafka)
    assert check_assignment_once(_log(generation, decision, decision)) == []


def test_kip345_after_a_failover_members_support_only_the_loaded_protocol() -> None:
    """A group loaded from its record knows each member's metadata for the group's protocol
    only (GroupMetadataManager#replay): a static rejoiner whose list would make the old lists
    elect another protocol leaves the vote where it is, and the group keeps its generation
    (chaos consumer seed 1, runs 554/717/830, were reported before this)."""
    both = ["range", "cooperative-sticky"]
    running = [
        {**_join("a", "a-1"), "protocols": both},
        {**_join("b", "b-1"), "protocols": ["cooperative-sticky"]},
        _generation(2, ["a-1", "b-1"], protocol="cooperative-sticky"),
        _state("PreparingRebalance", "CompletingRebalance"),
        _state("CompletingRebalance", "Stable"),
    ]
    loaded = {
        "kind": "group_loaded",
        "generation": 2,
        "protocol": "cooperative-sticky",
        "state": "Stable",
        "member_ids": ["a-1", "b-1"],
        "t": 40,
    }
    rejoin = [{**_join("b"), "protocols": both, "t": 50}, _replaced("b", "b-2", "b-1")]
    answer = {**_join_answer("b", "b-2", "NONE"), "t": 51}
    assert check_static_rejoin(_log(*running, loaded, *rejoin, answer)) == []
    # without the failover both lists elect range: the same rejoin must rebalance
    assert _names(check_static_rejoin(_log(*running, *rejoin, answer))) == [
        "static_rejoin_not_rebalanced"
    ]
