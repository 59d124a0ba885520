"""Sweep throughput: Spark local mode versus a plain multiprocessing pool.

Runs 200 runs of the built-in ``protocol-comparison`` sweep (a fixed sample: the 200 lowest
run ids, so every protocol and size is represented) twice with the same parallelism:

- ``multiprocessing``: ``multiprocessing.Pool(N)`` mapping
  :func:`scenarios.campaigns.sweeps.execute_run`
  over the runs (longest first, one run per task), results (rows and event columns) pickled
  back to the parent, nothing written;
- ``multiprocessing`` + pyarrow (with events): the same pool, each worker writing its run's
  events as one Parquet file under hive partitions, the parent writing ``runs/``;
- ``spark local[N]``: :func:`scenarios.analysis.pipeline.run_sweep` into a temporary
  directory (runs, events and aggregates written as Parquet; events by the executors with
  pyarrow unless ``--events-writer spark``), with the session's start-up measured apart.

Prints runs per minute and Spark's overhead relative to the pool (target: ≤ 25 % without the
JVM start-up). Needs the spark extra (``pip install -e ".[dev,spark]"``) and Java 17+.

    .venv/bin/python benchmarks/bench_sweep.py [--runs 200] [--workers 2] [--no-events]
        [--events-writer auto|executors|spark]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from scenarios.campaigns.sweeps import RunOutcome, RunSpec, execute_run, load_sweep


def _run(spec: RunSpec) -> RunOutcome:
    return execute_run(spec)


def _run_no_events(spec: RunSpec) -> RunOutcome:
    return execute_run(spec, with_events=False)


_OUT: list[Path] = []


def _run_and_write(spec: RunSpec) -> dict[str, object]:
    """execute_run, then this run's events as one Parquet file under hive partitions (what
    the Spark job writes), returning the runs row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scenarios.analysis.arrow import event_batch, event_schema

    outcome = execute_run(spec)
    types = {k: ("string" if isinstance(v, str) else "long") for k, v in spec.params.items()}
    batch = event_batch(outcome, "bench", event_schema(types))
    table = pa.Table.from_batches([batch]).drop_columns(list(spec.params))
    part = _OUT[0].joinpath("events", *(f"{k}={v}" for k, v in spec.params.items()))
    part.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, part / f"part-{spec.run_id}.parquet")
    return outcome.row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sweep", default="protocol-comparison")
    parser.add_argument("--no-events", action="store_true", help="do not keep event logs")
    parser.add_argument(
        "--events-writer",
        default="auto",
        choices=["auto", "executors", "spark"],
        help="how the Spark sweep writes events/ (run_sweep's events_writer)",
    )
    args = parser.parse_args()

    from scenarios.analysis.session import spark_problem

    problem = spark_problem()
    if problem is not None:
        print(f"bench_sweep: {problem}", file=sys.stderr)
        return 2

    sweep = load_sweep(args.sweep)
    specs = sorted(sweep.runs, key=lambda s: s.run_id)[: args.runs]
    ordered = sorted(specs, key=lambda s: -s.cost)
    events = not args.no_events
    n = len(specs)

    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    start = time.perf_counter()
    with ctx.Pool(args.workers) as pool:
        outcomes = list(
            pool.imap_unordered(_run if events else _run_no_events, ordered, chunksize=1)
        )
    pool_s = time.perf_counter() - start
    failed_pool = sum(1 for o in outcomes if o.row["status"] != "ok")
    records = sum(int(o.row["events"] or 0) for o in outcomes)
    del outcomes

    write_s = None
    if events:
        import pyarrow as pa
        import pyarrow.parquet as pq

        with tempfile.TemporaryDirectory(prefix="groupsim-bench-pool-") as tmp:
            _OUT[:] = [Path(tmp)]
            start = time.perf_counter()
            with ctx.Pool(args.workers) as pool:
                rows = list(pool.imap_unordered(_run_and_write, ordered, chunksize=1))
            (Path(tmp) / "runs").mkdir()
            pq.write_table(pa.Table.from_pylist(rows), Path(tmp) / "runs" / "part-0.parquet")
            write_s = time.perf_counter() - start

    from scenarios.analysis.pipeline import run_sweep
    from scenarios.analysis.session import make_session

    start = time.perf_counter()
    spark = make_session(f"local[{args.workers}]", app_name="groupsim bench_sweep")
    startup_s = time.perf_counter() - start
    try:
        with tempfile.TemporaryDirectory(prefix="groupsim-bench-sweep-") as tmp:
            start = time.perf_counter()
            result = run_sweep(
                sweep,
                Path(tmp) / "out",
                spark=spark,
                specs=specs,
                events=events,
                events_writer=args.events_writer,
            )
            spark_s = time.perf_counter() - start
    finally:
        spark.stop()

    def per_min(seconds: float) -> str:
        return f"{n / seconds * 60:,.0f}"

    table = Table(
        title=f"{args.sweep}: {n} runs, {records:,} event records, parallelism {args.workers}"
        + ("" if events else " (no events)"),
        title_justify="left",
    )
    for column in ("mode", "wall s", "runs/min", "overhead vs pool", "failed runs"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    table.add_row(
        f"multiprocessing pool({args.workers})",
        f"{pool_s:.1f}",
        per_min(pool_s),
        "-",
        str(failed_pool),
    )
    if write_s is not None:
        table.add_row(
            f"pool({args.workers}) + pyarrow Parquet (runs, events)",
            f"{write_s:.1f}",
            per_min(write_s),
            f"{(write_s / pool_s - 1) * 100:+.0f} %",
            str(failed_pool),
        )
    table.add_row(
        f"spark local[{args.workers}], sweep only"
        + (f" (events writer: {args.events_writer})" if events else ""),
        f"{spark_s:.1f}",
        per_min(spark_s),
        f"{(spark_s / pool_s - 1) * 100:+.0f} %",
        str(result.failed),
    )
    total = spark_s + startup_s
    table.add_row(
        f"spark local[{args.workers}], + JVM start-up ({startup_s:.1f} s)",
        f"{total:.1f}",
        per_min(total),
        f"{(total / pool_s - 1) * 100:+.0f} %",
        str(result.failed),
    )
    Console(width=120).print(table)
    if write_s is not None:
        print(
            "Spark sweep vs the pool writing the same Parquet: "
            f"{(spark_s / write_s - 1) * 100:+.0f} %"
        )
    print("target: Spark's overhead <= 25 % (sweep only)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
