"""``replay --conform`` on traces where a loaded broker took two requests of different
connections in the other order than the proxy saw them: more than ``--reorder-ms`` apart, but
the first was still in flight (its answer came back after the second was sent). Within
``--reorder-inflight-ms`` that is a timing difference (``field = "order"``); a pair whose
first answer came back before the second was sent is never reordered, so what differs there
stays a divergence.

The traces come from :class:`tests.scenarios.record.synth.LaggingBroker` (every answer is one
groupsim gives in the order the "broker" took the requests); the orders a window may take are
also checked directly on :mod:`scenarios.record.reorder`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("kio")

from scenarios.record.conform import (  # noqa: E402
    DEFAULT_REORDER_INFLIGHT_MS,
    DEFAULT_REORDER_MS,
    read_exchanges,
)
from scenarios.record.exchanges import Exchange  # noqa: E402
from scenarios.record.reorder import possible_orders, reorderable, taken_by  # noqa: E402

from .synth import CONFIG, LaggingBroker, retime  # noqa: E402
from .synth import conform as _conform  # noqa: E402


def _stable_pair(broker: LaggingBroker) -> None:
    """a and b form generation 1 (the initial delay extended once for b), synced by 2110."""
    broker.join(0, "a")
    broker.join(100, "b")
    broker.sync(2100, "a")
    broker.sync(2110, "b")


def _then_rejoin(broker: LaggingBroker) -> None:
    """a and b rejoin the rebalance c's JoinGroup began; all three sync."""
    broker.join(3100, "a")
    broker.join(3101, "b")
    for k, client in enumerate("abc"):
        broker.sync(3110 + k, client)


def _heartbeat_queued_behind_a_join(tmp_path: Path, gap: int) -> Path:
    """a's heartbeat reaches the proxy at 3000, c's JoinGroup (a new member: a rebalance
    starts) ``gap`` ms later; the heartbeat waits in the broker's request queue until 2 ms
    after that, so the broker takes the JoinGroup first and answers the heartbeat
    REBALANCE_IN_PROGRESS at ``3002 + gap``: it was in flight when c's JoinGroup was sent."""
    broker = LaggingBroker(CONFIG)
    _stable_pair(broker)
    broker.join(3000 + gap, "c")  # taken first
    broker.heartbeat(3000, "a", delay_ms=gap + 2)
    _then_rejoin(broker)
    return broker.write(tmp_path / "trace.jsonl", 4000)


def _join_queued_behind_a_heartbeat(tmp_path: Path, gap: int) -> Path:
    """c's JoinGroup reaches the proxy at 3000, a's heartbeat ``gap`` ms later; the JoinGroup
    waits in the broker's request queue until 2 ms after that, so the broker answers the
    heartbeat NONE (no rebalance yet), then takes the JoinGroup, which it parks until a and b
    rejoin (answered at 3101: in flight the whole time)."""
    broker = LaggingBroker(CONFIG)
    _stable_pair(broker)
    broker.heartbeat(3000 + gap, "a")  # taken first
    broker.join(3000, "c", delay_ms=gap + 2)
    _then_rejoin(broker)
    return broker.write(tmp_path / "trace.jsonl", 4000)


@pytest.mark.parametrize("gap", [8, 30])
@pytest.mark.parametrize(
    ("shape", "differs"),
    [
        (_heartbeat_queued_behind_a_join, ("Heartbeat", "rebalance_in_progress", "none")),
        (_join_queued_behind_a_heartbeat, ("Heartbeat", "none", "rebalance_in_progress")),
    ],
)
def test_a_request_taken_behind_one_sent_later_while_in_flight_is_a_timing_difference(
    tmp_path: Path, gap: int, shape: Callable[[Path, int], Path], differs: tuple[str, str, str]
) -> None:
    assert DEFAULT_REORDER_MS < gap < DEFAULT_REORDER_INFLIGHT_MS
    trace = shape(tmp_path, gap)
    verdict = _conform(trace)
    assert verdict.divergences == []
    assert [(d.t_ms, d.field) for d in verdict.timing] == [(3000, "order")]
    assert verdict.timing[0].groupsim == verdict.timing[0].recorded[::-1]  # conns swapped
    assert verdict.equal == sum(verdict.compared.values()) == 11
    # without the in-flight rule only the recorded order is tried: the heartbeat's answer differs
    narrow = _conform(trace, reorder_inflight_ms=0)
    assert [(d.api, d.field, d.recorded, d.groupsim) for d in narrow.divergences][:1] == [
        (differs[0], "error_code", *differs[1:])
    ]


