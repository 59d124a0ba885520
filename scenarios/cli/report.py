"""``groupsim report``: one self-contained HTML page from a sweep's or a run's output.

- A sweep's output directory (``runs/``, ``aggregates/``; from ``groupsim sweep``): the grid,
  a table per parameter combination (runs, failures, p50/p95/p99 of task downtime,
  rebalances, movements, time to converge, violations), failed runs with their errors, and
  three plots: task downtime by protocol (box plots over runs), rebalances against cluster
  size (median and p5–p95 per protocol), and task downtime against
  ``scheduled.rebalance.max.delay.ms`` (median per value of the other varied parameters). A
  plot whose x-axis was not varied by the sweep is replaced by a line saying so. The tables
  are read with Spark, or with pyarrow when Spark is not installed
  (:func:`scenarios.analysis.tables.read_sweep`; this module never imports pyspark).
- A run's output directory (``events.jsonl`` + ``summary.json`` from ``groupsim run``): the
  run's metrics, its phases, violations and expectation failures, and its timeline plot.

Plots are matplotlib PNGs (Agg canvas, no pyplot) embedded as ``data:image/png;base64`` URIs,
so ``report.html`` is one file that opens anywhere. It is written under a temporary name and
renamed. Times are virtual; the page shows them in seconds.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["ReportError", "write_report", "render_sweep_html", "render_run_html"]


class ReportError(Exception):
    """A directory that cannot be reported on (one line)."""


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}
.bad{color:#b00020;font-weight:600}.ok{color:#1b7f2a}.note{color:#666}
img{max-width:100%;border:1px solid #eee}
code{background:#f6f6f6;padding:0 .2em}
"""


# --------------------------------------------------------------------------- helpers


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _seconds(ms: Any, digits: int = 1) -> str:
    if ms is None:
        return "-"
    return f"{float(ms) / 1000:.{digits}f}"


