"""The Connect lines of ``groupsim run``'s summary (workers, connectors and tasks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from scenarios.cli.summary_view import downtime_line, seconds

__all__ = ["connect_lines"]


def connect_lines(summary: Mapping[str, Any]) -> list[Text | str]:
    """Kafka Connect: task and connector downtime, each worker's connectors/tasks at end."""
    connectors = f"connector downtime {seconds(summary.get('connector_downtime_ms_total', 0))}"
    lines: list[Text | str] = [downtime_line(summary, "task downtime", connectors)]
    workers = summary.get("workers_final") or {}
    if workers:
        lines.append(
            "workers at end (connectors/tasks): "
            + ", ".join(f"{m} {c['connectors']}/{c['tasks']}" for m, c in workers.items())
        )
    return lines
