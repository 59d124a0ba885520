"""Kafka Streams clients replayed over virtual time: the world, the run and its summary.

:class:`StreamsWorld` is :class:`scenarios.sim.world.World`'s design applied to Streams clients
(:class:`members.streams_client.StreamsClient`) around the same pure
:class:`coordinator.group.GroupCoordinator`: **one queue ordered by (virtual time, sequence
number)** carries every delivery, timer and timeline step; every random choice (member ids,
network jitter) draws from one ``random.Random(seed)``. The queue/network code is a trimmed
copy of ``scenarios.sim.world`` (no config topic, no faults), because ``World`` is built around
Connect workers.

:func:`simulate_streams` is what ``groupsim run`` calls for a Streams scenario; it returns a
:class:`scenarios.sim.runner.RunResult`, so :func:`scenarios.cli.outputs.write_outputs` and the
summary
view work unchanged. :func:`summarize_streams` is the Streams summary (docs/streams.md).
"""

from __future__ import annotations

import heapq
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import trio
import trio.testing

from coordinator.group import GroupCoordinator
from members.assignors.streams import TaskId
from members.streams_client import COORDINATOR_ADDRESS, ClientPhase, StreamsClient
from members.streams_state import StoreState
from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from scenarios.check.expect import evaluate
from scenarios.check.invariants import InvariantChecker
from scenarios.check.metrics import summarize
from scenarios.eventlog import LOG_VERSION, EventLog
from scenarios.input.streams import ClientSpec, LoadedStreamsScenario, StreamsStep
from scenarios.sim.runner import RunResult

__all__ = [
    "StreamsWorld",
    "simulate_streams",
    "summarize_streams",
    "tag_conflicts",
    "streams_end_violations",
    "STREAMS_GROUP_ID",
]

STREAMS_GROUP_ID = "streams-app"

_DELIVER = 0
_TIMER = 1
_STEP = 2
_START = 3


def _name_of(address: str) -> str:
    return address.partition("#")[0]