def _num(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}" if not value.is_integer() else f"{int(value):,}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}">'


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1) -> str:
    """An HTML table; cells are already escaped HTML; the first ``left`` columns align left."""
    out = ["<table><thead><tr>"]
    out += [f'<th class="{"l" if i < left else ""}">{_esc(h)}</th>' for i, h in enumerate(headers)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>")
        out += [f'<td class="{"l" if i < left else ""}">{c}</td>' for i, c in enumerate(row)]
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _page(title: str, body: Sequence[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, Spark's percentile)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


# --------------------------------------------------------------------------- sweep plots


def _ok(runs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in runs if r.get("status") == "ok"]


def _distinct(runs: Sequence[Mapping[str, Any]], column: str) -> list[Any]:
    values = {r.get(column) for r in runs if r.get(column) is not None}
    return sorted(values, key=lambda v: (isinstance(v, str), v))


_PROTOCOL_ORDER = {"eager": 0, "compatible": 1, "sessioned": 2, "static": 3}


def _protocols(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    values = {str(r.get("scenario_protocol")) for r in runs if r.get("scenario_protocol")}
    return sorted(values, key=lambda p: (_PROTOCOL_ORDER.get(p, 9), p))


def plot_downtime_by_protocol(runs: Sequence[Mapping[str, Any]]) -> bytes | None:
    """Box plots of total and worst-task downtime (virtual s) per protocol, over ok runs."""
    ok = _ok(runs)
    protocols = _protocols(ok)
    if not protocols:
        return None
    fig = Figure(figsize=(11, 4.2), dpi=100)
    axes = fig.subplots(1, 2)
    for ax, column, title in (
        (axes[0], "task_downtime_ms_total", "total task downtime per run"),
        (axes[1], "task_downtime_ms_max", "worst task's downtime per run"),
    ):
        data = [
            [float(r[column]) / 1000 for r in ok if r.get("scenario_protocol") == p]
            for p in protocols
        ]
        ax.boxplot(data, tick_labels=protocols, showfliers=True)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("virtual seconds")
        flat = [v for d in data for v in d if v > 0]
        if flat and max(flat) / max(min(flat), 1e-9) > 100:
            ax.set_yscale("symlog", linthresh=1.0)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"task downtime by protocol ({len(ok)} runs)", fontsize=11)
    fig.tight_layout()
    return _png(fig)


def plot_rebalances_vs_size(runs: Sequence[Mapping[str, Any]]) -> bytes | None:
    """Median rebalances (p5–p95 as error bars) against cluster size, one line per
    protocol; ``None`` when the sweep has one cluster size."""
    ok = _ok(runs)
    sizes = _distinct(ok, "scenario_workers")
    if len(sizes) < 2:
        return None
    fig = Figure(figsize=(7.5, 4.5), dpi=100)
    ax = fig.subplots()
    series: list[str | None] = [*_protocols(ok)] or [None]
    for protocol in series:
        xs, mids, lows, highs = [], [], [], []
        for size in sizes:
            values = [
                float(r["rebalances"])
                for r in ok
                if r.get("scenario_workers") == size
                and (protocol is None or r.get("scenario_protocol") == protocol)
            ]
            if not values:
                continue
            mid = _quantile(values, 0.5)
            xs.append(size)
            mids.append(mid)
            lows.append(mid - _quantile(values, 0.05))
            highs.append(_quantile(values, 0.95) - mid)
        ax.errorbar(xs, mids, yerr=[lows, highs], marker="o", capsize=3, label=protocol or "all")
    ax.set_xlabel("cluster size (workers)")
    ax.set_ylabel("rebalances (generations) per run")
    ax.set_title("rebalances vs cluster size (median, p5–p95)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


def _series_keys(
    runs: Sequence[Mapping[str, Any]], params: Sequence[str], x_column: str
) -> list[str]:
    """The varied parameters that are not just another name for ``x_column``."""
    keys = []
    for p in params:
        values = {r.get(p) for r in runs}
        if len(values) < 2:
            continue
        pairs = {(r.get(p), r.get(x_column)) for r in runs}
        if len(pairs) == len(values) == len({x for _, x in pairs}):
            continue  # one-to-one with x: it is the x parameter
        keys.append(p)
    return keys


def plot_downtime_vs_delay(
    runs: Sequence[Mapping[str, Any]], params: Sequence[str]
) -> bytes | None:
    """Median total task downtime (virtual s) against ``scheduled.rebalance.max.delay.ms``
    (s), one line per combination of the other varied parameters (at most 10 lines, else
    one); ``None`` when the sweep has one delay."""
    ok = _ok(runs)
    delays = _distinct(ok, "scenario_delay_ms")
    if len(delays) < 2:
        return None
    keys = _series_keys(ok, params, "scenario_delay_ms")
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in ok:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    if len(groups) > 10:
        keys, groups = [], {(): list(ok)}
    fig = Figure(figsize=(11, 4.5), dpi=100)
    axes = fig.subplots(1, 2)
    for ax, column, title in (
        (axes[0], "task_downtime_ms_total", "total task downtime (median)"),
        (axes[1], "task_movements", "task movements (median)"),
    ):
        for key in sorted(groups, key=lambda k: tuple(map(str, k))):
            members = groups[key]
            xs, ys = [], []
            for delay in delays:
                values = [float(r[column]) for r in members if r.get("scenario_delay_ms") == delay]
                if values:
                    xs.append(delay / 1000)
                    ys.append(
                        _quantile(values, 0.5) / (1000 if column.endswith("_ms_total") else 1)
                    )
            label = ", ".join(f"{k}={_fmt_param(k, v)}" for k, v in zip(keys, key, strict=True))
            ax.plot(xs, ys, marker="o", label=label or "all runs")
        ax.set_xlabel("scheduled.rebalance.max.delay.ms (s)")
        ax.set_ylabel("virtual seconds" if column.endswith("_ms_total") else "movements")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("downtime vs scheduled.rebalance.max.delay.ms", fontsize=11)
    fig.tight_layout()
    return _png(fig)


def _fmt_param(name: str, value: Any) -> str:
    if name.endswith("_ms") and isinstance(value, int) and not isinstance(value, bool):
        return f"{value / 1000:g}s"
    return str(value)


# --------------------------------------------------------------------------- sweep page


def render_sweep_html(tables: Any) -> str:
    """The sweep report page for :class:`scenarios.analysis.tables.SweepTables`."""
    runs: list[dict[str, Any]] = tables.runs
    aggregates: list[dict[str, Any]] = tables.aggregates
    params: list[str] = tables.params
    meta: dict[str, Any] = tables.meta
    name = meta.get("name") or (runs[0].get("sweep") if runs else tables.directory.name)
    ok = _ok(runs)
    failed = [r for r in runs if r.get("status") != "ok"]
    body = [f"<h1>Sweep <code>{_esc(name)}</code></h1>"]
    if meta.get("description"):
        body.append(f"<p>{_esc(meta['description'])}</p>")
    grid = ", ".join(
        f"<code>{_esc(p)}</code> ∈ {{{_esc(', '.join(str(v) for v in _distinct(runs, p)))}}}"
        for p in params
    )
    seeds = _distinct(runs, "seed")
    body.append(
        "<p>"
        + (f"base: <code>{_esc(meta['base'])}</code>; " if meta.get("base") else "")
        + (f"grid: {grid}; " if grid else "")
        + f"{len(seeds)} seed(s); {len(runs)} runs: "
        + f'<span class="ok">{len(ok)} ok</span>, '
        + (f'<span class="bad">{len(failed)} failed</span>' if failed else "0 failed")
        + f". Read with {tables.engine}. Times are virtual seconds.</p>"
    )

    body.append("<h2>Task downtime by protocol</h2>")
    png = plot_downtime_by_protocol(runs)
    body.append(_img(png, "task downtime by protocol") if png else _note("no successful runs"))
    body.append("<h2>Rebalances vs cluster size</h2>")
    png = plot_rebalances_vs_size(runs)
    body.append(
        _img(png, "rebalances vs cluster size")
        if png
        else _note("the cluster size is not varied in this sweep")
    )
    body.append("<h2>Downtime vs scheduled.rebalance.max.delay.ms</h2>")
    png = plot_downtime_vs_delay(runs, params)
    body.append(
        _img(png, "downtime vs scheduled.rebalance.max.delay.ms")
        if png
        else _note("scheduled.rebalance.max.delay.ms is not varied in this sweep")
    )

    body.append("<h2>Per parameter combination</h2>")
    if aggregates:
        headers = [
            *params,
            "runs",
            "failed",
            "converged",
            "downtime total p50/p95/p99 (s)",
            "worst task p50/p95/p99 (s)",
            "rebalances p50/p95/p99",
            "movements p50/p95/p99",
            "time to converge p50/p95 (s)",
            "violations",
        ]
        rows = []
        for a in aggregates:

            def pct(
                metric: str,
                seconds: bool,
                labels: Sequence[str] = ("p50", "p95", "p99"),
                a: Mapping[str, Any] = a,
            ) -> str:
                parts = [a.get(f"{metric}_{label}") for label in labels]
                return " / ".join(_seconds(v) if seconds else _num(v) for v in parts)

            failed_runs = a.get("failed_runs") or 0
            violations = a.get("violations_total") or 0
            rows.append(
                [
                    *(_esc(_fmt_param(p, a.get(p))) for p in params),
                    _num(a.get("runs")),
                    f'<span class="bad">{failed_runs}</span>' if failed_runs else "0",
                    _num(a.get("converged_runs")),
                    pct("task_downtime_ms_total", True),
                    pct("task_downtime_ms_max", True),
                    pct("rebalances", False),
                    pct("task_movements", False),
                    pct("time_to_converge_ms", True, ("p50", "p95")),
                    f'<span class="bad">{violations}</span>' if violations else "0",
                ]
            )
        body.append(_table(headers, rows, left=len(params)))
    else:
        body.append(_note("no aggregates/ table"))

    if failed:
        body.append(f"<h2>Failed runs ({len(failed)})</h2>")
        body.append(
            _table(
                ["run_id", "seed", *params, "error"],
                (
                    [
                        f"<code>{_esc(r.get('run_id'))}</code>",
                        _esc(r.get("seed")),
                        *(_esc(r.get(p)) for p in params),
                        f'<span class="bad">{_esc(r.get("error"))}</span>',
                    ]
                    for r in failed[:100]
                ),
                left=1,
            )
        )
    violating = [r for r in ok if (r.get("violations_total") or 0) > 0]
    if violating:
        body.append(f"<h2>Runs with invariant violations ({len(violating)})</h2>")
        cols = sorted(
            {k for r in violating for k, v in r.items() if k.startswith("violations_") and v}
            - {"violations_total"}
        )
        body.append(
            _table(
                ["run_id", "seed", *params, *(c.removeprefix("violations_") for c in cols)],
                (
                    [
                        f"<code>{_esc(r.get('run_id'))}</code>",
                        _esc(r.get("seed")),
                        *(_esc(r.get(p)) for p in params),
                        *(_num(r.get(c)) for c in cols),
                    ]
                    for r in violating[:100]
                ),
            )
        )
    return _page(f"groupsim sweep {name}", body)


def _note(text: str) -> str:
    return f'<p class="note">{_esc(text)}</p>'


# --------------------------------------------------------------------------- run page


def render_run_html(summary: Mapping[str, Any], timeline_png: bytes | None) -> str:
    """The report page of one run: ``summary`` is its ``summary.json``."""
    name = summary.get("scenario") or "run"
    seed = summary.get("seed")
    failures = summary.get("expectation_failures") or []
    violations = summary.get("violations") or {}
    body = [f"<h1>Run <code>{_esc(name)}</code> (seed {_esc(seed)})</h1>"]
    state = (
        '<span class="ok">all expectations hold</span>'
        if not failures
        else f'<span class="bad">{len(failures)} expectation(s) failed</span>'
    )
    body.append(f"<p>{state}. Times are virtual seconds.</p>")
    if timeline_png:
        body.append("<h2>Timeline</h2>")
        body.append(_img(timeline_png, "timeline"))
    body.append("<h2>Metrics</h2>")
    metrics = [
        (
            "virtual time",
            f"{_seconds(summary.get('start_ms'))}–{_seconds(summary.get('end_ms'))} s",
        ),
        ("rebalances (generations)", _num(summary.get("rebalances"))),
        (
            "JoinGroup / SyncGroup rounds",
            f"{_num(summary.get('join_rounds'))} / {_num(summary.get('sync_rounds'))}",
        ),
        (
            "connectors / tasks configured",
            f"{_num(summary.get('connectors_configured'))} / "
            f"{_num(summary.get('tasks_configured'))}",
        ),
        ("task downtime, total (s)", _seconds(summary.get("task_downtime_ms_total"))),
        ("task downtime, worst task (s)", _seconds(summary.get("task_downtime_ms_max"))),
        ("connector downtime, total (s)", _seconds(summary.get("connector_downtime_ms_total"))),
        ("task movements", _num(summary.get("task_movements"))),
        ("max imbalance (tasks)", _num(summary.get("max_imbalance"))),
        ("converged", "yes" if summary.get("converged") else '<span class="bad">no</span>'),
        ("time to converge (s)", _seconds(summary.get("time_to_converge_ms"))),
        ("final protocol", _esc(summary.get("final_protocol") or "-")),
    ]
    body.append(_table(["metric", "value"], ([_esc(k), v] for k, v in metrics)))
    phases = summary.get("phases") or []
    if phases:
        body.append("<h2>Phases</h2>")
        body.append(
            _table(
                [
                    "phase",
                    "time (s)",
                    "protocols",
                    "rebalances",
                    "task downtime (s)",
                    "movements",
                    "violations",
                ],
                (
                    [
                        _esc(p.get("name")),
                        f"{_seconds(p.get('start_ms'))}–{_seconds(p.get('end_ms'))}",
                        _esc(" → ".join(p.get("protocols") or []) or "-"),
                        _num(p.get("rebalances")),
                        _seconds(p.get("task_downtime_ms_total")),
                        _num(p.get("task_movements")),
                        _esc(sum((p.get("violations") or {}).values())),
                    ]
                    for p in phases
                ),
                left=1,
            )
        )
    body.append("<h2>Violations</h2>")
    if violations:
        body.append(
            _table(
                ["invariant", "count"],
                ([f'<span class="bad">{_esc(k)}</span>', _num(v)] for k, v in violations.items()),
            )
        )
    else:
        body.append('<p class="ok">none</p>')
    if failures:
        body.append("<h2>Expectation failures</h2><ul>")
        body += [f'<li class="bad">{_esc(line)}</li>' for line in failures]
        body.append("</ul>")
    workers = summary.get("workers_final") or {}
    if workers:
        body.append("<h2>Workers at the end</h2>")
        body.append(
            _table(
                ["worker", "connectors", "tasks"],
                (
                    [_esc(w), _num(c.get("connectors")), _num(c.get("tasks"))]
                    for w, c in workers.items()
                ),
            )
        )
    return _page(f"groupsim run {name}", body)


# --------------------------------------------------------------------------- entry point


def write_report(
    directory: str | Path, *, out: str | Path | None = None, engine: str = "auto"
) -> Path:
    """Write the report of ``directory`` (a sweep's or a run's output) and return its path.

    Args:
        directory: ``groupsim sweep``'s ``--out`` (has ``runs/``) or ``groupsim run``'s
            (has ``events.jsonl`` and ``summary.json``).
        out: the HTML file (default ``directory/report.html``).
        engine: how to read a sweep's Parquet: ``auto`` (Spark when installed, else pyarrow),
            ``spark`` or ``pyarrow``.

    Raises:
        ReportError: ``directory`` is neither kind, or its files cannot be read.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ReportError(f"{directory}: no such directory")
    target = Path(out) if out is not None else directory / "report.html"
    if (directory / "runs").is_dir():
        from scenarios.analysis.tables import read_sweep

        try:
            tables = read_sweep(directory, engine=engine)
        except ValueError as exc:
            raise ReportError(str(exc)) from None
        except Exception as exc:  # pyarrow/Spark errors on damaged Parquet
            raise ReportError(f"{directory}: cannot read the sweep's tables: {exc}") from None
        if not tables.runs:
            raise ReportError(f"{directory}/runs: no runs")
        text = render_sweep_html(tables)
    elif (directory / "summary.json").is_file() and (directory / "events.jsonl").is_file():
        text = _run_report(directory)
    else:
        raise ReportError(
            f"{directory}: neither a sweep's output (runs/) nor a run's output "
            "(events.jsonl and summary.json)"
        )
    _atomic_write(target, text)
    return target


def _run_report(directory: Path) -> str:
    from scenarios.cli.plots import write_timeline_png
    from scenarios.eventlog import LogFormatError, read_jsonl

    try:
        summary = json.loads((directory / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportError(f"{directory / 'summary.json'}: unreadable: {exc}") from None
    if not isinstance(summary, dict):
        raise ReportError(f"{directory / 'summary.json'}: expected a JSON object")
    try:
        records = read_jsonl(directory / "events.jsonl")
    except LogFormatError as exc:
        raise ReportError(str(exc)) from None
    if "task_downtime_ms_total" not in summary:
        from scenarios.check.metrics import summarize

        summary = {**summarize(records), **summary}
    with tempfile.TemporaryDirectory(prefix="groupsim-report-") as tmp:
        png_path = Path(tmp) / "timeline.png"
        write_timeline_png(records, png_path)
        png = png_path.read_bytes()
    return render_run_html(summary, png)
