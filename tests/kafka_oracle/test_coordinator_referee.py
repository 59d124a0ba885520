"""``--referee kafka`` on the coordinator: every answer of a chaos run replayed through Kafka's
``GroupMetadataManager`` (``scenarios/referee/coordinator.py``).

A clean run agrees answer for answer; the planted ``coordinator-leader-members-in-join-order``
(the leader's JoinGroup answer lists the members in join order, not the members HashMap's:
no checker sees it in 300 Connect runs of seed 1, ``benchmarks/bench_planted.py``) is found
by the referee at run 0, names the field that differs, shrinks to a verified reproducer, and
``groupsim check --referee kafka`` finds it on the saved log. Runs in this process so the
monkeypatch reaches the simulation; about 20 s with the JVM's start.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scenarios import referee
from scenarios.campaigns.chaos import run_one, shrink_run
from scenarios.campaigns.chaos.generate import generate
from scenarios.campaigns.chaos.run import run_spec
from scenarios.cli.main import app
from scenarios.eventlog import write_jsonl
from tests.kafka_oracle.oracle import unavailable_reason
from tests.scenarios.campaigns.chaos.planted import by_name, chaos_config

pytestmark = pytest.mark.kafka

BUG = "coordinator-leader-members-in-join-order"


@pytest.fixture(autouse=True)
def _referee_jvm() -> Iterator[None]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    try:
        yield
    finally:
        referee.stop()


def test_a_clean_run_agrees_answer_for_answer(tmp_path: Path) -> None:
    config = chaos_config(by_name(BUG), 0, members=4)
    outcome, result = run_spec(generate(config, 1, 0), "kafka")
    assert outcome.refereed_answers > 100, outcome
    assert not outcome.failed, outcome.first_new
    kinds = {r["kind"] for r in result.records}
    assert {"coordinator_opened", "coordinator_request", "coordinator_response"} <= kinds
    log = tmp_path / "events.jsonl"
    write_jsonl(result.records, log)
    done = CliRunner().invoke(app, ["check", str(log), "--referee", "kafka", "--allow-known"])
    assert done.exit_code == 0, done.output
    assert "coordinator answer(s) compared, 0 disagreement(s)" in done.output


def test_the_referee_finds_a_planted_coordinator_bug_and_shrinks_it(tmp_path: Path) -> None:
    bug = by_name(BUG)
    assert bug.referee_only
    config = replace(chaos_config(bug, 0), referee="kafka")
    with bug.applied():
        outcome = run_one(config, 1, 0)
        assert outcome.first_new is not None
        invariant, detail = outcome.first_new
        assert invariant == referee.REFEREE_INVARIANT
        assert "GroupMetadataManager disagrees with the coordinator's JoinGroup answer" in detail
        assert "members: groupsim" in detail
        rep = shrink_run(config, 1, 0, referee.REFEREE_INVARIANT, budget=6)
        _, result = run_spec(generate(config, 1, 0), None)
        # the saved log of the same run (without the referee's verdict) fails check too
        _, logged = run_spec(generate(config, 1, 0), "kafka")
    assert rep.verified, rep
    assert rep.steps_after <= rep.steps_before
    assert not [r for r in result.records if r.get("invariant") == referee.REFEREE_INVARIANT]
    found = [r for r in logged.records if r.get("invariant") == referee.REFEREE_INVARIANT]
    assert found[0]["referee"] == "coordinator"
    assert found[0]["api"] == "join" and found[0]["differs"] == "members"
    log = tmp_path / "events.jsonl"
    write_jsonl([r for r in logged.records if r.get("kind") != "violation"], log)
    done = CliRunner().invoke(app, ["check", str(log), "--referee", "kafka", "--allow-known"])
    assert done.exit_code == 1, done.output
    assert '"differs": "members"' in done.output
