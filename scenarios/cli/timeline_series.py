"""What a run's timeline draws, computed from its event log without matplotlib.

:func:`connect_series` and :func:`streams_series` (a kind's
:meth:`scenarios.kinds.GroupKind.timeline_series`) turn the records into a
:class:`TimelineSeries`; :mod:`scenarios.cli.plots` draws it. Kept apart from the drawing so
that ``groupsim run`` computes the series in the simulating process and hands only the series
to the child drawing the PNG (:mod:`scenarios.cli.plot_child`), which then never imports the
kinds' modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["TimelineSeries", "TimelineWords", "connect_series", "streams_series", "STREAMS_LAYERS"]


class TimelineWords(NamedTuple):
    """The words of a kind's :class:`scenarios.kinds.KindWords` a timeline uses, picklable
    without importing the kinds (``app``: ``Kafka Connect``; ``member``: ``worker``)."""

    app: str
    member: str


#: Layers of a Streams client's row, bottom up (a count per layer in each point).
STREAMS_LAYERS = ("running", "restoring", "standby")

_TASK_EVENTS = {
    "task_started": 1,
    "task_stop": -1,
    "task_stopped": -1,
}


@dataclass
class TimelineSeries:
    """What a timeline draws, in virtual seconds.

    ``steps[member]`` is ``(times, [counts per layer])``: the counts after each change.
    ``totals`` is the same over all members. ``configured`` is the tasks the workload
    configures over time (a step line).
    """

    layers: tuple[str, ...]
    order: dict[str, None] = field(default_factory=dict)
    steps: dict[str, tuple[list[float], list[tuple[int, ...]]]] = field(default_factory=dict)
    live: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    live_since: dict[str, float] = field(default_factory=dict)
    totals: tuple[list[float], list[tuple[int, ...]]] = field(default_factory=lambda: ([], []))
    configured: tuple[list[float], list[int]] = field(default_factory=lambda: ([], []))
    generations: list[float] = field(default_factory=list)
    violations: list[tuple[float, str | None]] = field(default_factory=list)
    phases: list[tuple[float, str]] = field(default_factory=list)
    end: float = 0.0

    def point(self, member: str, t: float, counts: tuple[int, ...], total: tuple[int, ...]) -> None:
        xs, ys = self.steps.setdefault(member, ([], []))
        xs.append(t)
        ys.append(counts)
        self.totals[0].append(t)
        self.totals[1].append(total)

    def common(self, r: dict[str, Any], t: float) -> None:
        """Records both applications draw alike: process up/down, rebalances, phases."""
        kind = r.get("kind")
        member = r.get("member")
        if kind == "generation" and r.get("protocol") is not None:
            self.generations.append(t)
        elif kind == "member_start" and isinstance(member, str):
            self.order.setdefault(member, None)
            self.live_since.setdefault(member, t)
        elif kind in ("member_stop", "member_crash") and isinstance(member, str):
            if member in self.live_since:
                self.live.setdefault(member, []).append((self.live_since.pop(member), t))
        elif kind == "violation":
            self.violations.append((t, member if isinstance(member, str) else None))
        elif kind == "phase":
            self.phases.append((t, str(r.get("name"))))

    def close(self) -> None:
        for member, since in self.live_since.items():
            self.live.setdefault(member, []).append((since, self.end))
        self.live_since.clear()


def connect_series(records: Sequence[dict[str, Any]]) -> TimelineSeries:
    """Per-worker running-task counts, live intervals, and the markers to draw."""
    data = TimelineSeries(layers=("running",))
    running: dict[str, set[str]] = {}
    total = 0

    for r in records:
        kind = r.get("kind")
        t = r.get("t_ms", 0) / 1000.0
        data.end = t
        member = r.get("member")
        delta = _TASK_EVENTS.get(str(kind))
        if delta is not None and isinstance(member, str):
            tasks = running.setdefault(member, set())
            before = len(tasks)
            if delta > 0:
                tasks.add(str(r.get("task")))
            else:
                tasks.discard(str(r.get("task")))
            if len(tasks) != before:
                data.order.setdefault(member, None)
                total += len(tasks) - before
                data.point(member, t, (len(tasks),), (total,))
            continue
        data.common(r, t)
        if kind in ("member_stop", "member_crash") and isinstance(member, str):
            gone = running.get(member)
            if gone:
                total -= len(gone)
                gone.clear()
                data.point(member, t, (0,), (total,))
        elif kind in ("config", "run_start") and isinstance(r.get("connectors"), dict):
            if kind == "run_start" and data.configured[0]:
                continue
            data.configured[0].append(t)
            data.configured[1].append(sum(int(n) for n in r["connectors"].values()))
    data.close()
    return data


def streams_series(records: Sequence[dict[str, Any]]) -> TimelineSeries:
    """Per-client active (running, restoring) and standby task counts, and the markers."""
    data = TimelineSeries(layers=STREAMS_LAYERS)
    active: dict[str, dict[str, str]] = {}  # client -> task -> running | restoring
    standby: dict[str, set[str]] = {}

    def counts(client: str) -> tuple[int, int, int]:
        states = list(active.get(client, {}).values())
        running = states.count("running")
        return running, len(states) - running, len(standby.get(client, ()))

    def total() -> tuple[int, ...]:
        per = [counts(c) for c in set(active) | set(standby)]
        return tuple(sum(c[i] for c in per) for i in range(3))

    for r in records:
        kind = r.get("kind")
        t = r.get("t_ms", 0) / 1000.0
        data.end = t
        client = r.get("member")
        data.common(r, t)
        if not isinstance(client, str):
            if kind == "run_start" and isinstance(r.get("tasks"), dict):
                configured = sum(len(v) for v in r["tasks"].values() if isinstance(v, list))
                data.configured[0].append(t)
                data.configured[1].append(configured)
            continue
        before = counts(client)
        task = str(r.get("task"))
        if kind == "active_task_start":
            active.setdefault(client, {})[task] = "restoring"
        elif kind == "active_task_running":
            active.setdefault(client, {})[task] = "running"
        elif kind == "active_task_stopped":
            active.get(client, {}).pop(task, None)
        elif kind == "standby_task_start":
            standby.setdefault(client, set()).add(task)
        elif kind == "standby_task_stopped":
            standby.get(client, set()).discard(task)
        elif kind in ("member_stop", "member_crash"):
            active.pop(client, None)
            standby.pop(client, None)
        else:
            continue
        after = counts(client)
        if after != before:
            data.order.setdefault(client, None)
            data.point(client, t, after, total())
    data.close()
    return data
