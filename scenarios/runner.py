"""Run a scenario end to end: simulate, check, summarise, write the outputs.

``run_scenario`` is what ``groupsim run`` calls; tests and benchmarks call it too.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import trio
import trio.testing

from scenarios.eventlog import EventLog
from scenarios.expect import evaluate
from scenarios.loader import LoadedScenario
from scenarios.metrics import liveness_violations, summarize
from scenarios.world import World, run_world

__all__ = ["RunResult", "run_scenario", "simulate", "write_outputs"]


class RunResult(msgspec.Struct):
    """The outcome of one run.

    ``records`` is the event log (dicts, see docs/event-log.md); ``summary`` the metrics of
    :func:`scenarios.metrics.summarize`; ``failures`` one line per unmet ``[expect]``.
    """

    scenario: str
    seed: int
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    failures: list[str]

    @property
    def exit_code(self) -> int:
        """0 when every expectation holds, 1 otherwise (``groupsim run``'s contract)."""
        return 1 if self.failures else 0


def simulate(
    loaded: LoadedScenario,
    seed: int,
    *,
    log_heartbeats: bool | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Simulate ``loaded`` with ``seed`` under trio's MockClock and evaluate it.

    Args:
        loaded: a scenario from :func:`scenarios.loader.load_scenario`.
        seed: the seed for every random choice of the run.
        log_heartbeats: log heartbeat RPCs (default: the scenario's ``log_heartbeats``).
        on_progress: called now and then with (virtual ms done, virtual ms in total).

    Returns:
        The run's records, summary and unmet expectations. Nothing is written.
    """
    log = EventLog()
    world = World(loaded, seed, log=log, log_heartbeats=log_heartbeats)

    progress = None
    if on_progress is not None:
        end = world.end_ms

        def progress(now_ms: int) -> None:
            on_progress(now_ms, end)

    trio.run(
        lambda: run_world(world, on_progress=progress),
        clock=trio.testing.MockClock(autojump_threshold=0),
    )
    summary = summarize(log.records)
    for violation in liveness_violations(log.records, summary):
        log.emit(world.now_ms, "violation", **violation)
    log.emit(world.now_ms, "run_end")
    summary = summarize(log.records)
    failures = evaluate(loaded.scenario.expect, summary)
    return RunResult(
        scenario=loaded.scenario.name,
        seed=seed,
        records=log.records,
        summary=summary,
        failures=failures,
    )


def write_outputs(result: RunResult, out_dir: Path, *, plot: bool = True) -> None:
    """Write ``events.jsonl``, ``summary.json`` and ``timeline.png`` into ``out_dir``.

    Each file is written under a temporary name and renamed, so an interrupted run never
    leaves a file that looks complete.
    """
    from scenarios.eventlog import write_records_jsonl

    out_dir.mkdir(parents=True, exist_ok=True)
    write_records_jsonl(result.records, out_dir / "events.jsonl")
    summary = dict(result.summary)
    summary["scenario"] = result.scenario
    summary["seed"] = result.seed
    summary["expectation_failures"] = result.failures
    _atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=2, sort_keys=True))
    if plot:
        from scenarios.plots import write_timeline_png

        write_timeline_png(result.records, out_dir / "timeline.png")


def run_scenario(
    loaded: LoadedScenario,
    seed: int,
    out_dir: Path | None = None,
    **kwargs: Any,
) -> RunResult:
    """:func:`simulate`, then :func:`write_outputs` when ``out_dir`` is given."""
    result = simulate(loaded, seed, **kwargs)
    if out_dir is not None:
        write_outputs(result, out_dir)
    return result


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