class StreamsWorld:
    """A Streams scenario in progress; :meth:`run_until` or :func:`run_streams_world`.

    Args:
        loaded: the scenario.
        seed: the run's seed.
        log: where records go (the invariant checker subscribes here).
        log_heartbeats: also log heartbeat RPCs (default: the scenario's ``log_heartbeats``).
    """

    def __init__(
        self,
        loaded: LoadedStreamsScenario,
        seed: int,
        *,
        log: EventLog | None = None,
        log_heartbeats: bool | None = None,
    ) -> None:
        sc = loaded.scenario
        self.loaded = loaded
        self.topology = loaded.topology
        self.seed = seed
        self.rng = random.Random(seed)
        self.log = log if log is not None else EventLog()
        self.checker = InvariantChecker()
        self._checking = False
        self.log.subscribe(self._check)
        self.log_heartbeats = sc.log_heartbeats if log_heartbeats is None else log_heartbeats
        self.latency_ms = sc.network.latency_ms
        self.jitter_ms = sc.network.jitter_ms
        self.now_ms = 0
        self.coordinator = GroupCoordinator(
            STREAMS_GROUP_ID, loaded.coordinator_config, self._new_member_id
        )
        self.specs: dict[str, ClientSpec] = {c.name: c for c in loaded.clients}
        self.clients: dict[str, StreamsClient] = {}  # address -> live client
        self.addresses: dict[str, str] = {}  # name -> address
        self.state_dirs: dict[str, dict[TaskId, StoreState]] = {}
        self._incarnations: dict[str, int] = {}
        self._pending_restart: dict[str, int] = {}
        self._queue: list[tuple[int, int, int, Any, Any, Any]] = []
        self._seq = 0
        self._timers: dict[tuple[str, str], int] = {}
        self._link_clock: dict[tuple[str, str], int] = {}
        self.end_ms = self._plan()

    # ------------------------------------------------------------------ set-up

    def _plan(self) -> int:
        loaded = self.loaded
        topo = self.topology
        self.log.emit(
            0,
            "run_start",
            log_version=LOG_VERSION,
            scenario=loaded.scenario.name,
            seed=self.seed,
            app="streams",
            workers=[c.name for c in loaded.clients],
            connectors={},
            tasks={
                "stateful": [str(t) for t in topo.stateful],
                "stateless": [str(t) for t in topo.stateless],
            },
        )
        for spec in loaded.clients:
            self.state_dirs[spec.name] = {
                task: StoreState(max(0, topo.end_offset(task, spec.start_ms) - lag), spec.start_ms)
                for task, lag in sorted(spec.state.items())
            }
            if spec.autostart:
                self._push(spec.start_ms, _START, spec.name, None, None)
        for step in loaded.steps:
            self._push(step.at_ms, _STEP, step, None, None)
        return loaded.end_ms

    def _new_member_id(self, client_id: str) -> str:
        return f"{client_id}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"

    # ------------------------------------------------------------------ queue

    def _push(self, at_ms: int, kind: int, a: Any, b: Any, c: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at_ms, self._seq, kind, a, b, c))

    def process_next(self) -> None:
        """Pop the earliest event and carry it out."""
        at_ms, _, kind, a, b, c = heapq.heappop(self._queue)
        self.now_ms = at_ms
        if kind == _DELIVER:
            self._deliver(a, b, c)
        elif kind == _TIMER:
            if self._timers.get((a, b)) == c:
                del self._timers[(a, b)]
                self._fire(a, b)
        elif kind == _STEP:
            self._apply_step(a)
        else:
            self._start_client(a)

    def run_until(self, end_ms: int | None = None) -> None:
        """Process every event up to ``end_ms`` (default: the scenario's end)."""
        end = self.end_ms if end_ms is None else end_ms
        while self._queue and self._queue[0][0] <= end:
            self.process_next()
        self.now_ms = max(self.now_ms, end)

    # ------------------------------------------------------------------ dispatch

    def _deliver(self, dest: str, source: str, message: Any) -> None:
        from protocol.group import ErrorCode, FindCoordinatorRequest, FindCoordinatorResponse

        now = self.now_ms
        if dest == COORDINATOR_ADDRESS:
            if type(message) is FindCoordinatorRequest:
                self._send(COORDINATOR_ADDRESS, source, FindCoordinatorResponse(ErrorCode.NONE))
            else:
                self._apply(COORDINATOR_ADDRESS, self.coordinator.handle(source, message, now))
            return
        client = self.clients.get(dest)
        if client is not None:
            self._apply(dest, client.handle(message, now))

    def _fire(self, owner: str, key: str) -> None:
        if owner == COORDINATOR_ADDRESS:
            self._apply(owner, self.coordinator.fire(key, self.now_ms))
            return
        client = self.clients.get(owner)
        if client is not None:
            self._apply(owner, client.fire(key, self.now_ms))

    def _apply(self, owner: str, effects: list[Effect]) -> None:
        for effect in effects:
            if type(effect) is Send:
                self._send(owner, effect.dest, effect.message)
            elif type(effect) is SetTimer:
                self._seq += 1
                self._timers[(owner, effect.key)] = self._seq
                heapq.heappush(
                    self._queue, (effect.at_ms, self._seq, _TIMER, owner, effect.key, self._seq)
                )
            elif type(effect) is CancelTimer:
                self._timers.pop((owner, effect.key), None)
            elif type(effect) is Log:
                fields = effect.fields
                if owner == COORDINATOR_ADDRESS:
                    fields = _rename_members(fields)
                self.log.emit(self.now_ms, effect.kind, **fields)
        if owner != COORDINATOR_ADDRESS:
            client = self.clients.get(owner)
            if client is not None and client.state == ClientPhase.STOPPED:
                self._retire(owner)

    def _send(self, source: str, dest: str, message: Any) -> None:
        latency = self.latency_ms
        if self.jitter_ms:
            latency += self.rng.randint(0, self.jitter_ms)
        at = self.now_ms + latency
        link = (source, dest)
        previous = self._link_clock.get(link, 0)
        if at < previous:
            at = previous
        self._link_clock[link] = at
        self._push(at, _DELIVER, dest, source, message)

    def _check(self, record: dict[str, Any]) -> None:
        if self._checking or record["kind"] == "violation":
            return
        self._checking = True
        try:
            for violation in self.checker.feed(record):
                self.log.emit(record["t_ms"], "violation", **violation)
        finally:
            self._checking = False

    # ------------------------------------------------------------------ clients

    def _start_client(self, name: str) -> None:
        if name in self.addresses:
            return
        spec = self.specs[name]
        incarnation = self._incarnations.get(name, 0) + 1
        self._incarnations[name] = incarnation
        address = f"{name}#{incarnation}"
        client = StreamsClient(
            name,
            spec.config,
            self.topology,
            group_id=STREAMS_GROUP_ID,
            stores=self.state_dirs.setdefault(name, {}),
            address=address,
            log_heartbeats=self.log_heartbeats,
        )
        self.clients[address] = client
        self.addresses[name] = address
        self._apply(address, client.start(self.now_ms))

    def _retire(self, address: str) -> None:
        self.clients.pop(address, None)
        name = _name_of(address)
        if self.addresses.get(name) == address:
            del self.addresses[name]
        for key in [k for k in self._timers if k[0] == address]:
            del self._timers[key]
        down = self._pending_restart.pop(name, None)
        if down is not None:
            self._push(self.now_ms + down, _START, name, None, None)

    def _apply_step(self, step: StreamsStep) -> None:
        self.log.emit(self.now_ms, "step", **step.record_fields())
        if step.action == "phase":
            self.log.emit(self.now_ms, "phase", name=step.name)
            return
        assert step.client is not None
        name = step.client
        address = self.addresses.get(name)
        if step.action == "join":
            self._start_client(name)
            return
        if step.action == "restart":
            if step.wipe_state:
                self.state_dirs[name] = {}
            if step.latest_supported_version is not None:  # an upgrade (or downgrade)
                spec = self.specs[name]
                version = step.latest_supported_version
                config = replace(spec.config, latest_supported_version=version)
                self.specs[name] = replace(spec, config=config)
            if address is None:
                self._push(self.now_ms + step.down_ms, _START, name, None, None)
                return
            self._pending_restart[name] = step.down_ms
            clean = step.clean
        else:
            if address is None:
                return
            clean = step.action == "leave"
        client = self.clients[address]
        if clean:
            effects = client.shutdown(self.now_ms, leave_group=step.leave_group)
        else:
            effects = client.crash(self.now_ms)
        self._apply(address, effects)


