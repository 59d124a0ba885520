"""``replay --conform`` on a real group coordinator killed mid-rebalance, and on the restarted
broker taking the group back (``tests/kafka_oracle/
test_real_cluster_coordinator_killed_mid_rebalance.py``, Kafka 4.4.0, three brokers; the traces
hold group requests and connection openings only).

``real-3-brokers-coordinator-killed-mid-rebalance.jsonl``: three Java consumers
(``cooperative-sticky``) at generation 2; a fourth joins, the group goes to generation 3 and
waits in CompletingRebalance for its leader (paused 8 s in its assignor); the coordinator's
broker is killed; the next one loads the last committed record (generation 2, three members,
Stable), the members rejoin there (generation 3 again), and while the leader's record of that
generation waits ~100 ms to commit (replicated ``__consumer_offsets``), the fourth consumer's
JoinGroup sends the group back to PreparingRebalance: the three parked SyncGroups are answered
REBALANCE_IN_PROGRESS.

``real-3-brokers-coordinator-killed-and-back.jsonl``: the same kill, then the killed broker
restarts and a preferred leader election gives it the group back (generation 5, four members);
then one consumer leaves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.config import CoordinatorConfig
from coordinator.group import GroupCoordinator
from scenarios.record.conform import conform_coordinator, read_exchanges

TRACES = Path(__file__).parent / "traces"
MID_REBALANCE = TRACES / "real-3-brokers-coordinator-killed-mid-rebalance.jsonl"
AND_BACK = TRACES / "real-3-brokers-coordinator-killed-and-back.jsonl"
SETTINGS = CoordinatorConfig.from_mapping(
    {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
)


def test_a_coordinator_killed_mid_rebalance_is_replayed_with_no_divergence() -> None:
    verdict = conform_coordinator(read_exchanges(MID_REBALANCE), SETTINGS)
    assert verdict.divergences == []
    [move] = verdict.coordinator_moves
    # the last committed record: the generation before the rebalance, without the joiner
    assert move.generation == 2 and len(move.members) == 3
    assert not any(m.startswith("sd-") for m in move.members)
    assert verdict.compared["SyncGroup"] >= 10


def test_a_record_committed_at_once_misses_the_join_in_its_commit_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Planted: the leader's record commits at once (as with one replica). The joiner's
    JoinGroup then meets a Stable group, and the three SyncGroups Kafka answered
    REBALANCE_IN_PROGRESS are answered NONE."""
    real_handle = GroupCoordinator.handle

    def at_once(self, source, request, now_ms):  # type: ignore[no-untyped-def]
        self.write_latency_ms = 0
        return real_handle(self, source, request, now_ms)

    monkeypatch.setattr(GroupCoordinator, "handle", at_once)
    verdict = conform_coordinator(read_exchanges(MID_REBALANCE), SETTINGS)
    first = verdict.divergences[0]
    assert (first.api, first.field, first.recorded, first.groupsim) == (
        "SyncGroup",
        "error_code",
        "rebalance_in_progress",
        "none",
    )


def test_the_restarted_broker_takes_the_group_back_with_no_divergence() -> None:
    verdict = conform_coordinator(read_exchanges(AND_BACK), SETTINGS)
    assert verdict.divergences == []
    away, back = verdict.coordinator_moves
    assert (back.source, back.target) == (away.target, away.source)
    assert (away.generation, len(away.members)) == (3, 3)
    assert (back.generation, len(back.members)) == (5, 4)
    assert away.loaded_ms < back.died_ms < back.loaded_ms
    # where the real loads ended: after the new coordinator's last NOT_COORDINATOR /
    # COORDINATOR_LOAD_IN_PROGRESS to the group (3 ms before the replay's load), and, moving
    # back (no such answer recorded), after the second coordinator's last answer (542 ms)
    assert [m.loaded_ms - m.not_loaded_ms for m in (away, back)] == [3, 542]
    assert back.not_loaded_ms == back.died_ms
    assert {"Heartbeat", "JoinGroup", "SyncGroup", "LeaveGroup"} <= set(verdict.compared)
    assert any("NOT_COORDINATOR" in reason for reason in verdict.skipped)


def test_a_move_back_that_loads_a_stale_record_diverges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Planted: the group is loaded back from the record the *first* coordinator wrote (as if
    the second one's records had not been replicated to the restarted broker): generation 3,
    where the members are at 5, so their heartbeats are ILLEGAL_GENERATION."""
    real_load = GroupCoordinator.load
    first_records: list[object] = []

    def stale(cls, group_id, config, new_member_id, record, now_ms):  # type: ignore[no-untyped-def]
        if not first_records:
            first_records.append(record)
        return real_load(group_id, config, new_member_id, first_records[0], now_ms)

    monkeypatch.setattr(GroupCoordinator, "load", classmethod(stale))
    verdict = conform_coordinator(read_exchanges(AND_BACK), SETTINGS)
    first = verdict.divergences[0]
    assert (first.api, first.field, first.recorded, first.groupsim) == (
        "Heartbeat",
        "error_code",
        "none",
        "illegal_generation",
    ), first
