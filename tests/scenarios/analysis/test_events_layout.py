"""The executor-written ``events/`` layout without Spark: partition directory names as Spark
writes them, atomic per-run files, and reading them back with pyarrow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios.analysis.pipeline import partition_value, run_events_path, write_run_events


def test_partition_values_as_spark_writes_them() -> None:
    assert partition_value("eager") == "eager"
    assert partition_value(5) == "5"
    assert partition_value(True) == "true" and partition_value(False) == "false"
    assert partition_value(0.5) == "0.5"
    assert partition_value("a/b=c:d%") == "a%2Fb%3Dc%3Ad%25"
    assert partition_value(None) == "__HIVE_DEFAULT_PARTITION__"
    path = run_events_path("/o/events", {"protocol": "x/y", "workers": 5}, "abc")
    assert path == Path("/o/events/protocol=x%2Fy/workers=5/run-abc.parquet")


def test_write_and_read_back(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")

    from scenarios.analysis.arrow import event_schema
    from scenarios.analysis.tables import read_events

    types = {"protocol": "string", "workers": "long"}
    schema = event_schema(types)
    out = tmp_path / "out"
    params = {"protocol": "a/b", "workers": 5}

    def batch(batch_id: str, n: int) -> object:
        return pa.RecordBatch.from_pylist(
            [
                dict(
                    run_id="r1",
                    batch=batch_id,
                    seed=1,
                    t_ms=i,
                    seq=i,
                    kind="k",
                    member=None,
                    fields="{}",
                    **params,
                )
                for i in range(n)
            ],
            schema=schema,
        )

    path = run_events_path(str(out / "events"), params, "r1")
    write_run_events(path, batch("old", 3), list(types))
    write_run_events(path, batch("b1", 2), list(types))  # a re-run replaces the file
    assert [p.name for p in path.parent.iterdir()] == ["run-r1.parquet"]
    assert pq.read_schema(path).names == [
        "run_id",
        "batch",
        "seed",
        "t_ms",
        "seq",
        "kind",
        "member",
        "fields",
    ]
    (out / "runs").mkdir()
    runs = pa.table({"run_id": ["r1"], "batch": ["b1"]})
    pq.write_table(runs, out / "runs" / "part-0.parquet")
    (out / "sweep.json").write_text(json.dumps({"param_types": types}), encoding="utf-8")
    table = read_events(None, out)
    assert table.num_rows == 2
    assert table.column("protocol").to_pylist() == ["a/b", "a/b"]
    assert table.schema.field("workers").type == pa.int64()
    (out / "runs" / "part-0.parquet").unlink()
    pq.write_table(pa.table({"run_id": ["r1"], "batch": ["other"]}), out / "runs" / "p.parquet")
    assert read_events(None, out).num_rows == 0  # events of a batch without a runs row
    write_run_events(path, batch("b2", 0), list(types))  # no events: no file
    assert not path.exists()
