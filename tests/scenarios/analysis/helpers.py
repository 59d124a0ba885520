"""Helpers: aggregates computed in plain Python (to check Spark's), a sweep directory
written with pyarrow alone (for report tests without Spark), HTML checks."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from scenarios.campaigns.sweeps import AGGREGATE_METRICS, PERCENTILES, LoadedSweep, execute_run
from scenarios.input.schema import INVARIANTS


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def python_aggregates(
    rows: Iterable[Mapping[str, Any]], params: Sequence[str]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The aggregates table computed without Spark, keyed by parameter values."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[p] for p in params), []).append(row)
    out = {}
    for key, members in groups.items():
        ok = [r for r in members if r["status"] == "ok"]
        agg: dict[str, Any] = dict(zip(params, key, strict=True))
        agg.update(
            runs=len(members),
            ok_runs=len(ok),
            failed_runs=len(members) - len(ok),
            converged_runs=sum(1 for r in members if r["converged"]),
            expect_ok_runs=sum(1 for r in members if r["expect_ok"]),
            scenario_workers=max(
                r["scenario_workers"] for r in members if r["scenario_workers"] is not None
            ),
            scenario_protocol=max(
                r["scenario_protocol"] for r in members if r["scenario_protocol"] is not None
            ),
            scenario_delay_ms=max(
                r["scenario_delay_ms"] for r in members if r["scenario_delay_ms"] is not None
            ),
        )
        for metric in AGGREGATE_METRICS:
            values = [float(r[metric]) for r in ok if r[metric] is not None]
            agg[f"{metric}_mean"] = sum(values) / len(values) if values else None
            for label, q in PERCENTILES:
                agg[f"{metric}_{label}"] = quantile(values, q) if values else None
        agg["violations_total"] = sum(r["violations_total"] or 0 for r in members)
        agg["runs_with_violations"] = sum(1 for r in members if (r["violations_total"] or 0) > 0)
        for name in INVARIANTS:
            column = f"violations_{name.replace('-', '_').lower()}"
            agg[column] = sum(r[column] or 0 for r in members)
        out[key] = agg
    return out


def write_sweep_with_pyarrow(sweep: LoadedSweep, out: Path) -> list[dict[str, Any]]:
    """Run ``sweep`` in-process and write runs/ and aggregates/ as Spark would (no events)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scenarios.analysis.arrow import arrow_type, run_columns

    rows = [dict(execute_run(s, with_events=False).row, batch="b1") for s in sweep.runs]
    columns = run_columns(sweep.param_types)
    schema = pa.schema([pa.field(n, arrow_type(t)) for n, t in columns])
    (out / "runs").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out / "runs" / "part-0.parquet")
    aggs = list(python_aggregates(rows, list(sweep.param_types)).values())
    (out / "aggregates").mkdir()
    pq.write_table(pa.Table.from_pylist(aggs), out / "aggregates" / "part-0.parquet")
    (out / "sweep.json").write_text(
        json.dumps({"name": sweep.name, "description": sweep.description, "base": sweep.base}),
        encoding="utf-8",
    )
    return rows


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = dict(attrs)
        if tag == "img":
            self.images.append(values.get("src") or "")
        if tag == "a" and values.get("href"):
            self.links.append(values["href"] or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check_html(path: Path) -> tuple[list[str], str]:
    """Parse ``path`` with html.parser; every image/link resolves (data URIs decode to PNG,
    relative paths exist). Returns (image sources, page text)."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    parser = _Collector()
    parser.feed(text)
    parser.close()
    assert "html" in parser.tags and "body" in parser.tags
    for src in parser.images + parser.links:
        if src.startswith("data:"):
            header, _, data = src.partition(",")
            assert header == "data:image/png;base64", header
            assert base64.b64decode(data, validate=True).startswith(b"\x89PNG\r\n\x1a\n")
        elif src.startswith("#"):
            continue
        else:
            assert "://" not in src, src
            assert (path.parent / src).is_file(), src
    return parser.images, " ".join(parser.text)
