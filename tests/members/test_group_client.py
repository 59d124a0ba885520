"""members.group_client: the member state table, and behaviour both kinds share through it."""

from __future__ import annotations

import pytest

from members.group_client import GroupClient
from members.member_state import (
    VALID_PREVIOUS_STATES,
    GroupTimeouts,
    IllegalMemberTransition,
    MemberState,
)
from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from protocol.group import (
    ErrorCode,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from scenarios.input.streams import loads_streams_scenario
from scenarios.sim.runner import simulate


def _client() -> GroupClient:
    timeouts = GroupTimeouts(10_000, 3_000, 60_000, 30_000)
    return GroupClient("m1", "g", "consumer", timeouts)


def test_every_state_has_a_row_and_stopped_is_final() -> None:
    assert set(VALID_PREVIOUS_STATES) == set(MemberState)
    assert all(MemberState.STOPPED not in before for before in VALID_PREVIOUS_STATES.values())


@pytest.mark.parametrize(
    ("start", "target"),
    [
        (MemberState.UNJOINED, MemberState.STABLE),
        (MemberState.UNJOINED, MemberState.COMPLETING_REBALANCE),
        (MemberState.STABLE, MemberState.COMPLETING_REBALANCE),
        (MemberState.PREPARING_REBALANCE, MemberState.STABLE),
        (MemberState.STOPPED, MemberState.UNJOINED),
    ],
)
def test_an_illegal_move_raises_and_leaves_the_state(
    start: MemberState, target: MemberState
) -> None:
    client = _client()
    client.state = start
    with pytest.raises(IllegalMemberTransition, match=f"{start.name} cannot move to"):
        client.transition(target)
    assert client.state is start


def test_a_legal_move_changes_the_state() -> None:
    client = _client()
    client.transition(MemberState.PREPARING_REBALANCE)
    client.transition(MemberState.COMPLETING_REBALANCE)
    client.transition(MemberState.STABLE)
    assert client.state is MemberState.STABLE


def test_losing_the_coordinator_drops_the_connection_its_requests_went_on() -> None:
    """AbstractCoordinator#markCoordinatorUnknown disconnects (client.disconnectAsync): the
    answers to requests in flight on the old connection never arrive, so the member's requests
    go out on a new connection, and the engine delivers answers only on the current one."""

    class Member(GroupClient):
        def metadata(self, now_ms: int) -> tuple[tuple[str, bytes], ...]:
            return (("range", b""),)

    timeouts = GroupTimeouts(10_000, 3_000, 60_000, 30_000)
    client = Member("m1", "g", "consumer", timeouts, address="m1#1")
    first = [e for e in client.start(0) if isinstance(e, Send)]
    assert [e.via for e in first] == ["m1#1"]
    client._on_request_timeout(1)
    effects = client._take()
    assert client.connection_address == "m1#1/1"
    assert {e.via for e in effects if isinstance(e, Send)} == {"m1#1/1"}
    client.handle(FindCoordinatorResponse(ErrorCode.NONE), 2)
    client.mark_coordinator_unknown("again", 3)
    assert client.connection_address == "m1#1/2"


_STALL = """
kind = "streams"
name = "stall"
settle_ms = 200000

[config]
"max.poll.interval.ms" = 60000
"session.timeout.ms" = 10000

[[subtopologies]]
id = 0
partitions = 4
stateful = false

[[clients]]
name = "c1"

[[clients]]
name = "c2"

[[timeline]]
at_ms = 30000
action = "slow"
client = "c2"
stall_ms = {stall}
"""


def test_a_stream_thread_stalled_past_max_poll_interval_leaves_and_loses_its_tasks() -> None:
    result = simulate(loads_streams_scenario(_STALL.format(stall=90_000)), 1)
    records = result.records
    stall = next(r for r in records if r["kind"] == "stream_thread_stall")
    assert (stall["t_ms"], stall["member"], stall["stall_ms"]) == (30_000, "c2", 90_000)
    leave = next(r for r in records if r["kind"] == "leave_group")
    assert (leave["t_ms"], leave["member"], leave["reason"]) == (
        90_000,
        "c2",
        "poll timeout expired",
    )
    lost = [r for r in records if r["kind"] == "active_task_stopped" and r["member"] == "c2"]
    assert lost and all(r["reason"] == "lost: poll timeout expired" for r in lost)
    assert all(r["t_ms"] == 90_000 for r in lost)
    # c2 rejoins once its thread runs again, and the group ends balanced and clean.
    rejoin = [r for r in records if r["kind"] == "join_group_request" and r["member"] == "c2"]
    assert rejoin[-1]["t_ms"] >= 120_000
    assert result.failures == []


def test_a_short_stall_only_delays_the_rejoin() -> None:
    result = simulate(loads_streams_scenario(_STALL.format(stall=5_000)), 1)
    assert not any(r["kind"] == "leave_group" for r in result.records)
    assert result.failures == []


def test_a_stream_thread_stalled_mid_join_handles_the_answer_when_it_runs_again() -> None:
    """A Streams client whose stream thread stalls right after its first JoinGroup: the
    answer (MEMBER_ID_REQUIRED, KIP-394) waits for the next poll() — the heartbeat thread is
    disabled while MemberState#hasNotJoinedGroup — so the coordinator drops the pending member
    id by session timeout; at the stall's end the client joins with that id, hears
    UNKNOWN_MEMBER_ID, and joins afresh."""
    scenario = _STALL.format(stall=30_000).replace("at_ms = 30000", "at_ms = 1")
    result = simulate(loads_streams_scenario(scenario), 1)
    c2 = [r for r in result.records if r.get("member") == "c2"]
    answers = [(r["t_ms"], r["error"]) for r in c2 if r["kind"] == "join_group_response"]
    assert answers[:2] == [(30_001, "MEMBER_ID_REQUIRED"), (30_003, "UNKNOWN_MEMBER_ID")]
    (dropped,) = [r for r in c2 if r["kind"] == "member_pending_removed"]
    assert (dropped["t_ms"], dropped["reason"]) == (10_001, "session_timeout")
    joins = [r["t_ms"] for r in c2 if r["kind"] == "join_group_request"]
    assert joins[0] == 0 and all(t >= 30_001 for t in joins[1:])
    assert any(r["kind"] == "sync_group_response" and r["error"] == "NONE" for r in c2)
    assert result.failures == []


def test_losing_the_coordinator_mid_join_fails_the_join_and_joins_again() -> None:
    """markCoordinatorUnknown disconnects, and the JoinGroup in flight fails with a retriable
    DisconnectException: AbstractCoordinator#joinGroupIfNeeded sends a new JoinGroup once the
    coordinator is found. Waiting for the dropped answer instead left the member silent until
    its session expired (chaos seed 41, run 209: a late Heartbeat answered NOT_COORDINATOR
    while its JoinGroup was parked)."""
    from protocol.group import FindCoordinatorRequest, JoinGroupRequest

    class Member(GroupClient):
        def metadata(self, now_ms: int) -> tuple[tuple[str, bytes], ...]:
            return (("range", b""),)

    timeouts = GroupTimeouts(10_000, 3_000, 60_000, 30_000)
    client = Member("m1", "g", "consumer", timeouts, address="m1#1")
    joins = [e.message for e in client.start(0) if isinstance(e, Send)]
    assert [type(m) for m in joins] == [JoinGroupRequest]
    assert client.state is MemberState.PREPARING_REBALANCE
    client.mark_coordinator_unknown("Heartbeat: NOT_COORDINATOR", 5)
    assert client.state is MemberState.UNJOINED
    assert [type(e.message) for e in client._take() if isinstance(e, Send)] == [
        FindCoordinatorRequest
    ]
    effects = client.handle(FindCoordinatorResponse(ErrorCode.NONE), 6)
    again = [e.message for e in effects if isinstance(e, Send)]
    assert [type(m) for m in again] == [JoinGroupRequest]
    assert client.state is MemberState.PREPARING_REBALANCE


class _Stallable(GroupClient):
    """A bare group client whose polling thread the test stalls (``stalled``)."""

    stalled = False

    def metadata(self, now_ms: int) -> tuple[tuple[str, bytes], ...]:
        return (("range", b""),)

    def poll_blocked(self) -> bool:
        return self.stalled

    def perform_assignment(
        self, response: JoinGroupResponse, now_ms: int
    ) -> tuple[tuple[str, bytes], ...]:
        return ()

    def decode_assignment(self, data: bytes) -> object:
        return data

    def on_join_complete(self, assignment: object, protocol_name: str, now_ms: int) -> None:
        self.complete_join()


_TIMEOUTS = GroupTimeouts(10_000, 3_000, 60_000, 30_000)


def _sent(effects: list[Effect]) -> list[object]:
    return [e.message for e in effects if isinstance(e, Send)]


def _logged(effects: list[Effect]) -> list[str]:
    return [e.kind for e in effects if isinstance(e, Log)]


def _leaves(effects: list[Effect]) -> list[tuple[str, ...]]:
    return [m.member_ids for m in _sent(effects) if isinstance(m, LeaveGroupRequest)]


def _joined(client: _Stallable, *, sync: bool = True) -> None:
    """Drive ``client`` from start-up to COMPLETING_REBALANCE (``sync`` False) or STABLE."""
    client.start(0)
    client.handle(JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", "m1-1", "m1-1"), 10)
    if sync:
        client.handle(SyncGroupResponse(ErrorCode.NONE, "consumer", "range", b""), 20)


def test_a_join_answer_during_a_stall_waits_for_the_next_poll() -> None:
    """HeartbeatThread.run disables itself while MemberState#hasNotJoinedGroup and is the
    only thread that polls the network client during a stall: a JoinGroup answer that comes
    while the polling thread is stalled is handled (SyncGroup sent) only at the next poll()."""
    client = _Stallable("m1", "g", "consumer", _TIMEOUTS, address="m1#1")
    client.start(0)
    client.stalled = True
    answer = JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", "m1-1", "m1-1")
    effects = client.handle(answer, 10)
    assert _sent(effects) == [] and _logged(effects) == []
    assert [e for e in effects if isinstance(e, CancelTimer)] == [CancelTimer("request-timeout")]
    assert client.state is MemberState.PREPARING_REBALANCE
    assert client.fire("heartbeat", 3_010) == []  # not in a generation: nothing sent
    client.stalled = False
    client.stop_poll_timer()
    client.poll_resumed(40_000)
    effects = client._take()
    assert _logged(effects) == ["join_group_response", "sync_group_request"]
    assert [type(m) for m in _sent(effects)] == [SyncGroupRequest]
    assert client.state is MemberState.COMPLETING_REBALANCE


def test_a_held_answer_from_a_dropped_connection_is_never_handled() -> None:
    """An answer held during a stall on a connection ``markCoordinatorUnknown`` dropped since
    (the JoinGroup timed out) is not delivered when the stall ends: the member joins again."""
    client = _Stallable("m1", "g", "consumer", _TIMEOUTS, address="m1#1")
    client.start(0)
    client.stalled = True
    client.handle(HeartbeatResponse(ErrorCode.NOT_COORDINATOR, 0), 5)  # held
    client._on_request_timeout(65_000)
    client.handle(FindCoordinatorResponse(ErrorCode.NONE), 65_002)
    client._take()
    client.stalled = False
    client.poll_resumed(70_000)
    effects = client._take()
    assert "coordinator_unknown" not in _logged(effects)
    assert [type(m) for m in _sent(effects)] == [JoinGroupRequest]


def test_a_stall_in_a_generation_still_leaves_at_the_deadline() -> None:
    client = _Stallable("m1", "g", "consumer", _TIMEOUTS, address="m1#1")
    _joined(client)
    client.stalled = True
    client.start_poll_timer(1_000)
    effects = client.fire("poll", 61_000)
    assert _logged(effects)[:3] == ["timer_fired", "poll_timeout", "leave_group"]
    assert _leaves(effects) == [("m1-1",)]


def test_a_poll_timeout_is_noticed_once_the_coordinator_is_known_again() -> None:
    """HeartbeatThread.run tests an unknown coordinator before pollTimeoutExpired, and
    maybeLeaveGroup needs a known coordinator: an expiry while the coordinator is unknown is
    noticed when it is found (FindCoordinatorResponseHandler resets the session timer)."""
    client = _Stallable("m1", "g", "consumer", _TIMEOUTS, address="m1#1")
    _joined(client)
    client.stalled = True
    client.start_poll_timer(1_000)
    client.mark_coordinator_unknown("session timed out", 50_000)
    client._take()
    effects = client.fire("poll", 61_000)
    assert "poll_timeout" not in _logged(effects) and _leaves(effects) == []
    assert client.member_id == "m1-1" and client.state is MemberState.STABLE
    effects = client.handle(FindCoordinatorResponse(ErrorCode.NONE), 70_000)
    assert _logged(effects) == ["coordinator_found", "poll_timeout", "leave_group"]
    assert _leaves(effects) == [("m1-1",)]
    assert not any(isinstance(m, HeartbeatRequest) for m in _sent(effects))
    assert client.member_id == "" and client.state is MemberState.UNJOINED


def test_a_poll_timeout_not_noticed_before_the_stall_ended_is_forgotten() -> None:
    """The next poll() resets Heartbeat.pollTimer: an expiry the heartbeat thread did not
    notice (coordinator unknown) is gone once the stall ends; the member heartbeats on."""
    client = _Stallable("m1", "g", "consumer", _TIMEOUTS, address="m1#1")
    _joined(client)
    client.stalled = True
    client.start_poll_timer(1_000)
    client.mark_coordinator_unknown("session timed out", 50_000)
    client.fire("poll", 61_000)
    client.stalled = False
    client.stop_poll_timer()
    client.poll_resumed(65_000)
    effects = client.handle(FindCoordinatorResponse(ErrorCode.NONE), 70_000)
    assert "poll_timeout" not in _logged(effects) and _leaves(effects) == []
    assert [type(m) for m in _sent(effects)] == [HeartbeatRequest]


def test_a_poll_timeout_after_a_cut_join_leaves_only_if_it_had_joined() -> None:
    """A JoinGroup or SyncGroup cut off by a disconnect (``markCoordinatorUnknown``) leaves
    Kafka's member state at PREPARING_REBALANCE or COMPLETING_REBALANCE. Mid-JoinGroup the
    heartbeat thread is disabled (``MemberState#hasNotJoinedGroup``): the expiry is never
    noticed and no LeaveGroup goes. Mid-SyncGroup it runs: once the coordinator is found it
    notices the expiry and sends LeaveGroup for the member id (maybeLeaveGroup: ``state !=
    UNJOINED``), so the coordinator drops it at once (chaos consumer seed 2, run 132)."""
    client = _Stallable("m1", "g", "consumer", _TIMEOUTS, address="m1#1")
    client.start(0)
    client.member_id = "m1-1"  # what MEMBER_ID_REQUIRED handed out
    client.stalled = True
    client.start_poll_timer(1_000)
    client._on_request_timeout(65_000)
    client.handle(FindCoordinatorResponse(ErrorCode.NONE), 65_002)  # stalled: no JoinGroup
    assert client.state is MemberState.UNJOINED
    effects = client.fire("poll", 70_000)
    assert _leaves(effects) == [] and "poll_timeout" not in _logged(effects)

    completing = _Stallable("m2", "g", "consumer", _TIMEOUTS, address="m2#1")
    _joined(completing, sync=False)
    completing.stalled = True
    completing.start_poll_timer(1_000)
    completing._on_request_timeout(30_020)  # the SyncGroup timed out
    assert _leaves(completing.fire("poll", 61_000)) == []  # coordinator unknown
    effects = completing.handle(FindCoordinatorResponse(ErrorCode.NONE), 62_000)
    assert _leaves(effects) == [("m1-1",)]
    assert completing.member_id == ""

    # a member that has not joined since it last left sends no LeaveGroup
    fresh = _Stallable("m3", "g", "consumer", _TIMEOUTS, address="m3#1")
    fresh.stalled = True
    fresh.member_id = "m3-1"
    assert _leaves(fresh.fire("poll", 1_000)) == []


def test_a_rebalancing_answer_restarts_the_session_of_a_member_whose_rejoin_waits() -> None:
    """The heartbeat thread's listener calls ``heartbeat.receiveHeartbeat()`` on a
    RebalanceInProgressException whatever the state: a stable member stalled in its poll loop
    (its rejoin waits for the next poll()) keeps a live session instead of marking the
    coordinator unknown at ``session.timeout.ms``."""
    client = _Stallable("m1", "g", "consumer", _TIMEOUTS, address="m1#1")
    _joined(client)
    client._take()
    client.stalled = True
    effects = client.fire("heartbeat", 3_020)
    (request,) = [m for m in _sent(effects) if isinstance(m, HeartbeatRequest)]
    answer = HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS, request.correlation_id)
    effects = client.handle(answer, 3_022)
    assert SetTimer("session", 13_022) in effects
    assert client.state is MemberState.STABLE and client.rejoin_needed
    assert _sent(effects) == []  # the JoinGroup waits for the poll loop
    # not stalled: the JoinGroup goes out at once and the session timer is cancelled
    other = _Stallable("m2", "g", "consumer", _TIMEOUTS, address="m2#1")
    _joined(other)
    other._take()
    effects = other.fire("heartbeat", 3_020)
    (request,) = [m for m in _sent(effects) if isinstance(m, HeartbeatRequest)]
    effects = other.handle(
        HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS, request.correlation_id), 3_022
    )
    assert [type(m) for m in _sent(effects)] == [JoinGroupRequest]
    assert not [e for e in effects if isinstance(e, SetTimer) and e.key == "session"]
