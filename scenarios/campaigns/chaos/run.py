"""One chaos run: write, load and simulate a :class:`ChaosSpec`, and classify its result.

The only chaos module that drives the engine (:mod:`scenarios.sim`): :func:`run_spec` (one
campaign run) and :func:`simulated_signature` (what a reproducer file does, for the
shrinker)."""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from scenarios import kinds
from scenarios.campaigns.chaos.classify import KNOWN_ISSUES, classify, failure_signature
from scenarios.campaigns.chaos.generate import ChaosConfig, ChaosSpec, generate
from scenarios.campaigns.chaos.render import spec_to_toml, step_end
from scenarios.check.metrics import step_record_end_ms
from scenarios.check.summary_types import SummaryBase
from scenarios.input.library import loads_any
from scenarios.sim.runner import RunResult, simulate

# Kafka's Streams assignor warns when a generated application asks for more standbys than it
# has clients ("Unable to assign … standby tasks"): expected in campaigns, thousands of lines.
logging.getLogger("groupsim.streams").setLevel(logging.ERROR)

__all__ = [
    "RunOutcome",
    "run_spec",
    "run_one",
    "refereed",
    "referee_counts",
    "simulated_signature",
]


@dataclass(frozen=True)
class RunOutcome:
    """The result of one chaos run (small: no event log, so it crosses processes cheaply).

    Attributes:
        index: the run's index in the campaign.
        seed: the simulation seed (the scenario file's ``seed``).
        protocol, members: the cluster drawn.
        faults: ``{kind: count}`` of the faults injected.
        violations: ``{name: count}``, known upstream issues under their names.
        new_violations: the same, without known upstream issues (what fails a run).
        first_new: ``(invariant, detail)`` of the first new violation, or ``None``.
        converged: converged within the bound (no ``liveness``/``balance`` violation).
        task_downtime_max_ms: the worst task's downtime in the run (the worst of the kind's
            :attr:`scenarios.kinds.KindWords.downtime_of`: a consumer group's partitions;
            :meth:`scenarios.kinds.GroupKind.headline`).
        converge_ms: from the end of the last fault to the last change of the running set
            (0 if nothing changed after it); ``None`` when not converged.
        wall_s: wall-clock seconds the simulation took.
        cpu_s: CPU seconds of the whole run in its process (generate, load, simulate,
            classify): what throughput on idle cores is made of.
        refereed: leader rounds the referee compared with Kafka (0 without a referee).
        refereed_answers: coordinator answers the referee compared with Kafka's
            ``GroupMetadataManager`` (0 without a referee).
        refereed_after_failover: those of them sent after the run's first coordinator
            failover (judged against the group Kafka's new coordinator loaded).
    """

    index: int
    seed: int
    protocol: str
    members: int
    faults: dict[str, int]
    violations: dict[str, int]
    new_violations: dict[str, int]
    first_new: tuple[str, str] | None
    converged: bool
    task_downtime_max_ms: int
    converge_ms: int | None
    wall_s: float
    cpu_s: float = 0.0
    refereed: int = 0
    refereed_answers: int = 0
    refereed_after_failover: int = 0

    @property
    def failed(self) -> bool:
        return bool(self.new_violations)


def refereed(result: RunResult, referee: str | None) -> int:
    """:func:`referee_counts`' leader rounds."""
    return referee_counts(result, referee)[0]


def referee_counts(result: RunResult, referee: str | None) -> tuple[int, int, int]:
    """Let ``referee`` (``"kafka"`` or ``None``) judge a finished run: each disagreement goes
    into ``result.records`` as a ``violation`` right after the record it judges (a leader's
    ``assignor`` record, a ``coordinator_response``: where an online checker would have put
    it; ``seq`` renumbered, ``cause_seq`` kept pointing at the same records), so the first
    violation in log order is the earliest fault whoever found it. Returns the leader rounds
    and the coordinator answers it compared, and how many of those answers came after the
    run's first coordinator failover.

    Raises:
        scenarios.referee.OracleUnavailable: the harness cannot run.
    """
    if referee is None:
        return 0, 0, 0
    from scenarios.referee import judge

    verdict = judge(result.records)
    if verdict.violations:
        result.records[:] = _inserted(result.records, [d.record() for d in verdict.violations])
    return verdict.compared, verdict.answers, verdict.notes["after_failover"]


def _inserted(records: list[dict[str, Any]], extra: list[dict[str, Any]]) -> list[dict[str, Any]]:
    after: dict[int, list[dict[str, Any]]] = {}
    for violation in extra:
        after.setdefault(int(violation["cause_seq"]), []).append(violation)
    base = int(records[0]["seq"]) if records else 0
    renumbered: dict[int, int] = {}
    out: list[dict[str, Any]] = []
    for record in records:
        old = int(record["seq"])
        renumbered[old] = base + len(out)
        moved = dict(record, seq=base + len(out))
        if "cause_seq" in moved:
            moved["cause_seq"] = renumbered.get(int(moved["cause_seq"]), moved["cause_seq"])
        out.append(moved)
        for violation in after.get(old, ()):
            fields = {k: v for k, v in violation.items() if k not in ("t_ms", "seq")}
            fields["cause_seq"] = renumbered[old]
            out.append({"t_ms": violation["t_ms"], "seq": base + len(out), **fields})
    return out


