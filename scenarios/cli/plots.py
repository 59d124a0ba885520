"""Timeline plot of a run: who ran how many tasks when, with rebalances and violations.

Drawn with matplotlib's Agg canvas directly (no pyplot, no display, no global backend
switch). A handful of artists per worker, so it stays fast for long runs.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["write_timeline_png"]

_TASK_EVENTS = {
    "task_started": 1,
    "task_stop": -1,
    "task_stopped": -1,
}


def _series(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-worker running-task step series, live intervals, and the markers to draw."""
    running: dict[str, set[str]] = {}
    steps: dict[str, tuple[list[float], list[int]]] = {}
    live_since: dict[str, float] = {}
    live: dict[str, list[tuple[float, float]]] = {}
    order: dict[str, None] = {}
    generations: list[float] = []
    violations: list[tuple[float, str | None]] = []
    phases: list[tuple[float, str]] = []
    total_x: list[float] = []
    total_y: list[int] = []
    conf_x: list[float] = []
    conf_y: list[int] = []
    total = 0
    end = 0.0

    def point(member: str, t: float) -> None:
        xs, ys = steps.setdefault(member, ([], []))
        xs.append(t)
        ys.append(len(running[member]))

    for r in records:
        kind = r.get("kind")
        t = r.get("t_ms", 0) / 1000.0
        end = t
        delta = _TASK_EVENTS.get(kind)  # type: ignore[arg-type]
        if delta is not None:
            member, task = r.get("member"), r.get("task")
            tasks = running.setdefault(member, set())  # type: ignore[arg-type]
            before = len(tasks)
            if delta > 0:
                tasks.add(task)  # type: ignore[arg-type]
            else:
                tasks.discard(task)  # type: ignore[arg-type]
            if len(tasks) != before:
                order.setdefault(member, None)  # type: ignore[arg-type]
                point(member, t)  # type: ignore[arg-type]
                total += len(tasks) - before
                total_x.append(t)
                total_y.append(total)
        elif kind == "generation":
            if r.get("protocol") is not None:
                generations.append(t)
        elif kind == "member_start":
            member = r.get("member")
            order.setdefault(member, None)  # type: ignore[arg-type]
            live_since.setdefault(member, t)  # type: ignore[arg-type]
        elif kind in ("member_stop", "member_crash"):
            member = r.get("member")
            gone = running.get(member)  # type: ignore[arg-type]
            if gone:
                total -= len(gone)
                gone.clear()
                point(member, t)  # type: ignore[arg-type]
                total_x.append(t)
                total_y.append(total)
            if member in live_since:
                live.setdefault(member, []).append((live_since.pop(member), t))  # type: ignore[arg-type]
        elif kind == "violation":
            violations.append((t, r.get("member")))
        elif kind == "phase":
            phases.append((t, str(r.get("name"))))
        elif kind in ("config", "run_start") and isinstance(r.get("connectors"), dict):
            if kind == "run_start" and conf_x:
                continue
            conf_x.append(t)
            conf_y.append(sum(int(n) for n in r["connectors"].values()))
    for member, since in live_since.items():
        live.setdefault(member, []).append((since, end))
    return {
        "order": list(order),
        "steps": steps,
        "live": live,
        "generations": generations,
        "violations": violations,
        "phases": phases,
        "total": (total_x, total_y),
        "configured": (conf_x, conf_y),
        "end": end,
    }


def write_timeline_png(records: Sequence[dict[str, Any]], path: str | Path) -> None:
    """Draw the run's timeline to a PNG at ``path`` (written atomically).

    Top panel: one row per worker (in order of first start); a grey band while the worker
    process is up and a filled step curve of its running task count (scaled to the largest
    count; the count is in the row label). Bottom panel: tasks running in total and tasks
    configured. Both: x in virtual seconds, a thin vertical line per rebalance (``generation``
    record with a protocol), red lines at ``violation`` records, labelled ``phase`` starts.

    Raises:
        OSError: the file cannot be written (no partial file is left behind).
    """
    data = _series(records)
    order: list[str] = data["order"]
    end = max(data["end"], 1e-3)
    fig = Figure(figsize=(12, 1.2 + 0.45 * max(len(order), 1) + 1.8), dpi=100)
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(
        2, 1, sharex=True, gridspec_kw={"height_ratios": [max(len(order), 1), 3]}
    )
    n = len(order)
    peak = max((max(ys) for _, ys in data["steps"].values() if ys), default=1) or 1
    labels = []
    for i, member in enumerate(order):
        base = n - 1 - i
        spans = [(a, max(b - a, 1e-3)) for a, b in data["live"].get(member, [])]
        if spans:
            top.broken_barh(spans, (base + 0.05, 0.9), facecolors="0.92", edgecolors="none")
        xs, ys = data["steps"].get(member, ([], []))
        if xs:
            xs2 = [*xs, end]
            ys2 = [*ys, ys[-1]]
            top.fill_between(
                xs2,
                base + 0.05,
                [base + 0.05 + 0.85 * y / peak for y in ys2],
                step="post",
                color="tab:blue",
                alpha=0.75,
                linewidth=0,
            )
        final = ys[-1] if ys else 0
        labels.append(f"{member} ({final})")
    top.set_yticks([n - 1 - i + 0.5 for i in range(n)], labels)
    top.set_ylim(0, max(n, 1))
    top.set_ylabel("worker (tasks at end)")
    top.set_title(f"running tasks per worker (full row = {peak} tasks)", fontsize=9, loc="right")

    tx, ty = data["total"]
    if tx:
        bottom.step(
            [0.0, *tx, end], [0, *ty, ty[-1]], where="post", color="tab:blue", label="running"
        )
    cx, cy = data["configured"]
    if cx:
        bottom.step(
            [*cx, end], [*cy, cy[-1]], where="post", color="0.4", linestyle="--", label="configured"
        )
    bottom.set_ylabel("tasks")
    bottom.set_xlabel("virtual time (s)")
    if tx or cx:
        bottom.legend(loc="lower right", fontsize=8)

    gens = data["generations"]
    bad = [t for t, _ in data["violations"]]
    for ax in (top, bottom):
        if gens:
            ax.vlines(
                gens,
                0,
                1,
                transform=ax.get_xaxis_transform(),
                colors="0.35",
                linewidth=0.5,
                alpha=0.6,
            )
        if bad:
            ax.vlines(bad, 0, 1, transform=ax.get_xaxis_transform(), colors="red", linewidth=1.2)
        for t, _name in data["phases"]:
            ax.axvline(t, color="tab:green", linewidth=1.0, linestyle=":")
    for t, name in data["phases"]:
        top.text(
            t,
            1.0,
            f" {name}",
            transform=top.get_xaxis_transform(),
            fontsize=8,
            color="tab:green",
            va="bottom",
            ha="left",
            clip_on=False,
        )
    marks = [(t, n - 1 - order.index(m) + 0.5) for t, m in data["violations"] if m in order]
    if marks:
        top.scatter(
            [t for t, _ in marks], [y for _, y in marks], color="red", marker="x", s=30, zorder=5
        )
    bottom.set_xlim(0, end)
    fig.suptitle(
        f"{len(gens)} rebalances, {len(bad)} violations",
        fontsize=10,
        color="red" if bad else "black",
    )
    fig.tight_layout()

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".png", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            fig.savefig(out, format="png")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
