"""The built-in scenario generators of sweep files (``generator = "rolling-bounce"``;
``docs/sweeps.md``): each builds a scenario document from its parameters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from members.config import WORKER_DEFAULTS

__all__ = ["Generator", "GENERATORS"]


@dataclass(frozen=True)
class Generator:
    """A built-in scenario generator: ``build(params) -> scenario document`` (a dict as
    :mod:`tomllib` would decode it). ``params`` maps each known parameter to its default;
    ``None`` means "derived" (documented in ``help``)."""

    name: str
    description: str
    params: dict[str, Any]
    help: dict[str, str]
    build: Callable[[dict[str, Any]], dict[str, Any]]


def _common_cluster(p: dict[str, Any]) -> dict[str, Any]:
    connectors = p["connectors"] if p["connectors"] is not None else p["workers"]
    return {
        "network": {"latency_ms": p["latency_ms"], "jitter_ms": p["jitter_ms"]},
        "cluster": {
            "size": p["workers"],
            "config": {
                "connect.protocol": p["protocol"],
                "scheduled.rebalance.max.delay.ms": p["delay_ms"],
                "session.timeout.ms": p["session_timeout_ms"],
                "groupsim.task.start.ms": p["task_start_ms"],
                "groupsim.task.stop.ms": p["task_stop_ms"],
            },
        },
        "workload": {"generate": {"count": connectors, "tasks": p["tasks"]}},
    }


def _rolling_bounce(p: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "rolling-bounce",
        "description": "every worker restarted once, one at a time",
    }
    doc.update(_common_cluster(p))
    doc["timeline"] = [
        {"at_ms": p["start_ms"], "action": "phase", "name": "rolling bounce"},
        {
            "at_ms": p["start_ms"],
            "action": "rolling_restart",
            "interval_ms": p["interval_ms"],
            "down_ms": p["down_ms"],
            "clean": p["clean"],
        },
    ]
    return doc


def _worker_departure(p: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "worker-departure",
        "description": "workers leave (or crash) and come back after down_ms",
    }
    doc.update(_common_cluster(p))
    timeline: list[dict[str, Any]] = [
        {"at_ms": p["start_ms"], "action": "phase", "name": "departure"}
    ]
    for i in range(int(p["departures"])):
        timeline.append(
            {
                "at_ms": p["start_ms"],
                "action": "restart",
                "member": f"w{p['workers'] - i}",
                "down_ms": p["down_ms"],
                "clean": p["clean"],
            }
        )
    doc["timeline"] = timeline
    return doc


_COMMON_PARAMS: dict[str, Any] = {
    "workers": 5,
    "protocol": "sessioned",
    "delay_ms": WORKER_DEFAULTS.scheduled_rebalance_max_delay_ms,
    "connectors": None,
    "tasks": 8,
    "session_timeout_ms": WORKER_DEFAULTS.session_timeout_ms,
    "task_start_ms": 200,
    "task_stop_ms": 100,
    "latency_ms": 1,
    "jitter_ms": 5,
    "start_ms": 60_000,
}
_COMMON_HELP = {
    "workers": "cluster size (workers w1..wN)",
    "protocol": "connect.protocol of every worker",
    "delay_ms": "scheduled.rebalance.max.delay.ms of every worker",
    "connectors": "connectors (default: one per worker)",
    "tasks": "tasks per connector",
    "session_timeout_ms": "session.timeout.ms of every worker",
    "task_start_ms": "groupsim.task.start.ms (herder time to start a task)",
    "task_stop_ms": "groupsim.task.stop.ms (herder time to stop a task)",
    "latency_ms": "network latency",
    "jitter_ms": "network jitter (seeded)",
    "start_ms": "when the faults begin",
}

GENERATORS: dict[str, Generator] = {
    "rolling-bounce": Generator(
        name="rolling-bounce",
        description="a rolling restart of every worker, interval_ms apart, each down down_ms",
        params={**_COMMON_PARAMS, "interval_ms": 30_000, "down_ms": 5_000, "clean": True},
        help={
            **_COMMON_HELP,
            "interval_ms": "time between two workers' restarts",
            "down_ms": "how long each worker is down",
            "clean": "true: LeaveGroup on shutdown; false: a crash",
        },
        build=_rolling_bounce,
    ),
    "worker-departure": Generator(
        name="worker-departure",
        description="the last `departures` workers go away at start_ms and return after down_ms",
        params={**_COMMON_PARAMS, "down_ms": 60_000, "clean": False, "departures": 1},
        help={
            **_COMMON_HELP,
            "down_ms": "how long the departed workers stay away",
            "clean": "true: LeaveGroup on shutdown; false: a crash (noticed at session timeout)",
            "departures": "how many workers depart (the last ones: wN, wN-1, ...)",
        },
        build=_worker_departure,
    ),
}
