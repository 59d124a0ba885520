"""What ``groupsim serve`` leaves in ``--out``: ``events.jsonl`` and ``summary.json``.

``summary.json``: ``{"scenario", "seed", "host", "port", "end_ms", "groups": {group id:
{"state", "generation", "protocol", "leader_id", "members", "clients", "assignments",
"rebalances"}}, "violations": [...]}`` where ``violations`` is what ``groupsim check`` finds
in the log (:func:`scenarios.check.check_records`) and ``rebalances`` counts the group's
``generation`` records.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scenarios.check.log_check import check_records

if TYPE_CHECKING:
    from .broker import Broker

__all__ = ["write_outputs", "summary"]


def summary(broker: Broker) -> dict[str, Any]:
    """The run's summary (see the module docstring)."""
    records = broker.log.records
    rebalances: dict[str, int] = {}
    for record in records:
        if record["kind"] == "generation":
            group = record.get("group", "")
            rebalances[group] = rebalances.get(group, 0) + 1
    groups = {}
    for group_id in sorted(broker.groups):
        snap = dataclasses.asdict(broker.snapshot(group_id))
        snap.pop("group_id")
        snap["members"] = list(snap["members"])
        snap["rebalances"] = rebalances.get(group_id, 0)
        groups[group_id] = snap
    return {
        "scenario": broker.options.name,
        "seed": broker.options.seed,
        "host": broker.options.host,
        "port": broker.port,
        "end_ms": records[-1]["t_ms"] if records else 0,
        "groups": groups,
        "violations": [v.report() for v in check_records(records)],
    }


def write_outputs(broker: Broker, out: Path) -> None:
    """Write ``out/events.jsonl`` (atomically) and ``out/summary.json``.

    Raises:
        OSError: ``out`` cannot be created or written.
    """
    out.mkdir(parents=True, exist_ok=True)
    broker.log.write_jsonl(out / "events.jsonl")
    text = json.dumps(summary(broker), indent=2, sort_keys=True, default=str)
    tmp = out / ".summary.json.tmp"
    tmp.write_text(text + "\n")
    tmp.replace(out / "summary.json")
