"""The summary table ``groupsim run`` prints (rich).

Per phase: time span, protocols in force, rebalances, task downtime, task movements,
violations; then a totals row, the end state (converged, time to converge, final protocol,
imbalance, rounds), and the expectation results. In Kafka Connect's words for a Connect run
(workers, connectors and tasks, connector downtime); in Kafka Streams' words for a Streams run
(clients, active and standby tasks, restoration, warm-ups, probing rebalances). The summary's
kind (:func:`scenarios.kinds.of_summary`) gives the lines under the table
(:meth:`scenarios.kinds.GroupKind.summary_lines`) or renders a summary of its own shape
(:meth:`scenarios.kinds.GroupKind.render_summary`, a consumer group's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from scenarios import kinds

__all__ = ["render_summary", "render_consumer", "seconds", "never_started", "downtime_line"]


def _seconds(ms: int | None) -> str:
    if ms is None:
        return "-"
    return f"{ms / 1000:.1f} s"


seconds = _seconds


def _violations(counts: Mapping[str, int]) -> Text:
    total = sum(counts.values())
    if not total:
        return Text("0", style="green")
    detail = ", ".join(f"{n} {name}" for name, n in sorted(counts.items()) if n)
    return Text(f"{total} ({detail})", style="bold red")


def render_summary(
    summary: Mapping[str, Any],
    console: Console,
    *,
    scenario_name: str,
    seed: int,
    expectation_failures: list[str],
) -> None:
    """Print the run summary to ``console``.

    Args:
        summary: a run's summary as ``summary.json`` holds it (the builtins of its kind's
            Struct, :func:`scenarios.check.summary_types.summary_dict`).
        console: where to print (a ``Console(record=True)`` captures it).
        scenario_name: shown in the title.
        seed: shown in the title.
        expectation_failures: :func:`scenarios.check.expect.evaluate` output; empty = all hold.
    """
    kind = kinds.of_summary(summary)
    if kind.render_summary(summary, console, f"{scenario_name} (seed {seed})"):
        _render_expectations(expectation_failures, console)
        return
    table = Table(title=f"{scenario_name} (seed {seed})", title_justify="left")
    table.add_column("phase")
    table.add_column("time", justify="right")
    table.add_column("protocols")
    table.add_column("rebalances", justify="right")
    table.add_column("task downtime", justify="right")
    table.add_column("movements", justify="right")
    table.add_column("violations")
    for phase in summary.get("phases", []):
        table.add_row(
            str(phase["name"]),
            f"{phase['start_ms'] / 1000:.1f}–{phase['end_ms'] / 1000:.1f} s",
            " → ".join(phase.get("protocols") or []) or "-",
            str(phase["rebalances"]),
            _seconds(phase["task_downtime_ms_total"]),
            str(phase["task_movements"]),
            _violations(phase.get("violations") or {}),
        )
    table.add_section()
    table.add_row(
        Text("total", style="bold"),
        f"{summary.get('start_ms', 0) / 1000:.1f}–{summary.get('end_ms', 0) / 1000:.1f} s",
        summary.get("final_protocol") or "-",
        str(summary.get("rebalances", 0)),
        _seconds(summary.get("task_downtime_ms_total", 0)),
        str(summary.get("task_movements", 0)),
        _violations(summary.get("violations") or {}),
    )
    console.print(table)

    console.print(_state_line(summary, standby=kind.standby_tasks))
    for line in kind.summary_lines(summary):
        console.print(line)

    _render_expectations(expectation_failures, console)


def _render_expectations(expectation_failures: list[str], console: Console) -> None:
    if expectation_failures:
        console.print(Text(f"{len(expectation_failures)} expectation(s) failed:", style="bold red"))
        for line in expectation_failures:
            console.print(Text(f"  ✗ {line}", style="red"))
    else:
        console.print(Text("✓ all expectations hold", style="bold green"))


def render_consumer(consumer: Mapping[str, Any], console: Console, title: str) -> None:
    """A consumer group's summary (``summary["consumer"]`` of
    :func:`scenarios.check.consumer_summary.summarize_consumers`): who owns what at the end,
    the generations and final protocol, the partition downtime (total and the worst
    partition's) and the time to converge after the last step."""
    table = Table(title=title, title_justify="left")
    table.add_column("consumer")
    table.add_column("partitions owned at the end")
    for name, parts in (consumer.get("owned") or {}).items():
        table.add_row(str(name), ", ".join(parts) or "-")
    console.print(table)
    console.print(
        f"generations: {consumer.get('generations', 0)}   final protocol: "
        f"{consumer.get('final_protocol') or '-'} "
        f"({consumer.get('final_rebalance_protocol') or '-'})   "
        f"violations: {consumer.get('violations', 0)}"
    )
    converge = consumer.get("time_to_converge_ms")
    console.print(
        f"partition downtime: {_seconds(consumer.get('partition_downtime_ms_total'))} total, "
        f"{_seconds(consumer.get('partition_downtime_ms_max'))} the worst partition   "
        "converged: "
        + ("no" if converge is None else f"yes ({_seconds(converge)} after the last step)")
    )


def _state_line(summary: Mapping[str, Any], *, standby: bool) -> Text:
    converged = bool(summary.get("converged"))
    state = Text()
    state.append("converged: ")
    state.append("yes" if converged else "no", style="green" if converged else "bold red")
    if converged:
        state.append(f" ({_seconds(summary.get('time_to_converge_ms'))} after the last step)")
    state.append(f"   final protocol: {summary.get('final_protocol') or '-'}")
    imbalance = "active-task imbalance" if standby else "max imbalance"
    state.append(f"   {imbalance}: {summary.get('max_imbalance', 0)}")
    state.append(
        f"   JoinGroup/SyncGroup rounds: {summary.get('join_rounds', 0)}/"
        f"{summary.get('sync_rounds', 0)}"
    )
    return state


def never_started(summary: Mapping[str, Any], line: Text) -> Text:
    never = summary.get("never_started") or []
    if never:
        shown = ", ".join(never[:8]) + (", …" if len(never) > 8 else "")
        line.append(f"; never started: {shown}", style="red")
    return line


def downtime_line(summary: Mapping[str, Any], what: str, tail: str) -> Text:
    """``"<what>: total <s>, worst task <s>; <tail>"`` from a Connect or Streams summary's task
    downtime (total and the worst task's), then its never-started tasks (:func:`never_started`)."""
    line = Text(
        f"{what}: total {_seconds(summary.get('task_downtime_ms_total', 0))}, worst task "
        f"{_seconds(summary.get('task_downtime_ms_max', 0))}; {tail}"
    )
    return never_started(summary, line)
