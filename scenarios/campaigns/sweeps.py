"""Running a sweep: :func:`execute_run` runs one :class:`RunSpec` in this process and
returns its ``runs`` row and its ``events`` rows; the Spark pipeline (:mod:`scenarios.analysis`)
calls it inside executors, the benchmark in a ``multiprocessing`` pool. A run that raises
becomes a row with ``status = "failed"`` and the error, never an exception.

The sweep file itself (schema, loading, grid expansion, run ids) is
:mod:`scenarios.input.sweep_file`; its names are re-exported here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import msgspec

from scenarios.check.summary_types import SummaryBase
from scenarios.input.loader import loads_scenario
from scenarios.input.schema import INVARIANTS
from scenarios.input.sweep_file import (
    AGGREGATE_METRICS,
    EVENT_COLUMNS,
    GENERATORS,
    PERCENTILES,
    RESERVED_NAMES,
    RUN_COLUMNS,
    Combination,
    LoadedSweep,
    RunSpec,
    SweepError,
    SweepFile,
    combination_of,
    load_sweep,
    loads_sweep,
    make_run_id,
    param_type,
    resolve_sweep,
    sweep_names,
    sweeps_dir,
    toml_dumps,
)

__all__ = [
    "SweepError",
    "SweepFile",
    "Combination",
    "RunSpec",
    "RunOutcome",
    "LoadedSweep",
    "GENERATORS",
    "RUN_COLUMNS",
    "EVENT_COLUMNS",
    "RESERVED_NAMES",
    "AGGREGATE_METRICS",
    "PERCENTILES",
    "sweeps_dir",
    "sweep_names",
    "resolve_sweep",
    "load_sweep",
    "loads_sweep",
    "make_run_id",
    "execute_run",
    "toml_dumps",
    "param_type",
]


@dataclass
class RunOutcome:
    """One run's results: ``row`` (the ``runs`` columns of :data:`RUN_COLUMNS` plus
    ``run_id`` and the parameters) and ``events`` (the event log as column lists:
    ``{"t_ms": [...], "seq": [...], "kind": [...], "member": [...], "fields": [...]}``)."""

    row: dict[str, Any]
    events: dict[str, list[Any]]


_encoder = msgspec.json.Encoder()
_STANDARD = ("t_ms", "seq", "kind", "member")


def _empty_events() -> dict[str, list[Any]]:
    return {name: [] for name, _ in EVENT_COLUMNS}


def execute_run(spec: RunSpec, *, with_events: bool = True) -> RunOutcome:
    """Load ``spec``'s scenario, simulate it with ``spec.seed`` and flatten the results.

    Never raises for a failing run: any exception (from loading or simulating) gives
    ``status = "failed"``, ``error = "<ExceptionType>: <message>"`` (one line) and null
    metrics. ``with_events=False`` leaves ``events`` empty (the row's ``events`` column still
    counts the records).
    """
    from scenarios.sim.runner import simulate  # imported here: the engine is only needed to run

    row: dict[str, Any] = {name: None for name, _ in RUN_COLUMNS}
    row.update(spec.params)
    row.update(
        run_id=spec.run_id,
        sweep=spec.sweep,
        seed=spec.seed,
        expectation_failures=[],
        violations_total=None,
    )
    events = _empty_events()
    started = time.perf_counter()
    try:
        loaded = loads_scenario(spec.scenario_text, source=spec.source)
        info = combination_of(spec.params, spec.scenario_text, spec.source, loaded)
        row.update(
            scenario=info.scenario,
            scenario_workers=info.workers,
            scenario_protocol=info.protocol,
            scenario_delay_ms=info.delay_ms,
        )
        result = simulate(loaded, spec.seed)
    except Exception as exc:  # a failing run is data, not a crash of the sweep
        row.update(
            status="failed",
            error=" ".join(f"{type(exc).__name__}: {exc}".split()),
            wall_ms=(time.perf_counter() - started) * 1000.0,
        )
        return RunOutcome(row, events)
    wall = (time.perf_counter() - started) * 1000.0
    s = result.summary
    if not isinstance(s, SummaryBase):  # a sweep's scenarios are Connect or Streams runs
        raise TypeError(f"a sweep row needs a Connect or Streams summary, got {type(s).__name__}")
    violations = s.violations
    row.update(
        status="ok",
        rebalances=s.rebalances,
        join_rounds=s.join_rounds,
        sync_rounds=s.sync_rounds,
        tasks_configured=s.tasks_configured,
        task_downtime_ms_total=s.task_downtime_ms_total,
        task_downtime_ms_max=s.task_downtime_ms_max,
        connector_downtime_ms_total=s.connector_downtime_ms_total,
        task_movements=s.task_movements,
        max_imbalance=s.max_imbalance,
        converged=s.converged,
        time_to_converge_ms=s.time_to_converge_ms,
        final_protocol=s.final_protocol,
        end_ms=s.end_ms,
        violations_total=sum(violations.values()),
        expectation_failures=list(result.failures),
        expect_ok=not result.failures,
        events=len(result.records),
        wall_ms=wall,
    )
    for name in INVARIANTS:
        row[f"violations_{name.replace('-', '_').lower()}"] = int(violations.get(name, 0))
    if with_events:
        t_ms, seq, kind, member, fields = (events[k] for k, _ in EVENT_COLUMNS)
        for record in result.records:
            t_ms.append(record["t_ms"])
            seq.append(record["seq"])
            kind.append(record["kind"])
            m = record.get("member")
            member.append(m if isinstance(m, str) else None)
            rest = {k: v for k, v in record.items() if k not in _STANDARD}
            if "member" in record and not isinstance(m, str):
                rest["member"] = m
            fields.append(_encoder.encode(rest).decode("utf-8"))
    return RunOutcome(row, events)
