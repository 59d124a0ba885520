"""A chaos campaign: N independent runs on worker processes (:mod:`.workers`; each run depends
only on ``(seed, index)``, so results do not depend on the number of processes or their
scheduling), aggregated into a :class:`CampaignResult`; failing runs shrunk and written."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from scenarios import kinds
from scenarios.campaigns.chaos.classify import failure_signature
from scenarios.campaigns.chaos.generate import ChaosConfig, generate
from scenarios.campaigns.chaos.render import spec_to_toml
from scenarios.campaigns.chaos.run import RunOutcome, run_one, run_spec, simulated_signature
from scenarios.campaigns.chaos.shrink import shrink, write_reproducer_text
from scenarios.campaigns.chaos.workers import WorkerPool

__all__ = [
    "Reproducer",
    "CampaignResult",
    "CampaignInterrupted",
    "percentile",
    "run_campaign",
    "shrink_run",
]


@dataclass
class Reproducer:
    """A failing run's shrunk scenario, written under ``--out``."""

    index: int
    invariant: str
    detail: str
    path: Path | None
    steps_before: int
    steps_after: int
    verified: bool
    #: the scenario file's text (TOML)
    text: str = field(default="", repr=False)


@dataclass
class CampaignResult:
    """A campaign's runs (sorted by index) and their reproducers."""

    config: ChaosConfig
    seed: int
    outcomes: list[RunOutcome]
    reproducers: list[Reproducer] = field(default_factory=list)
    wall_s: float = 0.0
    jobs: int = 1
    #: ``--fail-fast`` stopped the campaign at its first failing run
    stopped_early: bool = False

    @property
    def runs(self) -> int:
        return len(self.outcomes)

    @property
    def failed(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if o.failed]

    @property
    def faults(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for outcome in self.outcomes:
            total.update(outcome.faults)
        return total

    @property
    def violations(self) -> Counter[str]:
        """Violation records by invariant, known upstream issues under their names."""
        total: Counter[str] = Counter()
        for outcome in self.outcomes:
            total.update(outcome.violations)
        return total

    @property
    def runs_with(self) -> Counter[str]:
        """Runs with at least one violation of each name."""
        total: Counter[str] = Counter()
        for outcome in self.outcomes:
            total.update(outcome.violations.keys())
        return total

    def downtime_percentiles(self) -> tuple[int, int]:
        values = [o.task_downtime_max_ms for o in self.outcomes]
        return percentile(values, 50), percentile(values, 99)

    def converge_percentiles(self) -> tuple[int | None, int | None]:
        values = [o.converge_ms for o in self.outcomes if o.converge_ms is not None]
        if not values:
            return None, None
        return percentile(values, 50), percentile(values, 99)

    @property
    def refereed(self) -> int:
        """Leader rounds the referee compared with Kafka over all runs (0 without one)."""
        return sum(o.refereed for o in self.outcomes)

    @property
    def refereed_answers(self) -> int:
        """Coordinator answers the referee compared with Kafka over all runs."""
        return sum(o.refereed_answers for o in self.outcomes)

    @property
    def refereed_after_failover(self) -> int:
        """Of :attr:`refereed_answers`, those sent after a run's first coordinator failover."""
        return sum(o.refereed_after_failover for o in self.outcomes)

    @property
    def runs_per_minute(self) -> float:
        """Measured: runs per wall-clock minute."""
        return 60.0 * self.runs / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_s_per_run(self) -> float:
        """Mean CPU seconds of a run (in its worker process)."""
        return sum(o.cpu_s for o in self.outcomes) / self.runs if self.runs else 0.0

    def cpu_bound_runs_per_minute(self, cores: int = 2) -> float:
        """Runs per minute ``cores`` idle cores give: ``cores × 60 / cpu_s_per_run`` (runs are
        independent and CPU-bound; a measure that does not depend on what else the machine
        runs)."""
        per_run = self.cpu_s_per_run
        return cores * 60.0 / per_run if per_run > 0 else 0.0

    def _protocols_chosen(self) -> bool:
        """Whether ``--protocol``/``--assignor`` chose among the kind's protocols."""
        return kinds.get(self.config.kind).chaos_protocols

    def to_json(self) -> dict[str, Any]:
        p50d, p99d = self.downtime_percentiles()
        p50c, p99c = self.converge_percentiles()
        return {
            "seed": self.seed,
            "runs": self.runs,
            "kind": self.config.kind,
            "members": list(self.config.members),
            "protocols": list(self.config.protocols) if self._protocols_chosen() else [],
            "faults_enabled": list(self.config.faults),
            "duration_ms": self.config.duration_ms,
            "faults_injected": dict(sorted(self.faults.items())),
            "violations": dict(sorted(self.violations.items())),
            "referee": self.config.referee,
            "refereed_rounds": self.refereed,
            "refereed_answers": self.refereed_answers,
            "refereed_after_failover": self.refereed_after_failover,
            "runs_with_violations": dict(sorted(self.runs_with.items())),
            "failed_runs": [o.index for o in self.failed],
            "stopped_at_first_failure": self.stopped_early,
            "task_downtime_max_ms_p50": p50d,
            "task_downtime_max_ms_p99": p99d,
            "converge_ms_p50": p50c,
            "converge_ms_p99": p99c,
            "wall_s": round(self.wall_s, 3),
            "runs_per_minute": round(self.runs_per_minute, 1),
            "cpu_s_per_run": round(self.cpu_s_per_run, 4),
            "cpu_bound_runs_per_minute_2_cores": round(self.cpu_bound_runs_per_minute(2), 1),
            "reproducers": [
                {
                    "index": r.index,
                    "invariant": r.invariant,
                    "detail": r.detail,
                    "path": str(r.path) if r.path else None,
                    "steps_before": r.steps_before,
                    "steps_after": r.steps_after,
                    "verified": r.verified,
                }
                for r in self.reproducers
            ],
        }


class CampaignInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a campaign; ``partial`` holds the runs that finished (sorted by
    index, not shrunk). The worker processes are gone when it is raised."""

    def __init__(self, partial: CampaignResult) -> None:
        super().__init__(f"interrupted after {partial.runs} runs")
        self.partial = partial


def percentile(values: Sequence[int], pct: float) -> int:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _run_task(args: tuple[ChaosConfig, int, int]) -> RunOutcome:
    return run_one(*args)


def _shrink_task(args: tuple[ChaosConfig, int, int, str, int]) -> Reproducer:
    """Shrink one failing run (in a worker): the reproducer's text, written by the parent."""
    config, seed, index, invariant, budget = args
    return shrink_run(config, seed, index, invariant, budget=budget)


def shrink_run(
    config: ChaosConfig, seed: int, index: int, invariant: str, *, budget: int = 400
) -> Reproducer:
    """Shrink failing run ``index`` of campaign ``seed`` (its first new violation's
    ``invariant``) and verify the TOML: loaded and simulated, it must fail with the same
    invariant, else the unshrunk scenario is kept. Writes nothing: the result's ``text`` is
    the file's content and ``path`` is ``None`` (the caller writes it, e.g. with
    :func:`scenarios.campaigns.chaos.shrink.write_reproducer_text`). Runs wherever the
    campaign's runs do (a pool process, a Spark executor): it depends only on its arguments.
    At most ``budget`` simulations for the shrinking, two more for the check."""
    spec = generate(config, seed, index)
    referee = config.referee

    def reproduces(candidate: Any) -> tuple[str, str] | None:
        return failure_signature(run_spec(candidate, referee)[1])

    try:
        shrunk = shrink(spec, invariant, budget=budget, reproduces=reproduces)
        best, text = shrunk.spec, shrunk.text
    except ValueError:  # pragma: no cover - the run failed once; it fails again (deterministic)
        best, text = spec, spec_to_toml(spec)
    # verify: the file's text, loaded and simulated, fails the same way
    found = simulated_signature(text, best.name, best.seed, referee, max_cpu_s=config.max_cpu_s)
    verified = found is not None and found[0] == invariant
    if not verified:
        best, text = spec, spec_to_toml(spec)
        found = simulated_signature(text, best.name, best.seed, referee, max_cpu_s=config.max_cpu_s)
        verified = found is not None and found[0] == invariant
    return Reproducer(
        index=index,
        invariant=invariant,
        detail=found[1] if found else "",
        path=None,
        steps_before=len(spec.steps),
        steps_after=len(best.steps),
        verified=verified,
        text=text,
    )


def run_campaign(
    config: ChaosConfig,
    runs: int,
    seed: int,
    *,
    jobs: int = 2,
    out_dir: Path | None = None,
    shrink_failures: bool = True,
    shrink_budget: int = 400,
    fail_fast: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> CampaignResult:
    """Run ``runs`` chaos runs of campaign ``seed`` on ``jobs`` processes; shrink failures.

    Each run depends only on ``(seed, index)``; outcomes are sorted by index, so the result
    does not depend on ``jobs``. With ``jobs`` ≤ 1 everything runs in this process, else on
    a :class:`~scenarios.campaigns.chaos.workers.WorkerPool`. Failing runs (a violation that
    is not a known upstream issue) are shrunk (in the workers) and written under ``out_dir``
    (here, as each arrives) when it is given. Every run has the budget of ``config``
    (``max_records``, ``max_cpu_s``): a run over it fails with ``run_budget_exceeded``.

    Args:
        fail_fast: stop at the first failing run: the runs still in flight are abandoned
            (their workers killed), and only the runs finished so far are reported, that
            failure shrunk (with ``jobs`` > 1, the first failure to *finish*).
        on_progress: called with (runs done, runs in total) after each run.

    Raises:
        CampaignInterrupted: Ctrl-C (any ``KeyboardInterrupt``) at any point; the workers
            are killed first, its ``partial`` holds the runs and reproducers finished.
        WorkerDied: a worker process was killed from outside.
        scenarios.referee.OracleUnavailable: ``config.referee`` is set and Kafka's harness
            cannot be built or run (one line).
    """
    started = time.perf_counter()
    if config.referee is not None:
        from scenarios.referee import prepare

        prepare()  # build the harness once, before the workers start their JVMs
    tasks = [(config, seed, index) for index in range(runs)]
    outcomes: list[RunOutcome] = []
    reproducers: list[Reproducer] = []
    stopped = False

    def result() -> CampaignResult:
        return CampaignResult(
            config,
            seed,
            sorted(outcomes, key=lambda o: o.index),
            sorted(reproducers, key=lambda r: r.index),
            wall_s=time.perf_counter() - started,
            jobs=jobs,
            stopped_early=stopped,
        )

    pool: WorkerPool | None = None
    try:
        if jobs > 1 and runs > 1:
            pool = WorkerPool(min(jobs, runs))
            pool.start()
        for outcome in _map(pool, _run_task, tasks):
            outcomes.append(outcome)
            if on_progress is not None:
                on_progress(len(outcomes), runs)
            if fail_fast and outcome.failed:
                stopped = True
                break
        if stopped and pool is not None:
            pool.kill()  # the runs still in flight are not wanted
            pool = None
        failed = [o for o in outcomes if o.failed]
        if failed and shrink_failures and out_dir is not None:
            shrink_tasks = [
                (config, seed, o.index, o.first_new[0] if o.first_new else "", shrink_budget)
                for o in failed
            ]
            if pool is None and jobs > 1:
                pool = WorkerPool(min(jobs, len(shrink_tasks)))
                pool.start()
            for rep in _map(pool, _shrink_task, shrink_tasks):
                path = write_reproducer_text(out_dir, seed, rep.index, rep.text)
                reproducers.append(replace(rep, path=path))
    except BaseException as exc:
        if pool is not None:
            pool.kill()
            pool = None
        if isinstance(exc, KeyboardInterrupt):
            raise CampaignInterrupted(result()) from None
        raise
    if pool is not None:
        pool.close()
    return result()


def _map(pool: WorkerPool | None, func: Callable[[Any], Any], tasks: list[Any]) -> Iterable[Any]:
    """``func`` over ``tasks``: on the pool's workers (as they finish), or here in order."""
    return pool.imap_unordered(func, tasks) if pool is not None else map(func, tasks)
