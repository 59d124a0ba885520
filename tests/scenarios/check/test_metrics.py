"""scenarios.check.metrics: downtime arithmetic, movements, convergence, phases, liveness."""

from __future__ import annotations

import json
from typing import Any

from scenarios.check.liveness import liveness_violations
from scenarios.check.metrics import summarize
from scenarios.check.summary_types import WorkerCounts, summary_dict
from scenarios.eventlog.records import decode_log

from .logs import Log


def two_worker_bounce() -> Log:
    """c has 2 tasks on w1/w2; w2 crashes at 10 s, c-1 moves to w1 at 12 s."""
    log = Log().start({"c": 2}, ["w1", "w2"])
    for w in ("w1", "w2"):
        log.add(0, "join_group_request", member=w, member_id="", protocols=["sessioned"], reason="")
    log.generation(3000, 1)
    for w in ("w1", "w2"):
        log.add(
            3000, "sync_group_request", member=w, member_id=f"{w}-1", generation=1, is_leader=False
        )
    log.assignment(3000, "w1", 1)
    log.assignment(3000, "w2", 1)
    log.run_connector(3000, "w1", "c", 1)
    log.run_task(3000, "w1", "c-0", 1, start_ms=500)  # initial start: not downtime
    log.run_task(3000, "w2", "c-1", 1, start_ms=1000)
    log.add(10000, "step", action="crash", member="w2")
    log.add(10000, "member_crash", member="w2")
    log.add(10000, "task_stopped", member="w2", task="c-1", reason="crash")
    log.generation(12000, 2)
    log.assignment(12000, "w1", 2)
    log.run_task(12000, "w1", "c-1", 2, start_ms=500)  # running again at 12.5 s
    log.add(20000, "run_end")
    return log


def test_downtime_movement_and_convergence() -> None:
    s = summarize(two_worker_bounce().records)
    assert s.rebalances == 2
    assert (s.join_rounds, s.sync_rounds) == (2, 2)
    assert s.task_downtime_ms_total == 2500  # c-1 down from 10000 to 12500
    assert s.task_downtime_ms_max == 2500
    assert s.connector_downtime_ms_total == 0
    assert s.never_started == []
    assert s.task_movements == 1
    assert s.converged is True  # w1 is the only live worker: 1 connector, 2 tasks
    assert s.time_to_converge_ms == 2500  # last step at 10000, last change at 12500
    assert s.final_protocol == "sessioned"
    assert s.workers_final == {"w1": WorkerCounts(connectors=1, tasks=2)}
    # before generation 2, live = {w1: 1 running task}; at the end {w1: 2}: spread 0
    assert s.max_imbalance == 0
    assert s.violations == {}
    assert (s.start_ms, s.end_ms) == (0, 20000)
    assert (s.tasks_configured, s.connectors_configured) == (2, 1)
    json.dumps(summary_dict(s))  # JSON-able


def test_imbalance_sampled_before_generation() -> None:
    log = Log().start({"c": 3}, ["w1", "w2"])
    log.generation(1, 1)
    for i in range(3):
        log.run_task(1, "w1", f"c-{i}", 1)
    log.run_connector(1, "w2", "c", 1)
    log.generation(5, 2)  # sampled here: w1 has 3 tasks, w2 has 0
    log.stop_task(6, "w1", "c-2")
    log.run_task(6, "w2", "c-2", 2)
    log.add(9, "run_end")
    s = summarize(log.records)
    assert s.max_imbalance == 3
    assert s.converged is True
    assert s.task_movements == 1
    assert s.workers_final == {
        "w1": WorkerCounts(connectors=0, tasks=2),
        "w2": WorkerCounts(connectors=1, tasks=1),
    }


