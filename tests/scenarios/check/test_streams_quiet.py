"""scenarios.check.streams_quiet: a Streams application must be settled and balanced at the end
of every quiet period longer than its liveness bound, not only at the end of the run."""

from __future__ import annotations

from typing import Any

from scenarios.check.quiet_periods import quiet_periods
from scenarios.check.streams_bounds import streams_bound_for
from scenarios.check.streams_quiet import streams_quiet_period_violations
from scenarios.eventlog.records import decode_log
from scenarios.input.streams import loads_streams_scenario
from scenarios.sim.runner import simulate

# Two clients start at 0 and nothing happens until c2 crashes at 40 min: one long quiet period.
_QUIET = """
kind = "streams"
name = "quiet"
settle_ms = 600000

[config]
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
at_ms = 2400000
action = "crash"
client = "c2"
"""


def _run() -> tuple[Any, list[dict[str, Any]]]:
    loaded = loads_streams_scenario(_QUIET, "quiet.toml")
    records = [r for r in simulate(loaded, 1).records if r["kind"] != "violation"]
    return loaded, records


def test_a_settled_quiet_period_passes() -> None:
    loaded, records = _run()
    [(start, end)] = quiet_periods(decode_log(records), 0)
    assert end - start > streams_bound_for(loaded, start)  # the period is judged
    assert streams_quiet_period_violations(decode_log(records), loaded) == []


def test_a_task_no_client_runs_at_the_end_of_a_quiet_period_is_reported() -> None:
    """c1 stops a task it was assigned and nothing starts it again before the next
    disturbance: the end-of-run check cannot see it (c2's crash reshuffles), this one does."""
    loaded, records = _run()
    [(start, _)] = quiet_periods(decode_log(records), 0)
    running = next(r for r in records if r["kind"] == "active_task_running")
    at = max(running["t_ms"], start) + 1
    stop = {
        "t_ms": at,
        "seq": running["seq"],
        "kind": "active_task_stopped",
        "member": running["member"],
        "task": running["task"],
        "reason": "planted",
    }
    cut = next(i for i, r in enumerate(records) if r["t_ms"] > at)
    found = streams_quiet_period_violations(
        decode_log([*records[:cut], stop, *records[cut:]]), loaded
    )
    bound = streams_bound_for(loaded, start)
    assert [v.invariant for v in found] == ["quiet_period_balance"]
    assert found[0].tasks == [running["task"]]
    assert found[0].checked_at_ms == start + bound
    assert f"tasks not running: {running['task']}" in found[0].detail
