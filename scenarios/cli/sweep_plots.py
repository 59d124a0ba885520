"""The plots of a sweep report (``groupsim report`` on a sweep's output): matplotlib PNGs
drawn on the Agg canvas (no pyplot), over the ``runs`` rows; times in virtual seconds."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = [
    "plot_downtime_by_protocol",
    "plot_rebalances_vs_size",
    "plot_downtime_vs_delay",
    "ok_runs",
    "distinct",
    "fmt_param",
]


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, Spark's percentile)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def ok_runs(runs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in runs if r.get("status") == "ok"]


def distinct(runs: Sequence[Mapping[str, Any]], column: str) -> list[Any]:
    values = {r.get(column) for r in runs if r.get(column) is not None}
    return sorted(values, key=lambda v: (isinstance(v, str), v))


_PROTOCOL_ORDER = {"eager": 0, "compatible": 1, "sessioned": 2, "static": 3}


def _protocols(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    values = {str(r.get("scenario_protocol")) for r in runs if r.get("scenario_protocol")}
    return sorted(values, key=lambda p: (_PROTOCOL_ORDER.get(p, 9), p))


def plot_downtime_by_protocol(runs: Sequence[Mapping[str, Any]]) -> bytes | None:
    """Box plots of total and worst-task downtime (virtual s) per protocol, over ok runs."""
    ok = ok_runs(runs)
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
    ok = ok_runs(runs)
    sizes = distinct(ok, "scenario_workers")
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
    ok = ok_runs(runs)
    delays = distinct(ok, "scenario_delay_ms")
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
            label = ", ".join(f"{k}={fmt_param(k, v)}" for k, v in zip(keys, key, strict=True))
            ax.plot(xs, ys, marker="o", label=label or "all runs")
        ax.set_xlabel("scheduled.rebalance.max.delay.ms (s)")
        ax.set_ylabel("virtual seconds" if column.endswith("_ms_total") else "movements")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("downtime vs scheduled.rebalance.max.delay.ms", fontsize=11)
    fig.tight_layout()
    return _png(fig)


def fmt_param(name: str, value: Any) -> str:
    if name.endswith("_ms") and isinstance(value, int) and not isinstance(value, bool):
        return f"{value / 1000:g}s"
    return str(value)