def test_not_converged_and_never_started() -> None:
    log = Log().start({"c": 3}, ["w1", "w2"])
    log.generation(100, 1)
    log.run_connector(100, "w1", "c", 1)
    log.run_task(100, "w1", "c-0", 1)
    log.run_task(100, "w1", "c-1", 1)
    log.add(1000, "run_end")
    s = summarize(log.records)
    assert s.converged is False
    assert s.time_to_converge_ms is None
    assert s.never_started == ["c-2"]
    assert s.task_downtime_ms_total == 1000  # c-2, configured at 0, never ran
    assert s.task_downtime_ms_max == 1000
    assert s.convergence.not_running_tasks == ["c-2"]
    assert s.convergence.task_spread == 2
    assert s.convergence.connector_spread == 1
    before_end = log.records[:-1]  # the runtime checks before run_end
    v = liveness_violations(decode_log(before_end), summarize(before_end))
    assert [x.invariant for x in v] == ["liveness", "balance"]
    assert v[0].detail == "at 100 ms: 1 configured tasks not running (c-2)"
    assert v[0].tasks == ["c-2"] and v[0].connectors == []
    assert v[1].task_counts == {"w1": 2, "w2": 0}
    assert v[1].detail == (
        "at 100 ms: running tasks per live worker differ by 2 and connectors by 1 "
        "(max - min must be <= 1)"
    )


def test_duplicate_and_unconfigured_instances_are_not_converged() -> None:
    log = Log().start({"c": 1}, ["w1", "w2"])
    log.run_connector(1, "w1", "c", 1)
    log.run_task(1, "w1", "c-0", 1)
    log.run_task(2, "w2", "c-0", 1)
    log.add(3, "run_end")
    s = summarize(log.records)
    assert s.converged is False
    assert s.convergence.duplicate_tasks == ["c-0"]
    log2 = Log().start({"c": 1, "d": 0}, ["w1"])
    log2.run_connector(1, "w1", "c", 1)
    log2.run_connector(1, "w1", "d", 1)
    log2.run_task(1, "w1", "c-0", 1)
    log2.add(2, "config", offset=2, connectors={"c": 1})
    log2.add(3, "run_end")
    s2 = summarize(log2.records)
    assert s2.converged is False
    assert s2.convergence.unconfigured_running_connectors == ["d"]
    assert liveness_violations(decode_log(log2.records), s2)[0].detail == (
        "at 3 ms: 1 removed connectors still running (d)"
    )


def test_downtime_only_while_configured() -> None:
    log = Log().start({"c": 2}, ["w1"])
    log.run_connector(0, "w1", "c", 1)
    log.run_task(0, "w1", "c-0", 1)
    log.run_task(0, "w1", "c-1", 1)
    log.stop_task(100, "w1", "c-1")  # down from 100 ...
    log.add(400, "config", offset=2, connectors={"c": 1})  # ... until it is removed at 400
    log.add(700, "config", offset=3, connectors={"c": 2})  # configured again: down from 700
    log.run_task(1000, "w1", "c-1", 2)  # ... until 1000
    log.add(5000, "run_end")
    s = summarize(log.records)
    assert s.task_downtime_ms_total == 300 + 300
    assert s.task_downtime_ms_max == 600
    assert s.task_movements == 0
    assert s.converged is True


def test_task_stop_ends_running_before_stopped() -> None:
    log = Log().start({"c": 1}, ["w1", "w2"])
    log.run_connector(0, "w1", "c", 1)
    log.run_task(0, "w1", "c-0", 1)
    log.add(100, "task_stop", member="w1", task="c-0", reason="revoked")
    log.add(300, "task_stopped", member="w1", task="c-0", reason="revoked")
    log.run_task(350, "w2", "c-0", 2, start_ms=150)
    log.add(1000, "run_end")
    s = summarize(log.records)
    assert s.task_downtime_ms_total == 400  # 100 -> 500
    assert s.task_movements == 1


