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

from scenarios.record.conform import (  # noqa: E402
    TIMER_SLACK_MS,
)

from .synth import CONFIG, LaggingBroker, tamper  # noqa: E402
from .synth import conform as _conform  # noqa: E402


def _late_extension(tmp_path: Path, lag: int = 40, after: int = 10) -> Path:
    """a joins at 0 (InitialDelayedJoin due 1000), b at 500 (a new member: the delay will be
    extended), c at ``1000 + after``. The broker runs each delayed join ``lag`` ms late: the
    first at ``1000 + lag``, after c's JoinGroup, so the one extension covers c and the join
    completes at ``2000 + 2 * lag`` with a, b, c. At groupsim's exact deadline the extension
    would run at 1000, before c, c's JoinGroup would add a second extension, and the join would
    complete at 3000: the SyncGroups that follow the broker's answers would meet a group still
    rebalancing."""
    assert after < lag and lag > TIMER_SLACK_MS  # beyond what a nearby timer excuses anyway
    broker = LaggingBroker(CONFIG, lambda key, at_ms: lag if key == "join" else 0)
    broker.join(0, "a")
    broker.join(500, "b")
    broker.join(1000 + after, "c")
    done = 2000 + 2 * lag
    for k, client in enumerate("abc"):
        broker.sync(done + 10 + k, client)
    for t_ms in (3500, 4500):
        for client in "abc":
            broker.heartbeat(t_ms, client)
    trace = broker.write(tmp_path / "trace.jsonl", 5000)
    answers = [line["t_ms"] for line in broker.lines if line.get("api") == "JoinGroup"]
    assert answers[-3:] == [done] * 3  # the broker's join completed once, after one extension
    return trace


@pytest.mark.parametrize(
    ("lag", "after"),
    [
        (40, 10),
        # the loaded CI run of test_real_cluster_java_consumers: the first initial-delay timer
        # ran 57 ms late, a JoinGroup reached the proxy 29 ms after the exact deadline
        (57, 29),
        (400, 300),
    ],
)
def test_a_late_initial_delay_extension_is_a_timing_difference(
    tmp_path: Path, lag: int, after: int
) -> None:
    verdict = _conform(_late_extension(tmp_path, lag, after))
    assert verdict.divergences == []
    orders = [(d.api, d.field, d.recorded, d.groupsim) for d in verdict.timing if d.field != "time"]
    assert orders == [("JoinGroup", "timer:join", "after", "before")]
    # the extension runs right after c's JoinGroup (groupsim's clock: c's time), so the answers
    # come ``2 * lag - after`` before the broker's: equal, but early beyond --tolerance-ms at 400 ms
    late = [(d.api, d.recorded - d.groupsim) for d in verdict.timing if d.field == "time"]
    assert late == ([] if 2 * lag - after <= 100 else [("JoinGroup", 2 * lag - after)] * 3)
    assert verdict.equal + len(late) == sum(verdict.compared.values()) == 12


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


def test_a_heartbeat_that_reached_the_broker_after_the_join_deadline_is_a_timing_difference(
    tmp_path: Path,
) -> None:
    """a rejoins at 5000 (join deadline 15000); b heartbeats without rejoining. Its heartbeat
    recorded at 14950 waits 70 ms in the broker's request queue: the join completed at 15000
    without b, so the broker answers UNKNOWN_MEMBER_ID where groupsim, taking it at 14950,
    answers REBALANCE_IN_PROGRESS."""
    broker = LaggingBroker(CONFIG)
    _stable_pair(broker)
    broker.join(5000, "a")
    for t_ms in (5100, 8000, 11_000, 14_000):
        broker.heartbeat(t_ms, "b")
    broker.heartbeat(14_950, "b", delay_ms=70)
    broker.sync(15_100, "a")
    trace = broker.write(tmp_path / "trace.jsonl", 16_000)
    verdict = _conform(trace)
    assert verdict.divergences == []
    assert [(d.t_ms, d.api, d.field, d.recorded) for d in verdict.timing] == [
        (14_950, "Heartbeat", "timer:join", "before")
    ]
    baseline = _conform(trace, max_lag_ms=0)
    assert [(d.api, d.field, d.recorded, d.groupsim) for d in baseline.divergences] == [
        ("Heartbeat", "error_code", "unknown_member_id", "rebalance_in_progress")
    ]


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


def _heartbeat_just_past_a_late_session_expiry(tmp_path: Path) -> Path:
    """b (session 1 s) heartbeats at 2200, then, after a pause, at 3230: 30 ms past its session
    deadline. The broker runs the expiry 50 ms late, so b's heartbeat is answered NONE and b
    stays; at the exact deadline b would be gone (UNKNOWN_MEMBER_ID) and a rebalance begun."""
    broker = LaggingBroker(CONFIG, lambda key, at_ms: 50 if key.startswith("heartbeat:b") else 0)
    _stable_pair(broker, b_session_ms=1000)
    broker.heartbeat(2200, "b")
    broker.heartbeat(2700, "a")
    broker.heartbeat(3230, "b")
    for t_ms in (3300, 3900):
        broker.heartbeat(t_ms, "a")
        broker.heartbeat(t_ms + 10, "b")
    return broker.write(tmp_path / "trace.jsonl", 4200)


