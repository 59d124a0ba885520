"""The ``delay_request`` fault (scenarios/sim/late.py): a member's requests reach the
coordinator late, overtaken by its later messages; the coordinator must answer a SyncGroup or
Heartbeat of an older generation ILLEGAL_GENERATION (``GroupMetadataManager#classicGroupSync`` /
``#classicGroupHeartbeat``), the member ignores that answer for a generation it already left
(``AbstractCoordinator.HeartbeatResponseHandler``: "Attempt to heartbeat with stale …"), and
the ``stale_generation_accepted`` checker fires when the coordinator does not."""

from __future__ import annotations

from typing import Any

from scenarios.input.loader import loads_scenario
from scenarios.input.streams import loads_streams_scenario
from scenarios.sim.runner import simulate
from tests.scenarios.campaigns.chaos.planted import by_name

# w1's heartbeat at ~30 s is held 8 s; the connector write at 31 s makes both workers rejoin,
# so generation 2 forms (and w1 heartbeats nothing meanwhile: its one heartbeat is in flight)
# before the generation-1 heartbeat arrives at ~38 s.
LATE_HEARTBEAT = """
name = "late-heartbeat"
seed = 1
settle_ms = 60000
log_heartbeats = true

[cluster]
size = 2

[cluster.config]
"connect.protocol" = "eager"

[[workload.connectors]]
name = "c1"
tasks = 4

[[timeline]]
at_ms = 30000
action = "delay_request"
member = "w1"
request = "heartbeat"
delay_ms = 8000
duration_ms = 3000

[[timeline]]
at_ms = 31000
action = "add_connector"
connector = "c2"
tasks = 2
"""


def _run(text: str) -> list[dict[str, Any]]:
    return simulate(loads_scenario(text, "t.toml"), 1).records


def _kinds(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == kind]


def test_a_late_heartbeat_of_an_old_generation_is_rejected_and_ignored() -> None:
    records = _run(LATE_HEARTBEAT)
    [late] = _kinds(records, "late_request")
    assert late["member"] == "w1" and late["request"] == "heartbeat"
    assert late["generation"] == 1 and late["delay_ms"] == 8000
    assert late["error"] == "ILLEGAL_GENERATION" and late["dropped"] is False
    # the held request left its link's FIFO order: generation 2 formed before it arrived
    gen2 = next(r for r in _kinds(records, "generation") if r["generation"] == 2)
    assert gen2["seq"] < late["seq"] and late["t_ms"] - late["sent_ms"] >= 8000
    # w1 (generation 2 by then) ignores the stale error: no rejoin, no third generation
    assert max(r["generation"] for r in _kinds(records, "generation")) == 2
    assert not [r for r in _kinds(records, "join_group_request") if r["t_ms"] > late["t_ms"]]
    assert not _kinds(records, "violation")
    [fault] = _kinds(records, "fault")
    assert fault == {
        **fault,
        "fault": "delay_request",
        "member": "w1",
        "request": "heartbeat",
        "delay_ms": 8000,
        "until_ms": 33000,
    }


def test_a_coordinator_accepting_the_late_heartbeat_is_a_violation() -> None:
    with by_name("coordinator-heartbeat-any-generation").applied():
        records = _run(LATE_HEARTBEAT)
    [late] = _kinds(records, "late_request")
    assert late["error"] == "NONE"
    [violation] = _kinds(records, "violation")
    assert violation["invariant"] == "stale_generation_accepted"
    assert violation["cause_seq"] == late["seq"] and violation["generation"] == 1


def test_the_answer_to_a_request_the_member_gave_up_on_is_dropped() -> None:
    # held 50 s: w1 keeps heartbeating (each later one answered), but the held one times out
    # after request.timeout.ms (40 s): NetworkClient disconnects, w1 finds the coordinator
    # again on a new connection, and the held one's answer reaches the closed one.
    text = LATE_HEARTBEAT.replace("delay_ms = 8000", "delay_ms = 50000").replace(
        "duration_ms = 3000", "duration_ms = 1000"
    )
    records = _run(text)
    [late] = _kinds(records, "late_request")
    assert late["dropped"] is True
    [lost] = [r for r in _kinds(records, "coordinator_unknown") if r["member"] == "w1"]
    assert lost["reason"] == "heartbeat request timed out"
    assert late["sent_ms"] + 40_000 <= lost["t_ms"] < late["t_ms"]
    sent = [r for r in _kinds(records, "heartbeat_request") if r["member"] == "w1"]
    assert any(late["sent_ms"] < r["t_ms"] < late["t_ms"] for r in sent)
    answered = [r for r in _kinds(records, "heartbeat_response") if r["member"] == "w1"]
    assert not [r for r in answered if late["t_ms"] <= r["t_ms"] <= late["t_ms"] + 2]


def test_requests_outside_the_window_or_of_another_kind_flow_in_order() -> None:
    text = LATE_HEARTBEAT.replace('request = "heartbeat"', 'request = "sync_group"')
    records = _run(text)
    for late in _kinds(records, "late_request"):
        assert late["request"] == "sync_group"
        assert 30000 <= late["sent_ms"] < 33000
    assert not _kinds(records, "violation")


def test_a_streams_scenario_takes_the_fault_too() -> None:
    text = """
kind = "streams"
name = "late-streams"
settle_ms = 60000
seed = 1

[[subtopologies]]
id = 0
partitions = 2

[[clients]]
name = "I1"

[[clients]]
name = "I2"

[[timeline]]
at_ms = 20000
action = "delay_request"
client = "I1"
delay_ms = 4000
duration_ms = 10000
"""
    loaded = loads_streams_scenario(text, "s.toml")
    assert loaded.steps[0].end_ms == 20000 + 10000 + 4000
    records = simulate(loaded, 1).records
    late = _kinds(records, "late_request")
    assert late and {r["member"] for r in late} == {"I1"}
    assert not _kinds(records, "violation")


def test_the_engine_fast_paths_leave_a_delayed_run_unchanged() -> None:
    # quiet heartbeat periods are skipped around the window, never across a held request
    loaded = loads_scenario(LATE_HEARTBEAT.replace("log_heartbeats = true", ""), "t.toml")
    fast = simulate(loaded, 1).records
    assert simulate(loaded, 1, reference=True).records == fast
    assert _kinds(fast, "late_request")
