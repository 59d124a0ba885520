"""The steady heartbeat hooks the fast paths schedule (scenarios/sim/fastpath) do what the
owners' general entry points do: ``GroupClient.heartbeat_round`` / ``heartbeat_answered`` as
``fire("heartbeat")`` / ``handle(HeartbeatResponse)``, ``GroupCoordinator.extend_session`` as
``handle(HeartbeatRequest)``, on members and a coordinator taken from a stable run."""

from __future__ import annotations

import copy

import msgspec
import pytest

from coordinator.group import GroupCoordinator, heartbeat_key
from members.group_client import COORDINATOR_ADDRESS, GroupClient
from protocol.effects import Send, SetTimer
from protocol.group import ErrorCode, HeartbeatResponse
from scenarios import kinds
from scenarios.input.loader import loads_scenario
from scenarios.sim.engine import Engine

STABLE = """
name = "stable"
seed = 1
settle_ms = 120000
[cluster]
size = 3
[cluster.config]
"connect.protocol" = "sessioned"
[network]
latency_ms = 1
[workload.generate]
count = 3
tasks = 2
prefix = "c"
"""


@pytest.fixture(scope="module")
def stable() -> tuple[GroupCoordinator, GroupClient, int]:
    """The coordinator and member w1 of a group Stable for a minute, w1 with no Heartbeat in
    flight; and the time (virtual ms)."""
    loaded = loads_scenario(STABLE, "stable.toml")
    engine = Engine(kinds.get(loaded.scenario.kind).run_kind(loaded), 1)
    engine.run_until(60_000)
    client = engine.members[engine.addresses["w1"]]
    now = engine.now_ms
    for correlation_id, _ in client.heartbeats_in_flight():
        client.handle(HeartbeatResponse(ErrorCode.NONE, correlation_id), now)
    return engine.coordinator, client, now


def test_a_heartbeat_round_is_the_heartbeat_timer_firing(
    stable: tuple[GroupCoordinator, GroupClient, int],
) -> None:
    coordinator, client, now = stable
    general, steady = copy.deepcopy(client), copy.deepcopy(client)
    assert steady.heartbeats_steady(coordinator.generation_id)
    assert not steady.heartbeats_steady(coordinator.generation_id + 1)
    effects = general.fire("heartbeat", now)
    correlation_id = steady.heartbeat_round(now)
    interval = client.timeouts.heartbeat_interval_ms
    assert effects == [
        SetTimer("heartbeat", now + interval),
        Send(COORDINATOR_ADDRESS, steady.heartbeat_request(correlation_id), client.address),
    ]
    in_flight = ((correlation_id, client.generation),)
    assert steady.heartbeats_in_flight() == general.heartbeats_in_flight() == in_flight
    assert steady.awaits_heartbeat(correlation_id)
    # one in flight: the general code decides (here: nothing timed out yet)
    assert steady.heartbeat_round(now + interval) == -1


def test_an_answer_is_the_heartbeat_response_handled(
    stable: tuple[GroupCoordinator, GroupClient, int],
) -> None:
    _, client, now = stable
    general, steady = copy.deepcopy(client), copy.deepcopy(client)
    correlation_id = steady.heartbeat_round(now)
    assert general.heartbeat_round(now) == correlation_id
    effects = general.handle(HeartbeatResponse(ErrorCode.NONE, correlation_id), now + 2)
    assert effects == [SetTimer("session", now + 2 + client.timeouts.session_timeout_ms)]
    assert steady.heartbeat_answered(correlation_id)
    assert steady.heartbeats_in_flight() == general.heartbeats_in_flight() == ()
    assert not steady.heartbeat_answered(correlation_id)  # not in flight: dropped


def test_extend_session_is_the_coordinator_answering_a_heartbeat(
    stable: tuple[GroupCoordinator, GroupClient, int],
) -> None:
    coordinator, client, now = stable
    general, steady = copy.deepcopy(coordinator), copy.deepcopy(coordinator)
    request = client.heartbeat_request(now)
    assert steady.heartbeat_steady(request)
    effects = general.handle(client.address, request, now + 1)
    deadline = steady.extend_session(client.member_id, now + 1)
    assert effects == [
        SetTimer(heartbeat_key(client.member_id), deadline),
        Send(client.address, HeartbeatResponse(ErrorCode.NONE, now)),
    ]
    assert steady.session_deadlines() == general.session_deadlines()
    steady.shift_sessions(3_000)
    assert dict(steady.session_deadlines())[client.member_id] == deadline + 3_000


def test_a_heartbeat_the_coordinator_would_not_answer_none_is_not_steady(
    stable: tuple[GroupCoordinator, GroupClient, int],
) -> None:
    coordinator, client, now = stable
    request = client.heartbeat_request(now)
    for other in (
        {"generation_id": request.generation_id + 1},
        {"member_id": "stranger"},
        {"group_id": "another-group"},
        {"group_instance_id": "not-static"},
    ):
        assert not coordinator.heartbeat_steady(msgspec.structs.replace(request, **other))
