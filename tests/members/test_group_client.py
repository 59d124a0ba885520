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
from protocol.effects import Send
from protocol.group import ErrorCode, FindCoordinatorResponse
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


def test_a_poll_timeout_after_a_join_cut_off_by_a_disconnect_still_leaves_the_group() -> None:
    """A JoinGroup that timed out is a disconnect (markCoordinatorUnknown), which leaves
    Kafka's member state at PREPARING_REBALANCE: the heartbeat thread's poll timeout then
    sends LeaveGroup for the member id the coordinator gave (maybeLeaveGroup: ``state !=
    UNJOINED``), so the coordinator drops it at once instead of keeping it in the join phase
    and the next generation until its session expires (chaos consumer seed 2, run 132: a
    straggler held the join phase past this member's JoinGroup timeout)."""
    from protocol.group import LeaveGroupRequest

    class Member(GroupClient):
        stalled = False

        def metadata(self, now_ms: int) -> tuple[tuple[str, bytes], ...]:
            return (("range", b""),)

        def poll_blocked(self) -> bool:
            return self.stalled

    def leaves(effects: list[object]) -> list[tuple[str, ...]]:
        return [
            e.message.member_ids
            for e in effects
            if isinstance(e, Send) and isinstance(e.message, LeaveGroupRequest)
        ]

    timeouts = GroupTimeouts(10_000, 3_000, 60_000, 30_000)
    client = Member("m1", "g", "consumer", timeouts, address="m1#1")
    client.start(0)
    client.member_id = "m1-1"  # what MEMBER_ID_REQUIRED handed out
    client.stalled = True
    client._on_request_timeout(65_000)
    client.handle(FindCoordinatorResponse(ErrorCode.NONE), 65_002)  # stalled: no JoinGroup
    assert client.state is MemberState.UNJOINED
    assert leaves(client.fire("poll", 70_000)) == [("m1-1",)]
    assert client.member_id == ""

    # a member that has not joined since it last left sends no LeaveGroup
    fresh = Member("m2", "g", "consumer", timeouts, address="m2#1")
    fresh.stalled = True
    fresh.member_id = "m2-1"
    assert leaves(fresh.fire("poll", 1_000)) == []
