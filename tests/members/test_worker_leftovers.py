"""KAFKA-13816's leftovers in the pure Connect worker: a worker cooperative before an eager
round keeps running what the eager leader gave to others, and no later eager join stops it.

Kafka (the commit groupsim follows): ``WorkerCoordinator#onJoinPrepare`` revokes the assignment
snapshot only under eager; ``onJoinComplete`` makes the snapshot the new assignment under eager
(merged under a cooperative protocol); ``DistributedHerder#startWork`` starts what is assigned
and not in its running assignment; ``Worker#startTask`` refuses a task the worker already runs
("Task already exists in this worker") while the first instance runs on.
"""

from __future__ import annotations

from members.assignors.base import ConfigSnapshot
from members.config import WorkerConfig
from members.worker import ConnectWorker
from protocol.connect import NO_ERROR, ConnectAssignment, ConnectorTaskId
from protocol.connect_codec import encode_assignment
from protocol.effects import Effect, Log, Send
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupResponse,
)

T0 = ConnectorTaskId("c1", 0)
T1 = ConnectorTaskId("c1", 1)
T2 = ConnectorTaskId("c1", 2)


def _worker() -> ConnectWorker:
    config = WorkerConfig.from_mapping({"connect.protocol": "sessioned"})
    return ConnectWorker(
        "w2", config, group_id="g", config_view=ConfigSnapshot(offset=5, connectors={"c1": 3})
    )


def _round(
    worker: ConnectWorker, generation: int, protocol: str, tasks: tuple, now: int
) -> list[Effect]:
    """Answer the worker's JoinGroup (a follower) and SyncGroup with ``tasks`` under
    ``protocol`` (``default`` is eager: a v0 assignment)."""
    effects = worker.handle(
        JoinGroupResponse(
            error=ErrorCode.NONE,
            generation_id=generation,
            protocol_type="connect",
            protocol_name=protocol,
            leader="w1-id",
            member_id="w2-id",
        ),
        now,
    )
    assignment = ConnectAssignment(
        version=0 if protocol == "default" else 2,
        error=NO_ERROR,
        leader="w1-id",
        leader_url="http://w1:8083",
        config_offset=5,
        connectors=(),
        tasks=tasks,
    )
    return effects + worker.handle(
        SyncGroupResponse(
            error=ErrorCode.NONE, protocol_name=protocol, assignment=encode_assignment(assignment)
        ),
        now + 1,
    )


def _rebalance(
    worker: ConnectWorker, now: int, error: ErrorCode = ErrorCode.REBALANCE_IN_PROGRESS
) -> list[Effect]:
    """A Heartbeat answered ``error`` (by default REBALANCE_IN_PROGRESS: the worker prepares
    and rejoins)."""
    requests = [
        e.message
        for e in worker.fire("heartbeat", now)
        if isinstance(e, Send) and isinstance(e.message, HeartbeatRequest)
    ]
    (request,) = requests
    answer = HeartbeatResponse(error=error, correlation_id=request.correlation_id)
    return worker.handle(answer, now)


def _logs(effects: list[Effect], kind: str) -> list[dict]:
    return [e.fields for e in effects if isinstance(e, Log) and e.kind == kind]


def _joined(effects: list[Effect]) -> bool:
    return any(isinstance(e, Send) and isinstance(e.message, JoinGroupRequest) for e in effects)


def test_an_eager_join_leaves_what_the_eager_leader_gave_away_running() -> None:
    worker = _worker()
    worker.start(0)
    _round(worker, 1, "sessioned", (T0, T1), 10)  # cooperative: runs c1-0, c1-1
    assert set(worker.running_tasks) == {T0, T1}
    # the group goes eager: joining under sessioned, the worker revokes nothing ...
    effects = _rebalance(worker, 3_010)
    assert _joined(effects) and _logs(effects, "revoke") == []
    # ... and the eager leader gives it c1-0 and c1-2 (c1-1 went to another worker)
    effects = _round(worker, 2, "default", (T0, T2), 3_020)
    assert [r["task"] for r in _logs(effects, "task_start")] == ["c1-2"]  # c1-0 runs already
    assert set(worker.running_tasks) == {T0, T1, T2}
    assert worker.leftover_work() == ([], [T1])
    # the next eager join revokes the snapshot only: c1-1 runs on
    effects = _rebalance(worker, 6_020)
    (revoke,) = _logs(effects, "revoke")
    assert revoke["reason"] == "eager_rejoin" and revoke["tasks"] == ["c1-0", "c1-2"]
    assert {r["task"] for r in _logs(effects, "task_stopped")} == {"c1-0", "c1-2"}
    assert _joined(effects)
    assert set(worker.running_tasks) == {T1}
    assert worker.leftover_work() == ([], [T1])


def test_a_leftover_assigned_again_is_owned_and_its_second_start_fails() -> None:
    worker = _worker()
    worker.start(0)
    _round(worker, 1, "sessioned", (T0, T1), 10)
    _rebalance(worker, 3_010)
    _round(worker, 2, "default", (T0,), 3_020)  # c1-1 left running outside the snapshot
    _rebalance(worker, 6_020)  # stops c1-0 only
    assert worker.leftover_work() == ([], [T1])
    # an eager round gives c1-1 back: the herder starts it again, Worker#startTask refuses a
    # second instance (reported FAILED), the first one runs on and is owned again
    effects = _round(worker, 3, "default", (T1, T2), 6_030)
    (failed,) = _logs(effects, "task_start_failed")
    assert failed == {"member": "w2", "task": "c1-1", "generation": 3, "error": "already exists"}
    assert [r["task"] for r in _logs(effects, "task_start")] == ["c1-2"]
    assert _logs(effects, "task_stopped") == []  # the first instance was never stopped
    assert worker.leftover_work() == ([], [])
    # so the next eager join stops it with the rest of the snapshot
    effects = _rebalance(worker, 9_030)
    assert {r["task"] for r in _logs(effects, "task_stopped")} == {"c1-1", "c1-2"}
    assert worker.running_tasks == {}


def test_a_lost_coordinator_revokes_the_snapshot_not_the_leftovers() -> None:
    worker = _worker()
    worker.start(0)
    _round(worker, 1, "sessioned", (T0, T1), 10)
    _rebalance(worker, 3_010)
    _round(worker, 2, "default", (T0,), 3_020)
    _rebalance(worker, 4_000, ErrorCode.NOT_COORDINATOR)  # the coordinator is unknown
    assert not worker.coordinator_known
    effects = worker.fire("coordinator-lost", 4_000 + worker.config.heartbeat_interval_ms)
    (revoke,) = _logs(effects, "revoke")
    assert revoke["reason"] == "coordinator_lost" and revoke["tasks"] == ["c1-0"]
    assert set(worker.running_tasks) == {T1}
