"""Run a scenario end to end: simulate, check, summarise.

``simulate`` is what ``groupsim run`` calls; tests and benchmarks call it too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import trio
import trio.testing

from scenarios.check.expect import evaluate
from scenarios.check.metrics import liveness_violations, summarize
from scenarios.eventlog import EventLog
from scenarios.input.loader import LoadedScenario
from scenarios.sim.world import World, run_world

__all__ = ["RunResult", "simulate"]


class RunResult(msgspec.Struct):
    """The outcome of one run.

    ``records`` is the event log (dicts, see docs/event-log.md); ``summary`` the metrics of
    :func:`scenarios.check.metrics.summarize`; ``failures`` one line per unmet ``[expect]``.
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
        loaded: a scenario from :func:`scenarios.input.loader.load_scenario`.
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
