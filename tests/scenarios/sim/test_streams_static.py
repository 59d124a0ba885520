"""KIP-345 static membership of Streams clients (``group.instance.id``): a restarted static
client takes over its member id's place without a rebalance and gets its tasks back; the
requests carry the instance id; a fenced instance is fatal."""

from __future__ import annotations

from typing import Any

import pytest

from members.streams_client import StreamsClient, StreamsClientConfig
from members.streams_state import StreamsTopology, Subtopology
from protocol.effects import Log, Send
from protocol.group import (
    ErrorCode,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
)
from scenarios.input.streams import loads_streams_scenario
from scenarios.sim.runner import simulate

SCENARIO = """
kind = "streams"
name = "static-restart"
settle_ms = 120000
seed = 1

[[subtopologies]]
id = 0
partitions = 6

[[clients]]
name = "I1"
process_id = "PID_1"
config = {{ {i1} }}

[[clients]]
name = "I2"
process_id = "PID_2"
config = {{ {i2} }}

[[clients]]
name = "I3"
process_id = "PID_3"

[[timeline]]
at_ms = 60000
action = "restart"
client = "I2"
clean = false
down_ms = 5000
"""


def _run(i2: str) -> list[dict[str, Any]]:
    text = SCENARIO.format(i1='"group.instance.id" = "i1"', i2=i2)
    loaded = loads_streams_scenario(text, source="static.toml")
    return simulate(loaded, loaded.scenario.seed).records


def _after(records: list[dict[str, Any]], t_ms: int, kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["t_ms"] >= t_ms and r["kind"] == kind]


def test_a_restarted_static_client_takes_its_place_back_without_a_rebalance() -> None:
    records = _run('"group.instance.id" = "i2"')
    before = {
        r["member"]: r["active"]
        for r in records
        if r["kind"] == "assignment" and r["t_ms"] < 60_000
    }
    assert before["I2"]
    replaced = _after(records, 60_000, "member_replaced")
    assert [r["member"] for r in replaced] == ["I2"]
    assert replaced[0]["member_id"].startswith("i2-")
    assert replaced[0]["member_id"] != replaced[0]["old_member_id"]
    assert _after(records, 60_000, "generation") == []  # KIP-345: no rebalance
    again = _after(records, 60_000, "assignment")
    assert [(r["member"], r["active"]) for r in again] == [("I2", before["I2"])]
    assert sorted(r["task"] for r in _after(records, 60_000, "active_task_running")) == sorted(
        before["I2"]
    )
    assert not [r for r in records if r["kind"] == "violation"]


def test_a_restarted_dynamic_client_rejoins_through_a_rebalance() -> None:
    records = _run("")
    assert _after(records, 60_000, "member_replaced") == []
    assert _after(records, 60_000, "generation")  # the new member makes a new generation


def _client(instance: str | None) -> StreamsClient:
    topology = StreamsTopology([Subtopology(0, 2, True)])
    config = StreamsClientConfig(process_id="PID_1", group_instance_id=instance)
    return StreamsClient("c1", config, topology, group_id="app")


def test_requests_carry_the_instance_id() -> None:
    client = _client("c1-static")
    join = next(e.message for e in client.start(0) if isinstance(e, Send))
    assert isinstance(join, JoinGroupRequest)
    assert join.group_instance_id == "c1-static"
    assert _client(None).start(0)[-1].message.group_instance_id is None  # type: ignore[union-attr]


def test_a_static_member_leaves_by_its_identity() -> None:
    client = _client("c1-static")
    client.start(0)
    client.member_id = "c1-static-x"
    client.leave_group("shutdown", "closing")
    leave = client._take()[-1].message  # type: ignore[union-attr]
    assert isinstance(leave, LeaveGroupRequest)
    assert leave.member_ids == ()
    assert [(m.member_id, m.group_instance_id) for m in leave.members] == [
        ("c1-static-x", "c1-static")
    ]


@pytest.mark.parametrize("static", [True, False])
def test_a_fenced_instance_is_fatal(static: bool) -> None:
    client = _client("c1-static" if static else None)
    client.start(0)
    client.handle(
        JoinGroupResponse(
            ErrorCode.NONE, generation_id=1, protocol_name="stream", leader="x", member_id="m"
        ),
        1,
    )
    sent = client.fire("heartbeat", 2)
    (request,) = [e.message for e in sent if isinstance(e, Send)]
    answer = HeartbeatResponse(ErrorCode.FENCED_INSTANCE_ID, request.correlation_id)
    effects = client.handle(answer, 2)
    fatal = [e for e in effects if isinstance(e, Log) and e.kind == "member_fatal"]
    assert [e.fields["error"] for e in fatal] == ["FENCED_INSTANCE_ID"]
