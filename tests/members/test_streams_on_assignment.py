"""members.streams_on_assignment: what a Streams client makes of a received assignment
(StreamsPartitionAssignor.onAssignment + TaskManager.handleAssignment's diff), without a client."""

from __future__ import annotations

import pytest

from members.assignors.streams import TaskId
from members.streams_on_assignment import FOLLOWUP_REASON, REVOKE_REASON, plan_assignment
from members.streams_state import StreamsTopology, Subtopology
from protocol.streams_types import NO_NEXT_REBALANCE, StreamsAssignment, StreamsTaskId
from protocol.streams_versions import StreamsVersionError
from protocol.topic_partitions import TopicPartition

TOPO = StreamsTopology([Subtopology(0, 3, True, changelog_records=100), Subtopology(1, 1, False)])
T00, T01, T02 = TaskId(0, 0), TaskId(0, 1), TaskId(0, 2)


def _info(**fields: object) -> StreamsAssignment:
    defaults: dict[str, object] = {"version": 11, "commonly_supported_version": 11}
    return StreamsAssignment(**{**defaults, **fields})  # type: ignore[arg-type]


def test_revoked_actives_recycled_standbys_and_a_rejoin_after_revocation() -> None:
    info = _info(standby_tasks={StreamsTaskId(0, 1, None): ()}, next_rebalance_ms=5_000)
    plan = plan_assignment(
        TOPO, [TopicPartition("input-0", 2)], info, [T00, T01], [T02], 11, 11, now_ms=1_000
    )
    assert plan.active == [T02] and plan.standby == [T01]
    assert plan.close_active == [(T00, "revoked"), (T01, "recycled to standby")]
    assert plan.close_standby == [(T02, "recycled to active")]
    assert plan.record == {
        "error": 0,
        "active": ["0_2"],
        "standby": ["0_1"],
        "revoked": ["0_0", "0_1"],
        "next_rebalance_ms": 5_000,
    }
    assert plan.probing_at_ms == 5_000 and plan.rejoins == [REVOKE_REASON]
    assert plan.version_record is None and plan.version == 11


@pytest.mark.parametrize(
    ("next_ms", "probing_at_ms", "rejoins"),
    [(0, None, [FOLLOWUP_REASON]), (500, 1_000, []), (NO_NEXT_REBALANCE, None, [])],
)
def test_next_rebalance_ms(next_ms: int, probing_at_ms: int | None, rejoins: list[str]) -> None:
    plan = plan_assignment(TOPO, [], _info(next_rebalance_ms=next_ms), [], [], 11, 11, 1_000)
    assert (plan.probing_at_ms, plan.rejoins) == (probing_at_ms, rejoins)


def test_version_probing_comes_first_and_an_error_skips_the_version_check() -> None:
    # a v10 member in a group whose every member now supports 11: upgrade, rejoin at once
    plan = plan_assignment(
        TOPO, [], _info(version=10, next_rebalance_ms=0), [], [], 10, 11, now_ms=0
    )
    assert plan.version == 11 and plan.rejoins == [
        "version probing: every member supports a newer version"
    ]
    assert plan.version_record == {
        "from_version": 10,
        "to_version": 11,
        "assignment_version": 10,
        "commonly_supported_version": 11,
    }
    assert plan.probing_at_ms is None
    with pytest.raises(StreamsVersionError):
        plan_assignment(TOPO, [], _info(version=11), [], [], 10, 11, now_ms=0)
    errored = plan_assignment(TOPO, [], _info(version=11, error_code=1), [], [], 10, 11, 0)
    assert errored.version == 10 and errored.version_record is None
