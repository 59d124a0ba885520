"""Load and validate scenario files (TOML → :class:`scenarios.input.schema.Scenario` → runnable
steps).

``load_scenario(path)`` decodes the file with :mod:`tomllib`, converts it with
``msgspec.convert(..., type=Scenario)`` and then checks what a schema cannot: worker and
connector names against the timeline, worker configs (through
:meth:`members.config.WorkerConfig.from_mapping`), and whether each step makes sense at its
time. It returns a :class:`LoadedScenario` whose ``steps`` are ready to apply in order:
``rolling_restart`` is expanded into one ``restart`` per member, and every ``join``/``restart``
step carries the worker's merged config.

Every problem raises :class:`ScenarioError`, whose ``str`` is one line
``"<file>: <key path>: <problem>"``, e.g.
``"flagship.toml: timeline[3].member: unknown worker 'w9' (workers: w1, w2, w3)"``.
Key paths use TOML spelling: dotted tables, ``[i]`` for array items, and quotes around keys
that contain dots (``coordinator."group.initial.rebalance.delay.ms"``).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.config import COORDINATOR_CONFIG_KEYS, CoordinatorConfig
from members.config import WorkerConfig
from protocol.connect import ConfigError
from scenarios.input import schema
from scenarios.input.errors import (
    ScenarioError,
    Segment,
    convert_scenario,
    parse_toml,
    read_text_file,
    render_path,
)
from scenarios.input.limits import LimitExceeded, check_connect_scenario
from scenarios.input.schema import Scenario
from scenarios.input.steps import LoadedView, Planned

__all__ = [
    "ScenarioError",
    "WorkerSpec",
    "Planned",
    "LoadedScenario",
    "load_scenario",
    "loads_scenario",
    "SETTLE_MARGIN_MS",
]

#: Default settle time after the last step: max scheduled.rebalance.max.delay.ms + this.
SETTLE_MARGIN_MS = 120_000

_Segment = Segment


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """A worker defined in ``[cluster]``: started at ``start_ms`` (virtual ms).

    ``raw_config`` is the merged Kafka-named table (``cluster.config`` + the worker's own
    ``config``) exactly as written in the file; ``config`` is it, parsed.
    """

    name: str
    start_ms: int
    config: WorkerConfig
    raw_config: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LoadedScenario(LoadedView):
    """A validated scenario, ready to run.

    Attributes:
        scenario: the decoded file.
        source: the file's path.
        workers: the ``[cluster]`` workers in definition order (workers that first appear in a
            ``join`` step are not here; see :attr:`worker_names`).
        connectors: the initial workload ``{connector: task count}`` in file order (explicit
            connectors, then generated ones).
        steps: the timeline in application order: sorted by ``at_ms``; steps at the same time
            keep file order (an expanded rolling restart sits at its origin's position).
        settle_ms: virtual ms to keep running after the last step (the file's ``settle_ms``,
            else max ``scheduled.rebalance.max.delay.ms`` over all configs + 120000).
        end_ms: when the run ends: the last step (a restart's start, ``at_ms + down_ms``) or
            the last worker start, whichever is later, plus ``settle_ms``.
        worker_names: every worker name in definition order (cluster, then joined).
        coordinator_config: ``[coordinator]`` parsed, with the coordinator's defaults for the
            keys the file does not set.
    """

    scenario: Scenario
    source: Path
    workers: list[WorkerSpec]
    connectors: dict[str, int]
    steps: list[Planned]
    settle_ms: int
    end_ms: int
    worker_names: list[str] = field(default_factory=list)
    coordinator_config: CoordinatorConfig = field(default_factory=CoordinatorConfig)

    @property
    def coordinator(self) -> schema.CoordinatorSettings:
        """``[coordinator]`` as written (only the keys set; see :attr:`coordinator_config`)."""
        return self.scenario.coordinator

    @property
    def network(self) -> schema.NetworkSettings:
        return self.scenario.network


# --------------------------------------------------------------------------- loading


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read, decode and validate a Connect scenario file.

    Raises:
        ScenarioError: the file cannot be read, is not TOML (the message keeps the line and
            column), or breaks a rule of ``docs/scenario-format.md``.
    """
    return loads_scenario(read_text_file(path), source=path)


def loads_scenario(text: str, source: str | Path = "<string>") -> LoadedScenario:
    """Like :func:`load_scenario` for TOML text; ``source`` names it in errors."""
    source = Path(source)
    file = source.name
    raw = parse_toml(text, file)
    scenario = convert_scenario(raw, Scenario, file)
    try:
        check_connect_scenario(scenario)  # sizes before any work (docs/limits.md)
    except LimitExceeded as exc:
        raise ScenarioError(file, exc.key, exc.problem) from None
    return _Builder(file, source, scenario).build()


# --------------------------------------------------------------------------- semantics


def _names(items: list[str], limit: int = 12) -> str:
    if len(items) <= limit:
        return ", ".join(items) or "none"
    return ", ".join(items[:limit]) + f", … ({len(items)} in all)"


class _WorkerState:
    __slots__ = ("up_from", "down_since", "down_how", "raw")

    def __init__(self, up_from: int | None, raw: dict[str, Any]) -> None:
        self.up_from = up_from  # running from this time on (None: stopped)
        self.down_since: int | None = None
        self.down_how = ""
        self.raw = raw  # merged raw config so far


class _Builder:
    def __init__(self, file: str, source: Path, scenario: Scenario) -> None:
        self.file = file
        self.source = source
        self.sc = scenario
        self.max_delay_ms = 0

    def fail(self, segments: list[_Segment], problem: str) -> ScenarioError:
        return ScenarioError(self.file, render_path(segments) or None, problem)

    def config(
        self, merged: dict[str, Any], layer: list[_Segment], layer_keys: Mapping[str, Any]
    ) -> WorkerConfig:
        """Parse a merged worker config; blame ``layer`` (the most specific table) on error."""
        marker = "<config>"
        try:
            cfg = WorkerConfig.from_mapping(merged, where=marker)
        except ConfigError as exc:
            msg = str(exc)
            key: str | None = None
            problem = msg
            if msg.startswith(marker + "."):
                rest = msg[len(marker) + 1 :]
                for candidate in sorted(merged, key=len, reverse=True):
                    if rest.startswith(candidate + ": "):
                        key, problem = candidate, rest[len(candidate) + 2 :]
                        break
            elif msg.startswith(marker + ": "):
                problem = msg[len(marker) + 2 :]
            elif msg.startswith("connect.protocol: "):
                key, problem = "connect.protocol", msg[len("connect.protocol: ") :]
            segments = [*layer, key] if key is not None and key in layer_keys else list(layer)
            raise self.fail(segments, problem) from None
        self.max_delay_ms = max(self.max_delay_ms, cfg.scheduled_rebalance_max_delay_ms)
        return cfg

    def coordinator_config(self) -> CoordinatorConfig:
        """Parse ``[coordinator]``; blame the key a ConfigError names."""
        marker = "<coordinator>"
        values = self.sc.coordinator.to_mapping()
        try:
            return CoordinatorConfig.from_mapping(values, where=marker)
        except ConfigError as exc:
            msg = str(exc)
            for kafka_name, field_name in COORDINATOR_CONFIG_KEYS.items():
                msg = msg.replace(f"{marker}.{field_name}", f"{marker}.{kafka_name}")
            key: str | None = None
            if msg.startswith(marker + "."):
                rest = msg[len(marker) + 1 :]
                for candidate in sorted(COORDINATOR_CONFIG_KEYS, key=len, reverse=True):
                    if rest.startswith(candidate + ": "):
                        key, msg = candidate, rest[len(candidate) + 2 :]
                        break
            msg = msg.replace(marker + ".", "").replace(marker, "coordinator")
            raise self.fail(["coordinator", key] if key else ["coordinator"], msg) from None

    def build(self) -> LoadedScenario:
        sc = self.sc
        coordinator_config = self.coordinator_config()
        cluster = sc.cluster
        base_raw = dict(cluster.config)
        self.config(base_raw, ["cluster", "config"], base_raw)

        # workers
        entries = list(cluster.workers)
        if cluster.size is not None:
            if entries and cluster.size != len(entries):
                raise self.fail(
                    ["cluster", "size"],
                    f"size = {cluster.size} but cluster.workers lists {len(entries)} workers",
                )
            if not entries:
                entries = [schema.WorkerEntry(name=f"w{i}") for i in range(1, cluster.size + 1)]
        workers: list[WorkerSpec] = []
        states: dict[str, _WorkerState] = {}
        seen_at: dict[str, int] = {}
        for i, entry in enumerate(entries):
            if entry.name in seen_at:
                raise self.fail(
                    ["cluster", "workers", i, "name"],
                    f"duplicate worker {entry.name!r} "
                    f"(also cluster.workers[{seen_at[entry.name]}])",
                )
            seen_at[entry.name] = i
            raw = {**base_raw, **entry.config}
            cfg = self.config(raw, ["cluster", "workers", i, "config"], entry.config)
            workers.append(WorkerSpec(entry.name, entry.start_ms, cfg, raw))
            states[entry.name] = _WorkerState(entry.start_ms, raw)
        if not workers and not any(isinstance(s, schema.Join) for s in sc.timeline):
            raise self.fail(
                ["cluster"],
                "no workers (set cluster.size, list cluster.workers, or join one in the timeline)",
            )
        names = [w.name for w in workers]

        # workload
        connectors: dict[str, int] = {}
        for i, conn in enumerate(sc.workload.connectors):
            if conn.name in connectors:
                raise self.fail(
                    ["workload", "connectors", i, "name"], f"duplicate connector {conn.name!r}"
                )
            connectors[conn.name] = conn.tasks
        gen = sc.workload.generate
        if gen is not None:
            for i in range(1, gen.count + 1):
                name = f"{gen.prefix}{i}"
                if name in connectors:
                    raise self.fail(
                        ["workload", "generate"],
                        f"generates connector {name!r}, which workload.connectors already has",
                    )
                connectors[name] = gen.tasks
        initial_connectors = dict(connectors)

        # timeline: written in time order; rolling restarts expand as they are reached
        for i in range(1, len(sc.timeline)):
            prev, cur = sc.timeline[i - 1].at_ms, sc.timeline[i].at_ms
            if cur < prev:
                raise self.fail(
                    ["timeline", i, "at_ms"],
                    f"{cur} ms is earlier than timeline[{i - 1}].at_ms ({prev} ms): "
                    "write the steps in time order",
                )
        steps: list[Planned] = []
        heap: list[tuple[int, int, int, Any]] = [
            (s.at_ms, i, 0, s) for i, s in enumerate(sc.timeline)
        ]
        heapq.heapify(heap)
        last_ms = max((w.start_ms for w in workers), default=0)
        while heap:
            at_ms, index, sub, item = heapq.heappop(heap)
            base: list[_Segment] = ["timeline", index]
            if isinstance(item, schema.RollingRestart):
                self.expand_rolling(item, index, states, names, heap)
                continue
            if isinstance(item, _RollingView):
                restart = schema.Restart(
                    at_ms=at_ms,
                    member=item.members[sub - 1],
                    config=item.config,
                    down_ms=item.down_ms,
                    clean=item.clean,
                )
                step = self.restart(
                    restart,
                    [*base, "members", sub - 1] if item.explicit else base,
                    base,
                    f"{render_path(base)}.members[{sub - 1}]",
                    states,
                    names,
                )
            elif isinstance(item, schema.Restart):
                step = self.restart(item, [*base, "member"], base, render_path(base), states, names)
            elif isinstance(item, schema.Join):
                step = self.join(item, base, states, names, base_raw)
            elif isinstance(item, schema.Leave | schema.Crash):
                action = "leave" if isinstance(item, schema.Leave) else "crash"
                state = self.running(item.member, at_ms, [*base, "member"], states, names)
                state.up_from = None
                state.down_since = at_ms
                state.down_how = "left" if action == "leave" else "crashed"
                step = Planned(at_ms, item, render_path(base))
            elif isinstance(item, schema.AddConnector):
                if item.connector in connectors:
                    raise self.fail(
                        [*base, "connector"], f"connector {item.connector!r} already exists"
                    )
                connectors[item.connector] = item.tasks
                step = Planned(at_ms, item, render_path(base))
            elif isinstance(item, schema.RemoveConnector | schema.SetTasks):
                if item.connector not in connectors:
                    raise self.fail(
                        [*base, "connector"],
                        f"unknown connector {item.connector!r} at {at_ms} ms "
                        f"(connectors: {_names(list(connectors))})",
                    )
                if isinstance(item, schema.SetTasks):
                    connectors[item.connector] = item.tasks
                else:
                    del connectors[item.connector]
                step = Planned(at_ms, item, render_path(base))
            elif isinstance(item, schema.Phase):
                step = Planned(at_ms, item, render_path(base))
            else:
                step = self.fault(item, base, states, names)
            if step.end_ms > schema.INT64_MAX:
                keys = ("down_ms", "duration_ms", "stall_ms", "delay_ms")
                key = next(k for k in keys if getattr(step, k))
                raise self.fail(
                    [*base, key],
                    f"the step ends at {step.end_ms} ms, after 2^63 - 1 ms (the largest "
                    "virtual time)",
                )
            steps.append(step)
            last_ms = max(last_ms, step.end_ms)

        settle_ms = sc.settle_ms
        if settle_ms is None:
            settle_ms = self.max_delay_ms + SETTLE_MARGIN_MS
        if last_ms + settle_ms > schema.INT64_MAX:
            default = " (the default settle_ms)" if sc.settle_ms is None else ""
            raise self.fail(
                ["settle_ms"],
                f"the run would end at {last_ms} + {settle_ms} ms{default}, after 2^63 - 1 ms "
                "(the largest virtual time)",
            )
        return LoadedScenario(
            scenario=sc,
            source=self.source,
            workers=workers,
            connectors=initial_connectors,
            steps=steps,
            settle_ms=settle_ms,
            end_ms=last_ms + settle_ms,
            worker_names=names,
            coordinator_config=coordinator_config,
        )

    # ---------------------------------------------------------------- step helpers

    def fault(
        self,
        item: Any,
        base: list[_Segment],
        states: dict[str, _WorkerState],
        names: list[str],
    ) -> Planned:
        """A fault step: ``partition``, ``heal``, ``loss``, ``latency``, ``slow`` (a known
        member, running or not: a fault is on its link or its herder, not its process) or
        ``coordinator_failover``."""
        member = getattr(item, "member", None)
        if member is not None and member not in states:
            raise self.unknown_worker(member, item.at_ms, [*base, "member"], names)
        return Planned(item.at_ms, item, render_path(base))

    def unknown_worker(
        self, member: str, at_ms: int, segments: list[_Segment], names: list[str]
    ) -> ScenarioError:
        return self.fail(segments, f"unknown worker {member!r} (workers: {_names(names)})")

    def running(
        self,
        member: str,
        at_ms: int,
        segments: list[_Segment],
        states: dict[str, _WorkerState],
        names: list[str],
    ) -> _WorkerState:
        state = states.get(member)
        if state is None:
            raise self.unknown_worker(member, at_ms, segments, names)
        if state.up_from is None:
            raise self.fail(
                segments,
                f"worker {member!r} is not running at {at_ms} ms "
                f"(it {state.down_how} at {state.down_since} ms)",
            )
        if state.up_from > at_ms:
            raise self.fail(
                segments,
                f"worker {member!r} is not running at {at_ms} ms (it starts at {state.up_from} ms)",
            )
        return state

    def join(
        self,
        item: schema.Join,
        base: list[_Segment],
        states: dict[str, _WorkerState],
        names: list[str],
        base_raw: dict[str, Any],
    ) -> Planned:
        state = states.get(item.member)
        if state is None:
            raw = {**base_raw, **item.config}
        elif state.up_from is not None:
            when = (
                f"already running at {item.at_ms} ms"
                if state.up_from <= item.at_ms
                else f"already scheduled to start at {state.up_from} ms"
            )
            raise self.fail([*base, "member"], f"worker {item.member!r} is {when}")
        else:
            raw = {**state.raw, **item.config}
        cfg = self.config(raw, [*base, "config"], item.config)
        if state is None:
            state = states[item.member] = _WorkerState(item.at_ms, raw)
            names.append(item.member)
        state.up_from = item.at_ms
        state.raw = raw
        return Planned(item.at_ms, item, render_path(base), config=cfg, raw_config=raw)

    def restart(
        self,
        item: schema.Restart,
        member_path: list[_Segment],
        base: list[_Segment],
        origin: str,
        states: dict[str, _WorkerState],
        names: list[str],
    ) -> Planned:
        state = self.running(item.member, item.at_ms, member_path, states, names)
        raw = {**state.raw, **item.config}
        cfg = self.config(raw, [*base, "config"], item.config)
        state.raw = raw
        state.up_from = item.at_ms + item.down_ms
        return Planned(item.at_ms, item, origin, config=cfg, raw_config=raw)

    def expand_rolling(
        self,
        item: schema.RollingRestart,
        index: int,
        states: dict[str, _WorkerState],
        names: list[str],
        heap: list[tuple[int, int, int, Any]],
    ) -> None:
        base: list[_Segment] = ["timeline", index]
        if item.members is not None:
            members = list(item.members)
            if not members:
                raise self.fail([*base, "members"], "empty list (omit it to restart every worker)")
            seen: set[str] = set()
            for k, member in enumerate(members):
                if member not in states:
                    raise self.unknown_worker(member, item.at_ms, [*base, "members", k], names)
                if member in seen:
                    raise self.fail([*base, "members", k], f"worker {member!r} listed twice")
                seen.add(member)
            explicit = True
        else:
            # every known worker that has not left/crashed, in definition order
            members = [n for n in names if states[n].up_from is not None]
            if not members:
                raise self.fail(base, f"no running workers to restart at {item.at_ms} ms")
            explicit = False
        expanded = _RollingView(item, members, explicit)
        for k in range(len(members)):
            heapq.heappush(heap, (item.at_ms + k * item.interval_ms, index, k + 1, expanded))


class _RollingView:
    """The resolved view of a rolling restart that the step loop reads."""

    __slots__ = ("at_ms", "interval_ms", "members", "config", "down_ms", "clean", "explicit")

    def __init__(self, item: schema.RollingRestart, members: list[str], explicit: bool) -> None:
        self.at_ms = item.at_ms
        self.interval_ms = item.interval_ms
        self.members = members
        self.config = item.config
        self.down_ms = item.down_ms
        self.clean = item.clean
        self.explicit = explicit
