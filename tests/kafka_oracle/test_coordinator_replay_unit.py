"""The pure parts of ``coordinator_replay`` (no JVM): the id bijection, plain-data round
trips of sequences, and groupsim's side of a replay."""

from __future__ import annotations

import pytest

from coordinator import CoordinatorConfig
from protocol.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
)
from tests.kafka_oracle.coordinator_replay import (
    Advance,
    Call,
    DescribeGroups,
    GroupsimSide,
    IdBijection,
    ListGroups,
    Step,
    steps_from_json,
    steps_to_json,
)

A = "c1-6d1a6b49-0f93-40e3-9fc9-d478e36dacc1"
B = "c1-8a2aa561-d217-448f-8ce8-f47a264b3b1e"
C = "c2-b955ca0d-e2c5-4194-91fc-c7aaf224918a"


def test_bijection_pairs_at_first_sight_and_then_holds_to_it() -> None:
    ids = IdBijection()
    assert ids.pair(A, B) and ids.pair(A, B)
    assert ids.kafka_id(A) == B and ids.to_groupsim[B] == A
    assert not ids.pair(A, C.replace("c2", "c1"))  # A is taken
    assert not ids.pair(C, B)  # B is taken
    assert ids.pair("", "") and ids.pair("made-up", "made-up")
    assert ids.kafka_id("made-up") == "made-up"


def test_bijection_requires_the_same_client_prefix() -> None:
    assert not IdBijection().pair(A, C)


def _join(member_id: str = "", version: int = 4) -> JoinGroupRequest:
    return JoinGroupRequest(
        "g",
        member_id,
        "consumer",
        (("range", b"r"),),
        500,
        500,
        client_id="c1",
        api_version=version,
    )


SEQUENCE: list[Step] = [
    Call("c1", _join()),
    Call("c1", _join(A), at_ms=5),
    Advance(300),
    Call("c1", SyncGroupRequest("g", A, 1, assignments=((A, b"x"),))),
    Call("c1", HeartbeatRequest("g", A, 1, group_instance_id=None)),
    Call("c1", LeaveGroupRequest("g", members=(MemberIdentity(A, "i1"),)), api_version=3),
    Call("admin", DescribeGroups(("g",))),
    Call("admin", ListGroups(states_filter=("Stable",))),
]


def test_steps_round_trip_through_plain_json() -> None:
    assert steps_from_json(steps_to_json(SEQUENCE)) == SEQUENCE


@pytest.mark.parametrize("mode", ["each", "poll"])
def test_groupsim_side_answers_each_request_by_its_handle(mode: str) -> None:
    side = GroupsimSide(
        CoordinatorConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=10), "g", mode=mode
    )
    first = side.step(Call("c1", _join()), 1)
    ((api, fields),) = first.responses.values()
    assert api == "join" and fields["error_code"] == 79
    member = fields["member_id"]
    parked = side.step(Call("c1", _join(member)), 2)
    assert parked.responses == {} and parked.records == []
    done = side.step(Advance(150), 3)
    assert list(done.responses) == [2]  # the parked JoinGroup, answered by the timer
    assert done.responses[2][1]["generation_id"] == 1
    assert done.fired == [("join", 100 if mode == "each" else 150)]
    assert set(done.armed) == {f"heartbeat:{member}", "sync"}
    listed = side.step(Call("admin", ListGroups()), 4)
    assert listed.responses[4] == (
        "list",
        {"groups": (("g", "consumer", "CompletingRebalance", "classic"),)},
    )
