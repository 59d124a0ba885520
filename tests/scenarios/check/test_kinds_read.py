"""A checker that declares the record kinds it reads (``log_rules.reads_typed``) gives the same
verdict over those records alone, and ``protocol_violations`` (which hands it only those)
the same violations as every checker over the whole log."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios.campaigns.chaos import ChaosConfig
from scenarios.campaigns.chaos.generate import generate
from scenarios.campaigns.chaos.run import run_spec
from scenarios.check import protocol_checkers
from scenarios.check.log_rules import is_typed, kinds_needed, kinds_read
from scenarios.check.protocol_checkers import protocol_violations
from scenarios.eventlog.records import decode_log
from scenarios.input.library import load_any
from scenarios.sim.runner import simulate

Records = list[dict[str, Any]]

_DECLARED = [c for c in protocol_checkers._CHECKERS if kinds_read(c) is not None]


def _logs() -> list[Records]:
    logs = [
        simulate(load_any("worker-bounce-within-delay"), 1, log_heartbeats=True).records,
        simulate(load_any("kip-441-scale-out"), 1).records,
    ]
    for kind in ("connect", "streams", "consumer"):
        config = ChaosConfig(members=(3, 6), duration_ms=600_000, kind=kind)
        logs += [run_spec(generate(config, 5, i))[1].records for i in range(3)]
    return logs


@pytest.fixture(scope="module")
def logs() -> list[Records]:
    return _logs()


def test_some_checkers_declare_what_they_read() -> None:
    assert len(_DECLARED) >= 5


def test_a_declared_checker_judges_its_kinds_alone_the_same(logs: list[Records]) -> None:
    for records in logs:
        live = [r for r in records if r.get("kind") != "violation"]
        for checker in _DECLARED:
            kinds = kinds_read(checker) or frozenset()
            picked = [r for r in live if r.get("kind") in kinds]
            if is_typed(checker):
                picked, live_in = decode_log(picked), decode_log(live)
            else:
                live_in = live
            assert checker(picked) == checker(live_in), checker.__name__  # type: ignore[arg-type]


def test_a_checker_that_finds_only_with_some_kinds_finds_nothing_without_them(
    logs: list[Records],
) -> None:
    # (``finds_only_with``: protocol_violations skips it on such a log)
    needing = [c for c in protocol_checkers._CHECKERS if kinds_needed(c) is not None]
    assert len(needing) >= 3
    skipped = 0
    for records in logs:
        live = [r for r in records if r.get("kind") != "violation"]
        present = {r.get("kind") for r in live}
        typed = decode_log(live)
        for checker in needing:
            if (kinds_needed(checker) or frozenset()).isdisjoint(present):
                skipped += 1
                assert checker(typed if is_typed(checker) else live) == [], checker.__name__  # type: ignore[arg-type]
    assert skipped > 0


def test_protocol_violations_equal_every_checker_over_the_whole_log(
    logs: list[Records],
) -> None:
    for records in logs:
        live = [r for r in records if r.get("kind") != "violation"]
        typed = decode_log(live)
        expected = [
            v
            for checker in protocol_checkers._CHECKERS
            for v in checker(typed if is_typed(checker) else live)  # type: ignore[arg-type]
        ]
        assert protocol_violations(records) == expected
        assert protocol_violations(records, decode_log(records)) == expected


def test_a_declared_checker_still_finds_its_violation_in_a_whole_log() -> None:
    # a replaced static member id answered NONE (KIP-345), among records of other kinds
    records: Records = [
        {"t_ms": 0, "seq": 0, "kind": "member_start", "member": "w1", "config": {}},
        {
            "t_ms": 1,
            "seq": 1,
            "kind": "member_replaced",
            "member": "w1",
            "member_id": "b",
            "old_member_id": "a",
        },
        {"t_ms": 2, "seq": 2, "kind": "step", "action": "noop"},
        {
            "t_ms": 3,
            "seq": 3,
            "kind": "heartbeat_request",
            "member": "w2",
            "member_id": "a",
            "generation": 1,
        },
        {
            "t_ms": 4,
            "seq": 4,
            "kind": "heartbeat_response",
            "member": "w2",
            "member_id": "a",
            "generation": 1,
            "error": "NONE",
        },
    ]
    names = [v.invariant for v in protocol_violations(records)]
    assert "fenced_member_accepted" in names
