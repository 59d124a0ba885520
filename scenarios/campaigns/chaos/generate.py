"""The chaos generator: from ``(campaign seed, run index)`` alone — one ``random.Random`` seeded
with the string ``"groupsim-chaos/<seed>/<index>"``, nothing else random — a :class:`ChaosSpec`:
a Connect cluster (member count, ``connect.protocol``, which implies the assignor, a few
randomised timings), a workload, and a timeline of faults drawn from the enabled kinds at
random times within the fault window, written in time order."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from scenarios import kinds
from scenarios.campaigns.chaos.coordinator_draw import draw_coordinator
from scenarios.campaigns.chaos_names import (
    ASSIGNOR_OF,
    DEFAULT_MAX_CPU_S,
    FAULT_KINDS,
    KINDS,
    OWN_STREAM_FAULTS,
    PROTOCOLS,
)
from scenarios.kinds import DEFAULT as DEFAULT_KIND

__all__ = [
    "PROTOCOLS",
    "ASSIGNOR_OF",
    "FAULT_KINDS",
    "DEFAULT_FAULT_KINDS",
    "ChaosConfig",
    "ChaosSpec",
    "generate",
    "draw_faults",
    "DEFAULT_MAX_CPU_S",
    "default_max_records",
]

# PROTOCOLS, ASSIGNOR_OF and FAULT_KINDS live in the light chaos_names module, so the CLI can
# name them without importing the engine.
DEFAULT_FAULT_KINDS = FAULT_KINDS

HOUR_MS = 3_600_000
#: Faults per virtual hour at most (a run draws 1 … this × duration / 1 h).
FAULTS_PER_HOUR = 20
#: Largest task count a generated connector gets.
MAX_TASKS = 8

#: The default record budget: this many records, plus :data:`RECORDS_PER_MEMBER_HOUR` per
#: member and virtual hour of fault window (clean runs log at most ~700 records per member
#: in a one-hour window; a livelocked 5-member group logs 25,000 a CPU second).
RECORDS_BASE = 100_000
RECORDS_PER_MEMBER_HOUR = 2_000


def default_max_records(members: int, duration_ms: int) -> int:
    """The default record budget of a run: :data:`RECORDS_BASE` +
    :data:`RECORDS_PER_MEMBER_HOUR` × ``members`` × the fault window in hours (at least 1)."""
    hours = max(1, math.ceil(duration_ms / HOUR_MS))
    return RECORDS_BASE + RECORDS_PER_MEMBER_HOUR * members * hours


@dataclass(frozen=True)
class ChaosConfig:
    """What a campaign draws from.

    Attributes:
        members: (low, high) member count, inclusive.
        protocols: ``connect.protocol`` values a run may start from (one per run).
        faults: enabled fault kinds (:data:`FAULT_KINDS`).
        duration_ms: the fault window: faults start in ``[0, duration_ms)``.
        max_faults: at most this many faults per run (default: 20 per virtual hour, ≥ 1).
        kind: ``connect`` (a Connect group of one of ``protocols``), ``streams`` (a Kafka
            Streams application: :mod:`.generate_streams`) or ``consumer`` (a plain consumer
            group: :mod:`.generate_consumer`); ``protocols`` is Connect's only.
        max_records: each run's record budget (its scenario's ``max_records``); default
            :func:`default_max_records` of the run's member count and ``duration_ms``.
        max_cpu_s: each run's CPU budget in seconds (:data:`DEFAULT_MAX_CPU_S`). A run over
            either budget ends with a ``run_budget_exceeded`` violation
            (:func:`scenarios.sim.runner.simulate`).
        referee: ``"kafka"`` to replay every leader assignment of a run through Kafka's own
            assignors (:mod:`scenarios.referee`: Connect and Streams); ``None`` for none. It draws
            nothing: run ``i`` is the same scenario with or without it.
    """

    members: tuple[int, int] = (3, 10)
    protocols: tuple[str, ...] = PROTOCOLS
    faults: tuple[str, ...] = DEFAULT_FAULT_KINDS
    duration_ms: int = HOUR_MS
    max_faults: int | None = None
    kind: str = "connect"
    max_records: int | None = None
    max_cpu_s: float = DEFAULT_MAX_CPU_S
    referee: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.referee not in (None, "kafka", "kafka-leaders"):
            raise ValueError(
                f"referee: expected kafka, kafka-leaders or None, got {self.referee!r}"
            )
        low, high = self.members
        if not 1 <= low <= high:
            raise ValueError(f"members: expected 1 <= low <= high, got {low}..{high}")
        if not self.protocols or any(p not in PROTOCOLS for p in self.protocols):
            raise ValueError(f"protocols: expected some of {', '.join(PROTOCOLS)}")
        if any(f not in FAULT_KINDS for f in self.faults):
            raise ValueError(f"faults: expected some of {', '.join(FAULT_KINDS)}")
        if self.duration_ms < 1:
            raise ValueError("duration_ms: expected >= 1")
        if self.max_records is not None and self.max_records < 1:
            raise ValueError("max_records: expected >= 1")
        if not self.max_cpu_s > 0:
            raise ValueError("max_cpu_s: expected > 0")

    def records_budget(self, members: int) -> int:
        """The record budget of a run of ``members`` members."""
        if self.max_records is not None:
            return self.max_records
        return default_max_records(members, self.duration_ms)

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
    #: a Streams run (``kind = "streams"``): the scenario file's ``config``,
    #: ``subtopologies`` and ``clients``; ``None`` for a Connect run
    streams: dict[str, Any] | None = None
    #: a consumer run (``kind = "consumer"``): the scenario file's ``topics``, ``config`` and
    #: ``consumers``; ``None`` otherwise
    consumer: dict[str, Any] | None = None
    #: the run's budget: its scenario file's ``max_records``, and CPU seconds
    max_records: int | None = None
    max_cpu_s: float | None = None
    #: the member kind that renders and loads it (:func:`scenarios.kinds.get`)
    group_kind: str = DEFAULT_KIND
    #: the scenario file's ``[coordinator]`` table (Kafka names), ``None`` when not drawn
    #: (:mod:`.coordinator_draw`)
    coordinator: dict[str, Any] | None = None

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


def _rng(campaign_seed: int, index: int, part: str = "") -> random.Random:
    suffix = f"/{part}" if part else ""
    return random.Random(f"groupsim-chaos/{campaign_seed}/{index}{suffix}")


class _DelaySink(Protocol):
    steps: list[dict[str, Any]]
    kinds: list[str]

    def delay_request(self, rng: random.Random, at_ms: int) -> None: ...


#: The share of runs with ``delay`` faults that also hold one member's SyncGroups past the
#: rebalance timeout (the pending-sync window, :func:`_add_delays`).
SYNC_HOLD_SHARE = 0.15


class _FaultSink(Protocol):
    def fault(self, kind: str, at_ms: int) -> None: ...


def draw_faults(gen: _FaultSink, config: ChaosConfig, rng: random.Random) -> list[int]:
    """The faults of the shared model in a run (every kind's generator): 1 to
    ``config.fault_limit`` times drawn from ``rng`` in ``[0, duration_ms)``, sorted, and at
    each a fault of an enabled kind other than the ones drawn from a stream of their own
    (:data:`OWN_STREAM_FAULTS`: ``delay``, ``zombie``) given to ``gen.fault``. Returns the
    times (the ``delay`` faults start near them: :func:`_add_delays`)."""
    count = rng.randint(1, config.fault_limit) if config.fault_limit else 0
    times = sorted(rng.randrange(config.duration_ms) for _ in range(count))
    kinds = [k for k in config.faults if k not in OWN_STREAM_FAULTS]
    for at_ms in times if kinds else ():
        gen.fault(rng.choice(kinds), at_ms)
    return times


def _add_delays(gen: _DelaySink, config: ChaosConfig, rng: random.Random, times: list[int]) -> None:
    """The ``delay`` faults of a run, drawn from their own generator (``.../<index>/delay``) so
    the run's other draws are those of a campaign without them: 1 … ¼ of the fault limit
    ``delay_request`` steps (fewer when the run's other faults leave no room under the limit),
    each (when the run has other faults) starting up to 5 s before one of them — the
    rebalance that fault starts is when a held request can go stale — and in
    :data:`SYNC_HOLD_SHARE` of the runs one more that holds a member's SyncGroups 60–70 s."""
    wanted = rng.randint(1, max(1, round(config.fault_limit / 4)))
    for _ in range(min(wanted, config.fault_limit - len(gen.steps))):
        if times:
            at_ms = max(0, rng.choice(times) - rng.randint(0, 5_000))
        else:
            at_ms = rng.randrange(config.duration_ms)
        gen.delay_request(rng, at_ms)
    if times and len(gen.steps) < config.fault_limit and rng.random() < SYNC_HOLD_SHARE:
        # The pending-sync window (GroupMetadataManager#expirePendingSync): one member's
        # SyncGroups held past rebalance.timeout.ms, over a window long enough to hold its
        # retry after request.timeout.ms too, while its Heartbeats pass. Drawn after the
        # others, so a run without it is the run it was before.
        gen.delay_request(rng, max(0, rng.choice(times) - rng.randint(0, 5_000)))
        gen.steps[-1].update(
            request="sync_group",
            delay_ms=rng.randint(60_001, 70_000),
            duration_ms=rng.randint(60_000, 120_000),
        )
    order = sorted(range(len(gen.steps)), key=lambda i: gen.steps[i]["at_ms"])
    gen.steps = [gen.steps[i] for i in order]
    gen.kinds = [gen.kinds[i] for i in order]


def generate(config: ChaosConfig, campaign_seed: int, index: int) -> ChaosSpec:
    """The chaos scenario of run ``index`` of campaign ``campaign_seed`` (deterministic): the
    generator of ``config.kind`` (:meth:`scenarios.kinds.GroupKind.chaos_generate`: a Connect
    group here, a Streams application in
    :func:`scenarios.campaigns.chaos.generate_streams.generate_streams`), with the run's
    budget (``config.records_budget``, ``config.max_cpu_s``)."""
    spec = kinds.get(config.kind).chaos_generate(config, campaign_seed, index)
    return replace(
        spec, max_records=config.records_budget(spec.members), max_cpu_s=config.max_cpu_s
    )


def generate_connect(config: ChaosConfig, campaign_seed: int, index: int) -> ChaosSpec:
    """A Connect group's chaos scenario (the Connect kind's
    :meth:`scenarios.kinds.GroupKind.chaos_generate`; no run budget yet)."""
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
    _draw_worker_timings(_rng(campaign_seed, index, "connect-timings"), cluster_config)
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
    times = draw_faults(gen, config, rng)
    if "delay" in config.faults:
        _add_delays(gen, config, _rng(campaign_seed, index, "delay"), times)
    if "crash" in config.faults:
        _add_bounce(gen, config, _rng(campaign_seed, index, "connect-bounce"))
    coordinator, raised = draw_coordinator(
        _rng(campaign_seed, index, "connect-coordinator"),
        dict.fromkeys(names, 10_000),  # Kafka's session.timeout.ms for Connect
        refusable=[w for w in names if w not in static_workers and w not in gen.gone]
        if n - len(gen.gone) >= 3
        else (),
        max_size=protocol != "static",
    )
    for name, session in raised.items():
        worker_configs.setdefault(name, {})["session.timeout.ms"] = session

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
            + (f", [coordinator] {coordinator}" if coordinator else "")
        ),
        coordinator=coordinator or None,
    )


