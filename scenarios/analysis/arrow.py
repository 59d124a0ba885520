"""The Arrow side of the pipeline (pyarrow only, no pyspark): column types, one run's output
as a record batch (what executors hand back to Spark), and reading Parquet tables.

Column types are the names of :data:`scenarios.campaigns.sweeps.RUN_COLUMNS`: ``string``, ``long``,
``double``, ``boolean``, ``array<string>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from scenarios.campaigns.sweeps import EVENT_COLUMNS, RUN_COLUMNS, RunOutcome

__all__ = [
    "arrow_type",
    "run_columns",
    "event_columns",
    "event_schema",
    "event_batch",
    "read_parquet_rows",
]


def arrow_type(name: str) -> Any:
    """The pyarrow type of a column type name."""
    import pyarrow as pa

    return {
        "string": pa.string(),
        "long": pa.int64(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
        "array<string>": pa.list_(pa.string()),
    }[name]


def run_columns(param_types: Mapping[str, str]) -> list[tuple[str, str]]:
    """The ``runs`` table's columns: ``run_id``, ``batch``, the parameters, then
    :data:`scenarios.campaigns.sweeps.RUN_COLUMNS`."""
    return [("run_id", "string"), ("batch", "string"), *param_types.items(), *RUN_COLUMNS]


def event_columns(param_types: Mapping[str, str]) -> list[tuple[str, str]]:
    """The ``events`` rows as executors produce them: ``run_id``, ``batch``, ``seed``,
    :data:`scenarios.campaigns.sweeps.EVENT_COLUMNS`, then the parameters (the partition columns,
    which
    Parquet keeps in the directory names)."""
    return [
        ("run_id", "string"),
        ("batch", "string"),
        ("seed", "long"),
        *EVENT_COLUMNS,
        *param_types.items(),
    ]


def event_schema(param_types: Mapping[str, str]) -> Any:
    """The pyarrow schema of :func:`event_columns`."""
    import pyarrow as pa

    return pa.schema([pa.field(n, arrow_type(t)) for n, t in event_columns(param_types)])


def event_batch(outcome: RunOutcome, batch: str, schema: Any) -> Any:
    """A run's event log as a ``pyarrow.RecordBatch`` of ``schema`` (:func:`event_schema`):
    one row per record, the run's id, batch, seed and parameters repeated."""
    import pyarrow as pa

    n = len(outcome.events["seq"])
    row = dict(outcome.row, batch=batch)
    arrays = []
    for field in schema:
        if field.name in outcome.events:
            arrays.append(pa.array(outcome.events[field.name], type=field.type))
        else:
            value = pa.scalar(row.get(field.name), type=field.type)
            arrays.append(pa.repeat(value, n) if n else pa.array([], type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def rows_of(batches: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """Rows (dicts) of pyarrow record batches."""
    for batch in batches:
        yield from batch.to_pylist()


def read_parquet_rows(path: str, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """All rows of a Parquet dataset directory (hive partitions become columns, as strings
    converted back where they look like integers), read with pyarrow."""
    import pyarrow.dataset as ds

    dataset = ds.dataset(path, format="parquet", partitioning="hive", ignore_prefixes=["_", "."])
    table = dataset.to_table(columns=list(columns) if columns is not None else None)
    return table.to_pylist()
