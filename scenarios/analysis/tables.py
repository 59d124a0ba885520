"""Reading a sweep's Parquet tables back: with Spark, or with pyarrow alone.

:func:`read_sweep` returns the ``runs`` and ``aggregates`` tables as lists of dicts (small:
one row per run / per combination), for the report. :func:`read_events` gives the
``events`` table (a Spark DataFrame, or a pyarrow Table without Spark), without the
leftovers of an interrupted batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SweepTables", "read_sweep", "read_events", "choose_engine", "ENGINES"]

ENGINES = ("auto", "spark", "pyarrow")


@dataclass
class SweepTables:
    """A sweep's results.

    Attributes:
        directory: the output directory.
        meta: ``sweep.json`` (``{}`` when absent).
        params: the sweep's parameter names (the ``runs`` columns between ``batch`` and
            ``sweep``), in grid order.
        runs: ``runs/`` rows; aggregates: ``aggregates/`` rows (``[]`` when absent).
        engine: ``"spark"`` or ``"pyarrow"``: what read them.
    """

    directory: Path
    meta: dict[str, Any]
    params: list[str]
    runs: list[dict[str, Any]]
    aggregates: list[dict[str, Any]] = field(default_factory=list)
    engine: str = "pyarrow"


def choose_engine(engine: str = "auto") -> str:
    """``auto`` → ``pyarrow`` when installed (a sweep's directory is local, and reading it
    with pyarrow takes seconds where starting Spark takes a minute), else ``spark``.

    Raises:
        ValueError: an unknown engine, or the chosen one is not installed.
    """
    from scenarios.analysis.session import spark_problem

    if engine not in ENGINES:
        raise ValueError(
            f"--engine: unknown engine {engine!r} (expected one of {', '.join(ENGINES)})"
        )
    if engine in ("auto", "pyarrow"):
        try:
            import pyarrow  # noqa: F401

            return "pyarrow"
        except ImportError:
            if engine == "pyarrow":
                raise ValueError(
                    "--engine pyarrow: pyarrow is not installed: pip install -e '.[spark]'"
                ) from None
    problem = spark_problem()
    if problem is None:
        return "spark"
    if engine == "spark":
        raise ValueError(f"--engine spark: {problem}")
    raise ValueError(
        "reading a sweep's Parquet needs pyarrow or pyspark: pip install -e '.[spark]'"
    )


def _param_names(columns: list[str]) -> list[str]:
    if "batch" in columns and "sweep" in columns:
        return columns[columns.index("batch") + 1 : columns.index("sweep")]
    return []


def read_sweep(directory: str | Path, *, engine: str = "auto", spark: Any = None) -> SweepTables:
    """Read ``directory/runs`` and ``directory/aggregates`` (and ``sweep.json``).

    Args:
        directory: a sweep's output directory (local).
        engine: ``auto``, ``spark`` or ``pyarrow`` (see :func:`choose_engine`); with
            ``spark`` given, that session is used (and kept running).

    Raises:
        ValueError: no ``runs/`` in ``directory``, or no engine to read it with.
    """
    directory = Path(directory)
    if not (directory / "runs").is_dir():
        raise ValueError(f"{directory}: no runs/ table (not a sweep's output directory)")
    meta: dict[str, Any] = {}
    meta_path = directory / "sweep.json"
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{meta_path}: unreadable: {exc}") from None
    chosen = "spark" if spark is not None else choose_engine(engine)
    aggregates_dir = directory / "aggregates"
    if chosen == "spark":
        own = spark is None
        if own:
            from scenarios.analysis.session import make_session

            spark = make_session("local[2]", app_name="groupsim report")
        try:
            runs_df = spark.read.parquet(str(directory / "runs"))
            params = _param_names(list(runs_df.columns))
            runs = [row.asDict(recursive=True) for row in runs_df.collect()]
            aggregates = []
            if aggregates_dir.is_dir():
                aggregates = [
                    row.asDict(recursive=True)
                    for row in spark.read.parquet(str(aggregates_dir)).collect()
                ]
        finally:
            if own:
                spark.stop()
    else:
        import pyarrow.dataset as ds

        def table(path: Path) -> Any:
            return ds.dataset(
                str(path), format="parquet", partitioning=None, ignore_prefixes=["_", "."]
            ).to_table()

        runs_table = table(directory / "runs")
        params = _param_names(list(runs_table.column_names))
        runs = runs_table.to_pylist()
        aggregates = table(aggregates_dir).to_pylist() if aggregates_dir.is_dir() else []
    runs.sort(key=lambda r: (tuple(_sort_key(r.get(p)) for p in params), r.get("seed") or 0))
    aggregates.sort(key=lambda r: tuple(_sort_key(r.get(p)) for p in params))
    return SweepTables(directory, meta, params, runs, aggregates, chosen)


def _sort_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (2, "")
    if isinstance(value, int | float | bool):
        return (0, value)
    return (1, str(value))


def read_events(spark: Any, out: str | Path) -> Any:
    """``out/events`` with the parameters as columns (from the partition directories),
    keeping only rows whose ``(run_id, batch)`` is in ``out/runs`` (rows of an interrupted
    batch are dropped).

    With a SparkSession: a Spark DataFrame (partition types inferred by Spark). With
    ``spark=None``: a ``pyarrow.Table`` read with pyarrow alone (``out`` local), the
    parameters typed as ``sweep.json`` records them (inferred when it is absent).
    """
    if spark is not None:
        events = spark.read.parquet(f"{out}/events")
        runs = spark.read.parquet(f"{out}/runs").select("run_id", "batch")
        return events.join(runs, on=["run_id", "batch"], how="left_semi")
    import pyarrow as pa
    import pyarrow.dataset as ds

    from scenarios.analysis.arrow import arrow_type

    directory = Path(str(out).removeprefix("file://"))
    partitioning: Any = "hive"
    meta_path = directory / "sweep.json"
    if meta_path.is_file():
        param_types = json.loads(meta_path.read_text(encoding="utf-8")).get("param_types") or {}
        if param_types:
            schema = pa.schema([pa.field(n, arrow_type(t)) for n, t in param_types.items()])
            partitioning = ds.partitioning(schema, flavor="hive")
    events = ds.dataset(
        str(directory / "events"),
        format="parquet",
        partitioning=partitioning,
        ignore_prefixes=["_", "."],
    ).to_table()
    runs = ds.dataset(
        str(directory / "runs"), format="parquet", partitioning=None, ignore_prefixes=["_", "."]
    ).to_table(columns=["run_id", "batch"])
    return events.join(runs, keys=["run_id", "batch"], join_type="left semi")