#: The cyclic collector's first threshold during a chaos run (Python's default is 700).
YOUNG_COLLECTION_THRESHOLD = 10_000


@contextlib.contextmanager
def young_collections_spaced(threshold: int = YOUNG_COLLECTION_THRESHOLD) -> Iterator[None]:
    """Run the block with the cyclic garbage collector's young generation collected only
    every ``threshold`` net container allocations (its other thresholds, and the setting
    after the block, unchanged).

    A run allocates hundreds of thousands of short-lived dicts, tuples and Structs (records,
    messages, queue entries) and frees nearly all of them by reference counting; at the
    default 700 the collector ran 10-60 times a run, each time re-walking the survivors:
    5 ms of a 75 ms 10-member Connect run, 12 ms of a 160 ms Streams one, 27 ms of a 50-member
    Connect one. Cycles are still collected, only less often (the same as
    :func:`members.assignors.base.pauses_gc`, for a whole run). Nothing a run computes
    depends on when the collector runs."""
    previous = gc.get_threshold()
    gc.set_threshold(max(threshold, previous[0]), *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def run_spec(spec: ChaosSpec, referee: str | None = None) -> tuple[RunOutcome, RunResult]:
    """Write, load and simulate ``spec`` with :func:`scenarios.sim.runner.simulate` (the same
    run ``groupsim run`` gives its reproducer file) and let ``referee`` judge it
    (:func:`refereed`); its outcome and the full result. The cyclic garbage collector runs
    less often meanwhile (:func:`young_collections_spaced`)."""
    with young_collections_spaced():
        return _run_spec(spec, referee)


def _run_spec(spec: ChaosSpec, referee: str | None) -> tuple[RunOutcome, RunResult]:
    text = spec_to_toml(spec)
    loaded = kinds.get(spec.group_kind).loads(text, f"{spec.name}.toml")
    started = time.perf_counter()
    result = simulate(
        loaded, spec.seed, max_cpu_s=spec.max_cpu_s, coordinator_io=referee == "kafka"
    )
    compared, answers, after_failover = referee_counts(result, referee)
    wall = time.perf_counter() - started
    headline = kinds.get(spec.group_kind).headline(result.summary)
    violations, first_new = classify(result)
    new = {k: v for k, v in violations.items() if k not in KNOWN_ISSUES}
    fault_end = max((step_end(s) for s in spec.steps), default=0)
    converge_ms: int | None = None
    if headline.converged:
        # The kinds' summaries count time to converge from the end of the last step that is
        # not a phase (metrics.step_end_ms: a restart ends when its member is back, a fault
        # when it heals), so the last change is found from the same point, not the step's start.
        last_step_end = max(
            (
                step_record_end_ms(r)
                for r in result.records
                if r.get("kind") == "step" and r.get("action") != "phase"
            ),
            default=result.summary.start_ms if isinstance(result.summary, SummaryBase) else 0,
        )
        change = last_step_end + (headline.time_to_converge_ms or 0)
        converge_ms = max(0, change - fault_end)
    outcome = RunOutcome(
        index=spec.index,
        seed=spec.seed,
        protocol=spec.protocol,
        members=spec.members,
        faults=dict(Counter(spec.kinds)),
        violations=violations,
        new_violations=new,
        first_new=first_new,
        converged=headline.converged,
        task_downtime_max_ms=headline.downtime_max_ms,
        converge_ms=converge_ms,
        wall_s=wall,
        refereed=compared,
        refereed_answers=answers,
        refereed_after_failover=after_failover,
    )
    return outcome, result


def run_one(config: ChaosConfig, campaign_seed: int, index: int) -> RunOutcome:
    """Generate and simulate run ``index`` of a campaign."""
    started = time.process_time()
    outcome = run_spec(generate(config, campaign_seed, index), config.referee)[0]
    return replace(outcome, cpu_s=time.process_time() - started)


def simulated_signature(
    text: str,
    name: str,
    seed: int,
    referee: str | None = None,
    *,
    max_cpu_s: float | None = None,
) -> tuple[str, str] | None:
    """The failure signature (:func:`failure_signature`) of scenario file text ``text``
    (named ``name``.toml) simulated with :func:`scenarios.sim.runner.simulate` at ``seed``
    (within ``max_cpu_s`` CPU seconds, and the file's own ``max_records``) and judged by
    ``referee``: what ``groupsim run FILE`` (then ``groupsim check --referee`` on its log)
    shows."""
    result = simulate(
        loads_any(text, f"{name}.toml"),
        seed,
        max_cpu_s=max_cpu_s,
        coordinator_io=referee == "kafka",
    )
    refereed(result, referee)
    return failure_signature(result)