def _draw_worker_timings(rng: random.Random, cluster_config: dict[str, Any]) -> None:
    """Worker settings the run's main stream never draws, from a stream of their own
    (``.../<index>/connect-timings``) so that every other draw of a run stays as it was: in
    half the runs, herder work per connector (``groupsim.connector.start.ms``/``stop.ms`` 0,
    10 or 50 ms), a config-topic read lag (``groupsim.config.read.lag.ms`` 0, 100, 1,000 or
    5,000 ms: the last is past ``worker.sync.timeout.ms``, 3 s, so the worker leaves and backs
    off for ``worker.unsync.backoff.ms``, Kafka's ``DistributedHerder.handleRebalanceCompleted``)
    and a session-key lifetime (``inter.worker.key.ttl.ms`` Kafka's 1 h, 10 min or 1 min, so
    the leader rotates keys within a run: KIP-507). The other half keep Kafka's defaults.
    Found by branch coverage under chaos (docs/chaos.md "Branch coverage under chaos")."""
    if rng.random() < 0.5:
        return
    connector = rng.choice((0, 10, 50))
    if connector:
        cluster_config["groupsim.connector.start.ms"] = connector
        cluster_config["groupsim.connector.stop.ms"] = connector
    lag = rng.choice((0, 100, 1_000, 5_000))
    if lag:
        cluster_config["groupsim.config.read.lag.ms"] = lag
    ttl = rng.choice((3_600_000, 600_000, 60_000))
    if ttl != 3_600_000:
        cluster_config["inter.worker.key.ttl.ms"] = ttl


