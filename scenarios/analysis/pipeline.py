"""Run a sweep on Spark and write its results as Parquet.

Layout of an output directory ``OUT`` (a local path, or any URL Spark writes to, e.g.
``hdfs://…``, ``s3a://…``):

- ``OUT/runs/``: one row per run (:func:`scenarios.analysis.arrow.run_columns`): ``run_id``,
  ``batch``, the sweep parameters, then :data:`scenarios.campaigns.sweeps.RUN_COLUMNS` (seed,
  status,
  error, summary metrics, violations by invariant, expectation failures).
- ``OUT/events/``: one row per event-log record of every run, partitioned by the sweep
  parameters as hive-style directories (``events/protocol=eager/workers=5/…``; one
  ``run-<run_id>.parquet`` per run when executors write it, ``part-….parquet`` files when
  Spark does): ``run_id``, ``batch``, ``seed``, then ``t_ms``, ``seq``, ``kind``,
  ``member``, ``fields`` (JSON of the other keys).
- ``OUT/aggregates/``: one row per parameter combination, recomputed from all of ``runs/``
  after every invocation (:func:`aggregate_columns`).
- ``OUT/sweep.json`` (local paths only): the sweep's name, fingerprint, grid and file text.

How it runs: the driver builds one row per pending run (its id, seed, parameters and the
scenario's TOML text) and Spark maps them with ``mapInArrow`` (Arrow batches in and out, no
pandas conversion) onto :func:`scenarios.campaigns.sweeps.execute_run` inside Python executors, one
run
per task, the longest first; there is no per-run JVM work besides moving the result rows.
Each run's ``runs`` row comes back to the driver through an accumulator; the driver writes
the batch's ``runs`` rows once the batch's events are written. Runs are written in batches
(``batch_size`` runs, one Spark job each). A run that raises is a row with
``status = "failed"``.

Events are written one of two ways (``events_writer``):

- ``executors`` (the default for a local ``OUT``): the task that ran a run writes its events
  itself with pyarrow, as one file ``events/<param>=<value>/…/run-<run_id>.parquet``, under a
  hidden temporary name then renamed, before the run's row goes back to the driver; the JVM
  carries only the small ``runs`` rows. ``OUT`` must then be a path every executor can
  write: any path in local mode, a shared filesystem on a cluster.
- ``spark`` (the default for a URL ``OUT``, e.g. ``hdfs://``, ``s3a://``): each run's events
  come back to the JVM as one Arrow batch and Spark's Parquet writer appends them to
  ``events/`` in the same job.

The Spark conf ``spark.groupsim.eventsWriter`` (``auto``, ``executors``, ``spark``) overrides
the default when ``events_writer`` is ``auto``.

Resuming: runs whose ``run_id`` is already in ``runs/`` are skipped. A run whose events were
written but whose ``runs`` row was not (an interrupted batch) runs again: an executor-written
file has a fixed name per run and is replaced; in both ways the leftover rows carry a
``batch`` with no ``runs`` row, and :func:`scenarios.analysis.tables.read_events` drops them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenarios.analysis.arrow import event_batch, event_columns, event_schema, run_columns
from scenarios.analysis.interrupt import (
    SweepInterrupted,
    drop_empty_meta,
    quiet_interrupt,
    save_finished_rows,
    start_own_session,
)
from scenarios.analysis.sweep_meta import check_meta, write_meta
from scenarios.campaigns.sweeps import (
    AGGREGATE_METRICS,
    PERCENTILES,
    LoadedSweep,
    RunSpec,
    execute_run,
)
from scenarios.input.schema import INVARIANTS

__all__ = [
    "EVENTS_WRITERS",
    "SweepRun",
    "SweepInterrupted",
    "run_sweep",
    "spark_schema",
    "aggregate_columns",
    "compute_aggregates",
    "out_path",
    "existing_run_ids",
]

#: How ``events/`` is written (see the module doc); ``auto`` picks per ``out``.
EVENTS_WRITERS = ("auto", "executors", "spark")

#: The Spark conf that overrides ``events_writer="auto"``.
EVENTS_WRITER_CONF = "spark.groupsim.eventsWriter"

#: ``progress(done, total)``: runs finished in this invocation / runs to run.
ProgressFn = Callable[[int, int], None]

_INPUT_COLUMNS = [
    ("run_id", "string"),
    ("sweep", "string"),
    ("seed", "long"),
    ("params", "string"),
    ("scenario_text", "string"),
    ("source", "string"),
]


@dataclass
class SweepRun:
    """What :func:`run_sweep` did.

    Attributes:
        out: the output directory (as given to Spark).
        total: runs in the sweep; skipped: already in ``runs/``; ran: run now;
        failed: of those, rows with ``status = "failed"``; batches: Spark write batches.
        seconds: wall time of the invocation (excluding Spark's start-up when a session was
        passed in).
        failures: ``(run_id, seed, params, error)`` of the failed runs of this invocation.
    """

    out: str
    total: int
    skipped: int
    ran: int = 0
    failed: int = 0
    batches: int = 0
    seconds: float = 0.0
    failures: list[tuple[str, int, dict[str, Any], str]] = field(default_factory=list)


def _spark_type(kind: str) -> Any:
    from pyspark.sql import types as T

    simple = {
        "string": T.StringType(),
        "long": T.LongType(),
        "double": T.DoubleType(),
        "boolean": T.BooleanType(),
        "array<string>": T.ArrayType(T.StringType(), containsNull=True),
    }
    return simple[kind]


def spark_schema(columns: Sequence[tuple[str, str]]) -> Any:
    """A ``pyspark.sql.types.StructType`` of ``(name, type)`` columns (types as in
    :data:`scenarios.campaigns.sweeps.RUN_COLUMNS`)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(n, _spark_type(t), True) for n, t in columns])


