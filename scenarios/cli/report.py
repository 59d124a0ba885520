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

The pages are Jinja2 templates (``scenarios/cli/templates/*.html.j2``, autoescaping on: every
value from the data — scenario names, descriptions, errors — is escaped; only the cells this
module builds as :class:`markupsafe.Markup` carry markup). Plots are matplotlib PNGs (Agg
canvas, no pyplot) embedded as ``data:image/png;base64`` URIs, so ``report.html`` is one file
that opens anywhere. It is written under a temporary name and
renamed. Times are virtual; the page shows them in seconds.
"""

from __future__ import annotations

import base64
import functools
import json
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import msgspec
from markupsafe import Markup

from protocol.errors import InputError
from scenarios import kinds
from scenarios.check.summary_types import summary_dict, summary_struct
from scenarios.cli.sweep_plots import (
    distinct,
    fmt_param,
    ok_runs,
    plot_downtime_by_protocol,
    plot_downtime_vs_delay,
    plot_rebalances_vs_size,
)

__all__ = ["ReportError", "write_report", "render_sweep_html", "render_run_html", "num", "seconds"]


class ReportError(InputError):
    """A directory that cannot be reported on (one line)."""


# --------------------------------------------------------------------------- helpers


@functools.cache
def _templates() -> jinja2.Environment:
    """The report templates, package data of :mod:`scenarios.cli` (autoescaping on; ``None``
    renders as nothing; an undefined name is an error)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("scenarios.cli", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=lambda value: "" if value is None else value,
    )


def _render(template: str, **context: Any) -> str:
    return _templates().get_template(template).render(**context)


def _bad(value: Any) -> Markup:
    return Markup('<span class="bad">{}</span>').format(value)


def _code(value: Any) -> Markup:
    return Markup("<code>{}</code>").format("" if value is None else value)


def _seconds(ms: Any, digits: int = 1) -> str:
    if ms is None:
        return "-"
    return f"{float(ms) / 1000:.{digits}f}"


def num(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}" if not value.is_integer() else f"{int(value):,}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


_num = num
seconds = _seconds


def _b64(png: bytes | None) -> str | None:
    return base64.b64encode(png).decode("ascii") if png else None


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], left: int = 1) -> dict[str, Any]:
    """A table for the ``table`` macro: cells are escaped unless they are ``Markup``; the
    first ``left`` columns align left."""
    return {"headers": list(headers), "rows": [list(r) for r in rows], "left": left}


def _atomic_write(path: Path, text: str) -> None:
    from scenarios.eventlog.atomic import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)


# --------------------------------------------------------------------------- sweep page


def render_sweep_html(tables: Any) -> str:
    """The sweep report page for :class:`scenarios.analysis.tables.SweepTables`."""
    runs: list[dict[str, Any]] = tables.runs
    aggregates: list[dict[str, Any]] = tables.aggregates
    params: list[str] = tables.params
    meta: dict[str, Any] = tables.meta
    name = meta.get("name") or (runs[0].get("sweep") if runs else tables.directory.name)
    ok = ok_runs(runs)
    failed = [r for r in runs if r.get("status") != "ok"]
    plots = [
        {
            "title": "Task downtime by protocol",
            "png": _b64(plot_downtime_by_protocol(runs)),
            "alt": "task downtime by protocol",
            "note": "no successful runs",
        },
        {
            "title": "Rebalances vs cluster size",
            "png": _b64(plot_rebalances_vs_size(runs)),
            "alt": "rebalances vs cluster size",
            "note": "the cluster size is not varied in this sweep",
        },
        {
            "title": "Downtime vs scheduled.rebalance.max.delay.ms",
            "png": _b64(plot_downtime_vs_delay(runs, params)),
            "alt": "downtime vs scheduled.rebalance.max.delay.ms",
            "note": "scheduled.rebalance.max.delay.ms is not varied in this sweep",
        },
    ]
    violating = [r for r in ok if (r.get("violations_total") or 0) > 0]
    return _render(
        "sweep.html.j2",
        title=f"groupsim sweep {name}",
        name=name,
        description=meta.get("description"),
        base=meta.get("base"),
        grid=[(p, ", ".join(str(v) for v in distinct(runs, p))) for p in params],
        seeds=len(distinct(runs, "seed")),
        runs=len(runs),
        ok=len(ok),
        failed=len(failed),
        engine=tables.engine,
        plots=plots,
        combinations=_combinations_table(aggregates, params) if aggregates else None,
        failed_runs=_failed_table(failed, params) if failed else None,
        violating=_violations_table(violating, params) if violating else None,
        violating_count=len(violating),
    )


def _combinations_table(
    aggregates: Sequence[Mapping[str, Any]], params: Sequence[str]
) -> dict[str, Any]:
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
                *(fmt_param(p, a.get(p)) for p in params),
                _num(a.get("runs")),
                _bad(failed_runs) if failed_runs else "0",
                _num(a.get("converged_runs")),
                pct("task_downtime_ms_total", True),
                pct("task_downtime_ms_max", True),
                pct("rebalances", False),
                pct("task_movements", False),
                pct("time_to_converge_ms", True, ("p50", "p95")),
                _bad(violations) if violations else "0",
            ]
        )
    return _table(headers, rows, left=len(params))


def _failed_table(failed: Sequence[Mapping[str, Any]], params: Sequence[str]) -> dict[str, Any]:
    return _table(
        ["run_id", "seed", *params, "error"],
        (
            [
                _code(r.get("run_id")),
                r.get("seed"),
                *(r.get(p) for p in params),
                _bad(r.get("error")),
            ]
            for r in failed[:100]
        ),
        left=1,
    )


def _violations_table(
    violating: Sequence[Mapping[str, Any]], params: Sequence[str]
) -> dict[str, Any]:
    cols = sorted(
        {k for r in violating for k, v in r.items() if k.startswith("violations_") and v}
        - {"violations_total"}
    )
    return _table(
        ["run_id", "seed", *params, *(c.removeprefix("violations_") for c in cols)],
        (
            [
                _code(r.get("run_id")),
                r.get("seed"),
                *(r.get(p) for p in params),
                *(_num(r.get(c)) for c in cols),
            ]
            for r in violating[:100]
        ),
    )


# --------------------------------------------------------------------------- run page


def render_run_html(summary: Mapping[str, Any], timeline_png: bytes | None) -> str:
    """The report page of one run: ``summary`` is its ``summary.json``; its kind
    (:func:`scenarios.kinds.of_summary`) gives the members table, the configured rows and the
    word for a task (a Streams page speaks of clients and active/standby tasks)."""
    name = summary.get("scenario") or "run"
    failures = summary.get("expectation_failures") or []
    violations = summary.get("violations") or {}
    kind = kinds.of_summary(summary)
    phases = summary.get("phases") or []
    members_title, headers, rows = kind.report_members(summary)
    members = _table(headers, rows)
    return _render(
        "run.html.j2",
        title=f"groupsim run {name}",
        name=name,
        seed=summary.get("seed"),
        failures=failures,
        timeline=_b64(timeline_png),
        metrics=_table(["metric", "value"], _run_metrics(summary, kind)),
        phases=_phases_table(phases) if phases else None,
        violations=_table(
            ["invariant", "count"], ([_bad(k), _num(v)] for k, v in violations.items())
        )
        if violations
        else None,
        members=members if members["rows"] else None,
        members_title=members_title,
    )


def _run_metrics(summary: Mapping[str, Any], kind: kinds.GroupKind) -> list[tuple[str, Any]]:
    configured = kind.report_configured(summary)
    task, unit = kind.words.task, kind.words.downtime_of
    try:
        headline = kind.headline(summary_struct(summary))
    except msgspec.ValidationError as exc:
        raise ReportError(f"summary.json: not a {kind.name} run summary: {exc}") from None
    downtime = [
        (f"{task} downtime, total (s)", _seconds(headline.downtime_total_ms)),
        (f"{task} downtime, worst {unit} (s)", _seconds(headline.downtime_max_ms)),
    ]
    downtime += kind.report_downtime(summary)
    return [
        (
            "virtual time",
            f"{_seconds(summary.get('start_ms'))}–{_seconds(summary.get('end_ms'))} s",
        ),
        ("rebalances (generations)", _num(summary.get("rebalances"))),
        (
            "JoinGroup / SyncGroup rounds",
            f"{_num(summary.get('join_rounds'))} / {_num(summary.get('sync_rounds'))}",
        ),
        *configured,
        *downtime,
        *(
            [
                (f"{task} movements", _num(summary.get("task_movements"))),
                (f"max imbalance ({task}s)", _num(summary.get("max_imbalance"))),
            ]
            if "task_movements" in summary
            else []
        ),
        ("converged", "yes" if headline.converged else _bad("no")),
        ("time to converge (s)", _seconds(headline.time_to_converge_ms)),
        ("final protocol", summary.get("final_protocol") or "-"),
    ]


def _phases_table(phases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return _table(
        ["phase", "time (s)", "protocols", "rebalances", "task downtime (s)", "movements",
         "violations"],
        (
            [
                p.get("name"),
                f"{_seconds(p.get('start_ms'))}–{_seconds(p.get('end_ms'))}",
                " → ".join(p.get("protocols") or []) or "-",
                _num(p.get("rebalances")),
                _seconds(p.get("task_downtime_ms_total")),
                _num(p.get("task_movements")),
                sum((p.get("violations") or {}).values()),
            ]
            for p in phases
        ),
        left=1,
    )  # fmt: skip


# --------------------------------------------------------------------------- entry point


def write_report(
    directory: str | Path, *, out: str | Path | None = None, engine: str = "auto"
) -> Path:
    """Write the report of ``directory`` (a sweep's or a run's output) and return its path.

    Args:
        directory: ``groupsim sweep``'s ``--out`` (has ``runs/``) or ``groupsim run``'s
            (has ``events.jsonl`` and ``summary.json``).
        out: the HTML file (default ``directory/report.html``).
        engine: how to read a sweep's Parquet: ``auto`` (pyarrow when installed, else Spark:
            :func:`scenarios.analysis.tables.choose_engine`), ``spark`` or ``pyarrow``.

    Raises:
        ReportError: ``directory`` is neither kind, its files cannot be read, or ``out``
            cannot be written (checked first).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ReportError(f"{directory}: no such directory")
    target = Path(out) if out is not None else directory / "report.html"
    from scenarios.cli.outputs import OutputDirError, check_out_file

    try:  # before reading anything: an unusable --out is one line, not a traceback
        check_out_file(target, "--out" if out is not None else "report.html")
    except OutputDirError as exc:
        raise ReportError(str(exc)) from None
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


#: What any kind's event log counts alike (``metrics.connect_summary``'s kind-neutral keys).
_LOG_COUNTS = frozenset(
    {"start_ms", "end_ms", "rebalances", "join_rounds", "sync_rounds", "final_protocol"}
)


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

        # A kind whose summary is its own (plain consumers) gets only the log's kind-neutral
        # counts: Connect's task movements, imbalance and phase downtime count Connect tasks
        # and would read 0 on its page.
        counts = summary_dict(summarize(records))
        summary = {**{k: v for k, v in counts.items() if k in _LOG_COUNTS}, **summary}
    with tempfile.TemporaryDirectory(prefix="groupsim-report-") as tmp:
        png_path = Path(tmp) / "timeline.png"
        write_timeline_png(records, png_path)
        png = png_path.read_bytes()
    return render_run_html(summary, png)