def test_a_pair_whose_first_answer_came_back_before_the_second_was_sent_is_not_reordered(
    tmp_path: Path,
) -> None:
    """The heartbeat's REBALANCE_IN_PROGRESS, planted as seen at 3005, before c's JoinGroup
    (3008): the broker had answered it before it could have taken the JoinGroup, so no order
    explains the answer and it stays a divergence."""
    trace = _heartbeat_queued_behind_a_join(tmp_path, 8)
    heartbeats = [ex for ex in read_exchanges(trace) if ex.api == "Heartbeat"]
    assert heartbeats[-1].response_t_ms == 3010
    retime(trace, "Heartbeat", len(heartbeats) - 1, 3005)
    verdict = _conform(trace)
    assert [(d.t_ms, d.api, d.field, d.recorded, d.groupsim) for d in verdict.divergences] == [
        (3000, "Heartbeat", "error_code", "rebalance_in_progress", "none")
    ]
    assert [d.field for d in verdict.timing] == []


def _ex(conn: int, t_ms: int, answered_ms: int | None, api_key: int = 11) -> Exchange:
    return Exchange(conn, t_ms, api_key, 3, 1, b"", answered_ms)


def test_a_parked_join_group_opens_no_window_past_the_in_flight_bound() -> None:
    """JoinGroups parked for a whole rebalance (answered at 5000) were taken on arrival: each
    may have been taken at most ``inflight_ms`` after the proxy saw it. Those 30 ms apart form
    one window, but the ones 60 and 90 ms after the first are never tried before it; a request
    sent at 200, past every one's bound, is outside the window."""
    joins = [_ex(1, 0, 5000), _ex(2, 30, 5000), _ex(3, 60, 5000), _ex(4, 90, 5000)]
    later = _ex(5, 200, 5000)
    window = reorderable([*joins, later], 0, 5, 50)
    assert window == joins
    orders = list(possible_orders(window, 5, 50))
    assert orders[0] == tuple(joins)
    assert all(
        order.index(joins[3]) > order.index(joins[0])
        and order.index(joins[2]) > order.index(joins[0])
        for order in orders
    )
    assert len(orders) == 5  # of 24: (1 2 3 4), (1 3 2 4), (1 2 4 3), (2 1 3 4), (2 1 4 3)
    assert taken_by(joins[0], 5, 50) == 50


def test_a_request_answered_before_the_next_was_sent_bounds_the_window() -> None:
    """A heartbeat answered at 12, then a JoinGroup sent at 20 on another connection: the
    broker had taken the heartbeat already (one window each); at 12 it could be either."""
    heartbeat = _ex(1, 10, 12, api_key=12)
    assert reorderable([heartbeat, _ex(2, 20, 900)], 0, 5, 50) == [heartbeat]
    assert len(reorderable([heartbeat, _ex(2, 12, 900)], 0, 5, 50)) == 2
    # within --reorder-ms too: the broker answers only what it took, so the heartbeat
    # answered at 12 was taken before a request the proxy forwarded at 15
    assert reorderable([heartbeat, _ex(2, 15, 900)], 0, 5, 50) == [heartbeat]
    assert reorderable([heartbeat, _ex(2, 15, 900)], 0, 5, 0) == [heartbeat]
    # still in flight at 14: either order
    assert len(reorderable([_ex(1, 10, 30, api_key=12), _ex(2, 14, 900)], 0, 5, 0)) == 2
    # on one connection the broker takes requests in order
    assert reorderable([heartbeat, _ex(1, 11, 900)], 0, 5, 50) == [heartbeat]


def test_the_command_takes_reorder_inflight_ms(tmp_path: Path) -> None:
    """``groupsim replay --conform`` on the 8 ms trace: exit 0 by default (the order listed),
    1 with ``--reorder-inflight-ms 0``; a negative value is refused."""
    import inspect
    import json
    import subprocess
    import sys

    from scenarios.cli import record_cmd

    default = inspect.signature(record_cmd.replay).parameters["reorder_inflight_ms"].default
    assert default == DEFAULT_REORDER_INFLIGHT_MS
    _heartbeat_queued_behind_a_join(tmp_path, 8)
    command = [sys.executable, "-m", "scenarios.cli.main", "replay", "--conform", str(tmp_path)]
    command += ["--set", "group.initial.rebalance.delay.ms=1000"]
    command += ["--set", "group.min.session.timeout.ms=500"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "timing at 3000 ms, connection 1, Heartbeat of group g: order" in done.stdout
    report = json.loads((tmp_path / "conformance.json").read_text())
    assert (report["divergences"], report["timing_differences"]) == (0, 1)
    done = subprocess.run(
        [*command, "--reorder-inflight-ms", "0"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stdout + done.stderr
    done = subprocess.run(
        [*command, "--reorder-inflight-ms", "-1"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "--reorder-inflight-ms -1: must be >= 0" in done.stderr
