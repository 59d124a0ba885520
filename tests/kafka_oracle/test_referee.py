"""``--referee kafka``: chaos runs judged by Kafka's own Connect and Streams assignors.

A clean campaign finds no disagreement; a bug planted in groupsim's incremental assignor
(monkeypatched: each worker keeps the last task it should revoke) is found by the referee as
``referee_disagrees`` — before the ordinary checkers' ``balance`` — and shrunk like any other
violation. The same for Streams: a clean campaign agrees with Kafka's
``HighAvailabilityTaskAssignor``, and a bug planted in groupsim's (no warm-up replicas: a task
moved to a caught-up client leaves the lagging one without its warm-up) is found by the referee
at its first round (the ordinary checkers see it later, as ``liveness`` only). Runs in this
process (``jobs=1``) so the monkeypatch reaches the simulation; the referee's JVM is stopped at
the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from members.assignors import IncrementalCooperativeAssignor
from scenarios import referee
from scenarios.campaigns.chaos import ChaosConfig, run_campaign, shrink_run
from scenarios.campaigns.chaos.generate import generate
from scenarios.campaigns.chaos.run import run_spec
from scenarios.eventlog import write_jsonl
from tests.kafka_oracle.oracle import unavailable_reason

pytestmark = pytest.mark.kafka

_CONFIG = ChaosConfig(
    members=(3, 5),
    protocols=("eager", "compatible", "sessioned"),
    duration_ms=600_000,
    referee="kafka-leaders",
)


@pytest.fixture(autouse=True)
def _referee_jvm() -> Iterator[None]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    try:
        yield
    finally:
        referee.stop()


def test_a_clean_campaign_has_no_disagreement() -> None:
    result = run_campaign(_CONFIG, 6, 7, jobs=1, shrink_failures=False)
    assert result.refereed > 0, "the referee compared no leader round"
    assert result.violations.get(referee.REFEREE_INVARIANT, 0) == 0, result.violations
    assert not result.failed, [o.first_new for o in result.failed]


def _plant_one_revoked_task_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    real = IncrementalCooperativeAssignor.perform_task_assignment

    def one_too_few(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        result = real(self, *args, **kwargs)
        for worker, revoked in result.newly_revoked_tasks.items():
            if revoked:  # planted: each worker keeps its last revoked task
                result.all_assigned_tasks[worker].append(revoked.pop())
        return result

    monkeypatch.setattr(IncrementalCooperativeAssignor, "perform_task_assignment", one_too_few)


def test_a_planted_assignor_bug_is_found_and_shrunk(monkeypatch: pytest.MonkeyPatch) -> None:
    _plant_one_revoked_task_kept(monkeypatch)
    config = ChaosConfig(
        members=(3, 5), protocols=("sessioned",), duration_ms=600_000, referee="kafka-leaders"
    )
    result = run_campaign(config, 10, 7, jobs=1, shrink_failures=False)
    found = [o for o in result.outcomes if referee.REFEREE_INVARIANT in o.violations]
    assert found, f"the referee missed the planted bug: {result.violations}"
    # the ordinary checkers see this bug too, later (``balance``: the kept task leaves the
    # workers unbalanced); the referee's disagreement sits right after its ``assignor``
    # record, so it is the run's first violation and the one the campaign shrinks by:
    assert all(o.first_new and o.first_new[0] == referee.REFEREE_INVARIANT for o in found)
    rep = shrink_run(config, 7, found[0].index, referee.REFEREE_INVARIANT, budget=40)
    assert rep.verified, rep
    assert rep.steps_after <= rep.steps_before
    assert "revoked tasks: groupsim" in rep.detail, rep.detail


def test_check_referee_judges_a_saved_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``groupsim check --referee kafka`` on a saved log: one verdict line; a planted bug's
    log fails with the disagreement."""
    from typer.testing import CliRunner

    from scenarios.cli.main import app

    _plant_one_revoked_task_kept(monkeypatch)
    config = ChaosConfig(members=(4, 4), protocols=("sessioned",), duration_ms=600_000)
    for index in range(10):
        outcome, result = run_spec(generate(config, 7, index), "kafka-leaders")
        if referee.REFEREE_INVARIANT in outcome.violations:
            break
    else:
        pytest.fail("no run of the planted bug disagreed with Kafka")
    log = tmp_path / "events.jsonl"
    write_jsonl([r for r in result.records if r.get("kind") != "violation"], log)
    done = CliRunner().invoke(app, ["check", str(log), "--referee", "kafka"])
    assert done.exit_code == 1, done.output
    assert referee.REFEREE_INVARIANT in done.output
    assert "leader round(s) compared" in done.output


_STREAMS = ChaosConfig(kind="streams", members=(2, 5), duration_ms=600_000, referee="kafka-leaders")


def test_a_clean_streams_campaign_has_no_disagreement() -> None:
    result = run_campaign(_STREAMS, 8, 3, jobs=1, shrink_failures=False)
    assert result.refereed > 0, "the referee compared no Streams leader round"
    assert result.violations.get(referee.REFEREE_INVARIANT, 0) == 0, [
        o.first_new for o in result.failed
    ]
    assert not result.failed, [o.first_new for o in result.failed]


def _plant_no_warmups(monkeypatch: pytest.MonkeyPatch) -> None:
    import members.assignors.streams.high_availability as ha
    from members.assignors.streams.task_movement import WarmupBudget

    honest = ha.assign_active_task_movements

    def no_warmups(caught_up, by_lag, clients, warmups, budget):  # type: ignore[no-untyped-def]
        return honest(caught_up, by_lag, clients, warmups, WarmupBudget(0))  # planted

    monkeypatch.setattr(ha, "assign_active_task_movements", no_warmups)


def test_a_planted_streams_assignor_bug_is_found_by_the_referee(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _plant_no_warmups(monkeypatch)
    result = run_campaign(_STREAMS, 30, 3, jobs=1, shrink_failures=False, fail_fast=True)
    found = [o for o in result.outcomes if referee.REFEREE_INVARIANT in o.violations]
    assert found, f"the referee missed the planted bug: {result.violations}"
    assert found[0].first_new is not None
    assert "HighAvailabilityTaskAssignor disagrees" in found[0].first_new[1]


def test_check_referee_judges_a_saved_streams_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``groupsim check --referee kafka`` on a saved Streams log: a clean one passes with its
    rounds compared; the planted bug's log fails with the disagreement."""
    from typer.testing import CliRunner

    from scenarios.cli.main import app

    config = ChaosConfig(kind="streams", members=(5, 5), duration_ms=600_000)
    clean = tmp_path / "clean.jsonl"
    write_jsonl(run_spec(generate(config, 3, 0))[1].records, clean)
    done = CliRunner().invoke(app, ["check", str(clean), "--referee", "kafka", "--allow-known"])
    assert done.exit_code == 0, done.output
    assert "0 disagreement(s)" in done.output
    _plant_no_warmups(monkeypatch)
    for index in range(10):
        outcome, result = run_spec(generate(config, 3, index), "kafka-leaders")
        if referee.REFEREE_INVARIANT in outcome.violations:
            break
    else:
        pytest.fail("no run of the planted Streams bug disagreed with Kafka")
    log = tmp_path / "planted.jsonl"
    write_jsonl([r for r in result.records if r.get("kind") != "violation"], log)
    done = CliRunner().invoke(app, ["check", str(log), "--referee", "kafka"])
    assert done.exit_code == 1, done.output
    assert "HighAvailabilityTaskAssignor disagrees" in done.output
