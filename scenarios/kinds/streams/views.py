"""The Kafka Streams lines of ``groupsim run``'s summary (clients, active and standby tasks,
restoration, warm-ups, probing rebalances; KIP-441)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from scenarios.cli.summary_view import downtime_line, seconds

__all__ = ["streams_lines"]


def streams_lines(summary: Mapping[str, Any], streams: Mapping[str, Any]) -> list[Text | str]:
    """Kafka Streams: downtime of active tasks, restoration, warm-ups and probing rebalances
    (KIP-441), each client's active/standby tasks at end."""
    what = "active task downtime (no client running it)"
    moved = f"active task movements {summary.get('task_movements', 0)}"
    lines: list[Text | str] = [downtime_line(summary, what, moved)]
    restore = streams.get("restoration") or {}
    if restore:
        text = (
            f"restoration: {restore.get('restored', 0)} active tasks restored, total "
            f"{seconds(restore.get('restore_ms_total', 0))}, longest "
            f"{seconds(restore.get('restore_ms_max', 0))}"
        )
        if restore.get("abandoned"):
            text += f"; {restore['abandoned']} stopped while restoring"
        line = Text(text)
        if restore.get("restoring_at_end"):
            line.append(f"; {restore['restoring_at_end']} still restoring at end", style="red")
        lines.append(line)
    lines.append(
        f"warm-up tasks assigned: {streams.get('warmups', 0)}; probing rebalances: "
        f"{streams.get('probing_rebalances', 0)} fired of {streams.get('probing_scheduled', 0)}"
        " scheduled"
    )
    holdings = streams.get("final_holdings") or {}
    if holdings:
        lines.append(
            "clients at end (active/standby tasks): "
            + ", ".join(
                f"{c} {len(h.get('active', ()))}/{len(h.get('standby', ()))}"
                for c, h in holdings.items()
            )
        )
    return lines
