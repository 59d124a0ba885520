"""One chaos run: write, load and simulate a :class:`ChaosSpec`, and classify its result.

The only chaos module that drives the engine (:mod:`scenarios.sim`): :func:`run_spec` (one
campaign run) and :func:`simulated_signature` (what a reproducer file does, for the
shrinker)."""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, replace

from scenarios.campaigns.chaos.classify import KNOWN_ISSUES, classify, failure_signature
from scenarios.campaigns.chaos.generate import ChaosConfig, ChaosSpec, generate
from scenarios.campaigns.chaos.render import spec_to_toml, step_end
from scenarios.input.library import loads_any
from scenarios.input.loader import loads_scenario
from scenarios.input.streams import loads_streams_scenario
from scenarios.sim.runner import RunResult, simulate

# Kafka's Streams assignor warns when a generated application asks for more standbys than it
# has clients ("Unable to assign … standby tasks"): expected in campaigns, thousands of lines.
logging.getLogger("groupsim.streams").setLevel(logging.ERROR)

__all__ = [
    "RunOutcome",
    "run_spec",
    "run_one",
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
        task_downtime_max_ms: the worst task's downtime in the run.
        converge_ms: from the end of the last fault to the last change of the running set
            (0 if nothing changed after it); ``None`` when not converged.
        wall_s: wall-clock seconds the simulation took.
        cpu_s: CPU seconds of the whole run in its process (generate, load, simulate,
            classify): what throughput on idle cores is made of.
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

    @property
    def failed(self) -> bool:
        return bool(self.new_violations)


def run_spec(spec: ChaosSpec) -> tuple[RunOutcome, RunResult]:
    """Write, load and simulate ``spec`` with :func:`scenarios.sim.runner.simulate` (the same
    run ``groupsim run`` gives its reproducer file); its outcome and the full result."""
    text = spec_to_toml(spec)
    load = loads_scenario if spec.streams is None else loads_streams_scenario
    loaded = load(text, f"{spec.name}.toml")
    started = time.perf_counter()
    result = simulate(loaded, spec.seed, max_cpu_s=spec.max_cpu_s)
    wall = time.perf_counter() - started
    summary = result.summary
    violations, first_new = classify(result)
    new = {k: v for k, v in violations.items() if k not in KNOWN_ISSUES}
    fault_end = max((step_end(s) for s in spec.steps), default=0)
    converge_ms: int | None = None
    if summary.get("converged"):
        last_step = max(
            (r["t_ms"] for r in result.records if r.get("kind") == "step"),
            default=summary.get("start_ms", 0),
        )
        change = last_step + (summary.get("time_to_converge_ms") or 0)
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
        converged=bool(summary.get("converged")),
        task_downtime_max_ms=int(summary.get("task_downtime_ms_max") or 0),
        converge_ms=converge_ms,
        wall_s=wall,
    )
    return outcome, result


def run_one(config: ChaosConfig, campaign_seed: int, index: int) -> RunOutcome:
    """Generate and simulate run ``index`` of a campaign."""
    started = time.process_time()
    outcome = run_spec(generate(config, campaign_seed, index))[0]
    return replace(outcome, cpu_s=time.process_time() - started)


def simulated_signature(
    text: str, name: str, seed: int, *, max_cpu_s: float | None = None
) -> tuple[str, str] | None:
    """The failure signature (:func:`failure_signature`) of scenario file text ``text``
    (named ``name``.toml) simulated with :func:`scenarios.sim.runner.simulate` at ``seed``
    (within ``max_cpu_s`` CPU seconds, and the file's own ``max_records``): what
    ``groupsim run FILE`` shows."""
    return failure_signature(simulate(loads_any(text, f"{name}.toml"), seed, max_cpu_s=max_cpu_s))
