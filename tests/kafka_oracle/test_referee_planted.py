"""A planted assignor bug that only the referee can judge: the eager round robin walking the
members in descending id order (``eager-round-robin-reversed``) is safe, balanced and live, so
no checker of the log sees it (300 chaos runs of seed 1), but Kafka's ``EagerAssignor`` given
the same inputs disagrees at the first leader round. Runs in this process so the monkeypatch
reaches the simulation; the referee's JVM is stopped at the end."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from scenarios import referee
from scenarios.campaigns.chaos import run_one
from tests.kafka_oracle.oracle import unavailable_reason
from tests.scenarios.campaigns.chaos.planted import by_name, chaos_config

pytestmark = pytest.mark.kafka


@pytest.fixture(autouse=True)
def _referee_jvm() -> Iterator[None]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    try:
        yield
    finally:
        referee.stop()


def test_the_referee_finds_an_eager_round_robin_in_the_wrong_order() -> None:
    bug = by_name("eager-round-robin-reversed")
    with bug.applied():
        outcome = run_one(replace(chaos_config(bug, 0), referee="kafka"), 1, 0)
    assert outcome.first_new is not None
    assert outcome.first_new[0] == referee.REFEREE_INVARIANT
    assert "eager assignor disagrees" in outcome.first_new[1]