#: The share of Connect runs with ``crash`` faults that end with a bounce of several workers
#: (:func:`_add_bounce`); a fifth of those bounce the whole group.
BOUNCE_SHARE = 0.3


def _add_bounce(gen: _Timeline, config: ChaosConfig, rng: random.Random) -> None:
    """Several workers bounced near each other, drawn from their own generator
    (``.../<index>/connect-bounce``, so a run without it is the run it was before): in
    :data:`BOUNCE_SHARE` of the runs, 1-10 s after every other step has ended, either two up
    to half (+1) of the running workers restart within 5 s of each other (each closed and down
    4-20 s, or crashed and down 12-45 s: past ``session.timeout.ms``, so it misses a round), or
    (a fifth of them) a whole-group outage: every running worker closes and restarts at the
    same moment, down 5-30 s. Each bounced worker comes back with no assignment inside
    ``scheduled.rebalance.max.delay.ms``, so the leader (when not bounced) holds its lost work
    for the delay and, at its expiry, deals it round robin over two or more candidate workers
    (KIP-415, ``IncrementalCooperativeAssignor.handleLostAssignments``); the outage empties
    the group (``completeClassicGroupJoin`` with no members). Adds up to one step per worker
    beyond ``config.fault_limit``; faults still start inside the fault window."""
    if rng.random() >= BOUNCE_SHARE:
        return
    after = max((step_end(s) for s in gen.steps), default=0) + rng.randint(1_000, 10_000)
    running = gen.running(after)
    if after + 5_000 >= config.duration_ms or len(running) < 2:
        return
    if rng.random() < 0.2:
        down = rng.randint(5_000, 30_000)
        for member in running:
            gen.up_at[member] = after + down
            gen.add(
                "crash",
                {
                    "at_ms": after,
                    "action": "restart",
                    "member": member,
                    "clean": True,
                    "down_ms": down,
                },
            )
        return
    for member in sorted(rng.sample(running, rng.randint(2, max(2, len(running) // 2 + 1)))):
        at_ms = after + rng.randint(0, 5_000)
        # away for a round: a closed worker's LeaveGroup ends its membership at once, a
        # crashed one's ends with session.timeout.ms (10 s); it comes back under a new member
        # id with nothing assigned, a candidate for the lost work
        clean = rng.random() < 0.5
        down = rng.randint(4_000, 20_000) if clean else rng.randint(12_000, 45_000)
        gen.up_at[member] = at_ms + down
        gen.add(
            "crash",
            {
                "at_ms": at_ms,
                "action": "restart",
                "member": member,
                "clean": clean,
                "down_ms": down,
            },
        )
    order = sorted(range(len(gen.steps)), key=lambda i: gen.steps[i]["at_ms"])
    gen.steps = [gen.steps[i] for i in order]
    gen.kinds = [gen.kinds[i] for i in order]


def step_end(step: dict[str, Any]) -> int:
    """When a timeline step's effect is over (virtual ms): its ``at_ms`` plus its length."""
    return int(step["at_ms"]) + sum(
        int(step.get(k, 0)) for k in ("down_ms", "duration_ms", "stall_ms", "delay_ms")
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

    def delay_request(self, rng: random.Random, at_ms: int) -> None:
        """A ``delay_request`` on any member's link, drawn from ``rng``: which requests, held
        for a 1–30 s window, each 1–10 s (within ``session.timeout.ms``), 10–40 s or 40–70 s
        (past ``request.timeout.ms``: the member gives up on it and rejoins), a third each."""
        delay = rng.choice(
            (rng.randint(1, 10_000), rng.randint(10_001, 40_000), rng.randint(40_001, 70_000))
        )
        self.add(
            "delay",
            {
                "at_ms": at_ms,
                "action": "delay_request",
                "member": rng.choice(self.names),
                "request": rng.choice(("heartbeat", "sync_group", "join_group", "any")),
                "delay_ms": delay,
                "duration_ms": rng.randint(1_000, 30_000),
            },
        )

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