def aggregate_columns(param_types: Mapping[str, str]) -> list[tuple[str, str]]:
    """The ``aggregates`` table: the parameters; ``runs``, ``ok_runs``, ``failed_runs``,
    ``converged_runs``, ``expect_ok_runs``; ``scenario_workers``, ``scenario_protocol``,
    ``scenario_delay_ms`` (from the runs); per metric of
    :data:`scenarios.campaigns.sweeps.AGGREGATE_METRICS` its mean and p50/p95/p99 over ok runs
    (doubles, virtual ms or counts; null when no ok run has a value); ``violations_total``,
    ``runs_with_violations`` and ``violations_<invariant>`` (sums over runs)."""
    cols: list[tuple[str, str]] = list(param_types.items())
    cols += [
        ("runs", "long"),
        ("ok_runs", "long"),
        ("failed_runs", "long"),
        ("converged_runs", "long"),
        ("expect_ok_runs", "long"),
        ("scenario_workers", "long"),
        ("scenario_protocol", "string"),
        ("scenario_delay_ms", "long"),
    ]
    for metric in AGGREGATE_METRICS:
        cols.append((f"{metric}_mean", "double"))
        cols += [(f"{metric}_{label}", "double") for label, _ in PERCENTILES]
    cols += [("violations_total", "long"), ("runs_with_violations", "long")]
    cols += [(_violation_column(name), "long") for name in INVARIANTS]
    return cols


def _violation_column(invariant: str) -> str:
    return f"violations_{invariant.replace('-', '_').lower()}"


def out_path(out: str | Path) -> str:
    """``out`` as Spark should see it: an absolute local path, or the URL unchanged."""
    text = str(out)
    if "://" in text:
        return text.rstrip("/")
    return str(Path(text).expanduser().resolve())


def _is_local(out: str) -> bool:
    return "://" not in out or out.startswith("file://")


def _exists(spark: Any, path: str) -> bool:
    if _is_local(path):
        return Path(path.removeprefix("file://")).exists()
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return bool(fs.exists(hpath))


def existing_run_ids(spark: Any, out: str) -> set[str]:
    """The ``run_id`` of every row in ``out/runs/`` (empty when there is none)."""
    runs = f"{out}/runs"
    if not _exists(spark, runs):
        return set()
    df = spark.read.schema("run_id string").parquet(runs)
    return {row[0] for row in df.distinct().collect()}


class _ListParam:
    """An accumulator of lists (the run rows executors hand back to the driver)."""

    def zero(self, value: list[Any]) -> list[Any]:
        return []

    def addInPlace(self, a: list[Any], b: list[Any]) -> list[Any]:  # noqa: N802 - Spark's name
        a.extend(b)
        return a


