"""A small sweep on Spark local[2]: 2 protocols × 2 sizes × 3 seeds of short scenarios.

One SparkSession for the session (conftest), one sweep for the module: first half the runs,
then all of them (resume), then a run whose scenario cannot load (a failed row). Checks the
Parquet schemas, the aggregates against the same runs computed without Spark, and the
report read with Spark.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from scenarios.campaigns.sweeps import RUN_COLUMNS, RunSpec, execute_run, loads_sweep

from .helpers import check_html, python_aggregates

# Starting Spark takes a minute or more on a busy machine: these end-to-end runs are slow
# tests (`pytest -m slow`, and in .ci/run); the pyarrow path is covered by the default run.
pytestmark = [pytest.mark.spark, pytest.mark.slow]

SWEEP = """
name = "spark-test"
generator = "rolling-bounce"
seeds = 3
[parameters]
protocol = ["eager", "sessioned"]
workers = [3, 4]
interval_ms = [10000]
delay_ms = [20000]
"""


@pytest.fixture(scope="module")
def swept(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from scenarios.analysis.pipeline import run_sweep

    sweep = loads_sweep(SWEEP, "spark-test.toml")
    out = tmp_path_factory.mktemp("spark") / "out"
    seen: list[tuple[int, int]] = []
    first = run_sweep(sweep, out, spark=spark, specs=sweep.runs[:6], batch_size=4)
    second = run_sweep(sweep, out, spark=spark, progress=lambda d, t: seen.append((d, t)))
    spec = sweep.runs[0]
    bad = RunSpec(
        run_id="badbadbadbadbad0",
        sweep=sweep.name,
        params=spec.params,
        seed=99,
        scenario_text='name = "broken"\n[cluster]\nsize = -1\n',
        source="broken.toml",
    )
    third = run_sweep(sweep, out, spark=spark, specs=[bad])
    return {
        "sweep": sweep,
        "out": out,
        "first": first,
        "second": second,
        "third": third,
        "progress": seen,
    }


def test_batches_resume_and_progress(swept: dict[str, Any]) -> None:
    first, second = swept["first"], swept["second"]
    assert (first.total, first.skipped, first.ran, first.failed, first.batches) == (6, 0, 6, 0, 2)
    assert (second.total, second.skipped, second.ran, second.failed) == (12, 6, 6, 0)
    assert swept["progress"][0] == (0, 6) and swept["progress"][-1] == (6, 6)


def test_failed_run_is_a_row(swept: dict[str, Any]) -> None:
    import pyarrow.dataset as ds

    third = swept["third"]
    assert (third.ran, third.failed) == (1, 1)
    run_id, seed, params, error = third.failures[0]
    assert (run_id, seed) == ("badbadbadbadbad0", 99)
    assert error.startswith("ScenarioError: broken.toml: cluster.size:")
    rows = ds.dataset(str(swept["out"] / "runs"), format="parquet").to_table().to_pylist()
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["seed"] == 99 and failed[0]["error"] == error
    assert failed[0]["rebalances"] is None


def test_parquet_schemas(swept: dict[str, Any]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out: Path = swept["out"]
    params = [
        ("protocol", pa.string()),
        ("workers", pa.int64()),
        ("interval_ms", pa.int64()),
        ("delay_ms", pa.int64()),
    ]
    kinds = {
        "string": pa.string(),
        "long": pa.int64(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
        "array<string>": pa.list_(pa.string()),
    }

    runs = pq.read_schema(next((out / "runs").glob("*.parquet")))
    expected = [("run_id", pa.string()), ("batch", pa.string()), *params]
    expected += [(n, kinds[t]) for n, t in RUN_COLUMNS]
    assert [(f.name, f.type) for f in runs] == expected

    files = sorted((out / "events").rglob("*.parquet"))
    assert files
    rel = files[0].relative_to(out / "events").parts
    assert [p.split("=")[0] for p in rel[:-1]] == [n for n, _ in params]
    events = pq.read_schema(files[0])
    assert [(f.name, f.type) for f in events] == [
        ("run_id", pa.string()),
        ("batch", pa.string()),
        ("seed", pa.int64()),
        ("t_ms", pa.int64()),
        ("seq", pa.int64()),
        ("kind", pa.string()),
        ("member", pa.string()),
        ("fields", pa.string()),
    ]

    aggregates = pq.read_schema(next((out / "aggregates").glob("*.parquet")))
    from scenarios.analysis.pipeline import aggregate_columns

    sweep = swept["sweep"]
    assert [(f.name, f.type) for f in aggregates] == [
        (n, kinds[t]) for n, t in aggregate_columns(sweep.param_types)
    ]


def test_events_are_the_logs(swept: dict[str, Any], spark: Any) -> None:
    from scenarios.analysis.tables import read_events

    sweep = swept["sweep"]
    spec = sweep.runs[4]
    frame = read_events(spark, str(swept["out"])).where(f"run_id = '{spec.run_id}'")
    rows = sorted(frame.select("seq", "kind", "t_ms").collect())
    expected = execute_run(spec).events
    assert [r["seq"] for r in rows] == expected["seq"]
    assert [r["kind"] for r in rows] == expected["kind"]
    assert [r["t_ms"] for r in rows] == expected["t_ms"]
    total = read_events(spark, str(swept["out"])).count()
    assert total == sum(len(execute_run(s).events["seq"]) for s in sweep.runs)


def test_aggregates_match_python(swept: dict[str, Any]) -> None:
    import pyarrow.dataset as ds

    sweep = swept["sweep"]
    params = list(sweep.param_types)
    rows = [execute_run(s, with_events=False).row for s in sweep.runs]
    bad = ds.dataset(str(swept["out"] / "runs"), format="parquet").to_table().to_pylist()
    rows += [r for r in bad if r["status"] == "failed"]
    expected = python_aggregates(rows, params)
    table = ds.dataset(str(swept["out"] / "aggregates"), format="parquet").to_table().to_pylist()
    assert len(table) == 4
    for got in table:
        want = expected[tuple(got[p] for p in params)]
        assert set(got) == set(want)
        for key, value in want.items():
            if isinstance(value, float):
                assert math.isclose(got[key], value, rel_tol=1e-9), key
            else:
                assert got[key] == value, key
    assert sum(a["failed_runs"] for a in table) == 1


def test_report_with_spark(swept: dict[str, Any], spark: Any) -> None:
    from scenarios.analysis.tables import read_sweep
    from scenarios.cli.report import render_sweep_html

    with_spark = read_sweep(swept["out"], spark=spark)
    with_arrow = read_sweep(swept["out"], engine="pyarrow")
    assert with_spark.engine == "spark" and with_arrow.engine == "pyarrow"
    assert (
        with_spark.params == with_arrow.params == ["protocol", "workers", "interval_ms", "delay_ms"]
    )
    assert with_spark.runs == with_arrow.runs
    assert with_spark.aggregates == with_arrow.aggregates
    page = swept["out"] / "report.html"
    page.write_text(render_sweep_html(with_spark), encoding="utf-8")
    images, text = check_html(page)
    assert len(images) == 2  # the delay is not varied
    assert "1 failed" in text


def _event_keys(rows: Any) -> list[tuple[Any, ...]]:
    names = ("run_id", "batch", "seq", "t_ms", "kind", "member", "fields", "protocol", "workers")
    return sorted(tuple(r[n] for n in names) for r in rows)


def test_events_written_by_executors(swept: dict[str, Any]) -> None:
    import pyarrow.parquet as pq

    from scenarios.analysis.pipeline import run_events_path

    events = swept["out"] / "events"
    files = sorted(events.rglob("*.parquet"))
    assert files and all(f.name.startswith("run-") for f in files)
    assert not list(events.rglob(".*"))  # no temporary files left
    sweep = swept["sweep"]
    assert {f.name for f in files} == {f"run-{s.run_id}.parquet" for s in sweep.runs}
    spec = sweep.runs[4]
    path = run_events_path(str(events), spec.params, spec.run_id)
    assert pq.read_table(path).column("seq").to_pylist() == execute_run(spec).events["seq"]


def test_events_read_with_pyarrow(swept: dict[str, Any], spark: Any) -> None:
    import pyarrow as pa

    from scenarios.analysis.tables import read_events

    table = read_events(None, swept["out"])
    assert table.schema.field("workers").type == pa.int64()
    assert table.schema.field("protocol").type == pa.string()
    with_spark = read_events(spark, str(swept["out"])).collect()
    assert _event_keys(table.to_pylist()) == _event_keys(r.asDict() for r in with_spark)


def test_spark_events_writer(swept: dict[str, Any], spark: Any, tmp_path: Path) -> None:
    """The fallback for URL outputs, forced in local mode: the same events/ table."""
    from scenarios.analysis.pipeline import run_sweep
    from scenarios.analysis.tables import read_events

    sweep = swept["sweep"]
    specs = [sweep.runs[0], sweep.runs[7]]
    out = tmp_path / "out"
    result = run_sweep(sweep, out, spark=spark, specs=specs, events_writer="spark")
    assert (result.ran, result.failed) == (2, 0)
    files = sorted((out / "events").rglob("*.parquet"))
    assert files and all(f.name.startswith("part-") for f in files)
    ids = {s.run_id for s in specs}
    mine = [r for r in read_events(None, out).to_pylist() if r["run_id"] in ids]
    theirs = [r for r in read_events(None, swept["out"]).to_pylist() if r["run_id"] in ids]
    strip = [dict(r, batch=None) for r in mine], [dict(r, batch=None) for r in theirs]
    assert _event_keys(strip[0]) == _event_keys(strip[1])
    assert read_events(spark, str(out)).count() == len(mine)


def test_events_writer_choice(spark: Any, tmp_path: Path) -> None:
    from scenarios.analysis.pipeline import EVENTS_WRITER_CONF, _events_dir, run_sweep

    sweep = loads_sweep(SWEEP, "spark-test.toml")
    with pytest.raises(ValueError, match="needs a filesystem path"):
        run_sweep(sweep, "s3a://bucket/out", spark=spark, events_writer="executors")
    with pytest.raises(ValueError, match="events_writer"):
        run_sweep(sweep, tmp_path, spark=spark, events_writer="jvm")
    local = str(tmp_path / "o")
    assert _events_dir(spark, "hdfs://nn/out", True, "auto") is None
    assert _events_dir(spark, local, True, "auto") == f"{local}/events"
    assert _events_dir(spark, local, False, "auto") is None
    spark.conf.set(EVENTS_WRITER_CONF, "spark")
    try:
        assert _events_dir(spark, local, True, "auto") is None
        assert _events_dir(spark, local, True, "executors") == f"{local}/events"
    finally:
        spark.conf.unset(EVENTS_WRITER_CONF)


def test_resume_replaces_orphan_events(spark: Any, tmp_path: Path) -> None:
    """Events files without a runs row (an interrupted batch) are replaced when their run
    runs again, and ignored by read_events otherwise."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scenarios.analysis.pipeline import run_events_path, run_sweep
    from scenarios.analysis.tables import read_events

    sweep = loads_sweep(SWEEP, "spark-test.toml")
    spec = sweep.runs[1]
    out = tmp_path / "out"
    stale = pa.table(
        {
            "run_id": [spec.run_id, spec.run_id],
            "batch": ["stale", "stale"],
            "seed": [spec.seed, spec.seed],
            "t_ms": [0, 1],
            "seq": [0, 1],
            "kind": ["x", "y"],
            "member": pa.array([None, None], pa.string()),
            "fields": ["{}", "{}"],
        }
    )
    orphan = run_events_path(str(out / "events"), spec.params, spec.run_id)
    other = run_events_path(str(out / "events"), spec.params, "ffffffffffffffff")
    for path in (orphan, other):
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(stale, path)
    result = run_sweep(sweep, out, spark=spark, specs=[spec])
    assert result.ran == 1
    written = pq.read_table(orphan)
    assert set(written.column("batch").to_pylist()) != {"stale"}
    assert written.column("seq").to_pylist() == execute_run(spec).events["seq"]
    assert other.exists()  # not a run of this invocation: left, but not read
    table = read_events(None, out)
    assert set(table.column("run_id").to_pylist()) == {spec.run_id}
    assert table.num_rows == written.num_rows == read_events(spark, str(out)).count()
