"""The Connect lines of ``groupsim run``'s summary (workers, connectors and tasks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from scenarios.cli.summary_view import never_started, seconds

__all__ = ["connect_lines"]


def connect_lines(summary: Mapping[str, Any]) -> list[Text | str]:
    """Kafka Connect: task and connector downtime, each worker's connectors/tasks at end."""
    downtime = Text(
        f"task downtime: total {seconds(summary.get('task_downtime_ms_total', 0))}, "
        f"worst task {seconds(summary.get('task_downtime_ms_max', 0))}; "
        f"connector downtime {seconds(summary.get('connector_downtime_ms_total', 0))}"
    )
    lines: list[Text | str] = [never_started(summary, downtime)]
    workers = summary.get("workers_final") or {}
    if workers:
        lines.append(
            "workers at end (connectors/tasks): "
            + ", ".join(f"{m} {c['connectors']}/{c['tasks']}" for m, c in workers.items())
        )
    return lines