# Characters Spark escapes in partition directory names (ExternalCatalogUtils.escapePathName),
# as %XX; pyarrow's hive partitioning and Spark's partition discovery both decode them.
_ESCAPE = frozenset(
    [chr(c) for c in range(0x01, 0x20)]
    + ['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f", "{", "[", "]", "^"]
)


def partition_value(value: Any) -> str:
    """``value`` as Spark writes it in a partition directory name (``true``, ``5``,
    ``0.5``, strings with special characters as ``%XX``)."""
    if value is None:
        return "__HIVE_DEFAULT_PARTITION__"
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in text)


def run_events_path(events_dir: str, params: Mapping[str, Any], run_id: str) -> Path:
    """Where an executor writes one run's events:
    ``events_dir/<param>=<value>/…/run-<run_id>.parquet``."""
    parts = [f"{name}={partition_value(value)}" for name, value in params.items()]
    return Path(events_dir).joinpath(*parts, f"run-{run_id}.parquet")


def write_run_events(path: Path, batch: Any, param_names: Sequence[str]) -> None:
    """Write one run's event batch (without the partition columns) to ``path`` atomically:
    a hidden temporary file in the same directory (readers skip names starting with ``.``),
    then a rename, which replaces the file of an earlier, interrupted attempt. A run
    without events (a failed run) gets no file, and loses any earlier one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if batch.num_rows == 0:
        path.unlink(missing_ok=True)
        return
    table = pa.Table.from_batches([batch]).drop_columns(list(param_names))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _execute_batches(
    batches: Iterator[Any],
    *,
    param_names: list[str],
    param_types: dict[str, str],
    batch: str,
    with_events: bool,
    events_dir: str | None,
    rows: Any,
) -> Iterator[Any]:
    """The executor side (``mapInArrow``): runs each input row. With ``events_dir`` (the
    ``executors`` writer) writes each run's events there and yields nothing; else yields
    the runs' event rows (one record batch per run) when ``with_events``. Each run's
    ``runs`` row goes back to the driver through ``rows``, after its events file exists."""
    import signal

    # The terminal's Ctrl-C reaches Spark's Python workers too (pyspark's daemon restores the
    # default SIGINT handler in them): ignore it here; the driver cancels the job instead.
    with contextlib.suppress(ValueError):  # not the main thread of the worker
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    schema = event_schema(param_types)
    for record_batch in batches:
        for row in record_batch.to_pylist():
            params = json.loads(row["params"])
            spec = RunSpec(
                run_id=row["run_id"],
                sweep=row["sweep"],
                params={k: params[k] for k in param_names},
                seed=int(row["seed"]),
                scenario_text=row["scenario_text"],
                source=row["source"],
            )
            outcome = execute_run(spec, with_events=with_events)
            if with_events and events_dir is not None:
                path = run_events_path(events_dir, spec.params, spec.run_id)
                write_run_events(path, event_batch(outcome, batch, schema), param_names)
            rows.add([dict(outcome.row, batch=batch)])
            if with_events and events_dir is None:
                yield event_batch(outcome, batch, schema)


def run_sweep(
    sweep: LoadedSweep,
    out: str | Path,
    *,
    spark: Any = None,
    master: str | None = "local[*]",
    conf: Mapping[str, str] | None = None,
    events: bool = True,
    events_writer: str = "auto",
    batch_size: int = 400,
    runs_per_task: int = 1,
    specs: Sequence[RunSpec] | None = None,
    progress: ProgressFn | None = None,
) -> SweepRun:
    """Run every run of ``sweep`` not yet in ``out/runs/`` on Spark and write the tables.

    Args:
        sweep: from :func:`scenarios.campaigns.sweeps.load_sweep`.
        out: output directory (local path or URL); created when missing.
        spark: a SparkSession to use (kept running); default: one is made with
            :func:`scenarios.analysis.session.make_session` (``master``, ``conf``) and
            stopped at the end.
        events: also write ``events/`` (the full event logs).
        events_writer: ``executors`` (each task writes its run's events with pyarrow; ``out``
            must be a local or shared filesystem path), ``spark`` (Spark's Parquet writer;
            any ``out``), or ``auto``: the Spark conf ``spark.groupsim.eventsWriter`` if set,
            else ``executors`` for a path and ``spark`` for a URL.
        batch_size: runs per Spark write (the unit that resuming can lose).
        runs_per_task: runs per Spark task (1 balances best; more cuts task overhead).
        specs: the runs to consider (default ``sweep.runs``; tests pass crafted ones).
        progress: called with (runs done, runs to run) as Spark tasks finish.

    Raises:
        SweepError: ``out`` holds another sweep's results.
        ValueError: a bad ``batch_size``, ``runs_per_task`` or ``events_writer``
            (``executors`` with a URL ``out``).
        RuntimeError: Spark cannot start (see :func:`scenarios.analysis.session.spark_problem`).
    """
    if batch_size < 1 or runs_per_task < 1:
        raise ValueError("batch_size and runs_per_task must be >= 1")
    if events_writer not in EVENTS_WRITERS:
        raise ValueError(
            f"events_writer: {events_writer!r} is not one of {', '.join(EVENTS_WRITERS)}"
        )
    out = out_path(out)
    if events_writer == "executors" and not _is_local(out):
        raise ValueError(f"events_writer 'executors' needs a filesystem path, not {out}")
    check_meta(sweep, out)
    own = spark is None
    if own:
        spark = start_own_session(
            master, f"groupsim sweep {sweep.name}", conf, out, drop_empty_meta
        )
    started = time.perf_counter()
    written_before = 0
    try:
        write_meta(sweep, out)
        events_dir = _events_dir(spark, out, events, events_writer)
        all_specs = list(sweep.runs if specs is None else specs)
        done = existing_run_ids(spark, out)
        pending = [s for s in all_specs if s.run_id not in done]
        pending.sort(key=lambda s: -s.cost)  # longest first (stable for equal costs)
        result = SweepRun(out=out, total=len(all_specs), skipped=len(all_specs) - len(pending))
        written_before = result.skipped
        if progress is not None:
            progress(0, len(pending))
        finished = 0
        for start in range(0, len(pending), batch_size):
            chunk = pending[start : start + batch_size]

            def report(n: int, base: int = finished) -> None:
                if progress is not None:
                    progress(base + n, len(pending))

            try:
                _run_batch(
                    spark, sweep, out, chunk, events, events_dir, runs_per_task, report, result
                )
            except KeyboardInterrupt:
                quiet_interrupt(spark)
                drop_empty_meta(out)
                raise SweepInterrupted(result.skipped + result.ran, out) from None
            finished += len(chunk)
            result.batches += 1
            if progress is not None:
                progress(finished, len(pending))
        if pending or not _exists(spark, f"{out}/aggregates"):
            compute_aggregates(spark, sweep.param_types, out)
        result.seconds = time.perf_counter() - started
        return result
    except KeyboardInterrupt as stop:  # before the first batch, or while aggregating
        if isinstance(stop, SweepInterrupted):
            raise
        quiet_interrupt(spark)
        drop_empty_meta(out)
        raise SweepInterrupted(written_before, out) from None
    finally:
        if own:
            spark.stop()


def _events_dir(spark: Any, out: str, events: bool, events_writer: str) -> str | None:
    """The local ``events/`` directory executors write into, or None when Spark writes the
    events (or there are none)."""
    if not events:
        return None
    writer = events_writer
    if writer == "auto":
        writer = str(spark.conf.get(EVENTS_WRITER_CONF, "auto") or "auto").strip().lower()
        if writer not in EVENTS_WRITERS:
            raise ValueError(
                f"{EVENTS_WRITER_CONF}: {writer!r} is not one of {', '.join(EVENTS_WRITERS)}"
            )
        if writer == "executors" and not _is_local(out):
            raise ValueError(f"{EVENTS_WRITER_CONF}=executors needs a filesystem path, not {out}")
    if writer == "auto":
        writer = "executors" if _is_local(out) else "spark"
    if writer == "spark":
        return None
    events_dir = Path(out.removeprefix("file://")) / "events"
    events_dir.mkdir(parents=True, exist_ok=True)
    return str(events_dir)


def _run_batch(
    spark: Any,
    sweep: LoadedSweep,
    out: str,
    chunk: list[RunSpec],
    events: bool,
    events_dir: str | None,
    runs_per_task: int,
    report: Callable[[int], None],
    result: SweepRun,
) -> None:
    from pyspark.accumulators import AccumulatorParam

    sc = spark.sparkContext
    batch = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    inputs = [
        (s.run_id, s.sweep, s.seed, json.dumps(s.params), s.scenario_text, s.source) for s in chunk
    ]
    slices = max(1, -(-len(inputs) // runs_per_task))
    frame = spark.createDataFrame(sc.parallelize(inputs, slices), spark_schema(_INPUT_COLUMNS))
    param: AccumulatorParam[list[Any]] = _ListParam()  # type: ignore[assignment]
    rows = sc.accumulator([], param)
    param_names = list(sweep.param_types)
    func = functools.partial(
        _execute_batches,
        param_names=param_names,
        param_types=dict(sweep.param_types),
        batch=batch,
        with_events=events,
        events_dir=events_dir,
        rows=rows,
    )
    event_rows = frame.mapInArrow(func, spark_schema(event_columns(sweep.param_types)))
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.25):
            report(min(len(rows.value), len(chunk)))

    poller = threading.Thread(target=poll, name="groupsim-progress", daemon=True)
    poller.start()
    try:
        if events and events_dir is None:
            writer = event_rows.write.mode("append")
            if param_names:
                writer = writer.partitionBy(*param_names)
            writer.parquet(f"{out}/events")
        else:
            event_rows.count()
    except KeyboardInterrupt:
        stop.set()
        quiet_interrupt(spark)  # Spark's rows never arrive: keep the finished runs' rows
        if events_dir is not None or not events:  # their events files exist
            result.ran += save_finished_rows(out, rows.value, run_columns(sweep.param_types))
        raise
    finally:
        stop.set()
        poller.join()
    by_id = {row["run_id"]: row for row in rows.value}  # a retried task reports twice
    columns = run_columns(sweep.param_types)
    records = [tuple(row.get(name) for name, _ in columns) for row in by_id.values()]
    runs = spark.createDataFrame(records, spark_schema(columns))
    runs.coalesce(1).write.mode("append").parquet(f"{out}/runs")
    for row in by_id.values():
        if row["status"] == "failed":
            params = {k: row[k] for k in param_names}
            result.failures.append((row["run_id"], int(row["seed"]), params, str(row["error"])))
    result.ran += len(by_id)
    result.failed = len(result.failures)


def compute_aggregates(spark: Any, param_types: Mapping[str, str], out: str) -> None:
    """Recompute ``out/aggregates/`` (overwritten) from every row of ``out/runs/``."""
    from pyspark.sql import functions as F

    param_names = list(param_types)
    runs = spark.read.parquet(f"{out}/runs").dropDuplicates(["run_id"])
    ok = F.col("status") == "ok"

    def count_if(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0)).cast("long")

    aggs: list[Any] = [
        F.count(F.lit(1)).cast("long").alias("runs"),
        count_if(ok).alias("ok_runs"),
        count_if(~ok).alias("failed_runs"),
        count_if(F.col("converged")).alias("converged_runs"),
        count_if(F.col("expect_ok")).alias("expect_ok_runs"),
        F.max("scenario_workers").alias("scenario_workers"),
        F.max("scenario_protocol").alias("scenario_protocol"),
        F.max("scenario_delay_ms").alias("scenario_delay_ms"),
    ]
    fractions = ", ".join(str(p) for _, p in PERCENTILES)
    for metric in AGGREGATE_METRICS:
        value = F.when(ok, F.col(metric).cast("double"))
        aggs.append(F.avg(value).alias(f"{metric}_mean"))
        aggs.append(
            F.expr(
                f"percentile(CASE WHEN status = 'ok' THEN CAST({metric} AS DOUBLE) END, "
                f"array({fractions}))"
            ).alias(f"{metric}__pct")
        )
    aggs.append(
        F.coalesce(F.sum("violations_total"), F.lit(0)).cast("long").alias("violations_total")
    )
    aggs.append(count_if(F.col("violations_total") > 0).alias("runs_with_violations"))
    for name in INVARIANTS:
        column = _violation_column(name)
        aggs.append(F.coalesce(F.sum(column), F.lit(0)).cast("long").alias(column))
    grouped = runs.groupBy(*param_names) if param_names else runs.groupBy()
    table = grouped.agg(*aggs)
    percentile_items = {
        f"{metric}_{label}": F.col(f"{metric}__pct").getItem(i)
        for metric in AGGREGATE_METRICS
        for i, (label, _) in enumerate(PERCENTILES)
    }
    select = [
        percentile_items[name].alias(name) if name in percentile_items else F.col(name)
        for name, _kind in aggregate_columns(param_types)
    ]
    table = table.select(*select)
    if param_names:
        table = table.orderBy(*param_names)
    table.coalesce(1).write.mode("overwrite").parquet(f"{out}/aggregates")
