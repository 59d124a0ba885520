"""The pure Connect worker driven message by message, without a coordinator or trio."""

from __future__ import annotations

from members.assignors.base import ConfigSnapshot
from members.config import WorkerConfig
from members.worker import ConnectWorker, MemberState
from protocol.connect import (
    CONFIG_MISMATCH,
    NO_ERROR,
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
)
from protocol.connect_codec import decode_subscription, encode_assignment
from protocol.effects import Log, Send, SetTimer
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

C1_0 = ConnectorTaskId("c1", 0)
C1_1 = ConnectorTaskId("c1", 1)


def make_worker(protocol: str = "sessioned") -> ConnectWorker:
    config = WorkerConfig.from_mapping({"connect.protocol": protocol})
    return ConnectWorker(
        "w2",
        config,
        group_id="g",
        config_view=ConfigSnapshot(offset=5, connectors={"c1": 2}),
    )


def sent(effects: list, kind: type) -> list:
    return [e.message for e in effects if isinstance(e, Send) and isinstance(e.message, kind)]


def heartbeat(worker: ConnectWorker, error: ErrorCode, now_ms: int) -> list:
    """The worker's heartbeat timer fires at ``now_ms`` and its Heartbeat is answered with
    ``error`` (the answer echoes the request's correlation id)."""
    (request,) = sent(worker.fire("heartbeat", now_ms), HeartbeatRequest)
    response = HeartbeatResponse(error=error, correlation_id=request.correlation_id)
    return worker.handle(response, now_ms)


def logs(effects: list, kind: str) -> list[dict]:
    return [e.fields for e in effects if isinstance(e, Log) and e.kind == kind]


def assignment(*, error: int = NO_ERROR, connectors=(), tasks=(), revoked_tasks=(), delay=0):
    return encode_assignment(
        ConnectAssignment(
            version=2,
            error=error,
            leader="w1-id",
            leader_url="http://w1:8083",
            config_offset=5,
            connectors=tuple(connectors),
            tasks=tuple(tasks),
            revoked_tasks=tuple(revoked_tasks),
            delay_ms=delay,
        )
    )


def join_round(worker: ConnectWorker, generation: int, assignment_bytes: bytes, now: int) -> list:
    """Answer the worker's JoinGroup as a follower, then its SyncGroup; return the effects."""
    effects = worker.handle(
        JoinGroupResponse(
            error=ErrorCode.NONE,
            generation_id=generation,
            protocol_type="connect",
            protocol_name="sessioned",
            leader="w1-id",
            member_id="w2-id",
        ),
        now,
    )
    assert sent(effects, SyncGroupRequest)[0].assignments == ()  # a follower sends none
    return worker.handle(
        SyncGroupResponse(
            error=ErrorCode.NONE, protocol_name="sessioned", assignment=assignment_bytes
        ),
        now + 1,
    )


def allocation_in(join: JoinGroupRequest) -> ConnectAssignment | None:
    name, metadata = join.protocols[0]
    assert name == "sessioned"
    return decode_subscription(metadata).allocation


def test_start_sends_join_with_every_advertised_protocol() -> None:
    worker = make_worker()
    (join,) = sent(worker.start(0), JoinGroupRequest)
    assert [name for name, _ in join.protocols] == ["sessioned", "compatible", "default"]
    assert join.member_id == "" and join.protocol_type == "connect"
    assert join.session_timeout_ms == 10_000 and join.rebalance_timeout_ms == 60_000
    assert allocation_in(join) is None  # no assignment yet: the wire null
    assert decode_subscription(join.protocols[0][1]).config_offset == 5


def test_member_id_required_is_adopted_and_join_is_resent() -> None:
    worker = make_worker()
    worker.start(0)
    effects = worker.handle(
        JoinGroupResponse(error=ErrorCode.MEMBER_ID_REQUIRED, member_id="w2-id"), 1
    )
    (again,) = sent(effects, JoinGroupRequest)
    assert again.member_id == "w2-id"


def test_incremental_assignments_merge_and_survive_a_failed_round() -> None:
    worker = make_worker()
    worker.start(0)
    effects = join_round(worker, 1, assignment(connectors=["c1"], tasks=[C1_0, C1_1]), 10)
    assert [f["task"] for f in logs(effects, "task_start")] == ["c1-0", "c1-1"]
    assert worker.state is MemberState.STABLE

    # A rebalance starts: the member rejoins, advertising its cumulative assignment.
    (join,) = sent(
        heartbeat(worker, ErrorCode.REBALANCE_IN_PROGRESS, 20),
        JoinGroupRequest,
    )
    held = allocation_in(join)
    assert held is not None and held.connectors == ("c1",) and set(held.tasks) == {C1_0, C1_1}

    # CONFIG_MISMATCH: nothing stops, the member rejoins at once, the items stay in its snapshot.
    effects = join_round(worker, 2, assignment(error=CONFIG_MISMATCH), 30)
    assert not logs(effects, "task_stop")
    (join,) = sent(effects, JoinGroupRequest)
    held = allocation_in(join)
    assert held is not None and held.error == CONFIG_MISMATCH
    assert set(held.tasks) == {C1_0, C1_1}

    # The next round revokes c1-1 and assigns nothing new: the merge keeps c1 and c1-0.
    effects = join_round(worker, 3, assignment(revoked_tasks=[C1_1]), 40)
    assert [f["task"] for f in logs(effects, "task_stop")] == ["c1-1"]
    assert worker.assignment_snapshot is not None
    assert worker.assignment_snapshot.connectors == ("c1",)
    assert worker.assignment_snapshot.tasks == (C1_0,)
    # ... and, because something was revoked, it rejoins for the follow-up round.
    (join,) = sent(effects, JoinGroupRequest)
    assert join.reason == "revocation follow-up"


