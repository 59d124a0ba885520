"""Run a scenario end to end: simulate, check, summarise.

:func:`simulate` is what ``groupsim run`` calls, for a Kafka Connect or a Kafka Streams
scenario alike; chaos campaigns, sweeps, tests and benchmarks call it too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from scenarios.eventlog import EventLog
from scenarios.input.loader import LoadedScenario
from scenarios.input.streams import LoadedStreamsScenario
from scenarios.sim.connect import ConnectKind
from scenarios.sim.engine import Engine
from scenarios.sim.streams import StreamsKind

__all__ = ["RunResult", "simulate", "kind_of"]


class RunResult(msgspec.Struct):
    """The outcome of one run.

    ``records`` is the event log (dicts, see docs/event-log.md); ``summary`` the metrics of
    :func:`scenarios.check.metrics.summarize` (Connect) or
    :func:`scenarios.check.streams_summary.summarize_streams` (Streams); ``failures`` one line
    per unmet ``[expect]``.
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


def kind_of(loaded: LoadedScenario | LoadedStreamsScenario) -> ConnectKind | StreamsKind:
    """The engine's kind of group for a loaded scenario."""
    if isinstance(loaded, LoadedStreamsScenario):
        return StreamsKind(loaded)
    return ConnectKind(loaded)


def simulate(
    loaded: LoadedScenario | LoadedStreamsScenario,
    seed: int,
    *,
    log_heartbeats: bool | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Simulate ``loaded`` with ``seed`` and evaluate it.

    Args:
        loaded: a Connect scenario (:func:`scenarios.input.loader.load_scenario`) or a Kafka
            Streams one (:func:`scenarios.input.streams.load_streams_scenario`).
        seed: the seed for every random choice of the run.
        log_heartbeats: log heartbeat RPCs (default: the scenario's ``log_heartbeats``).
        on_progress: called now and then with (virtual ms done, virtual ms in total).

    Returns:
        The run's records, summary and unmet expectations. Nothing is written.
    """
    kind = kind_of(loaded)
    log = EventLog()
    engine = Engine(kind, seed, log=log, log_heartbeats=log_heartbeats)
    progress = None
    if on_progress is not None:
        end = engine.end_ms

        def progress(now_ms: int) -> None:
            on_progress(now_ms, end)

    engine.run_until(on_progress=progress)
    summary = kind.summarize(log.records)
    for violation in kind.end_violations(log.records, summary):
        log.emit(engine.now_ms, "violation", **violation)
    log.emit(engine.now_ms, "run_end")
    summary = kind.summarize(log.records)
    return RunResult(
        scenario=loaded.scenario.name,
        seed=seed,
        records=log.records,
        summary=summary,
        failures=kind.expect_failures(summary),
    )