def _rename_members(fields: dict[str, Any]) -> dict[str, Any]:
    renamed = dict(fields)
    for key in ("member", "leader"):
        value = renamed.get(key)
        if isinstance(value, str):
            renamed[key] = _name_of(value)
    members = renamed.get("members")
    if isinstance(members, list):
        renamed["members"] = [_name_of(m) if isinstance(m, str) else m for m in members]
    return renamed


async def run_streams_world(
    world: StreamsWorld, *, on_progress: Callable[[int], None] | None = None
) -> None:
    """Drive ``world`` to its end under trio's MockClock (as
    :func:`scenarios.sim.world.run_world`)."""
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, trio.testing.MockClock):
        raise RuntimeError("run_streams_world needs trio.testing.MockClock as the run's clock")
    queue = world._queue
    end = world.end_ms
    base = trio.current_time()
    processed = 0
    while queue and queue[0][0] <= end:
        lag = base + queue[0][0] / 1000.0 - trio.current_time()
        if lag > 0:
            clock.jump(lag)
        world.process_next()
        processed += 1
        if processed & 0xFFF == 0:
            if on_progress is not None:
                on_progress(world.now_ms)
            await trio.lowlevel.checkpoint()
    world.now_ms = max(world.now_ms, end)
    lag = base + end / 1000.0 - trio.current_time()
    if lag > 0:
        clock.jump(lag)


# ---------------------------------------------------------------------------------------------
# Summary


class _StreamsState:
    """What the log says each client holds (names → task → state)."""

    def __init__(self) -> None:
        self.active: dict[str, dict[str, str]] = {}  # client -> task -> restoring|running
        self.standby: dict[str, set[str]] = {}
        self.live: dict[str, None] = {}
        self.capacity: dict[str, int] = {}
        self.pid_name: dict[str, str] = {}
        self.tags: dict[str, dict[str, str]] = {}