def test_delay_in_assignment_schedules_the_rejoin() -> None:
    worker = make_worker()
    worker.start(0)
    effects = join_round(worker, 1, assignment(delay=40), 10)
    assert SetTimer("scheduled-rebalance", 11 + 40) in effects
    (join,) = sent(worker.fire("scheduled-rebalance", 51), JoinGroupRequest)
    assert join.reason == "scheduled rebalance delay expired"


def test_eager_member_revokes_everything_before_rejoining() -> None:
    worker = make_worker("eager")
    worker.start(0)
    effects = worker.handle(
        JoinGroupResponse(
            error=ErrorCode.NONE,
            generation_id=1,
            protocol_type="connect",
            protocol_name="default",
            leader="w1-id",
            member_id="w2-id",
        ),
        1,
    )
    v0 = encode_assignment(
        ConnectAssignment(
            version=0,
            error=0,
            leader="w1-id",
            leader_url="u",
            config_offset=5,
            connectors=("c1",),
            tasks=(C1_0,),
        )
    )
    worker.handle(
        SyncGroupResponse(error=ErrorCode.NONE, protocol_name="default", assignment=v0), 2
    )
    assert worker.current_protocol is ConnectProtocol.EAGER
    effects = heartbeat(worker, ErrorCode.REBALANCE_IN_PROGRESS, 3)
    kinds = [e.kind for e in effects if isinstance(e, Log)]
    # onJoinPrepare: revoke, stop every instance, and only then send JoinGroup.
    assert kinds.index("revoke") < kinds.index("task_stopped") < kinds.index("join_group_request")


def test_crash_stops_everything_silently() -> None:
    worker = make_worker()
    worker.start(0)
    join_round(worker, 1, assignment(connectors=["c1"], tasks=[C1_0]), 10)
    effects = worker.crash(20)
    assert not sent(effects, object)
    assert {
        f.get("task") or f.get("connector")
        for f in logs(effects, "task_stopped") + logs(effects, "connector_stopped")
    } == {"c1-0", "c1"}
    assert worker.state is MemberState.STOPPED
    assert worker.handle(HeartbeatResponse(error=ErrorCode.NONE), 30) == []


def test_unreadable_assignment_kills_the_worker_not_the_simulation() -> None:
    worker = make_worker()
    worker.start(0)
    worker.handle(
        JoinGroupResponse(
            error=ErrorCode.NONE,
            generation_id=1,
            protocol_type="connect",
            protocol_name="sessioned",
            leader="w1-id",
            member_id="w2-id",
        ),
        1,
    )
    effects = worker.handle(
        SyncGroupResponse(error=ErrorCode.NONE, protocol_name="sessioned", assignment=b"\x00"), 2
    )
    (fatal,) = logs(effects, "member_fatal")
    assert "assignment.version" in fatal["error"]
    assert worker.state is MemberState.STOPPED
    assert not sent(effects, object)  # no LeaveGroup: the process exits


def test_join_leader_cannot_assign_follower_catches_up_then_rejoins() -> None:
    # WorkerCoordinatorTest#testJoinLeaderCannotAssign: the follower gets CONFIG_MISMATCH at
    # offset 9 while it has read only to 4; it reads the config topic to the end, rejoins, and
    # its next JoinGroup carries a fresh snapshot (metadata() snapshots on every join).
    from members.messages import ConfigUpdate, ReadConfigToEnd

    worker = make_worker()
    worker.config_view = ConfigSnapshot(offset=4, connectors={"c1": 2})
    worker.start(0)
    failed = encode_assignment(
        ConnectAssignment(
            version=2, error=CONFIG_MISMATCH, leader="w1-id", leader_url="u", config_offset=9
        )
    )
    effects = join_round(worker, 1, failed, 10)
    assert sent(effects, ReadConfigToEnd) and not sent(effects, JoinGroupRequest)
    effects = worker.handle(ConfigUpdate(offset=9, connectors={"c1": 2, "c2": 1}), 12)
    (join,) = sent(effects, JoinGroupRequest)
    assert decode_subscription(join.protocols[0][1]).config_offset == 9
    assert join.reason == "config mismatch"


def test_garbage_member_metadata_ends_the_leader_not_the_simulation() -> None:
    # The coordinator never decodes metadata, so it keeps serving; the leader's assignor
    # throws out of poll() on an unreadable subscription and its herder exits (Kafka).
    from protocol.group import JoinGroupResponseMember

    worker = make_worker()
    (join,) = sent(worker.start(0), JoinGroupRequest)
    effects = worker.handle(
        JoinGroupResponse(
            error=ErrorCode.NONE,
            generation_id=1,
            protocol_type="connect",
            protocol_name="sessioned",
            leader="w2-id",
            member_id="w2-id",
            members=(
                JoinGroupResponseMember("w2-id", None, join.protocols[0][1]),
                JoinGroupResponseMember("bad-id", None, b"\x00\x02\xff"),
            ),
        ),
        1,
    )
    (fatal,) = logs(effects, "member_fatal")
    assert "assignor failed" in fatal["error"]
    assert worker.state is MemberState.STOPPED
    assert not sent(effects, SyncGroupRequest)
