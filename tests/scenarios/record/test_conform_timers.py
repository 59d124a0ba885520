"""``replay --conform`` on synthesized traces of a loaded broker: a timer and a request within
``max_lag_ms`` of each other may have run in either order on the broker. When the other order
than groupsim's exact deadlines gives the recorded answers, that is a timing difference
(``field = "timer:<key>"``); an answer no order gives is still a divergence.

The traces come from :class:`tests.scenarios.record.synth.LaggingBroker`: groupsim's own
coordinator whose timers fire late or whose requests arrive late, so every answer is one
groupsim gives in *some* order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("kio")

from coordinator.config import CoordinatorConfig  # noqa: E402
from scenarios.record.conform import (  # noqa: E402
    TIMER_SLACK_MS,
    Conformance,
    conform_coordinator,
    read_exchanges,
)

from .synth import LaggingBroker, tamper  # noqa: E402

#: ``group.initial.rebalance.delay.ms`` 1 s; sessions down to 500 ms allowed.
CONFIG = CoordinatorConfig.from_mapping(
    {"group.initial.rebalance.delay.ms": 1000, "group.min.session.timeout.ms": 500}
)


def _conform(trace: Path, **kwargs: int) -> Conformance:
    return conform_coordinator(read_exchanges(trace), CONFIG, **kwargs)


def _late_extension(tmp_path: Path) -> Path:
    """a joins at 0 (InitialDelayedJoin due 1000), b at 500 (a new member: the delay will be
    extended), c at 1010. The broker runs the delayed join 40 ms late, at 1040 — after c's
    JoinGroup, so the one extension (due 2040, also 40 ms late) covers c and the join completes
    at 2080 with a, b, c. At groupsim's exact deadline the extension would run at 1000, before
    c, c's JoinGroup would add a second extension, and the join would complete at 3000 — the
    SyncGroups at 2090 answered REBALANCE_IN_PROGRESS."""
    lag = 40
    assert lag > TIMER_SLACK_MS  # more than what an answer near a timer is forgiven anyway
    broker = LaggingBroker(CONFIG, lambda key, at_ms: lag if key == "join" else 0)
    broker.join(0, "a")
    broker.join(500, "b")
    broker.join(1010, "c")
    for t_ms, client in ((2090, "a"), (2091, "b"), (2092, "c")):
        broker.sync(t_ms, client)
    for t_ms in (3000, 4000):
        for client in "abc":
            broker.heartbeat(t_ms, client)
    trace = broker.write(tmp_path / "trace.jsonl", 5000)
    answers = [line["t_ms"] for line in broker.lines if line.get("api") == "JoinGroup"]
    assert answers[-3:] == [2080] * 3  # the broker's join completed once, at 2080
    return trace


def test_a_late_initial_delay_extension_is_a_timing_difference(tmp_path: Path) -> None:
    verdict = _conform(_late_extension(tmp_path))
    assert verdict.divergences == []
    assert [(d.api, d.field, d.recorded, d.groupsim) for d in verdict.timing] == [
        ("JoinGroup", "timer:join", "after", "before")
    ]
    assert verdict.equal == sum(verdict.compared.values()) == 12


def test_the_late_extension_diverges_when_only_the_deadline_order_is_tried(
    tmp_path: Path,
) -> None:
    """``max_lag_ms = 0`` tries no other order: the SyncGroups of generation 1 meet a group
    still rebalancing towards it (ILLEGAL_GENERATION: groupsim's group is at generation 0)."""
    verdict = _conform(_late_extension(tmp_path), max_lag_ms=0)
    assert ("SyncGroup", "error_code", "none", "illegal_generation") in {
        (d.api, d.field, d.recorded, d.groupsim) for d in verdict.divergences
    }


def test_an_answer_no_order_gives_is_still_a_divergence(tmp_path: Path) -> None:
    trace = _late_extension(tmp_path)
    # c's JoinGroup answer, recorded after the late extension, names another generation
    tamper(trace, "JoinGroup", 2, lambda fields: fields.update(generation_id=7))
    verdict = _conform(trace)
    assert [(d.api, d.field, d.recorded, d.groupsim) for d in verdict.divergences] == [
        ("JoinGroup", "generation_id", 7, 1)
    ]


def test_the_choice_is_deterministic(tmp_path: Path) -> None:
    trace = _late_extension(tmp_path)
    assert _conform(trace).to_json() == _conform(trace).to_json()


def _stable_pair(broker: LaggingBroker, b_session_ms: int = 10_000) -> None:
    """a and b form generation 1 (the initial delay extended once for b), synced by 2110."""
    broker.join(0, "a")
    broker.join(100, "b", session_ms=b_session_ms)
    broker.sync(2100, "a")
    broker.sync(2110, "b")


def _heartbeat_at_a_late_join_deadline(tmp_path: Path) -> Path:
    """a rejoins at 5000 (its rebalance timeout, 10 s, is the join deadline: 15000); b keeps
    heartbeating without rejoining. The broker runs the join timer 300 ms late, so b's heartbeat
    at 15100 is still answered REBALANCE_IN_PROGRESS; at the exact deadline b would already be
    out of the group (UNKNOWN_MEMBER_ID)."""
    broker = LaggingBroker(CONFIG, lambda key, at_ms: 300 if at_ms == 15_000 else 0)
    _stable_pair(broker)
    broker.join(5000, "a")
    for t_ms in (5100, 8000, 11_000, 14_000, 15_100):
        broker.heartbeat(t_ms, "b")
    return broker.write(tmp_path / "trace.jsonl", 16_000)


def test_a_heartbeat_answered_before_a_late_join_deadline_is_a_timing_difference(
    tmp_path: Path,
) -> None:
    verdict = _conform(_heartbeat_at_a_late_join_deadline(tmp_path))
    assert verdict.divergences == []
    assert ("Heartbeat", "timer:join", "after", "before") in {
        (d.api, d.field, d.recorded, d.groupsim) for d in verdict.timing
    }
    # without trying the other order: b is gone in groupsim's group
    baseline = _conform(_heartbeat_at_a_late_join_deadline(tmp_path), max_lag_ms=0)
    assert ("Heartbeat", "error_code", "rebalance_in_progress", "unknown_member_id") in {
        (d.api, d.field, d.recorded, d.groupsim) for d in baseline.divergences
    }


def _heartbeat_queued_past_a_session_expiry(tmp_path: Path) -> Path:
    """b (session 1 s) heartbeats last at 2200 and dies; its session ends at 3200. a's
    heartbeat, recorded by the proxy at 3150, waits 100 ms in the broker's request queue: the
    broker expires b first and answers a REBALANCE_IN_PROGRESS; a rejoins alone."""
    broker = LaggingBroker(CONFIG)
    _stable_pair(broker, b_session_ms=1000)
    broker.heartbeat(2200, "b")
    broker.heartbeat(2700, "a")
    broker.heartbeat(3150, "a", delay_ms=100)
    broker.join(3300, "a")
    broker.sync(3310, "a")
    return broker.write(tmp_path / "trace.jsonl", 4000)


def test_a_heartbeat_that_reached_the_broker_after_a_session_expiry_is_a_timing_difference(
    tmp_path: Path,
) -> None:
    trace = _heartbeat_queued_past_a_session_expiry(tmp_path)
    verdict = _conform(trace)
    assert verdict.divergences == []
    timer_orders = [(d.api, d.field, d.recorded, d.groupsim) for d in verdict.timing]
    assert len(timer_orders) == 1
    assert timer_orders[0][0] == "Heartbeat" and timer_orders[0][1].startswith("timer:heartbeat:b-")
    assert timer_orders[0][2:] == ("before", "after")
    baseline = _conform(trace, max_lag_ms=0)
    assert [(d.api, d.field) for d in baseline.divergences][:1] == [("Heartbeat", "error_code")]


def test_a_heartbeat_answer_no_order_gives_near_a_session_expiry_is_a_divergence(
    tmp_path: Path,
) -> None:
    from kio.schema.errors import ErrorCode

    trace = _heartbeat_queued_past_a_session_expiry(tmp_path)
    # a's heartbeat at 3150 recorded as ILLEGAL_GENERATION: neither order answers that
    tamper(
        trace, "Heartbeat", 2, lambda fields: fields.update(error_code=ErrorCode.illegal_generation)
    )
    verdict = _conform(trace)
    assert [(d.api, d.field, d.recorded) for d in verdict.divergences] == [
        ("Heartbeat", "error_code", "illegal_generation")
    ]


def test_the_command_takes_max_lag_ms(tmp_path: Path) -> None:
    """``groupsim replay --conform`` on the late extension's trace: exit 0 with the default
    ``--max-lag-ms`` (the timer order listed), 1 with ``--max-lag-ms 0``."""
    import json
    import subprocess
    import sys

    _late_extension(tmp_path)
    command = [sys.executable, "-m", "scenarios.cli.main", "replay", "--conform", str(tmp_path)]
    settings = [
        "--set",
        "group.initial.rebalance.delay.ms=1000",
        "--set",
        "group.min.session.timeout.ms=500",
    ]
    done = subprocess.run([*command, *settings], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "timing at 1010 ms, connection 3, JoinGroup of group g: timer:join" in done.stdout
    report = json.loads((tmp_path / "conformance.json").read_text())
    assert (report["divergences"], report["timing_differences"]) == (0, 1)
    done = subprocess.run(
        [*command, *settings, "--max-lag-ms", "0"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stdout + done.stderr
