"""The columns of a sweep's result tables (``runs``, ``events``, ``aggregates``; Spark/Arrow
type names): what :func:`scenarios.campaigns.sweeps.execute_run` fills and the Spark pipeline
(:mod:`scenarios.analysis`) writes; parameter names may not clash with them."""

from __future__ import annotations

from scenarios.input.schema import INVARIANTS

__all__ = [
    "ColumnType",
    "RUN_COLUMNS",
    "EVENT_COLUMNS",
    "AGGREGATE_METRICS",
    "PERCENTILES",
    "RESERVED_NAMES",
]

#: Column types used by the tables (Spark/Arrow names): string, long, double, boolean,
#: array<string>.
ColumnType = str

#: The ``runs`` table after the parameter columns (which come first, after ``run_id`` and
#: ``batch``): ``(name, type)``. Counts and virtual times are ``long``; ``wall_ms`` is the
#: real time the simulation took (not deterministic). Metric columns are null for a failed
#: run; ``scenario_*`` are null when the scenario could not even be loaded.
RUN_COLUMNS: list[tuple[str, ColumnType]] = [
    ("sweep", "string"),
    ("seed", "long"),
    ("status", "string"),
    ("error", "string"),
    ("scenario", "string"),
    ("scenario_workers", "long"),
    ("scenario_protocol", "string"),
    ("scenario_delay_ms", "long"),
    ("rebalances", "long"),
    ("join_rounds", "long"),
    ("sync_rounds", "long"),
    ("tasks_configured", "long"),
    ("task_downtime_ms_total", "long"),
    ("task_downtime_ms_max", "long"),
    ("connector_downtime_ms_total", "long"),
    ("task_movements", "long"),
    ("max_imbalance", "long"),
    ("converged", "boolean"),
    ("time_to_converge_ms", "long"),
    ("final_protocol", "string"),
    ("end_ms", "long"),
    ("violations_total", "long"),
    *[(f"violations_{name.replace('-', '_').lower()}", "long") for name in INVARIANTS],
    ("expectation_failures", "array<string>"),
    ("expect_ok", "boolean"),
    ("events", "long"),
    ("wall_ms", "double"),
]

#: The ``events`` table after ``run_id``, ``batch``, ``seed`` and the parameter columns: one
#: row per event-log record. ``fields`` is the record's other keys as a JSON object.
EVENT_COLUMNS: list[tuple[str, ColumnType]] = [
    ("t_ms", "long"),
    ("seq", "long"),
    ("kind", "string"),
    ("member", "string"),
    ("fields", "string"),
]

#: Metrics summarised per parameter combination in ``aggregates/`` (over ``ok`` runs):
#: ``<metric>_mean``, ``<metric>_p50``, ``<metric>_p95``, ``<metric>_p99`` (doubles; exact
#: percentiles with linear interpolation between closest ranks, as Spark's ``percentile``).
AGGREGATE_METRICS: tuple[str, ...] = (
    "task_downtime_ms_total",
    "task_downtime_ms_max",
    "rebalances",
    "task_movements",
    "time_to_converge_ms",
)
#: The percentiles of :data:`AGGREGATE_METRICS` in ``aggregates/``.
PERCENTILES: tuple[tuple[str, float], ...] = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))

#: Names a parameter may not take (they are columns of the tables).
RESERVED_NAMES = frozenset(
    {"run_id", "batch", "log", "runs", "ok_runs", "failed_runs", "converged_runs"}
    | {"expect_ok_runs", "runs_with_violations"}
    | {n for n, _ in RUN_COLUMNS}
    | {n for n, _ in EVENT_COLUMNS}
)