def summarize_streams(
    records: Sequence[dict[str, Any]], loaded: LoadedStreamsScenario
) -> dict[str, Any]:
    """The run summary of a Streams log: :func:`scenarios.check.metrics.summarize`'s keys (phases,
    rebalances, rounds, violations, ...) with the task keys recomputed for Streams, plus
    ``streams`` (docs/streams.md):

    - ``task_downtime_ms_total`` / ``_max``: per task, virtual ms in which no client ran it
      as a RUNNING active (restoring does not count as running) after it first ran;
      ``never_started``: tasks that never ran; ``task_movements``: active task starts on a
      client other than the one that last ran it;
    - ``converged``: see :func:`streams_end_violations`; ``convergence``: its details;
    - ``streams.assignment_history``: the leader's distinct successive assignments
      ``{client: {"active": [...], "standby": [...]}}`` (HATA's decision, before cooperative
      withholding); ``streams.final_assignment``; ``streams.probing_rebalances`` (probing
      rebalances that fired), ``streams.probing_scheduled``; ``streams.costs``: rack-aware
      ``{generation, before, after}``; ``streams.warmups``: warmups handed out.
    """
    base = summarize(records)
    topo = loaded.topology
    tasks = [str(t) for t in topo.tasks]
    st = _StreamsState()
    running_on: dict[str, dict[str, None]] = {t: {} for t in tasks}
    last_ran: dict[str, str] = {}
    ever: set[str] = set()
    down_since: dict[str, int] = {}
    down_ms: dict[str, int] = dict.fromkeys(tasks, 0)
    phases = base["phases"]
    phase_down = [0] * len(phases)
    phase_moves = [0] * len(phases)
    starts = [p["start_ms"] for p in phases]
    history: list[dict[str, dict[str, list[str]]]] = []
    decisions: list[dict[str, Any]] = []
    costs: list[dict[str, Any]] = []
    probing_fired = probing_scheduled = warmups = 0
    last_change = 0
    last_step = None

    def phase_at(t: int) -> int:
        i = 0
        while i + 1 < len(starts) and starts[i + 1] <= t:
            i += 1
        return i

    def add_down(task: str, a: int, b: int) -> None:
        down_ms[task] += b - a
        while a < b:
            i = phase_at(a)
            end = starts[i + 1] if i + 1 < len(starts) else b
            part = min(b, end) - a
            phase_down[i] += part
            a += part

    def set_running(task: str, member: str, on: bool, t: int) -> None:
        nonlocal last_change
        holders = running_on[task]
        if on:
            if member in holders:
                return
            if not holders and task in down_since:
                add_down(task, down_since.pop(task), t)
            holders[member] = None
            ever.add(task)
        else:
            if member not in holders:
                return
            del holders[member]
            if not holders:
                down_since[task] = t
        last_change = t

    for r in records:
        kind = r["kind"]
        t = r["t_ms"]
        m: str = r.get("member") or ""
        if kind == "member_start":
            cfg = r.get("config") or {}
            st.live[m] = None
            st.active[m] = {}
            st.standby[m] = set()
            st.capacity[m] = int(cfg.get("num.stream.threads", 1))
            st.pid_name[str(cfg.get("process_id"))] = m
            st.tags[m] = dict(cfg.get("client.tags") or {})
        elif kind in ("member_stop", "member_crash"):
            st.live.pop(m, None)
        elif kind == "active_task_start":
            task = r["task"]
            st.active.setdefault(m, {})[task] = "restoring"
            if task in last_ran and last_ran[task] != m:
                phase_moves[phase_at(t)] += 1
            last_change = t
        elif kind == "active_task_running":
            task = r["task"]
            st.active.setdefault(m, {})[task] = "running"
            last_ran[task] = m
            set_running(task, m, True, t)
        elif kind == "active_task_stopped":
            st.active.get(m, {}).pop(r["task"], None)
            set_running(r["task"], m, False, t)
        elif kind == "standby_task_start":
            st.standby.setdefault(m, set()).add(r["task"])
            last_change = t
        elif kind == "standby_task_stopped":
            st.standby.get(m, set()).discard(r["task"])
            last_change = t
        elif kind == "streams_assignment":
            table = {
                st.pid_name.get(pid, pid): {"active": c["active"], "standby": c["standby"]}
                for pid, c in r["clients"].items()
            }
            table = dict(sorted(table.items()))
            decisions.append(r)
            warmups += sum(len(c["warmups"]) for c in r["clients"].values())
            if not history or history[-1] != table:
                history.append(table)
            if "cost" in r:
                costs.append({"generation": r.get("generation"), **r["cost"]})
        elif kind == "probing_rebalance_scheduled":
            probing_scheduled += 1
        elif kind == "timer_fired" and r.get("key") == "probing-rebalance":
            probing_fired += 1
        elif kind == "step" and r.get("action") != "phase":
            last_step = t

    end = base["end_ms"]
    never = sorted(t for t in tasks if t not in ever)
    for task, since in down_since.items():
        if task in ever and end > since:
            add_down(task, since, end)
    for task in never:  # never ran: the whole run counts
        add_down(task, base["start_ms"], end)
    movements = sum(phase_moves)
    for i, p in enumerate(phases):
        p["task_downtime_ms_total"] = phase_down[i]
        p["task_movements"] = phase_moves[i]

    problems = _end_problems(st, decisions, loaded, running_on)
    converged = not any(problems.values())
    since = last_step if last_step is not None else base["start_ms"]
    counts = [len(st.active.get(c, {})) for c in st.live]
    summary = dict(base)
    summary.update(
        tasks_configured=len(tasks),
        task_downtime_ms_total=sum(down_ms.values()),
        task_downtime_ms_max=max(down_ms.values(), default=0),
        never_started=never,
        task_movements=movements,
        max_imbalance=(max(counts) - min(counts)) if counts else 0,
        converged=converged,
        convergence=problems,
        time_to_converge_ms=max(0, last_change - since) if converged else None,
        workers_final={c: {"connectors": 0, "tasks": len(st.active.get(c, {}))} for c in st.live},
        streams={
            "assignment_history": history,
            "final_assignment": history[-1] if history else {},
            "probing_rebalances": probing_fired,
            "probing_scheduled": probing_scheduled,
            "warmups": warmups,
            "costs": costs,
            "final_cost": costs[-1]["after"]
            if costs and decisions and "cost" in decisions[-1]
            else None,
            "client_tags": {c: st.tags.get(c, {}) for c in sorted(st.tags)},
            "final_holdings": {
                c: {
                    "active": sorted(st.active.get(c, {}), key=_task_key),
                    "standby": sorted(st.standby.get(c, set()), key=_task_key),
                }
                for c in st.live
            },
        },
    )
    return summary


