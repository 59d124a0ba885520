"""Planted assignor bugs that only the referee can judge. The eager round robin walking the
members in descending id order (``eager-round-robin-reversed``) is safe, balanced and live, so
no checker of the log sees it (300 chaos runs of seed 1), but Kafka's ``EagerAssignor`` given
the same inputs disagrees at the first leader round; the same for standbys placed on the most
loaded clients (``standby-assignor-most-loaded``) and Kafka's ``HighAvailabilityTaskAssignor``,
and for a failover's loaded group without its static members' instance ids
(``coordinator-load-forgets-instance-ids``) and Kafka's reloaded ``GroupMetadataManager``.
Runs in this process so the monkeypatch reaches the simulation; the referee's JVM is stopped at
the end (about 35 s in all, JVM start included)."""

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
    assert bug.referee_only
    with bug.applied():
        outcome = run_one(replace(chaos_config(bug, 0), referee="kafka-leaders"), 1, 0)
    assert outcome.first_new is not None
    assert outcome.first_new[0] == referee.REFEREE_INVARIANT
    assert "eager assignor disagrees" in outcome.first_new[1]


def test_the_referee_finds_standbys_on_the_most_loaded_clients() -> None:
    # DefaultStandbyTaskAssignor polling its heap from the wrong end: still one standby per
    # task away from its active, so no checker sees it in 300 Streams runs of seed 1; the
    # referee's HighAvailabilityTaskAssignor disagrees at run 1 (run 0 places no standby)
    bug = by_name("standby-assignor-most-loaded")
    found = None
    with bug.applied():
        for index in range(3):
            outcome = run_one(replace(chaos_config(bug, index), referee="kafka-leaders"), 1, index)
            if outcome.first_new is not None:
                found = outcome.first_new
                break
    assert found is not None and found[0] == referee.REFEREE_INVARIANT
    assert "HighAvailabilityTaskAssignor disagrees" in found[1]


def test_the_referee_finds_a_loaded_group_without_its_static_members() -> None:
    # GroupCoordinator.load forgetting each member's group.instance.id (KIP-345): the loaded
    # group has no static members, so a static consumer's next Heartbeat after the failover
    # (it names its instance id) is UNKNOWN_MEMBER_ID where Kafka's reloaded
    # GroupMetadataManager answers NONE; the consumer rejoins, which no checker faults (not in
    # 300 consumer runs of seed 1). Consumer campaign seed 3 finds it at run 3
    bug = by_name("coordinator-load-forgets-instance-ids")
    assert bug.referee_only
    with bug.applied():
        plain = run_one(chaos_config(bug, 3), 3, 3)
        outcome = run_one(replace(chaos_config(bug, 3), referee="kafka"), 3, 3)
    assert not plain.failed, plain.first_new
    assert outcome.first_new is not None, outcome
    assert outcome.first_new[0] == referee.REFEREE_INVARIANT
    assert "GroupMetadataManager disagrees" in outcome.first_new[1], outcome.first_new
