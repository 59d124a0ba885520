"""A chaos campaign: N independent runs on a ``multiprocessing`` pool (each run depends only
on ``(seed, index)``, so results do not depend on the number of processes or their
scheduling), aggregated into a :class:`CampaignResult`; failing runs shrunk and written."""

from __future__ import annotations

import math
import multiprocessing
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from scenarios.campaigns.chaos.classify import failure_signature
from scenarios.campaigns.chaos.generate import ChaosConfig, generate
from scenarios.campaigns.chaos.render import spec_to_toml
from scenarios.campaigns.chaos.run import RunOutcome, run_one, run_spec, simulated_signature
from scenarios.campaigns.chaos.shrink import shrink, write_reproducer_text

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

    def to_json(self) -> dict[str, Any]:
        p50d, p99d = self.downtime_percentiles()
        p50c, p99c = self.converge_percentiles()
        return {
            "seed": self.seed,
            "runs": self.runs,
            "kind": self.config.kind,
            "members": list(self.config.members),
            "protocols": list(self.config.protocols) if self.config.kind == "connect" else [],
            "faults_enabled": list(self.config.faults),
            "duration_ms": self.config.duration_ms,
            "faults_injected": dict(sorted(self.faults.items())),
            "violations": dict(sorted(self.violations.items())),
            "referee": self.config.referee,
            "refereed_rounds": self.refereed,
            "runs_with_violations": dict(sorted(self.runs_with.items())),
            "failed_runs": [o.index for o in self.failed],
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


def _shrink_task(args: tuple[ChaosConfig, int, int, str, str, int]) -> Reproducer:
    config, seed, index, invariant, out, budget = args
    rep = shrink_run(config, seed, index, invariant, budget=budget)
    return replace(rep, path=write_reproducer_text(Path(out), seed, index, rep.text))


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
    found = simulated_signature(text, best.name, best.seed, referee)
    verified = found is not None and found[0] == invariant
    if not verified:
        best, text = spec, spec_to_toml(spec)
        found = simulated_signature(text, best.name, best.seed, referee)
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
    on_progress: Callable[[int, int], None] | None = None,
) -> CampaignResult:
    """Run ``runs`` chaos runs of campaign ``seed`` on ``jobs`` processes; shrink failures.

    Each run depends only on ``(seed, index)``; outcomes are sorted by index, so the result
    does not depend on ``jobs``. With ``jobs`` ≤ 1 everything runs in this process. Failing
    runs (a violation that is not a known upstream issue) are shrunk and written under
    ``out_dir`` when it is given.

    Args:
        on_progress: called with (runs done, runs in total) after each run.

    Raises:
        scenarios.referee.OracleUnavailable: ``config.referee`` is set and Kafka's harness
            cannot be built or run (one line).
    """
    started = time.perf_counter()
    if config.referee is not None:
        from scenarios.referee import prepare

        prepare()  # build the harness once, before the workers start their JVMs
    tasks = [(config, seed, index) for index in range(runs)]
    outcomes: list[RunOutcome] = []
    pool = _pool(jobs) if jobs > 1 and runs > 1 else None
    try:
        iterator: Iterable[RunOutcome]
        if pool is not None:
            # one run per task: Ctrl-C keeps every run that finished (a run takes far
            # longer than handing it to a worker)
            iterator = pool.imap_unordered(_run_task, tasks, chunksize=1)
        else:
            iterator = map(_run_task, tasks)
        try:
            for outcome in iterator:
                outcomes.append(outcome)
                if on_progress is not None:
                    on_progress(len(outcomes), runs)
        except KeyboardInterrupt:
            if pool is not None:
                pool.terminate()  # do not wait for the queued runs
                pool.join()
                pool = None
            outcomes.sort(key=lambda o: o.index)
            wall = time.perf_counter() - started
            raise CampaignInterrupted(
                CampaignResult(config, seed, outcomes, wall_s=wall, jobs=jobs)
            ) from None
        outcomes.sort(key=lambda o: o.index)
        wall = time.perf_counter() - started
        result = CampaignResult(config, seed, outcomes, wall_s=wall, jobs=jobs)
        failed = result.failed
        if failed and shrink_failures and out_dir is not None:
            shrink_tasks = [
                (
                    config,
                    seed,
                    o.index,
                    o.first_new[0] if o.first_new else "",
                    str(out_dir),
                    shrink_budget,
                )
                for o in failed
            ]
            try:
                if pool is not None and len(shrink_tasks) > 1:
                    reproducers = list(pool.imap(_shrink_task, shrink_tasks))
                else:
                    reproducers = [_shrink_task(t) for t in shrink_tasks]
            except KeyboardInterrupt:
                if pool is not None:
                    pool.terminate()
                    pool.join()
                    pool = None
                raise CampaignInterrupted(result) from None
            result.reproducers = sorted(reproducers, key=lambda r: r.index)
        return result
    finally:
        if pool is not None:
            pool.close()
            pool.join()


def _pool(jobs: int) -> Any:
    # fork where the OS has it: children start at once and never re-import ``__main__`` (a
    # script without a main guard works); they touch nothing but the simulation (no progress
    # bar, no shared locks). Elsewhere spawn.
    methods = multiprocessing.get_all_start_methods()
    method = "fork" if "fork" in methods else "spawn"
    return multiprocessing.get_context(method).Pool(processes=jobs, initializer=_ignore_sigint)


def _ignore_sigint() -> None:
    """Worker processes ignore Ctrl-C (the terminal sends SIGINT to the whole process group):
    the parent stops them with :meth:`multiprocessing.pool.Pool.terminate` instead, so no
    worker prints a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