def _task_key(text: str) -> tuple[int, int]:
    t = TaskId.parse(text)
    return (t.subtopology, t.partition)


def _end_problems(
    st: _StreamsState,
    decisions: list[dict[str, Any]],
    loaded: LoadedStreamsScenario,
    running_on: dict[str, dict[str, None]],
) -> dict[str, Any]:
    topo = loaded.topology
    live = list(st.live)
    out: dict[str, Any] = {
        "not_running_tasks": sorted(
            (t for t, h in running_on.items() if not any(m in st.live for m in h)), key=_task_key
        ),
        "duplicate_tasks": sorted(
            (t for t, h in running_on.items() if len([m for m in h if m in st.live]) > 1),
            key=_task_key,
        ),
        "unsettled": [],
        "invalid": [],
        "unbalanced": [],
    }
    if not live:
        return out
    if not decisions:
        out["unsettled"].append("no assignment was ever made")
        return out
    last = decisions[-1]
    if last.get("probing_rebalance_needed"):
        out["unsettled"].append("the last assignment still asked for a probing rebalance")
    if last.get("followup_for_revocation"):
        out["unsettled"].append("the last assignment withheld tasks pending revocation")
    decided = {st.pid_name.get(pid, pid): c for pid, c in last["clients"].items()}
    if sorted(decided) != sorted(live):
        out["unsettled"].append(
            f"the last assignment covers {sorted(decided)} but {sorted(live)} are live"
        )
    for c in live:
        d = decided.get(c)
        if d is None:
            continue
        if sorted(st.active.get(c, {})) != sorted(d["active"]) or sorted(
            st.standby.get(c, set())
        ) != sorted(d["standby"]):
            out["unsettled"].append(f"{c} does not hold what the leader assigned it")
    # KIP-441 validity and balance (Kafka's AssignmentTestUtils).
    leader_cfg = loaded.clients[0].config.assignment
    n_standby = leader_cfg.num_standby_replicas
    stateful = {str(t) for t in topo.stateful}
    for task in (str(t) for t in topo.tasks):
        actives = [c for c in decided if task in decided[c]["active"]]
        if len(actives) != 1:
            out["invalid"].append(f"task {task} is active on {len(actives)} clients")
        holders = actives + [c for c in decided if task in decided[c]["standby"]]
        if task in stateful:
            want = min(len(decided), 1 + n_standby)
            if len(holders) != want:
                out["invalid"].append(f"task {task} has {len(holders)} copies, expected {want}")
        elif len(holders) != len(actives):
            out["invalid"].append(f"stateless task {task} has a standby")
    cap = {c: st.capacity.get(c, 1) for c in decided}
    active_load = [len(decided[c]["active"]) / cap[c] for c in decided]
    if max(active_load) - min(active_load) > 1.0:
        out["unbalanced"].append("active task load differs by more than 1 per thread")
    strategy = leader_cfg.rack_aware_assignment_strategy
    # KIP-708: standbys only move between clients with identical tags, so with
    # rack.aware.assignment.tags Kafka does not balance the stateful (standby) load.
    tags_on = bool(leader_cfg.rack_aware_assignment_tags)
    if strategy != "min_traffic" and not tags_on:
        stateful_load = [
            len([t for t in decided[c]["active"] + decided[c]["standby"] if t in stateful]) / cap[c]
            for c in decided
        ]
        if max(stateful_load) - min(stateful_load) > 1.0:
            out["unbalanced"].append("stateful task load differs by more than 1 per thread")
    if strategy != "min_traffic":
        threshold = 4 if strategy == "balance_subtopology" else 1
        by_sub: dict[int, list[int]] = {}
        for t in topo.tasks:
            by_sub.setdefault(t.subtopology, [])
        for sub in by_sub:
            per_client = [
                len([t for t in decided[c]["active"] if TaskId.parse(t).subtopology == sub])
                for c in decided
            ]
            if max(per_client) - min(per_client) > threshold:
                out["unbalanced"].append(f"subtopology {sub} skew exceeds {threshold}")
    return out