def test_phases_partition_the_run() -> None:
    log = Log().start({"c": 1}, ["w1", "w2"])
    log.generation(10, 1, protocol="default")
    log.run_connector(10, "w1", "c", 1)
    log.run_task(10, "w1", "c-0", 1)
    log.add(500, "step", action="set_tasks", connector="c", tasks=1)  # a step before any phase
    log.add(1000, "step", action="phase", name="roll")
    log.add(1000, "phase", name="roll")
    log.add(1000, "step", action="restart", member="w1")
    log.stop_task(1000, "w1", "c-0")  # down 1000 -> 2500, split across phases
    log.generation(1500, 2, protocol="compatible")
    log.add(1600, "violation", invariant="double_ownership", detail="x")
    log.add(2000, "step", action="phase", name="after")
    log.add(2000, "phase", name="after")
    log.generation(2100, 3, protocol="sessioned")
    log.generation(2200, 4, protocol="sessioned")
    log.run_task(2400, "w2", "c-0", 4, start_ms=100)
    log.add(3000, "run_end")
    s = summarize(log.records)
    assert [(p.name, p.start_ms, p.end_ms) for p in s.phases] == [
        ("start", 0, 1000),
        ("roll", 1000, 2000),
        ("after", 2000, 3000),
    ]
    assert [p.protocols for p in s.phases] == [["default"], ["compatible"], ["sessioned"]]
    assert [p.rebalances for p in s.phases] == [1, 1, 2]
    assert [p.task_downtime_ms_total for p in s.phases] == [0, 1000, 500]
    assert [p.task_movements for p in s.phases] == [0, 0, 1]
    assert [p.violations for p in s.phases] == [{}, {"double_ownership": 1}, {}]
    assert s.task_downtime_ms_total == 1500
    assert s.violations == {"double_ownership": 1}
    assert s.final_protocol == "sessioned"
    assert s.time_to_converge_ms == 1500  # last non-phase step 1000, last change 2500


def test_first_step_phase_names_the_first_phase() -> None:
    log = Log().start({}, ["w1"])
    log.generation(5, 1)
    log.add(100, "step", action="phase", name="eager")
    log.add(100, "phase", name="eager")
    log.add(200, "phase", name="next")
    log.add(300, "run_end")
    phases = summarize(log.records).phases
    assert [(p.name, p.start_ms, p.end_ms, p.rebalances) for p in phases] == [
        ("eager", 0, 200, 1),
        ("next", 200, 300, 0),
    ]


def test_run_start_connectors_until_first_config_and_empty_log() -> None:
    log = Log()
    log.add(
        0, "run_start", log_version=1, scenario="t", seed=4, workers=["w1"], connectors={"c": 1}
    )
    log.add(0, "member_start", member="w1", config={})
    log.add(50, "run_end")
    s = summarize(log.records)
    assert (s.scenario, s.seed) == ("t", 4)
    assert s.tasks_configured == 1
    assert s.never_started == ["c-0"]
    assert s.connector_downtime_ms_total == 50
    assert s.converged is False
    empty = summarize([])
    assert empty.converged is True and empty.rebalances == 0
    assert [p.name for p in empty.phases] == ["start"]
    assert liveness_violations([], empty) == []


