"""Kafka as referee of plain-consumer leader rounds (scenarios/referee/consumer.py).

Clean consumer scenarios (tests/scenarios/consumer, and four more here that reach
``roundrobin``, static members, uneven ranges and a sticky restart) give no disagreement; a
planted ``RangeAssignor`` bug that keeps every balance and stickiness rule (the extra
partitions go to the *last* consumers instead of the first) passes every checker and is found
by the referee at its first round, by ``check --referee kafka`` on the saved log and through the
chaos path's :func:`scenarios.campaigns.chaos.run.refereed`. One harness JVM for the module,
stopped at the end (about 10 s in all, JVM start included)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import members.assignors.consumer.range as range_assignor
from scenarios import referee
from scenarios.campaigns.chaos.run import refereed
from scenarios.check.log_check import check_records
from scenarios.eventlog import write_jsonl
from scenarios.input.consumer import loads_consumer_scenario
from scenarios.input.library import load_any
from scenarios.sim.runner import RunResult, simulate
from tests.kafka_oracle.oracle import unavailable_reason

pytestmark = pytest.mark.kafka

_SCENARIOS = Path(__file__).parents[1] / "scenarios" / "consumer"

_HEAD = 'kind = "consumer"\nseed = 1\n'

#: Inline scenarios for what the test scenarios do not reach.
_EXTRA = {
    "roundrobin-static-join": _HEAD
    + """name = "roundrobin-static-join"
[topics]
orders = 5
payments = 4
[config]
"partition.assignment.strategy" = ["roundrobin"]
[[consumers]]
name = "c1"
config = { "group.instance.id" = "zeta" }
[[consumers]]
name = "c2"
[[consumers]]
name = "c3"
autostart = false
config = { "group.instance.id" = "alpha" }
[[timeline]]
action = "join"
at_ms = 20000
member = "c3"
[[timeline]]
action = "leave"
at_ms = 50000
member = "c2"
""",
    "range-uneven": _HEAD
    + """name = "range-uneven"
[topics]
orders = 7
payments = 5
audit = 1
[config]
"partition.assignment.strategy" = ["range"]
"client.rack" = "r1"
[[consumers]]
name = "c1"
[[consumers]]
name = "c2"
[[consumers]]
name = "c3"
[[timeline]]
action = "crash"
at_ms = 20000
member = "c3"
""",
    "sticky-restart": _HEAD
    + """name = "sticky-restart"
[topics]
orders = 8
payments = 3
[config]
"partition.assignment.strategy" = ["sticky"]
[[consumers]]
name = "c1"
[[consumers]]
name = "c2"
[[consumers]]
name = "c3"
[[consumers]]
name = "c4"
autostart = false
[[timeline]]
action = "restart"
at_ms = 20000
member = "c1"
[[timeline]]
action = "join"
at_ms = 40000
member = "c4"
""",
    "cooperative-scale-out": _HEAD
    + """name = "cooperative-scale-out"
[topics]
orders = 9
[config]
"partition.assignment.strategy" = ["cooperative-sticky"]
[[consumers]]
name = "c1"
[[consumers]]
name = "c2"
autostart = false
[[consumers]]
name = "c3"
autostart = false
[[timeline]]
action = "join"
at_ms = 20000
member = "c2"
[[timeline]]
action = "join"
at_ms = 40000
member = "c3"
[[timeline]]
action = "crash"
at_ms = 70000
member = "c1"
""",
}


@pytest.fixture(scope="module", autouse=True)
def _referee_jvm() -> Iterator[None]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    try:
        yield
    finally:
        referee.stop()


def _runs() -> Iterator[tuple[str, RunResult]]:
    for path in sorted(_SCENARIOS.glob("*.toml")):
        yield path.stem, simulate(load_any(path), 1)
    for name, text in _EXTRA.items():
        yield name, simulate(loads_consumer_scenario(text, f"{name}.toml"), 1)


def _rounds(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == "consumer_assignor"]


def test_clean_consumer_runs_give_no_disagreement() -> None:
    assignors: set[str] = set()
    for name, result in _runs():
        rounds = _rounds(result.records)
        assert rounds, f"{name}: no leader round"
        assignors |= {r["assignor"] for r in rounds}
        verdict = referee.judge(result.records)
        assert verdict.compared == len(rounds), (name, verdict)
        assert not verdict.skipped, (name, verdict.skipped)
        assert verdict.violations == [], (name, [d.detail for d in verdict.violations])
    assert assignors == {"range", "roundrobin", "sticky", "cooperative-sticky"}


def _last_gets_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: ``RangeAssignor.assignRanges`` walks the consumers from the last, so the
    ``partitions % consumers`` extra partitions go to the last consumers (still contiguous
    ranges, per topic counts one apart)."""
    real = range_assignor._assign_ranges

    def reversed_ranges(out, state, may_assign):  # type: ignore[no-untyped-def]
        state.consumers = list(reversed(state.consumers))
        try:
            real(out, state, may_assign)
        finally:
            state.consumers = list(reversed(state.consumers))

    monkeypatch.setattr(range_assignor, "_assign_ranges", reversed_ranges)
    # the same walk where no member has a rack (the range pass without topic states)
    real_plain = range_assignor._assign_without_racks

    def reversed_plain(out, by_info, topic_order, cluster):  # type: ignore[no-untyped-def]
        real_plain(out, list(reversed(by_info)), topic_order, cluster)

    monkeypatch.setattr(range_assignor, "_assign_without_racks", reversed_plain)


def _planted_run(monkeypatch: pytest.MonkeyPatch) -> RunResult:
    _last_gets_extra(monkeypatch)
    text = _EXTRA["range-uneven"]
    return simulate(loads_consumer_scenario(text, "range-uneven.toml"), 1)


def test_a_planted_range_bug_passes_every_checker_and_the_referee_finds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = _planted_run(monkeypatch)
    assert result.failures == []
    assert not [r for r in result.records if r["kind"] == "violation"]
    assert check_records(result.records) == []
    first = _rounds(result.records)[0]
    verdict = referee.judge(result.records)
    assert verdict.violations, "the referee missed the planted bug"
    found = verdict.violations[0]
    assert found.invariant == referee.REFEREE_INVARIANT
    assert found.cause_seq == first["seq"]
    assert "RangeAssignor disagrees" in found.detail
    assert "partitions: groupsim" in found.detail
    # the chaos path (run_spec -> refereed) puts it right after the record it judges
    compared = refereed(result, "kafka-leaders")
    assert compared == verdict.compared
    at = next(i for i, r in enumerate(result.records) if r["kind"] == "violation")
    assert result.records[at - 1]["kind"] == "consumer_assignor"
    assert result.records[at]["cause_seq"] == result.records[at - 1]["seq"]


def test_check_referee_judges_a_saved_consumer_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from scenarios.cli.main import app

    log = tmp_path / "events.jsonl"
    write_jsonl(_planted_run(monkeypatch).records, log)
    done = CliRunner().invoke(app, ["check", str(log), "--referee", "kafka"])
    assert done.exit_code == 1, done.output
    assert referee.REFEREE_INVARIANT in done.output
    assert "leader round(s) compared, " in done.output
    monkeypatch.undo()
    write_jsonl(simulate(load_any(_SCENARIOS / "sticky-member-crash.toml"), 1).records, log)
    done = CliRunner().invoke(app, ["check", str(log), "--referee", "kafka"])
    assert done.exit_code == 0, done.output
    assert "2 leader round(s) compared, 0 disagreement(s)" in done.output