def streams_end_violations(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """End-of-run liveness/balance for Streams, as ``violation`` record fields: ``liveness``
    when a task is not running exactly once or the group has not settled (probing rebalances
    still requested, tasks withheld, holdings differ from the last assignment, or the last
    assignment is invalid per KIP-441); ``balance`` when it is settled but not balanced."""
    conv = summary["convergence"]
    end = summary["end_ms"]
    found: list[dict[str, Any]] = []
    parts: list[str] = []
    if conv["not_running_tasks"]:
        parts.append(f"tasks not running: {', '.join(conv['not_running_tasks'][:8])}")
    if conv["duplicate_tasks"]:
        parts.append(f"tasks running twice: {', '.join(conv['duplicate_tasks'][:8])}")
    parts.extend(conv["unsettled"][:4])
    parts.extend(conv["invalid"][:4])
    if parts:
        found.append(
            {
                "invariant": "liveness",
                "detail": f"at {end} ms: " + "; ".join(parts),
                "tasks": conv["not_running_tasks"] + conv["duplicate_tasks"],
            }
        )
    if conv["unbalanced"]:
        found.append(
            {"invariant": "balance", "detail": f"at {end} ms: " + "; ".join(conv["unbalanced"])}
        )
    return found


def tag_conflicts(
    assignment: dict[str, dict[str, list[str]]],
    tags: dict[str, dict[str, str]],
    keys: Sequence[str],
) -> list[str]:
    """Tasks whose active and standby clients repeat a value of one of the tag ``keys``
    (KIP-708's ideal distribution has none), one line each."""
    holders: dict[str, list[str]] = {}
    for client, roles in assignment.items():
        for task in roles["active"] + roles["standby"]:
            holders.setdefault(task, []).append(client)
    out: list[str] = []
    for task in sorted(holders, key=_task_key):
        for key in keys:
            values = [tags.get(c, {}).get(key) for c in holders[task]]
            if len(set(values)) != len(values):
                out.append(f"{task}: {key} {values} on {holders[task]}")
    return out


def _expect_failures(expect: Any, summary: dict[str, Any]) -> list[str]:
    generic = {
        "converged": expect.converged,
        "no_violations": False,
        "max_rebalances": expect.max_rebalances,
        "min_rebalances": expect.min_rebalances,
        "max_task_downtime_ms": expect.max_task_downtime_ms,
        "max_total_downtime_ms": expect.max_total_downtime_ms,
        "max_time_to_converge_ms": expect.max_time_to_converge_ms,
    }
    failures = evaluate(generic, summary)
    if expect.no_violations:
        allowed = set(expect.expected_violations)
        bad = {k: v for k, v in (summary.get("violations") or {}).items() if v and k not in allowed}
        if bad:
            listed = ", ".join(f"{n} {k}" for k, n in sorted(bad.items()))
            failures.append(f"no_violations: expected none, got {listed}")
    streams = summary["streams"]
    if expect.max_probing_rebalances is not None:
        n = streams["probing_rebalances"]
        if n > expect.max_probing_rebalances:
            failures.append(
                f"max_probing_rebalances: expected <= {expect.max_probing_rebalances}, got {n}"
            )

    def table(t: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
        return {
            name: {
                "active": sorted(e.active, key=_task_key),
                "standby": sorted(e.standby, key=_task_key),
            }
            for name, e in sorted(t.items())
        }

    if expect.max_final_cost is not None:
        cost = streams["final_cost"]
        if cost is None or cost > expect.max_final_cost:
            failures.append(
                f"max_final_cost: expected <= {expect.max_final_cost}, got "
                f"{'no rack-aware optimisation' if cost is None else cost}"
            )
    if expect.distinct_tags:
        conflicts = tag_conflicts(
            streams["final_assignment"], streams["client_tags"], expect.distinct_tags
        )
        if conflicts:
            failures.append(
                f"distinct_tags: {len(conflicts)} task(s) share a tag value among their "
                f"copies: {'; '.join(conflicts[:4])}"
            )

    history = streams["assignment_history"]
    i = 0
    for k, want in enumerate(expect.assignments):
        w = table(want)
        while i < len(history) and history[i] != w:
            i += 1
        if i == len(history):
            failures.append(
                f"assignments[{k}]: expected {w} to follow the previous expected assignment, "
                f"not found in the leader's assignments"
            )
            break
        i += 1
    if expect.final_assignment is not None:
        w = table(expect.final_assignment)
        got = streams["final_assignment"]
        if got != w:
            failures.append(f"final_assignment: expected {w}, got {got}")
    return failures


def simulate_streams(
    loaded: LoadedStreamsScenario,
    seed: int,
    *,
    log_heartbeats: bool | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Simulate a Streams scenario with ``seed`` under trio's MockClock and evaluate it.

    Args:
        loaded: from :func:`scenarios.input.streams.load_streams_scenario`.
        seed: the seed for every random choice of the run.
        log_heartbeats: log heartbeat RPCs (default: the scenario's ``log_heartbeats``).
        on_progress: called now and then with (virtual ms done, virtual ms in total).

    Returns:
        :class:`scenarios.sim.runner.RunResult` (records, :func:`summarize_streams` summary, unmet
        ``[expect]`` lines). Nothing is written; use :func:`scenarios.cli.outputs.write_outputs`.
    """
    log = EventLog()
    world = StreamsWorld(loaded, seed, log=log, log_heartbeats=log_heartbeats)
    progress = None
    if on_progress is not None:
        end = world.end_ms

        def progress(now_ms: int) -> None:
            on_progress(now_ms, end)

    trio.run(
        lambda: run_streams_world(world, on_progress=progress),
        clock=trio.testing.MockClock(autojump_threshold=0),
    )
    summary = summarize_streams(log.records, loaded)
    for violation in streams_end_violations(summary):
        log.emit(world.now_ms, "violation", **violation)
    log.emit(world.now_ms, "run_end")
    summary = summarize_streams(log.records, loaded)
    failures = _expect_failures(loaded.expect, summary)
    return RunResult(
        scenario=loaded.scenario.name,
        seed=seed,
        records=log.records,
        summary=summary,
        failures=failures,
    )