def test_time_to_converge_counts_from_the_end_of_the_last_step() -> None:
    """Issue 14: "converged N s after the last step" counts from when a restart's worker is
    back (at_ms + down_ms), not from when it went down: the same log read as if the restart
    had no downtime converges exactly ``down_ms`` later."""
    from scenarios.check.metrics import step_end_ms, step_record_end_ms
    from scenarios.eventlog.kinds import Fault, Step
    from scenarios.input.library import load_any
    from scenarios.sim.runner import simulate

    assert step_end_ms(Step(t_ms=10, seq=0, action="restart", down_ms=5)) == 15
    assert step_end_ms(Step(t_ms=10, seq=0, action="partition", duration_ms=7)) == 17
    assert step_end_ms(Step(t_ms=10, seq=0, action="join")) == 10
    held = Fault(t_ms=10, seq=0, fault="delay_request", duration_ms=7, delay_ms=3)
    assert step_end_ms(held) == 20  # its last held request arrives
    record = {"t_ms": 10, "seq": 0, "kind": "step", "action": "restart", "down_ms": 5}
    assert step_record_end_ms(record) == 15
    records = simulate(load_any("worker-bounce-within-delay"), 1).records
    steps = [r for r in records if r["kind"] == "step" and r.get("action") == "restart"]
    assert steps and steps[-1]["down_ms"] > 0
    down = steps[-1]["down_ms"]
    measured = summarize(records).time_to_converge_ms
    as_instant = [
        {k: v for k, v in r.items() if k != "down_ms"} if r is steps[-1] else r for r in records
    ]
    assert measured is not None and measured > 0
    assert summarize(as_instant).time_to_converge_ms == measured + down


def test_streams_time_to_converge_counts_from_the_end_of_the_last_fault() -> None:
    """The Streams summary measures from the same end as Connect's: a partition's heal."""
    from scenarios.check.streams_summary import summarize_streams
    from scenarios.input.library import load_any
    from scenarios.sim.runner import simulate

    loaded = load_any("kip-441-scale-out-with-faults")
    records = simulate(loaded, 1).records
    last = [r for r in records if r["kind"] == "step" and r.get("action") == "partition"][-1]
    measured = summarize_streams(decode_log(records), loaded).time_to_converge_ms
    as_instant = [
        {k: v for k, v in r.items() if k != "duration_ms"} if r is last else r for r in records
    ]
    assert measured is not None and measured > 0
    expected = measured + last["duration_ms"]
    assert summarize_streams(decode_log(as_instant), loaded).time_to_converge_ms == expected


def test_a_streams_client_whose_stream_thread_died_is_not_live() -> None:
    """member_fatal (a FENCED_INSTANCE_ID, an unreadable assignment) ends the client's work:
    the end-of-run checks must not expect the last assignment to cover it."""
    from scenarios.check.streams_summary import summarize_streams
    from scenarios.input.library import load_any
    from scenarios.sim.runner import simulate

    loaded = load_any("kip-441-scale-out-with-faults")
    records = simulate(loaded, 1).records
    alive = summarize_streams(decode_log(records), loaded).workers_final
    victim = sorted(alive)[-1]
    end = records[-1]
    fatal = {"t_ms": end["t_ms"], "seq": end["seq"], "kind": "member_fatal", "member": victim}
    fatal["error"] = "FENCED_INSTANCE_ID"
    died = summarize_streams(decode_log([*records[:-1], fatal, end]), loaded).workers_final
    assert sorted(died) == sorted(set(alive) - {victim})


def test_a_growing_log_summary_equals_the_summary_of_the_whole_log_at_every_cut() -> None:
    """Issue 25: the runner summarizes a Connect log before its end-of-run checks and again
    after them; :class:`GrowingLogSummary` feeds only the records appended since its last
    call, and must give what :func:`summarize` gives on the whole log each time — also
    when it is handed another list, or a list that was changed rather than grown."""
    from scenarios.check.growing_summary import GrowingLogSummary
    from scenarios.input.library import load_any
    from scenarios.sim.runner import simulate

    records = simulate(load_any("worker-bounce-within-delay"), 1).records
    growing = GrowingLogSummary()
    log: list[dict[str, Any]] = []
    cuts = [0, 1, len(records) // 3, len(records) // 2, len(records) - 1, len(records)]
    for cut in cuts:
        log.extend(records[len(log) : cut])
        assert growing.summary(log) == summarize(log), cut
    assert growing.summary(records[:10]) == summarize(records[:10])  # another list
    changed = list(records)
    growing.summary(changed)
    changed[-1] = {**changed[-1], "t_ms": changed[-1]["t_ms"] + 60_000}
    assert growing.summary(changed) == summarize(changed)  # changed, not grown
