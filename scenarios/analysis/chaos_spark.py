"""A chaos campaign on Spark (``groupsim chaos --master …``): the runs of
:func:`scenarios.campaigns.chaos.run_campaign` as Spark tasks, their rows in Parquet.

Layout of an output directory ``OUT`` (a local path, or any URL Spark writes to):

- ``OUT/runs/``: one row per run (:data:`scenarios.analysis.chaos_rows.CHAOS_RUN_COLUMNS`):
  its id ``chaos-<seed>-<index>``, index, seeds, protocol, members, faults, violations, new
  violations, the first new one, convergence, CPU seconds and, for a failing run, its shrunk
  reproducer (path and TOML text).
- ``OUT/chaos-<seed>-<index>.toml`` (local ``OUT`` only): each failing run's reproducer.
- ``OUT/campaign.json`` (local ``OUT`` only): the campaign's seed and
  :class:`~scenarios.campaigns.chaos.ChaosConfig`; another campaign's ``OUT`` is refused.

How it runs (as :func:`scenarios.analysis.pipeline.run_sweep`): the driver makes one input
row per pending run index and Spark maps them with ``mapInArrow`` onto
:func:`scenarios.analysis.chaos_rows.chaos_row` in Python executors, up to
:data:`MAX_RUNS_PER_TASK` runs per task (a Spark task costs ~0.1 s of its own, about a
10-member run's CPU time); each run's row comes back through an accumulator when its task
ends. **Failing runs are shrunk on the executor that ran them** (up to ``shrink_budget``
simulations each, the costly part of a campaign that finds bugs, so it spreads over the
cluster); the reproducer's text comes back in the row and the driver writes the file under a
local ``OUT`` (so executors need no shared filesystem). Runs go in batches (one Spark job
each, :func:`default_sizes`); the driver writes a batch's reproducers, then its rows to
``runs/``.

Resuming: run indexes already in ``runs/`` are skipped, so the same command again finishes an
interrupted campaign, and a larger ``runs`` extends one. Ctrl-C cancels the job, keeps the
rows of the runs that finished (written with pyarrow, local ``OUT``) and raises
:class:`scenarios.analysis.interrupt.SweepInterrupted`.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.errors import InputError
from scenarios.analysis.chaos_rows import (
    CHAOS_RUN_COLUMNS,
    chaos_row,
    config_fingerprint,
    result_from_rows,
    same_campaign,
    write_row_reproducers,
)
from scenarios.analysis.interrupt import (
    SweepInterrupted,
    quiet_interrupt,
    save_finished_rows,
    start_own_session,
)
from scenarios.analysis.pipeline import _exists, _is_local, _ListParam, out_path, spark_schema
from scenarios.campaigns.chaos import CampaignResult, ChaosConfig

__all__ = [
    "SparkUnavailable",
    "CampaignOutError",
    "SparkCampaign",
    "run_campaign_on_spark",
    "existing_run_indexes",
    "BATCH_SIZE",
    "MAX_RUNS_PER_TASK",
    "default_sizes",
]

#: Runs per Spark job at least (what an interruption can lose, at most): the default batch is
#: this or 100 runs per core of the cluster, whichever is more.
BATCH_SIZE = 1000
#: Runs per Spark task at most by default (a task costs ~0.1 s besides its runs; a 10-member
#: run ~0.13 s of CPU): four tasks per core and batch, at most this many runs each.
MAX_RUNS_PER_TASK = 25


def default_sizes(pending: int, parallelism: int) -> tuple[int, int]:
    """``(batch_size, runs_per_task)`` for ``pending`` runs on ``parallelism`` cores: batches
    of max(:data:`BATCH_SIZE`, 100 × cores) runs, and tasks of up to
    :data:`MAX_RUNS_PER_TASK` runs, so that a batch still has four tasks per core."""
    cores = max(1, parallelism)
    batch = max(BATCH_SIZE, 100 * cores)
    per_task = max(1, min(MAX_RUNS_PER_TASK, -(-min(batch, pending) // (4 * cores))))
    return batch, per_task


class SparkUnavailable(RuntimeError):
    """Spark cannot run here (pyspark, pyarrow, pandas or Java 17+ missing); the text is the
    one-line reason (:func:`scenarios.analysis.session.spark_problem`)."""


class CampaignOutError(InputError):
    """``OUT`` holds the runs of another campaign (another seed or configuration)."""


@dataclass
class SparkCampaign:
    """What :func:`run_campaign_on_spark` did: the ``result`` (built from ``runs/``), the
    output directory as Spark saw it, runs skipped (already in ``runs/``) and run now."""

    result: CampaignResult
    out: str
    skipped: int
    ran: int


def existing_run_indexes(spark: Any, out: str) -> set[int]:
    """The ``run_index`` of every row in ``out/runs/`` (empty when there is none)."""
    runs = f"{out}/runs"
    if not _exists(spark, runs):
        return set()
    df = spark.read.schema("run_index long").parquet(runs)
    return {int(row[0]) for row in df.distinct().collect()}


def _check_campaign(out: str, config: ChaosConfig, seed: int) -> None:
    """Refuse a local ``out`` whose ``campaign.json`` names another campaign."""
    if not _is_local(out):
        return
    directory = Path(out.removeprefix("file://"))
    meta_path = directory / "campaign.json"
    want = config_fingerprint(config, seed)
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CampaignOutError(f"{meta_path}: unreadable: {exc}") from None
        if not same_campaign(meta, want):
            raise CampaignOutError(
                f"{directory} holds the runs of another chaos campaign (seed "
                f"{meta.get('seed')}; see its campaign.json); use another --out"
            )


def _write_campaign(out: str, config: ChaosConfig, seed: int) -> None:
    """Write a local ``out``'s ``campaign.json`` (once Spark has started: a campaign that
    never ran leaves no file)."""
    if not _is_local(out):
        return
    from scenarios.eventlog.atomic import atomic_write_text

    directory = Path(out.removeprefix("file://"))
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        directory / "campaign.json", json.dumps(config_fingerprint(config, seed), indent=2) + "\n"
    )


def _drop_empty_meta(out: str) -> None:
    """No run written (``runs/`` absent): remove ``campaign.json`` again."""
    if _is_local(out):
        directory = Path(out.removeprefix("file://"))
        if not (directory / "runs").exists():
            (directory / "campaign.json").unlink(missing_ok=True)


def _execute(
    batches: Iterator[Any],
    *,
    config: ChaosConfig,
    seed: int,
    batch: str,
    shrink: bool,
    shrink_budget: int,
    local_out: str | None,
    rows: Any,
) -> Iterator[Any]:
    """The executor side (``mapInArrow``): one :func:`chaos_row` per input ``run_index``,
    handed back through ``rows``; yields nothing."""
    import contextlib
    import signal

    # the terminal's Ctrl-C reaches Spark's Python workers too: the driver cancels the job
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    for record_batch in batches:
        for index in record_batch.column(0).to_pylist():
            row = chaos_row(
                config,
                seed,
                int(index),
                batch=batch,
                shrink=shrink,
                shrink_budget=shrink_budget,
                local_out=local_out,
            )
            rows.add([row])
    yield from ()


def run_campaign_on_spark(
    config: ChaosConfig,
    runs: int,
    seed: int,
    out: str | Path,
    *,
    spark: Any = None,
    master: str | None = "local[*]",
    conf: Mapping[str, str] | None = None,
    shrink_failures: bool = True,
    shrink_budget: int = 400,
    batch_size: int | None = None,
    runs_per_task: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> SparkCampaign:
    """Run runs ``0 … runs-1`` of campaign ``seed`` not yet in ``out/runs/`` on Spark.

    Args:
        out: output directory (local path or URL); created when missing. The result's
            reproducer paths are under ``out`` as given.
        spark: a SparkSession to use (kept running); default: one is made with
            :func:`scenarios.analysis.session.make_session` (``master``, ``conf``) and
            stopped at the end.
        shrink_failures, shrink_budget: shrink each failing run on its executor, with at
            most this many simulations.
        batch_size, runs_per_task: runs per Spark job, and per task (default:
            :func:`default_sizes`). Ctrl-C keeps the runs of the tasks that finished.
        on_progress: called with (runs done, runs in total), skipped runs counted as done.

    Returns the campaign built from ``runs/`` (every run index below ``runs``): the same
    :class:`~scenarios.campaigns.chaos.CampaignResult` as :func:`run_campaign` gives
    (``wall_s`` the Spark jobs' wall time that ran them, summed over invocations; ``jobs``
    Spark's default parallelism).

    Raises:
        SparkUnavailable: Spark cannot run here.
        CampaignOutError: ``out`` holds another campaign's runs.
        SweepInterrupted: Ctrl-C (the job is cancelled; finished runs are kept).
        ValueError: ``runs``, ``batch_size`` or ``runs_per_task`` below 1.
    """
    if runs < 1 or (batch_size or 1) < 1 or (runs_per_task or 1) < 1:
        raise ValueError("runs, batch_size and runs_per_task must be >= 1")
    if spark is None:
        from scenarios.analysis.session import spark_problem

        problem = spark_problem()
        if problem is not None:
            raise SparkUnavailable(problem)
    given = Path(str(out)) if "://" not in str(out) else None
    out = out_path(out)
    _check_campaign(out, config, seed)
    own = spark is None
    if own:
        spark = start_own_session(master, f"groupsim chaos {seed}", conf, out, _drop_empty_meta)
    written = 0
    try:
        _write_campaign(out, config, seed)
        done = existing_run_indexes(spark, out)
        written = len(done)
        pending = [i for i in range(runs) if i not in done]
        skipped = runs - len(pending)
        auto_batch, auto_per_task = default_sizes(
            len(pending), int(spark.sparkContext.defaultParallelism)
        )
        batch_size = batch_size or auto_batch
        runs_per_task = runs_per_task or auto_per_task
        if on_progress is not None:
            on_progress(skipped, runs)
        for start in range(0, len(pending), batch_size):
            chunk = pending[start : start + batch_size]
            base = skipped + start

            def report(n: int, base: int = base) -> None:
                if on_progress is not None:
                    on_progress(base + n, runs)

            try:
                written += _run_batch(
                    spark,
                    config,
                    seed,
                    out,
                    chunk,
                    runs_per_task,
                    (shrink_failures, shrink_budget),
                    report,
                )
            except KeyboardInterrupt as stop:
                quiet_interrupt(spark)
                _drop_empty_meta(out)
                raise SweepInterrupted(written + getattr(stop, "written", 0), out) from None
            report(len(chunk))
        rows = _read_rows(spark, out, runs)
        result = result_from_rows(
            config,
            seed,
            runs,
            rows,
            out_dir=given,
            jobs=int(spark.sparkContext.defaultParallelism),
        )
        return SparkCampaign(result, out, skipped, len(pending))
    except KeyboardInterrupt as stop:  # before the first batch, or while reading the rows
        if isinstance(stop, SweepInterrupted):
            raise
        quiet_interrupt(spark)
        _drop_empty_meta(out)
        raise SweepInterrupted(written, out) from None
    finally:
        if own:
            spark.stop()


class _BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C in a batch; ``written``: its finished runs' rows saved."""

    def __init__(self, written: int) -> None:
        super().__init__(f"{written} rows saved")
        self.written = written


def _run_batch(
    spark: Any,
    config: ChaosConfig,
    seed: int,
    out: str,
    chunk: list[int],
    runs_per_task: int,
    shrinking: tuple[bool, int],
    report: Callable[[int], None],
) -> int:
    """One Spark job: the runs ``chunk``, ``runs_per_task`` per task; writes their
    reproducers and ``runs`` rows. Returns the rows written."""
    from pyspark.accumulators import AccumulatorParam

    started = time.perf_counter()
    sc = spark.sparkContext
    batch = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    frame = spark.createDataFrame(
        sc.parallelize([(i,) for i in chunk], -(-len(chunk) // runs_per_task)), "run_index long"
    )
    param: AccumulatorParam[list[Any]] = _ListParam()  # type: ignore[assignment]
    rows = sc.accumulator([], param)
    local_out = out.removeprefix("file://") if _is_local(out) else None
    func = functools.partial(
        _execute,
        config=config,
        seed=seed,
        batch=batch,
        shrink=shrinking[0],
        shrink_budget=shrinking[1],
        local_out=local_out,
        rows=rows,
    )
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.25):
            report(min(len(rows.value), len(chunk)))

    poller = threading.Thread(target=poll, name="groupsim-progress", daemon=True)
    poller.start()
    try:
        frame.mapInArrow(func, "run_index long").count()
    except KeyboardInterrupt:
        stop.set()
        quiet_interrupt(spark)  # keep the finished runs (a local OUT; their rows are here)
        finished = _with_wall({row["run_id"]: row for row in rows.value}, started)
        saved = 0
        if local_out is not None:
            write_row_reproducers(finished)
            saved = save_finished_rows(out, finished, CHAOS_RUN_COLUMNS)
        raise _BatchInterrupted(saved) from None
    finally:
        stop.set()
        poller.join()
    finished = _with_wall({row["run_id"]: row for row in rows.value}, started)
    write_row_reproducers(finished)
    records = [tuple(row.get(name) for name, _ in CHAOS_RUN_COLUMNS) for row in finished]
    frame = spark.createDataFrame(records, spark_schema(CHAOS_RUN_COLUMNS))
    frame.coalesce(1).write.mode("append").parquet(f"{out}/runs")
    return len(finished)


def _with_wall(by_id: dict[str, dict[str, Any]], started: float) -> list[dict[str, Any]]:
    """The rows (one per run: a retried task reports twice), each with its batch's
    ``batch_wall_s``: the seconds since ``started``."""
    wall = time.perf_counter() - started
    for row in by_id.values():
        row["batch_wall_s"] = wall
    return list(by_id.values())


def _read_rows(spark: Any, out: str, runs: int) -> list[dict[str, Any]]:
    """The ``runs/`` rows of run indexes below ``runs``."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(f"{out}/runs").where(F.col("run_index") < runs)
    return [row.asDict() for row in frame.collect()]
