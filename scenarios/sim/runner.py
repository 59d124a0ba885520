"""Run a scenario end to end: simulate, check, summarise.

:func:`simulate` is what ``groupsim run`` calls, for a Kafka Connect or a Kafka Streams
scenario alike; chaos campaigns, sweeps, tests and benchmarks call it too.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from scenarios import kinds
from scenarios.check.summary_types import Summary
from scenarios.eventlog import EventLog
from scenarios.input.steps import LoadedView
from scenarios.sim.calibration import replay_holds
from scenarios.sim.engine import Engine, RunKind

__all__ = ["RunResult", "simulate", "kind_of", "RUN_BUDGET_EXCEEDED"]

#: The invariant of the violation a run that exceeds its budget ends with.
RUN_BUDGET_EXCEEDED = "run_budget_exceeded"


class _OverBudget(Exception):
    """Raised from the engine's progress callback to stop a run over its budget."""


class RunResult(msgspec.Struct):
    """The outcome of one run.

    ``records`` is the event log (dicts, see docs/event-log.md); ``summary`` the run's kind's
    summary Struct (:meth:`scenarios.sim.run_kind.RunKind.summarize`:
    :class:`~scenarios.check.summary_types.ConnectSummary`,
    :class:`~scenarios.check.summary_types.StreamsSummary` or
    :class:`~scenarios.check.summary_types.ConsumerSummary`; ``summary.json`` holds its
    builtins, :func:`scenarios.check.summary_types.summary_dict`); ``failures`` one line per
    unmet ``[expect]``.
    """

    scenario: str
    seed: int
    records: list[dict[str, Any]]
    summary: Summary
    failures: list[str]

    @property
    def exit_code(self) -> int:
        """0 when every expectation holds, 1 otherwise (``groupsim run``'s contract)."""
        return 1 if self.failures else 0


def kind_of(loaded: LoadedView) -> RunKind:
    """The engine's side of a run of ``loaded``: the registered kind named by the file's
    ``kind`` (:meth:`scenarios.kinds.GroupKind.run_kind`)."""
    return kinds.get(loaded.scenario.kind).run_kind(loaded)


def simulate(
    loaded: LoadedView,
    seed: int,
    *,
    log_heartbeats: bool | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    max_cpu_s: float | None = None,
    member_ids: Mapping[str, Sequence[str]] | None = None,
    reference: bool = False,
    coordinator_io: bool = False,
) -> RunResult:
    """Simulate ``loaded`` with ``seed`` and evaluate it.

    Args:
        loaded: a scenario of any kind (:func:`scenarios.input.library.load_any`).
        seed: the seed for every random choice of the run.
        log_heartbeats: log heartbeat RPCs (default: the scenario's ``log_heartbeats``).
        on_progress: called now and then with (virtual ms done, virtual ms in total).
        max_cpu_s: the run's CPU budget in seconds of this process (``None``: none).
        member_ids: per client id, the member ids the coordinator hands out, in order (a
            recorded run's, so that leaders follow them; :class:`~scenarios.sim.engine.Engine`).
        reference: run without the engine's fast paths (every event one by one: the
            reference their tests compare logs with); the log is the same either way.
        coordinator_io: also log the coordinator's requests, answers and timers, for the
            Kafka referee (:mod:`scenarios.sim.coordinator_io`).

    The run's budget: the scenario's ``max_records`` (a count of event-log records) and
    ``max_cpu_s``, both checked every :data:`scenarios.sim.engine.PROGRESS_EVERY` engine
    events. A run over either stops there with one ``violation`` record, invariant
    :data:`RUN_BUDGET_EXCEEDED`, instead of its end-of-run checks: a livelocked group
    (endless rebalances) would otherwise grow its log for minutes and gigabytes. The record
    budget is deterministic (the same file and seed stop at the same record); the CPU budget
    depends on the machine and is a backstop.

    Returns:
        The run's records, summary and unmet expectations. Nothing is written.
    """
    kind = kind_of(loaded)
    log = EventLog()
    engine = Engine(
        kind,
        seed,
        log=log,
        log_heartbeats=log_heartbeats,
        replay=replay_holds,
        member_ids=member_ids,
        lazy_timers=not reference,
        skip_quiet=not reference,
        coordinator_io=coordinator_io,
    )
    end = engine.end_ms
    max_records = loaded.scenario.max_records
    started = time.process_time()
    over: list[str] = []

    def progress(now_ms: int) -> None:
        if max_records is not None and len(log.records) >= max_records:
            over.append(f"{len(log.records)} records, budget {max_records}")
        elif max_cpu_s is not None and time.process_time() - started >= max_cpu_s:
            over.append(f"{time.process_time() - started:.1f} CPU s, budget {max_cpu_s:g} s")
        if over:
            raise _OverBudget
        if on_progress is not None:
            on_progress(now_ms, end)

    budgeted = max_records is not None or max_cpu_s is not None
    try:
        engine.run_until(on_progress=progress if budgeted or on_progress else None)
    except _OverBudget:
        log.emit(
            engine.now_ms,
            "violation",
            invariant=RUN_BUDGET_EXCEEDED,
            detail=f"at {engine.now_ms} ms of {end} ms: {over[0]} (a livelock? the run stops "
            "here; end-of-run checks skipped)",
        )
    else:
        records = log.records
        # the summary the end-of-run check reads, if it reads one (the log as it is now)
        before_end = functools.cache(lambda: kind.summarize(records))
        for violation in kind.end_violations(records, before_end):
            log.emit(engine.now_ms, "violation", **violation.fields())
    log.emit(engine.now_ms, "run_end")
    summary = kind.summarize(log.records)
    return RunResult(
        scenario=loaded.scenario.name,
        seed=seed,
        records=log.records,
        summary=summary,
        failures=kind.expect_failures(summary),
    )