def test_a_heartbeat_the_broker_took_before_its_late_session_expiry_is_a_timing_difference(
    tmp_path: Path,
) -> None:
    trace = _heartbeat_just_past_a_late_session_expiry(tmp_path)
    verdict = _conform(trace)
    assert verdict.divergences == []
    orders = [(d.t_ms, d.api, d.field.split("-")[0], d.recorded) for d in verdict.timing]
    assert orders == [(3230, "Heartbeat", "timer:heartbeat:b", "after")]
    baseline = _conform(trace, max_lag_ms=0)
    assert ("Heartbeat", "error_code", "none", "unknown_member_id") in {
        (d.api, d.field, d.recorded, d.groupsim) for d in baseline.divergences
    }


def _sync_just_past_a_late_sync_deadline(tmp_path: Path) -> Path:
    """a and b join (generation 1 at 2000; the sync deadline is the rebalance timeout later,
    12000: ``expirePendingSync``); a syncs at once, b only at 12030. The broker runs the sync
    timer 50 ms late and takes b's SyncGroup; at the exact deadline b would have been removed
    for not syncing and its SyncGroup answered UNKNOWN_MEMBER_ID."""
    broker = LaggingBroker(CONFIG, lambda key, at_ms: 50 if key == "sync" else 0)
    broker.join(0, "a")
    broker.join(100, "b", session_ms=20_000)
    broker.sync(2100, "a")
    for t_ms in (5000, 8000, 11_000):
        broker.heartbeat(t_ms, "a")
    broker.sync(12_030, "b")
    broker.heartbeat(13_000, "a")
    broker.heartbeat(13_010, "b")
    return broker.write(tmp_path / "trace.jsonl", 14_000)


def test_a_sync_the_broker_took_before_its_late_sync_deadline_is_a_timing_difference(
    tmp_path: Path,
) -> None:
    trace = _sync_just_past_a_late_sync_deadline(tmp_path)
    verdict = _conform(trace)
    assert verdict.divergences == []
    assert [(d.t_ms, d.api, d.field, d.recorded) for d in verdict.timing] == [
        (12_030, "SyncGroup", "timer:sync", "after")
    ]
    baseline = _conform(trace, max_lag_ms=0)
    assert ("SyncGroup", "error_code") in {(d.api, d.field) for d in baseline.divergences}


def test_a_heartbeat_queued_behind_a_rejoin_needs_a_wider_reorder_window(tmp_path: Path) -> None:
    """a's heartbeat reaches the proxy 10 ms before c's JoinGroup (a new member: a rebalance
    starts) but waits 20 ms in the broker's network thread, so the broker answers it
    REBALANCE_IN_PROGRESS at 3020. With the default windows the other order is tried: the
    heartbeat was still in flight when the JoinGroup was sent (``reorder_inflight_ms``, see
    test_conform_reorder.py), a timing difference. With ``--reorder-ms`` alone (the default
    5 ms window) only the recorded order is tried: a divergence; ``reorder_ms = 20`` tries
    the other order regardless of answers."""
    broker = LaggingBroker(CONFIG)
    _stable_pair(broker)
    broker.join(3010, "c")  # handled first: the broker takes it before a's queued heartbeat
    broker.heartbeat(3000, "a", delay_ms=20)
    broker.join(3100, "a")
    broker.join(3101, "b")
    for k, client in enumerate("abc"):
        broker.sync(3110 + k, client)
    trace = broker.write(tmp_path / "trace.jsonl", 4000)
    for wide in (_conform(trace), _conform(trace, reorder_ms=20, reorder_inflight_ms=0)):
        assert wide.divergences == []
        assert [(d.t_ms, d.field) for d in wide.timing] == [(3000, "order")]
    narrow = _conform(trace, reorder_inflight_ms=0)
    assert ("Heartbeat", "error_code", "rebalance_in_progress", "none") in {
        (d.api, d.field, d.recorded, d.groupsim) for d in narrow.divergences
    }


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
        [*command, *settings, "--max-lag-ms", "0", "--reorder-ms", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr


def test_a_join_request_cut_short_is_skipped_not_a_traceback(tmp_path: Path) -> None:
    """A JoinGroup frame that ends before its header (hostile traffic the proxy recorded), with
    an answer: counted under ``skipped``; the rest of the trace still conforms."""
    import json

    trace = _late_extension(tmp_path)
    lines = trace.read_text().splitlines()
    cut = {"t_ms": 1, "conn": 9, "client_id": "x", "api": "JoinGroup", "api_key": 11}
    cut |= {"version": 3, "correlation_id": 1, "raw": ""}
    answer = json.loads(lines[-1]) | {"t_ms": 2, "conn": 9, "api": "JoinGroup", "api_key": 11}
    answer |= {"correlation_id": 1}
    extra = [json.dumps(cut | {"dir": "request"}), json.dumps(answer | {"dir": "response"})]
    trace.write_text("\n".join([lines[0], *extra, *lines[1:]]) + "\n")
    verdict = _conform(trace)
    assert verdict.divergences == []
    assert [n for reason, n in verdict.skipped.items() if "JoinGroup" in reason] == [1]
