"""The consumer assignors' balance and stickiness rules (scenarios/check/consumer_contracts.py)
on ``groupsim run`` logs of consumer scenarios: silent on clean runs, each reports a planted
bug of the rule it judges (``CONSUMER_BUGS``: ownership stays safe, so no other checker sees
it) and a hand-changed record; and both run in ``groupsim check``."""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any

import msgspec
import pytest

from scenarios.check import consumer_contracts
from scenarios.check.log_check import check_records
from scenarios.eventlog import decode_record, record_to_dict
from scenarios.input.library import consumer_library_dir, load_any
from scenarios.sim.runner import simulate
from tests.scenarios.campaigns.chaos.planted.assignor_rules import CONSUMER_BUGS
from tests.scenarios.check.logs import over_dicts

check_consumer_balance = over_dicts(consumer_contracts.check_consumer_balance)
check_sticky_keeps_owned = over_dicts(consumer_contracts.check_sticky_keeps_owned)

Record = dict[str, Any]
TEST_DIR = Path(__file__).parent.parent / "consumer"
#: the consumer scenarios of the tests and of the library (scenarios/library/consumer/)
SCENARIOS = [*sorted(TEST_DIR.glob("*.toml")), *sorted(consumer_library_dir().glob("*.toml"))]
BY_NAME = {p.stem: p for p in SCENARIOS}
BUGS = {bug.name: bug for bug in CONSUMER_BUGS}


def _records(path: Path, bug: str | None = None) -> list[Record]:
    with BUGS[bug].applied() if bug else contextlib.nullcontext():
        result = simulate(load_any(path), 1)
    return result.records


def _names(records: list[Record]) -> list[str]:
    return [r["invariant"] for r in records if r["kind"] == "violation"]


def _judge(records: list[Record]) -> list[str]:
    clean = [r for r in records if r["kind"] != "violation"]
    return [v.invariant for v in check_consumer_balance(clean) + check_sticky_keeps_owned(clean)]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_clean_consumer_runs_keep_the_rules(path: Path) -> None:
    assert _judge(_records(path)) == []


@pytest.mark.parametrize(
    ("bug", "scenario", "invariant"),
    [
        # the upgrade scenarios start under range
        (
            "range-assignor-off-by-one",
            "kip-429-one-bounce-upgrade",
            "consumer_assignment_unbalanced",
        ),
        # an eager sticky group that loses a member: the survivors must keep their partitions
        ("sticky-assignor-not-sticky", "sticky-member-crash", "sticky_partitions_moved"),
    ],
)
def test_a_planted_consumer_assignor_bug_is_found_by_its_rule(
    bug: str, scenario: str, invariant: str
) -> None:
    records = _records(BY_NAME[scenario], bug)
    # the run itself reports it (the protocol checkers run at the end of a consumer run) and
    # nothing else does: ownership stays safe
    assert set(_names(records)) == {invariant}
    # and its violations are records of the event log: they decode and encode back unchanged
    encode = msgspec.json.encode
    for v in (r for r in records if r["kind"] == "violation"):
        assert encode(record_to_dict(decode_record(v))) == encode(v)


def test_hand_changed_rounds_break_each_rule() -> None:
    records = [r for r in _records(SCENARIOS[0]) if r["kind"] != "violation"]
    start = next(r for r in records if r["kind"] == "run_start")
    rounds = [r for r in records if r["kind"] == "consumer_assignor"]
    # a round that gives one member two partitions more than another
    r = copy.deepcopy(rounds[0])
    members = list(r["assigned"])
    r["assigned"][members[0]].extend(r["assigned"][members[1]][:1])
    r["assigned"][members[1]] = r["assigned"][members[1]][1:]
    r["assigned"][members[0]].extend(r["assigned"][members[2]][:1])
    r["assigned"][members[2]] = r["assigned"][members[2]][1:]
    assert [v.invariant for v in check_consumer_balance([start, r])] == [
        "consumer_assignment_unbalanced"
    ]
    assert "consumer_assignment_unbalanced" in [v.invariant for v in check_records([start, r])]
    # a later round that swaps two survivors' partitions: neither keeps what it owned
    last = copy.deepcopy(rounds[-1])
    a, b = list(last["assigned"])[:2]
    last["assigned"][a], last["assigned"][b] = last["assigned"][b], last["assigned"][a]
    before = records[: records.index(rounds[-1])]
    found = check_sticky_keeps_owned([*before, last])
    assert {v.invariant for v in found} == {"sticky_partitions_moved"}
    assert {v.member for v in found} == {a, b}


def test_connect_and_streams_logs_are_not_judged() -> None:
    records = [{"t_ms": 0, "seq": 0, "kind": "run_start", "topics": {"t": 3}}]
    assert check_consumer_balance(records) == check_sticky_keeps_owned(records) == []


def test_a_static_member_kept_without_rejoining_is_not_judged_on_what_it_owned() -> None:
    """Consumer chaos seed 1 run 27: static c7 is cut off while c6 joins; the join phase keeps
    it on the metadata of its last JoinGroup (KIP-345), which does not carry the partitions it
    applied since, so the sticky leader may move them (a false positive before)."""
    from scenarios.campaigns.chaos import ChaosConfig, generate, spec_to_toml
    from scenarios.input.library import loads_any

    spec = generate(ChaosConfig(kind="consumer"), 1, 27)
    result = simulate(loads_any(spec_to_toml(spec), "run27.toml"), spec.seed)
    records = [r for r in result.records if r["kind"] != "violation"]
    assert any(r["kind"] == "consumer_assignor" and r["assignor"] == "sticky" for r in records)
    assert _judge(records) == []
