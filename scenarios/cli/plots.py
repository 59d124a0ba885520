"""Timeline plot of a run: who ran how many tasks when, with rebalances and violations.

One picture for every kind, its series, words and layers chosen by the log's kind
(:func:`scenarios.kinds.of_log`: the ``run_start`` record's ``app``;
:meth:`scenarios.kinds.GroupKind.timeline_series`):

- **Connect**: one row per worker with its running tasks (``task_started`` /
  ``task_stop`` / ``task_stopped``), tasks running in total against tasks configured;
- **Streams**: one row per client with its active tasks — running and restoring told apart
  (``active_task_start`` = restoring, ``active_task_running``, ``active_task_stopped``) — and
  its standby tasks (``standby_task_start`` / ``standby_task_stopped``; warm-up replicas are
  standbys), totals below against the topology's task count.

Drawn with matplotlib's Agg canvas directly (no pyplot, no display, no global backend
switch). A handful of artists per member, so it stays fast for long runs.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from matplotlib import rcParams
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from scenarios.cli.timeline_series import TimelineSeries, connect_series, streams_series

__all__ = ["write_timeline_png", "timeline_png", "Words", "connect_series", "streams_series"]

#: Colours of the task layers (Streams: running, restoring, standby; Connect: running).
RUNNING = "tab:blue"
RESTORING = "tab:orange"
STANDBY = "tab:green"
#: The band behind a member's row while its process is up; white where it is down.
PROCESS_UP = "0.90"
REBALANCE = "0.35"
PHASE = "tab:purple"
VIOLATION = "red"
CONFIGURED = "0.3"

#: Layers of a Streams client's row, bottom up: (state, colour, legend label).
_STREAMS_LAYERS = (
    ("running", RUNNING, "active task, running"),
    ("restoring", RESTORING, "active task, restoring"),
    ("standby", STANDBY, "standby task (incl. warm-up)"),
)


def write_timeline_png(records: Sequence[dict[str, Any]], path: str | Path) -> None:
    """Draw the run's timeline to a PNG at ``path`` (written atomically).

    Top panel: one row per member (in order of first start); a light grey band while its
    process is up (white: not started, stopped or crashed) and a filled step curve of its
    tasks scaled to the largest count any member had (the count at the end is in the row
    label). Connect fills running tasks; Streams stacks running active, restoring active and
    standby tasks. Bottom panel: the same counts summed over members, and the tasks
    configured (dashed). Both: x in virtual seconds, a thin grey line per rebalance
    (``generation`` record with a protocol), red lines at ``violation`` records, dotted
    purple lines at ``phase`` starts, labelled above the top panel (staggered so that close
    phases stay legible). A legend on the right says what each colour is.

    Raises:
        OSError: the file cannot be written (no partial file is left behind).
    """
    from scenarios import kinds
    from scenarios.eventlog.atomic import atomic_open

    kind = kinds.of_log(records)
    png = timeline_png(kind.timeline_series(records), streams=kind.standby_tasks, words=kind.words)
    with atomic_open(Path(path), "wb") as out:
        out.write(png)


class Words(Protocol):
    """The words a timeline uses: a kind's :class:`scenarios.kinds.KindWords` or a
    :class:`scenarios.cli.timeline_series.TimelineWords`."""

    @property
    def app(self) -> str: ...

    @property
    def member(self) -> str: ...


def timeline_png(data: TimelineSeries, *, streams: bool, words: Words) -> bytes:
    """The PNG :func:`write_timeline_png` writes, from a timeline already computed from a log
    (a kind's :meth:`scenarios.kinds.GroupKind.timeline_series`); ``streams``: the kind's
    ``standby_tasks`` (stacked running/restoring/standby layers), ``words``: the kind's
    words. Imports nothing of ``scenarios`` beyond :mod:`scenarios.cli.timeline_series`, so
    that the child drawing it (:mod:`scenarios.cli.plot_child`) stays light."""
    out = io.BytesIO()
    _figure(data, streams=streams, words=words).savefig(out, format="png")
    return out.getvalue()


def _figure(data: TimelineSeries, *, streams: bool, words: Words) -> Figure:
    order = list(data.order)
    n = len(order)
    end = max(data.end, 1e-3)
    levels = _phase_levels(data.phases, end)
    label_room = 0.18 * (max(levels, default=0) + 1)
    height = 1.6 + label_room + 0.45 * max(n, 1) + 1.8
    fig = Figure(figsize=(_WIDTH, height), dpi=100)
    FigureCanvasAgg(fig)
    labels = [f"{m} ({_count_label(_final(data, m, streams), streams)})" for m in order]
    # fixed margins in inches (no tight_layout: it draws every artist once more to measure)
    left = _LEFT_PAD + _widest(fig, labels)
    top_margin = _TOP_PAD + label_room
    gap = _GAP
    panels = height - top_margin - _BOTTOM_PAD - gap
    top, bottom = fig.subplots(
        2,
        1,
        sharex=True,
        gridspec_kw={
            "height_ratios": [max(n, 1), 3],
            "left": left / _WIDTH,
            "right": _RIGHT,
            "top": 1 - top_margin / height,
            "bottom": _BOTTOM_PAD / height,
            "hspace": gap / (panels / 2),  # a fraction of the mean panel height
        },
    )
    colours = [c for _, c, _ in _STREAMS_LAYERS] if streams else [RUNNING]
    peak = max((sum(y) for _, ys in data.steps.values() for y in ys), default=1) or 1
    for i, member in enumerate(order):
        base = n - 1 - i
        spans = [(a, max(b - a, 1e-3)) for a, b in data.live.get(member, [])]
        if spans:
            top.broken_barh(spans, (base + 0.05, 0.9), facecolors=PROCESS_UP, edgecolors="none")
        xs, ys = data.steps.get(member, ([], []))
        if xs:
            row = _row_scale(base, peak)
            _stacked(top, [*xs, end], [*ys, ys[-1]], colours, row)
    top.set_yticks([n - 1 - i + 0.5 for i in range(n)], labels)
    top.set_ylim(0, max(n, 1))
    top.set_ylabel(f"{words.member} (tasks at end)")

    _totals(bottom, data, end, streams, words)
    gens = data.generations
    bad = [t for t, _ in data.violations]
    for ax in (top, bottom):
        if gens:
            ax.vlines(gens, 0, 1, transform=ax.get_xaxis_transform(), colors=REBALANCE,
                      linewidth=0.6, alpha=0.7)  # fmt: skip
        if bad:
            ax.vlines(bad, 0, 1, transform=ax.get_xaxis_transform(), colors=VIOLATION,
                      linewidth=1.2)  # fmt: skip
        for t, _name in data.phases:
            ax.axvline(t, color=PHASE, linewidth=1.0, linestyle=":")
    for (t, name), level in zip(data.phases, levels, strict=True):
        top.annotate(
            name,
            (t, 1.0),
            xycoords=top.get_xaxis_transform(),
            xytext=(2, 3 + 12 * level),
            textcoords="offset points",
            fontsize=8,
            color=PHASE,
            va="bottom",
            ha="left",
            annotation_clip=False,
        )
    marks = [(t, n - 1 - order.index(m) + 0.5) for t, m in data.violations if m in order]
    if marks:
        top.scatter([t for t, _ in marks], [y for _, y in marks], color=VIOLATION, marker="x",
                    s=30, zorder=5)  # fmt: skip
    bottom.set_xlim(0, end)
    fig.suptitle(
        f"{words.app}: {_plural(len(gens), 'rebalance')}, {_plural(len(bad), 'violation')}",
        y=1 - _TITLE_DOWN / height,
        fontsize=10,
        color=VIOLATION if bad else "black",
    )
    fig.legend(
        handles=_legend_handles(streams, words),
        title=f"a row's fill: its tasks\n(full row = {peak} tasks)",
        title_fontsize=8,
        alignment="left",
        loc="upper left",
        bbox_to_anchor=(_RIGHT + 0.015, 1 - top_margin / height),
        fontsize=8,
        frameon=False,
    )
    return fig


#: The figure's width and fixed margins, in inches (the right margin, holding the legend, as
#: a fraction of the width).
_WIDTH = 13.0
_RIGHT = 0.79
_LEFT_PAD = 0.45  # y axis label, tick marks and paddings, left of the widest row label
_TOP_PAD = 0.42  # the title, above the phase labels' rows
_TITLE_DOWN = 0.12
_BOTTOM_PAD = 0.6  # x tick labels and the x axis label
_GAP = 0.2  # between the two panels


def _final(data: TimelineSeries, member: str, streams: bool) -> tuple[int, ...]:
    """A member's task counts at the end (zeros if it never had a task)."""
    ys = data.steps.get(member, ([], []))[1]
    return ys[-1] if ys else (0,) * (3 if streams else 1)


def _widest(fig: Figure, labels: Sequence[str]) -> float:
    """The width in inches of the widest of ``labels`` as a y tick label."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    prop = FontProperties(size=rcParams["ytick.labelsize"])
    widest = max(
        (renderer.get_text_width_height_descent(s, prop, ismath=False)[0] for s in labels),
        default=0.0,
    )
    return float(widest) / fig.dpi


def _row_scale(base: int, peak: int) -> Callable[[int], float]:
    """A member's row: ``peak`` tasks fill 0.85 of it."""
    return lambda count: base + 0.05 + 0.85 * count / peak


def _stacked(
    ax: Axes,
    xs: list[float],
    ys: list[tuple[int, ...]],
    colours: Sequence[str],
    y_of: Callable[[int], float] = float,
) -> None:
    """Fill the layers (``ys[i][layer]``) bottom up as step-post areas, counts placed on the
    y axis by ``y_of``."""
    low = [0] * len(ys)
    for layer, colour in enumerate(colours):
        high = [lo + y[layer] for lo, y in zip(low, ys, strict=True)]
        if any(h != lo for h, lo in zip(high, low, strict=True)):
            ax.fill_between(
                xs,
                [y_of(v) for v in low],
                [y_of(v) for v in high],
                step="post",
                color=colour,
                alpha=0.8,
                linewidth=0,
            )
        low = high


def _count_label(counts: tuple[int, ...], streams: bool) -> str:
    if not streams:
        return str(counts[0])
    running, restoring, standby = counts
    active = f"{running + restoring} active" + (f", {restoring} restoring" if restoring else "")
    return f"{active}, {standby} standby"


def _totals(ax: Axes, data: TimelineSeries, end: float, streams: bool, words: Words) -> None:
    tx, ty = data.totals
    if tx and streams:  # active (running, then restoring) below standby, stacked
        colours = [c for _, c, _ in _STREAMS_LAYERS]
        _stacked(ax, [0.0, *tx, end], [(0, 0, 0), *ty, ty[-1]], colours)
    elif tx:
        running = [y[0] for y in ty]
        ax.step([0.0, *tx, end], [0, *running, running[-1]], where="post", color=RUNNING)
    cx, cy = data.configured
    if cx:
        ax.step([*cx, end], [*cy, cy[-1]], where="post", color=CONFIGURED, linestyle="--")
    ax.set_ylabel(f"tasks, all {words.member}s")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("virtual time (s)")


def _phase_levels(phases: Sequence[tuple[float, str]], end: float) -> list[int]:
    """A label row per phase: the lowest row whose last label ends before this one starts
    (label width estimated from its characters at 8 pt on a ~10 in wide axis)."""
    per_char = end * 0.0058
    row_ends: list[float] = []
    levels = []
    for t, name in phases:
        width = per_char * (len(name) + 2)
        for level, row_end in enumerate(row_ends):
            if t >= row_end:
                row_ends[level] = t + width
                levels.append(level)
                break
        else:
            levels.append(len(row_ends))
            row_ends.append(t + width)
    return levels


def _legend_handles(streams: bool, words: Words) -> list[Any]:
    tasks = (
        [Patch(facecolor=c, alpha=0.8, label=label) for _, c, label in _STREAMS_LAYERS]
        if streams
        else [Patch(facecolor=RUNNING, alpha=0.8, label="running task")]
    )
    who = words.member
    return [
        *tasks,
        Patch(facecolor=PROCESS_UP, label=f"{who} process up"),
        Patch(facecolor="white", edgecolor="0.6", label=f"{who} process down"),
        Line2D([], [], color=CONFIGURED, linestyle="--", label="tasks configured (lower panel)"),
        Line2D([], [], color=REBALANCE, linewidth=0.8, label="rebalance (new generation)"),
        Line2D([], [], color=PHASE, linestyle=":", label="phase start"),
        Line2D([], [], color=VIOLATION, label="violation"),
    ]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
