"""Chaos campaigns: seeded random scenarios with faults, checked for safety and liveness, and
every failing run shrunk to a minimal scenario file (``groupsim chaos``; docs/chaos.md).

Three parts:

- **Generator** (:func:`generate`): from ``(campaign seed, run index)`` alone — one
  ``random.Random`` seeded with the string ``"groupsim-chaos/<seed>/<index>"``, nothing else
  random — a :class:`ChaosSpec`: a Connect cluster (member count, ``connect.protocol``, which
  implies the assignor, a few randomised timings), a workload, and a timeline of faults drawn
  from the enabled kinds at random times within the fault window, written in time order. The
  run then continues for the **liveness bound** (:func:`liveness_bound_ms`): the scenario's
  ``settle_ms`` is the bound, so the run ends ``bound`` after the last fault has ended, and
  the runner's end-of-run check (every configured job runs exactly once, balanced) is the
  liveness property "converged within the bound".
- **Campaign** (:func:`run_campaign`): N independent runs on a ``multiprocessing`` pool
  (spawned processes; each run depends only on ``(seed, index)``, so results do not depend on
  the number of processes or their scheduling), aggregated into a :class:`CampaignResult`.
- **Shrinker** (:func:`shrink`): delta debugging (ddmin) over the fault steps, keeping the
  failure signature (the first violation's invariant that is not a known upstream issue),
  then cheap number simplifications; the minimal scenario is written atomically as
  ``chaos-<seed>-<index>.toml`` and verified to reproduce with :func:`scenarios.sim.runner.simulate`
  (so ``groupsim run FILE`` reproduces it).

Known upstream behaviours (violations carrying ``known_issue``: KAFKA-13816, KAFKA-9184,
KAFKA-16056) are counted under their names and do not fail a campaign; generated scenarios
list them in ``[expect] expected_violations``.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from members.assignors.incremental_cooperative import exponential_backoff
from scenarios.check.invariants import KNOWN_ISSUES
from scenarios.input.loader import LoadedScenario, ScenarioError, loads_scenario
from scenarios.sim.runner import RunResult, simulate

__all__ = [
    "PROTOCOLS",
    "ASSIGNOR_OF",
    "FAULT_KINDS",
    "DEFAULT_FAULT_KINDS",
    "BOUND_ROUNDS",
    "ChaosConfig",
    "ChaosSpec",
    "RunOutcome",
    "CampaignResult",
    "liveness_bound_ms",
    "bound_for",
    "generate",
    "spec_to_toml",
    "run_spec",
    "simulate_sync",
    "run_one",
    "run_campaign",
    "failure_signature",
    "classify",
    "known_issue_of",
    "shrink",
    "ddmin",
    "write_reproducer",
    "percentile",
]

#: ``connect.protocol`` values a chaos run can start from.
PROTOCOLS = ("eager", "compatible", "sessioned", "static")
#: The assignor the group's leader runs under each protocol.
ASSIGNOR_OF = {
    "eager": "eager",
    "compatible": "incremental_cooperative",
    "sessioned": "incremental_cooperative",
    "static": "static",
}
#: Fault kinds: ``crash``/``leave`` (a worker stops, hard or clean, and mostly comes back),
#: ``partition``, ``loss``, ``latency`` (its coordinator link), ``slow`` (its herder stalls),
#: ``failover`` (the coordinator moves), ``config`` (connector writes and protocol changes).
FAULT_KINDS = ("crash", "leave", "partition", "loss", "latency", "slow", "failover", "config")
DEFAULT_FAULT_KINDS = FAULT_KINDS

#: Rounds of (session timeout + rebalance timeout + heartbeat + herder work) in the bound.
BOUND_ROUNDS = 6

HOUR_MS = 3_600_000
#: Faults per virtual hour at most (a run draws 1 … this × duration / 1 h).
FAULTS_PER_HOUR = 20
#: Largest task count a generated connector gets.
MAX_TASKS = 8


# ----------------------------------------------------------------------------- the bound


def liveness_bound_ms(
    *,
    max_delay_ms: int,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    heartbeat_interval_ms: int,
    initial_rebalance_delay_ms: int,
    herder_round_ms: int = 0,
    network_ms: int = 1,
    unsync_backoff_ms: int = 0,
    rounds: int = BOUND_ROUNDS,
) -> int:
    """How long after the last fault ends a Connect group must have converged (virtual ms).

    ``bound = G + D + B + U + rounds × (S + R + H + W + 4 × N)`` with

    - ``G`` = ``group.initial.rebalance.delay.ms`` (the group may have emptied and restart),
    - ``D`` = ``scheduled.rebalance.max.delay.ms`` (lost work waits for its worker this long),
    - ``B`` = the longest successive-revocation backoff reachable: Kafka's
      ``ExponentialBackoff(1, 40, D)`` grows 40, 1600, 64000 … and is capped at ``D``, so
      ``B = D`` (0 when ``D`` is 0),
    - ``U`` = ``worker.unsync.backoff.ms`` when a worker may fail to read the config topic
      within ``worker.sync.timeout.ms`` (``groupsim.config.read.lag.ms`` ≥ it), else 0,
    - per round: ``S`` = ``session.timeout.ms`` (a gone member is noticed), ``R`` =
      ``rebalance.timeout.ms`` (the join phase waits for slow members), ``H`` =
      ``heartbeat.interval.ms`` (members learn of a rebalance on a heartbeat), ``W`` = herder
      work of a round (stopping and starting every job one after the other), ``N`` = one-way
      network delay (latency + jitter); ``rounds`` (6) covers the round after the fault, the
      delayed-rebalance round, a revoking round and its follow-up, and a backoff round and its
      follow-up.

    With Kafka's defaults (S 10 s, R 60 s, H 3 s, D 300 s, G 3 s) and no herder time this is
    3000 + 300000 + 300000 + 6 × 73004 = 1041024 ms, about 17.4 minutes.
    """
    backoff = exponential_backoff(max_delay_ms, 64)
    per_round = (
        session_timeout_ms
        + rebalance_timeout_ms
        + heartbeat_interval_ms
        + herder_round_ms
        + 4 * network_ms
    )
    return (
        initial_rebalance_delay_ms + max_delay_ms + backoff + unsync_backoff_ms + rounds * per_round
    )


def bound_for(loaded: LoadedScenario) -> int:
    """:func:`liveness_bound_ms` for a loaded scenario: the largest of each setting over every
    worker config it uses (cluster workers and ``join``/``restart`` steps), herder work for the
    most jobs it ever configures."""
    configs = [w.config for w in loaded.workers]
    configs += [s.config for s in loaded.steps if s.config is not None]
    jobs = len(loaded.connectors) + sum(loaded.connectors.values())
    current = dict(loaded.connectors)
    for step in loaded.steps:
        if step.action in ("add_connector", "set_tasks") and step.connector is not None:
            current[step.connector] = step.tasks or 0
        elif step.action == "remove_connector" and step.connector is not None:
            current.pop(step.connector, None)
        jobs = max(jobs, len(current) + sum(current.values()))
    per_job = (
        max(
            (max(c.connector_start_ms + c.connector_stop_ms, c.task_start_ms + c.task_stop_ms))
            for c in configs
        )
        if configs
        else 0
    )
    unsync = max(
        (
            c.worker_unsync_backoff_ms + c.config_read_lag_ms
            for c in configs
            if c.config_read_lag_ms >= c.worker_sync_timeout_ms
        ),
        default=0,
    )
    network = loaded.network.latency_ms + loaded.network.jitter_ms
    return liveness_bound_ms(
        max_delay_ms=max((c.scheduled_rebalance_max_delay_ms for c in configs), default=0),
        session_timeout_ms=max((c.session_timeout_ms for c in configs), default=0),
        rebalance_timeout_ms=max((c.rebalance_timeout_ms for c in configs), default=0),
        heartbeat_interval_ms=max((c.heartbeat_interval_ms for c in configs), default=0),
        initial_rebalance_delay_ms=loaded.coordinator_config.initial_rebalance_delay_ms,
        herder_round_ms=jobs * per_job,
        network_ms=network,
        unsync_backoff_ms=unsync,
    )


# ----------------------------------------------------------------------------- generator


@dataclass(frozen=True)
class ChaosConfig:
    """What a campaign draws from.

    Attributes:
        members: (low, high) member count, inclusive.
        protocols: ``connect.protocol`` values a run may start from (one per run).
        faults: enabled fault kinds (:data:`FAULT_KINDS`).
        duration_ms: the fault window: faults start in ``[0, duration_ms)``.
        max_faults: at most this many faults per run (default: 20 per virtual hour, ≥ 1).
    """

    members: tuple[int, int] = (3, 10)
    protocols: tuple[str, ...] = PROTOCOLS
    faults: tuple[str, ...] = DEFAULT_FAULT_KINDS
    duration_ms: int = HOUR_MS
    max_faults: int | None = None

    def __post_init__(self) -> None:
        low, high = self.members
        if not 1 <= low <= high:
            raise ValueError(f"members: expected 1 <= low <= high, got {low}..{high}")
        if not self.protocols or any(p not in PROTOCOLS for p in self.protocols):
            raise ValueError(f"protocols: expected some of {', '.join(PROTOCOLS)}")
        if any(f not in FAULT_KINDS for f in self.faults):
            raise ValueError(f"faults: expected some of {', '.join(FAULT_KINDS)}")
        if self.duration_ms < 1:
            raise ValueError("duration_ms: expected >= 1")

    @property
    def fault_limit(self) -> int:
        if not self.faults:
            return 0
        if self.max_faults is not None:
            return max(0, self.max_faults)
        return max(1, round(FAULTS_PER_HOUR * self.duration_ms / HOUR_MS))


@dataclass
class ChaosSpec:
    """One chaos scenario, before it is written as TOML (:func:`spec_to_toml`).

    ``steps`` are timeline tables in time order (``at_ms``, ``action``, the action's keys);
    ``kinds[i]`` is the fault kind that produced ``steps[i]``. ``worker_configs`` holds each
    worker's own settings on top of ``cluster_config``.
    """

    name: str
    seed: int
    campaign_seed: int
    index: int
    protocol: str
    members: int
    cluster_config: dict[str, Any]
    worker_configs: dict[str, dict[str, Any]]
    jitter_ms: int
    connectors: list[tuple[str, int]]
    steps: list[dict[str, Any]]
    kinds: list[str]
    duration_ms: int
    description: str = ""

    def with_steps(self, keep: Sequence[int]) -> ChaosSpec:
        """A copy keeping only the steps at indexes ``keep`` (in order)."""
        return replace(
            self,
            steps=[dict(self.steps[i]) for i in keep],
            kinds=[self.kinds[i] for i in keep],
        )

    @property
    def worker_names(self) -> list[str]:
        return [f"w{i}" for i in range(1, self.members + 1)]


def _rng(campaign_seed: int, index: int) -> random.Random:
    return random.Random(f"groupsim-chaos/{campaign_seed}/{index}")


def generate(config: ChaosConfig, campaign_seed: int, index: int) -> ChaosSpec:
    """The chaos scenario of run ``index`` of campaign ``campaign_seed`` (deterministic)."""
    rng = _rng(campaign_seed, index)
    protocol = rng.choice(config.protocols)
    n = rng.randint(*config.members)
    names = [f"w{i}" for i in range(1, n + 1)]
    max_delay = rng.choice((300_000, 300_000, 60_000, 10_000, 0))
    herder = rng.choice((0, 0, 10, 50))
    cluster_config: dict[str, Any] = {
        "connect.protocol": protocol,
        "scheduled.rebalance.max.delay.ms": max_delay,
    }
    if herder:
        cluster_config["groupsim.task.start.ms"] = herder
        cluster_config["groupsim.task.stop.ms"] = herder
    jitter = rng.choice((0, 0, 1, 5))
    connectors = [(f"c{i}", rng.randint(0, MAX_TASKS)) for i in range(1, rng.randint(1, n) + 1)]

    worker_configs: dict[str, dict[str, Any]] = {}
    static_workers: set[str] = set()
    if protocol == "static" and n >= 3:
        for name in rng.sample(names, rng.randint(0, n // 3)):
            claimed = rng.sample(connectors, rng.randint(1, min(2, len(connectors))))
            worker_configs[name] = {
                "static.connectors": [c for c, _ in claimed],
                "static.tasks": [f"{c}-0" for c, t in claimed if t > 0][:1],
            }
            static_workers.add(name)

    gen = _Timeline(rng, names, static_workers, dict(connectors), protocol)
    count = rng.randint(1, config.fault_limit) if config.fault_limit else 0
    times = sorted(rng.randrange(config.duration_ms) for _ in range(count))
    for at_ms in times:
        gen.fault(rng.choice(config.faults), at_ms)

    return ChaosSpec(
        name=f"chaos-{campaign_seed}-{index}",
        seed=rng.getrandbits(32),
        campaign_seed=campaign_seed,
        index=index,
        protocol=protocol,
        members=n,
        cluster_config=cluster_config,
        worker_configs=worker_configs,
        jitter_ms=jitter,
        connectors=connectors,
        steps=gen.steps,
        kinds=gen.kinds,
        duration_ms=config.duration_ms,
        description=(
            f"groupsim chaos: campaign seed {campaign_seed}, run {index}: {n} {protocol} "
            f"workers, {len(gen.steps)} faults in {config.duration_ms} ms"
        ),
    )


class _Timeline:
    """Draws fault steps that the loader accepts: a worker is stopped only while it runs, at
    least half the workers (and, under ``static``, two wildcard workers) stay for good, and
    connector writes follow the connectors that exist at that time."""

    def __init__(
        self,
        rng: random.Random,
        names: list[str],
        static_workers: set[str],
        connectors: dict[str, int],
        protocol: str,
    ) -> None:
        self.rng = rng
        self.names = names
        self.static = static_workers
        self.up_at = dict.fromkeys(names, 0)  # running from this time on
        self.gone: set[str] = set()
        self.connectors = connectors
        self.protocol_of = dict.fromkeys(names, protocol)
        self.next_connector = len(connectors) + 1
        self.steps: list[dict[str, Any]] = []
        self.kinds: list[str] = []

    def add(self, kind: str, step: dict[str, Any]) -> None:
        self.steps.append(step)
        self.kinds.append(kind)

    def running(self, at_ms: int) -> list[str]:
        return [m for m in self.names if m not in self.gone and self.up_at[m] < at_ms]

    def may_remove_for_good(self, member: str) -> bool:
        staying = [m for m in self.names if m not in self.gone and m != member]
        wildcard = [m for m in staying if m not in self.static]
        return len(staying) >= max(2, math.ceil(len(self.names) / 2)) and len(wildcard) >= 2

    def fault(self, kind: str, at_ms: int) -> None:
        rng = self.rng
        present = [m for m in self.names if m not in self.gone]
        if kind in ("crash", "leave"):
            running = self.running(at_ms)
            if not running:
                return
            member = rng.choice(running)
            if rng.random() < 0.2 and self.may_remove_for_good(member):
                self.gone.add(member)
                self.add(kind, {"at_ms": at_ms, "action": kind, "member": member})
                return
            down = rng.choice((0, rng.randint(1_000, 120_000)))
            self.up_at[member] = at_ms + down
            self.add(
                kind,
                {
                    "at_ms": at_ms,
                    "action": "restart",
                    "member": member,
                    "clean": kind == "leave",
                    "down_ms": down,
                },
            )
        elif kind == "partition":
            self.add(
                kind,
                {
                    "at_ms": at_ms,
                    "action": "partition",
                    "member": rng.choice(present),
                    "duration_ms": rng.randint(1_000, 120_000),
                },
            )
        elif kind == "loss":
            self.add(
                kind,
                {
                    "at_ms": at_ms,
                    "action": "loss",
                    "member": rng.choice(present),
                    "direction": rng.choice(("to_coordinator", "from_coordinator", "both")),
                    "probability": round(rng.uniform(0.05, 1.0), 2),
                    "duration_ms": rng.randint(1_000, 60_000),
                },
            )
        elif kind == "latency":
            self.add(
                kind,
                {
                    "at_ms": at_ms,
                    "action": "latency",
                    "member": rng.choice(present),
                    "extra_ms": rng.randint(1, 5_000),
                    "duration_ms": rng.randint(1_000, 60_000),
                },
            )
        elif kind == "slow":
            # half of the stalls outlast rebalance.timeout.ms (60 s): KAFKA-16056's path
            stall = rng.choice((rng.randint(100, 30_000), rng.randint(60_001, 90_000)))
            self.add(
                kind,
                {
                    "at_ms": at_ms,
                    "action": "slow",
                    "member": rng.choice(present),
                    "stall_ms": stall,
                },
            )
        elif kind == "failover":
            down = rng.choice((0, rng.randint(1, 10_000)))
            self.add(kind, {"at_ms": at_ms, "action": "coordinator_failover", "down_ms": down})
        elif kind == "config":
            self.config_fault(at_ms)

    def config_fault(self, at_ms: int) -> None:
        rng = self.rng
        roll = rng.random()
        running = self.running(at_ms)
        if roll < 0.15 and running:
            # a worker restarted with another connect.protocol (upgrade or downgrade)
            member = rng.choice(running)
            target = rng.choice([p for p in PROTOCOLS if p != self.protocol_of[member]])
            self.protocol_of[member] = target
            self.add(
                "config",
                {
                    "at_ms": at_ms,
                    "action": "restart",
                    "member": member,
                    "config": {"connect.protocol": target},
                },
            )
        elif roll < 0.5 or not self.connectors:
            name = f"c{self.next_connector}"
            self.next_connector += 1
            tasks = rng.randint(0, MAX_TASKS)
            self.connectors[name] = tasks
            self.add(
                "config",
                {"at_ms": at_ms, "action": "add_connector", "connector": name, "tasks": tasks},
            )
        elif roll < 0.75:
            name = rng.choice(sorted(self.connectors))
            tasks = rng.randint(0, MAX_TASKS)
            self.connectors[name] = tasks
            self.add(
                "config",
                {"at_ms": at_ms, "action": "set_tasks", "connector": name, "tasks": tasks},
            )
        else:
            name = rng.choice(sorted(self.connectors))
            del self.connectors[name]
            self.add("config", {"at_ms": at_ms, "action": "remove_connector", "connector": name})


# ----------------------------------------------------------------------------- TOML


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
        )
    raise TypeError(f"not a TOML value: {value!r}")


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _step_end(step: dict[str, Any]) -> int:
    return int(step["at_ms"]) + sum(
        int(step.get(k, 0)) for k in ("down_ms", "duration_ms", "stall_ms")
    )


def spec_to_toml(spec: ChaosSpec) -> str:
    """The scenario file of ``spec``: ``settle_ms`` is its liveness bound, so the run lasts the
    bound after the last fault ends; known upstream issues are expected (named, not failed)."""
    text = _render(spec, settle_ms=0)
    settle = bound_for(loads_scenario(text, f"{spec.name}.toml"))
    return _render(spec, settle_ms=settle)


def _render(spec: ChaosSpec, settle_ms: int) -> str:
    out = [
        f"# {spec.description or spec.name}",
        f"# Reproduce: groupsim run {spec.name}.toml   (seed {spec.seed} is the file's own)",
        "# settle_ms is the liveness bound (scenarios.campaigns.chaos.liveness_bound_ms) after the"
        f" last fault ends at {max((_step_end(s) for s in spec.steps), default=0)} ms.",
        f"name = {_toml_value(spec.name)}",
        f"description = {_toml_value(spec.description)}",
        f"seed = {spec.seed}",
        f"settle_ms = {settle_ms}",
        "",
        "[network]",
        "latency_ms = 1",
        f"jitter_ms = {spec.jitter_ms}",
        "",
        "[cluster]",
    ]
    if spec.worker_configs:
        out.append(f"size = {spec.members}")
        out.append("")
        out.append("[cluster.config]")
        out += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in spec.cluster_config.items()]
        for name in spec.worker_names:
            out += ["", "[[cluster.workers]]", f"name = {_toml_value(name)}"]
            own = spec.worker_configs.get(name)
            if own:
                out.append(f"config = {_toml_value(own)}")
    else:
        out.append(f"size = {spec.members}")
        out.append("")
        out.append("[cluster.config]")
        out += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in spec.cluster_config.items()]
    for name, tasks in spec.connectors:
        out += ["", "[[workload.connectors]]", f"name = {_toml_value(name)}", f"tasks = {tasks}"]
    for kind, step in zip(spec.kinds, spec.steps, strict=True):
        out += ["", f"[[timeline]]  # fault: {kind}"]
        out += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in step.items()]
    out += ["", "[expect]", f"expected_violations = {_toml_value(list(KNOWN_ISSUES))}", ""]
    return "\n".join(out)


# ----------------------------------------------------------------------------- one run


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


def known_issue_of(record: dict[str, Any], result: RunResult) -> str | None:
    """The known upstream issue a ``violation`` record belongs to, or ``None``.

    A record with ``known_issue`` belongs to it. So does an end-of-run ``liveness`` violation
    whose only problem is instances running twice that a known-issue ``double_ownership``
    started (KAFKA-13816's duplicate lasts until the next eager rebalance; with no further
    rebalance it is still there at the end), and a ``balance`` violation in such a run whose
    spread those duplicates explain (at most 1 + their number).
    """
    if record.get("known_issue"):
        return str(record["known_issue"])
    invariant = record.get("invariant")
    if invariant not in ("liveness", "balance"):
        return None
    issues: dict[str, str] = {}
    for r in result.records:
        if r.get("kind") == "violation" and r.get("known_issue"):
            for what in ("task", "connector"):
                if r.get(what) is not None:
                    issues[f"{what}:{r[what]}"] = str(r["known_issue"])
    if not issues:
        return None
    conv = result.summary.get("convergence") or {}
    duplicates = [f"task:{t}" for t in conv.get("duplicate_tasks", ())] + [
        f"connector:{c}" for c in conv.get("duplicate_connectors", ())
    ]
    others = any(
        conv.get(k)
        for k in (
            "not_running_tasks",
            "not_running_connectors",
            "unconfigured_running_tasks",
            "unconfigured_running_connectors",
        )
    )
    if not duplicates or others or any(d not in issues for d in duplicates):
        return None
    if invariant == "balance":
        spread = max(conv.get("task_spread", 0), conv.get("connector_spread", 0))
        if spread > 1 + len(duplicates):
            return None
    return issues[duplicates[0]]


def classify(result: RunResult) -> tuple[dict[str, int], tuple[str, str] | None]:
    """The run's violations by name (known upstream issues, including what
    :func:`known_issue_of` attributes to them, under their names) and ``(invariant, detail)``
    of its first violation that is not a known issue (or ``None``)."""
    counts: dict[str, int] = {}
    first: tuple[str, str] | None = None
    for record in result.records:
        if record.get("kind") != "violation":
            continue
        known = known_issue_of(record, result)
        name = known or str(record.get("invariant"))
        counts[name] = counts.get(name, 0) + 1
        if known is None and first is None:
            first = (str(record.get("invariant")), str(record.get("detail", "")))
    return dict(sorted(counts.items())), first


def failure_signature(result: RunResult) -> tuple[str, str] | None:
    """``(invariant, detail)`` of the run's first violation that is not a known upstream
    issue (:func:`known_issue_of`), or ``None``."""
    return classify(result)[1]


#: The same as :func:`scenarios.sim.runner.simulate` (the engine runs its own loop; there is no
#: separate fast path any more). Kept for callers of the old name.
simulate_sync = simulate


def run_spec(spec: ChaosSpec, *, fast: bool = True) -> tuple[RunOutcome, RunResult]:
    """Write, load and simulate ``spec`` (with :func:`simulate_sync` when ``fast``, else
    :func:`scenarios.sim.runner.simulate`); its outcome and the full result."""
    text = spec_to_toml(spec)
    loaded = loads_scenario(text, f"{spec.name}.toml")
    started = time.perf_counter()
    result = simulate_sync(loaded, spec.seed) if fast else simulate(loaded, spec.seed)
    wall = time.perf_counter() - started
    summary = result.summary
    violations, first_new = classify(result)
    new = {k: v for k, v in violations.items() if k not in KNOWN_ISSUES}
    fault_end = max((_step_end(s) for s in spec.steps), default=0)
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


# ----------------------------------------------------------------------------- shrinking


def ddmin(items: Sequence[int], fails: Callable[[list[int]], bool]) -> list[int]:
    """Zeller's ddmin: a 1-minimal sublist of ``items`` (order kept) on which ``fails`` holds.

    ``fails(items)`` must hold. Subsets are tried first, then complements, with granularity
    doubling up to single items; a candidate that cannot be tested (``fails`` returns False,
    e.g. the scenario no longer loads) counts as passing.
    """
    current = list(items)
    n = 2
    while len(current) >= 2:
        size = math.ceil(len(current) / n)
        chunks = [current[i : i + size] for i in range(0, len(current), size)]
        reduced = False
        for chunk in chunks:
            if fails(chunk):
                current, n, reduced = chunk, 2, True
                break
        if not reduced:
            for i in range(len(chunks)):
                complement = [x for j, c in enumerate(chunks) if j != i for x in c]
                if fails(complement):
                    current, n, reduced = complement, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    if len(current) == 1 and fails([]):
        return []
    return current


@dataclass
class ShrinkResult:
    """A shrunk failing scenario: the spec, its TOML, the signature kept, simulations run."""

    spec: ChaosSpec
    text: str
    invariant: str
    detail: str
    tests: int
    original_steps: int


def shrink(
    spec: ChaosSpec,
    invariant: str | None = None,
    *,
    budget: int = 400,
    reproduces: Callable[[ChaosSpec], tuple[str, str] | None] | None = None,
) -> ShrinkResult:
    """Shrink a failing chaos scenario to a minimal one with the same failure signature.

    Args:
        spec: a scenario whose run has a violation that is not a known upstream issue.
        invariant: the invariant to keep (default: the first such violation's).
        budget: at most this many simulations.
        reproduces: the failure oracle (default: simulate the scenario and return its
            :func:`failure_signature`); tests pass a synthetic one. ``None`` means it passes.

    ddmin over the fault steps, then, while the budget lasts, number simplifications that
    keep the signature: stop steps without a pause, partitions/losses/latencies/stalls and
    failover pauses halved (down to 1 ms, or 0 for pauses), loss probabilities set to 1,
    connectors no step names dropped, task counts lowered, the member count lowered while no
    step names the last member.
    """
    oracle = reproduces or _simulated_signature
    tests = 0

    def signature(candidate: ChaosSpec) -> tuple[str, str] | None:
        nonlocal tests
        tests += 1
        try:
            return oracle(candidate)
        except ScenarioError:
            return None

    first = signature(spec)
    if first is None:
        raise ValueError(f"{spec.name}: the scenario does not fail")
    want = invariant or first[0]
    kept: dict[str, Any] = {"detail": first[1] if first[0] == want else ""}

    def fails(candidate: ChaosSpec) -> bool:
        if tests >= budget:
            return False
        found = signature(candidate)
        if found is not None and found[0] == want:
            kept["detail"] = found[1]
            return True
        return False

    original = len(spec.steps)
    keep = ddmin(range(len(spec.steps)), lambda idx: fails(spec.with_steps(idx)))
    best = spec.with_steps(keep)

    # cheap number simplifications, each kept only if the signature stays
    for candidate_of in _simplifications(best):
        if tests >= budget:
            break
        candidate = candidate_of(best)
        if candidate is not None and fails(candidate):
            best = candidate
    best = replace(
        best,
        description=(
            f"groupsim chaos: campaign seed {spec.campaign_seed}, run {spec.index}, shrunk "
            f"from {original} to {len(best.steps)} faults ({want}): {best.members} "
            f"{best.protocol} workers"
        ),
    )
    text = spec_to_toml(best)
    return ShrinkResult(best, text, want, str(kept["detail"]), tests, original)


def _simulated_signature(spec: ChaosSpec) -> tuple[str, str] | None:
    _, result = run_spec(spec)
    return failure_signature(result)


_Simplify = Callable[[ChaosSpec], ChaosSpec | None]


def _simplifications(spec: ChaosSpec) -> Iterable[_Simplify]:
    """Candidate edits, generated lazily against the current best spec."""
    for i in range(len(spec.steps)):
        for key, floor in (("down_ms", 0), ("duration_ms", 1), ("stall_ms", 1)):
            if key in spec.steps[i]:
                for _ in range(3):
                    yield _halve(i, key, floor)
        if "probability" in spec.steps[i]:
            yield _set(i, "probability", 1.0)
        if "extra_ms" in spec.steps[i]:
            yield _halve(i, "extra_ms", 1)
    yield _shift_earlier
    yield _compact_members
    for name, _ in list(spec.connectors):
        yield _drop_connector(name)
    for name, _ in list(spec.connectors):
        yield _lower_tasks(name)
    for _ in range(spec.members):
        yield _drop_last_member


def _halve(i: int, key: str, floor: int) -> _Simplify:
    def edit(spec: ChaosSpec) -> ChaosSpec | None:
        if i >= len(spec.steps) or key not in spec.steps[i]:
            return None
        value = int(spec.steps[i][key])
        new = max(floor, value // 2 if value > 1 else floor)
        if new == value:
            return None
        return _with_step(spec, i, key, new)

    return edit


def _set(i: int, key: str, value: Any) -> _Simplify:
    def edit(spec: ChaosSpec) -> ChaosSpec | None:
        if i >= len(spec.steps) or spec.steps[i].get(key) == value:
            return None
        return _with_step(spec, i, key, value)

    return edit


def _with_step(spec: ChaosSpec, i: int, key: str, value: Any) -> ChaosSpec:
    steps = [dict(s) for s in spec.steps]
    steps[i][key] = value
    return replace(spec, steps=steps)


def _drop_connector(name: str) -> _Simplify:
    def edit(spec: ChaosSpec) -> ChaosSpec | None:
        if len(spec.connectors) <= 1 or name not in dict(spec.connectors):
            return None
        if any(s.get("connector") == name for s in spec.steps):
            return None
        configs = {
            w: {
                k: [x for x in v if x != name and not str(x).startswith(f"{name}-")]
                if isinstance(v, list)
                else v
                for k, v in c.items()
            }
            for w, c in spec.worker_configs.items()
        }
        return replace(
            spec,
            connectors=[(c, t) for c, t in spec.connectors if c != name],
            worker_configs=configs,
        )

    return edit


def _lower_tasks(name: str) -> _Simplify:
    def edit(spec: ChaosSpec) -> ChaosSpec | None:
        tasks = dict(spec.connectors).get(name)
        if not tasks:
            return None
        return replace(
            spec, connectors=[(c, t // 2 if c == name else t) for c, t in spec.connectors]
        )

    return edit


def _shift_earlier(spec: ChaosSpec) -> ChaosSpec | None:
    """Move the whole timeline earlier so that it starts at 30 s (the group has formed)."""
    if not spec.steps or spec.steps[0]["at_ms"] <= 30_000:
        return None
    delta = spec.steps[0]["at_ms"] - 30_000
    steps = [{**s, "at_ms": s["at_ms"] - delta} for s in spec.steps]
    return replace(spec, steps=steps)


def _compact_members(spec: ChaosSpec) -> ChaosSpec | None:
    """Rename the members the steps name to w1, w2, … (first use order), the others after."""
    used: list[str] = []
    for step in spec.steps:
        member = step.get("member")
        if member is not None and member not in used:
            used.append(member)
    order = used + [m for m in spec.worker_names if m not in used]
    mapping = {old: f"w{i}" for i, old in enumerate(order, 1)}
    if all(k == v for k, v in mapping.items()):
        return None
    steps = [
        {**s, "member": mapping[s["member"]]} if "member" in s else dict(s) for s in spec.steps
    ]
    configs = {mapping[w]: c for w, c in spec.worker_configs.items()}
    return replace(spec, steps=steps, worker_configs=configs)


def _drop_last_member(spec: ChaosSpec) -> ChaosSpec | None:
    if spec.members <= 1:
        return None
    last = f"w{spec.members}"
    if any(s.get("member") == last for s in spec.steps):
        return None
    configs = {w: c for w, c in spec.worker_configs.items() if w != last}
    return replace(spec, members=spec.members - 1, worker_configs=configs)


def write_reproducer(out_dir: Path, spec: ChaosSpec, text: str | None = None) -> Path:
    """Write ``spec``'s TOML as ``out_dir/chaos-<campaign seed>-<index>.toml`` atomically (a
    temporary name in the same directory, then a rename)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"chaos-{spec.campaign_seed}-{spec.index}.toml"
    body = text if text is not None else spec_to_toml(spec)
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# ----------------------------------------------------------------------------- campaign


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
            "members": list(self.config.members),
            "protocols": list(self.config.protocols),
            "faults_enabled": list(self.config.faults),
            "duration_ms": self.config.duration_ms,
            "faults_injected": dict(sorted(self.faults.items())),
            "violations": dict(sorted(self.violations.items())),
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
    spec = generate(config, seed, index)
    try:
        shrunk = shrink(spec, invariant, budget=budget)
        best, text = shrunk.spec, shrunk.text
    except ValueError:  # pragma: no cover - the run failed once; it fails again (deterministic)
        best, text = spec, spec_to_toml(spec)
    # verify: the written file, loaded and simulated, fails the same way
    found = failure_signature(simulate(loads_scenario(text, f"{best.name}.toml"), best.seed))
    verified = found is not None and found[0] == invariant
    if not verified:
        best, text = spec, spec_to_toml(spec)
        found = failure_signature(simulate(loads_scenario(text, f"{best.name}.toml"), best.seed))
        verified = found is not None and found[0] == invariant
    path = write_reproducer(Path(out), best, text)
    return Reproducer(
        index=index,
        invariant=invariant,
        detail=found[1] if found else "",
        path=path,
        steps_before=len(spec.steps),
        steps_after=len(best.steps),
        verified=verified,
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
    """
    started = time.perf_counter()
    tasks = [(config, seed, index) for index in range(runs)]
    outcomes: list[RunOutcome] = []
    pool = _pool(jobs) if jobs > 1 and runs > 1 else None
    try:
        iterator: Iterable[RunOutcome]
        if pool is not None:
            chunk = max(1, min(16, runs // (jobs * 8) or 1))
            iterator = pool.imap_unordered(_run_task, tasks, chunksize=chunk)
        else:
            iterator = map(_run_task, tasks)
        for outcome in iterator:
            outcomes.append(outcome)
            if on_progress is not None:
                on_progress(len(outcomes), runs)
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
            if pool is not None and len(shrink_tasks) > 1:
                reproducers = list(pool.imap(_shrink_task, shrink_tasks))
            else:
                reproducers = [_shrink_task(t) for t in shrink_tasks]
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
    return multiprocessing.get_context(method).Pool(processes=jobs)
