"""The coordinator referee past a coordinator failover (``scenarios/referee/coordinator.py``,
docs/chaos.md "Coordinator answers"): Kafka's ``GroupMetadataManager`` is unloaded
(``onUnloaded``) and a fresh one loads the group from the records Kafka's managers wrote
(``replay`` + ``onLoaded``), and every later answer is judged.

Consumer chaos campaign seed 21 (3–6 members, 10 minutes): run 0 has one failover and about
2,000 answers after it; run 7 has one failover and a member that goes silent after it. The planted
``coordinator-load-arms-no-session-timers`` (tests/scenarios/campaigns/chaos/planted/
load_path.py: the new coordinator arms no session timers, so a member that
dies after the failover is never expired) passes every checker and was invisible to the
referee before it judged past failovers; now it is found after the failover. About 15 s with
the JVM's start.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scenarios import referee
from scenarios.campaigns.chaos import ChaosConfig
from scenarios.campaigns.chaos.generate import generate
from scenarios.campaigns.chaos.run import run_spec
from scenarios.referee import judge
from tests.kafka_oracle.oracle import unavailable_reason
from tests.scenarios.campaigns.chaos.planted import by_name

pytestmark = pytest.mark.kafka

CONFIG = ChaosConfig(members=(3, 6), duration_ms=600_000, kind="consumer")
SEED = 21


@pytest.fixture(autouse=True)
def _referee_jvm() -> Iterator[None]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    try:
        yield
    finally:
        referee.stop()


def _failover_ms(records: list[dict[str, Any]]) -> int:
    return next(
        int(r["t_ms"])
        for r in records
        if r.get("kind") == "fault" and r.get("fault") == "coordinator_failover"
    )


def test_answers_after_a_failover_are_judged_and_agree() -> None:
    outcome, result = run_spec(generate(CONFIG, SEED, 0), "kafka")
    assert not outcome.failed, outcome.first_new
    assert outcome.refereed_after_failover > 500, outcome
    loaded = [r for r in result.records if r.get("kind") == "group_loaded"]
    assert loaded and loaded[0]["member_ids"], "the new coordinator loaded a group with members"
    # the loaded group itself is compared: a log whose group_loaded says another generation
    # disagrees there
    tampered = [
        dict(r, generation=r["generation"] + 1) if r is loaded[0] else r for r in result.records
    ]
    verdict = judge(tampered)
    assert len(verdict.violations) == 1, verdict.violations
    found = verdict.violations[0]
    assert found.api == "load" and found.differs == "generation"
    assert found.cause_seq == loaded[0]["seq"]


def test_a_bug_in_the_load_path_is_found_after_the_failover() -> None:
    # the planted catalogue's coordinator-load-arms-no-session-timers (planted/load_path.py)
    bug = by_name("coordinator-load-arms-no-session-timers")
    assert bug.referee_only
    spec = generate(CONFIG, SEED, 7)
    with bug.applied():
        plain, _ = run_spec(spec, None)
        outcome, result = run_spec(spec, "kafka")
    assert not plain.failed, "no checker sees the bug"
    assert outcome.failed and outcome.first_new is not None
    invariant, detail = outcome.first_new
    assert invariant == referee.REFEREE_INVARIANT
    assert "GroupMetadataManager disagrees" in detail
    found = [r for r in result.records if r.get("invariant") == referee.REFEREE_INVARIANT]
    # after the failover: a referee that stopped there could not see it
    assert found[0]["t_ms"] > _failover_ms(result.records)
    assert found[0]["referee"] == "coordinator"
