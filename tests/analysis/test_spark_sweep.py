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

from scenarios.sweeps import RUN_COLUMNS, RunSpec, execute_run, loads_sweep

from .helpers import check_html, python_aggregates

pytestmark = pytest.mark.spark

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
    from scenarios.report import render_sweep_html

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
