"""``replay --conform`` on a real group coordinator that moved.

The trace (group requests and connection openings only) is Kafka 4.0.2's, three brokers
(``tests/kafka_oracle/test_real_cluster_coordinator_move.py``): three Java consumers
(``cooperative-sticky``) formed generation 2 on node 2; node 2 was killed (SIGKILL) at about
13.6 s; its heartbeats went unanswered, node 1 answered NOT_COORDINATOR until the controller
fenced node 2 and node 1 took ``__consumer_offsets`` over and loaded the group (about 20.5 s);
the consumers kept generation 2; then ``sc`` left (a cooperative rebalance on node 1, generations
3 and 4 as ``sa`` and ``sb`` closed too).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from coordinator.config import CoordinatorConfig
from coordinator.group import GroupCoordinator, GroupRecord
from protocol.effects import Effect, SetTimer
from scenarios.record.conform import conform_coordinator, read_exchanges

TRACE = Path(__file__).parent / "traces" / "real-3-brokers-coordinator-moved.jsonl"
SETTINGS = CoordinatorConfig.from_mapping(
    {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
)


def test_the_move_is_replayed_with_no_divergence() -> None:
    verdict = conform_coordinator(read_exchanges(TRACE), SETTINGS)
    assert verdict.divergences == []
    [move] = verdict.coordinator_moves
    assert move.source != move.target
    assert move.generation == 2 and len(move.members) == 3
    assert move.died_ms < move.loaded_ms
    # the real load ended after node 1's last NOT_COORDINATOR to the group: the replay's load
    # (and the session deadlines it arms) is at most 449 ms late
    assert move.died_ms < move.not_loaded_ms < move.loaded_ms
    assert move.loaded_ms - move.not_loaded_ms == 449
    # the heartbeats and the later rebalance went to the new coordinator and were compared
    assert {"Heartbeat", "JoinGroup", "SyncGroup", "LeaveGroup"} <= set(verdict.compared)
    assert any("NOT_COORDINATOR" in reason for reason in verdict.skipped)


def test_the_moved_group_is_answered_by_the_loaded_coordinator_not_the_old_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Loading an empty group instead of the old coordinator's record (as if nothing had been
    written to ``__consumer_offsets``) makes the members' next heartbeats UNKNOWN_MEMBER_ID."""
    real_load = GroupCoordinator.load

    def amnesiac(
        cls: type[GroupCoordinator],
        group_id: str,
        config: CoordinatorConfig,
        new_member_id: Callable[[str], str],
        record: GroupRecord | None,
        now_ms: int,
    ) -> tuple[GroupCoordinator, list[Effect]]:
        return real_load(group_id, config, new_member_id, None, now_ms)

    monkeypatch.setattr(GroupCoordinator, "load", classmethod(amnesiac))
    verdict = conform_coordinator(read_exchanges(TRACE), SETTINGS)
    first = verdict.divergences[0]
    assert (first.api, first.field, first.groupsim) == (
        "Heartbeat",
        "error_code",
        "unknown_member_id",
    )


def test_a_load_that_forgets_a_session_deadline_diverges(monkeypatch: pytest.MonkeyPatch) -> None:
    plant_forgotten_session(monkeypatch)
    verdict = conform_coordinator(read_exchanges(TRACE), SETTINGS)
    first = verdict.divergences[0]
    assert (first.field, first.recorded) == ("error_code", "none"), first


def test_a_trace_without_broker_addresses_has_no_move(tmp_path: Path) -> None:
    """Traces recorded before connections named their broker: one coordinator per group, as
    before."""
    lines = [
        line for line in TRACE.read_text().splitlines() if json.loads(line).get("event") != "open"
    ]
    stripped = tmp_path / "trace.jsonl"
    stripped.write_text("\n".join(lines) + "\n")
    verdict = conform_coordinator(read_exchanges(stripped), SETTINGS)
    assert verdict.coordinator_moves == []


def plant_forgotten_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: :meth:`GroupCoordinator.load` forgets its first member's session deadline
    (arms it at the load instead of ``session.timeout.ms`` later, unlike
    ``GroupMetadataManager#onLoaded``): groupsim expires that member and rebalances where the
    real coordinator kept the group Stable."""
    real_load = GroupCoordinator.load

    def forgetful(
        cls: type[GroupCoordinator],
        group_id: str,
        config: CoordinatorConfig,
        new_member_id: Callable[[str], str],
        record: GroupRecord | None,
        now_ms: int,
    ) -> tuple[GroupCoordinator, list[Effect]]:
        coordinator, effects = real_load(group_id, config, new_member_id, record, now_ms)
        members = list(coordinator.group.members.values())
        if members:
            forgotten = members[0]
            forgotten.hb_deadline = now_ms
            key = forgotten.hb_key
            effects = [
                SetTimer(key, now_ms) if isinstance(e, SetTimer) and e.key == key else e
                for e in effects
            ]
        return coordinator, effects

    monkeypatch.setattr(GroupCoordinator, "load", classmethod(forgetful))
