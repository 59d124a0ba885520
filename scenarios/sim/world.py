"""The simulated world: one group coordinator, Connect workers, a network and a config topic.

Everything that happens goes through **one queue ordered by (virtual time, sequence number)**:
message deliveries, timer firings and timeline steps. Trio deliberately shuffles tasks woken
together, so nothing here depends on task interleaving: :func:`run_world` drives this queue
from a single trio task and moves ``trio.testing.MockClock`` forward to each event's time.
Every random choice (member ids, network jitter) draws from one ``random.Random(seed)``.

Ties at the same virtual time go in the order the events were scheduled (their sequence
number), so the same scenario and seed always give the same event log.
"""

from __future__ import annotations

import heapq
import random
import uuid
from collections.abc import Callable
from typing import Any

import trio
import trio.testing

from coordinator.group import GroupCoordinator
from members.assignors.base import ConfigSnapshot
from members.config import WorkerConfig
from members.messages import (
    CONFIG_ADDRESS,
    ConfigUpdate,
    HerderStall,
    ReadConfigToEnd,
    ReconfigureTasks,
    SessionKey,
    WriteSessionKey,
    WriteTaskConfigs,
)
from members.worker import COORDINATOR_ADDRESS, ConnectWorker, MemberState
from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from protocol.group import (
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from scenarios.check.invariants import InvariantChecker
from scenarios.eventlog import EventLog
from scenarios.input.loader import LoadedScenario, Step

__all__ = ["World", "run_world", "GROUP_ID", "LOG_VERSION"]

GROUP_ID = "connect-cluster"
LOG_VERSION = 1

_DELIVER = 0
_TIMER = 1
_STEP = 2
_START = 3
_CALL = 4

#: What a broker that is not (or no longer) the coordinator answers each request with.
_NOT_COORDINATOR: dict[type, Any] = {
    JoinGroupRequest: JoinGroupResponse(error=ErrorCode.NOT_COORDINATOR),
    SyncGroupRequest: SyncGroupResponse(error=ErrorCode.NOT_COORDINATOR),
    HeartbeatRequest: HeartbeatResponse(error=ErrorCode.NOT_COORDINATOR),
    LeaveGroupRequest: LeaveGroupResponse(error=ErrorCode.NOT_COORDINATOR),
}


def _name_of(address: str) -> str:
    """A worker's name from its address (``w1#2`` is the second incarnation of ``w1``)."""
    return address.partition("#")[0]


class World:
    """A scenario in progress. Build it, then :meth:`run_until` (or :func:`run_world`).

    Args:
        loaded: the scenario (workers, connectors, timeline).
        seed: the run's seed; every random choice derives from it.
        log: where records go (the invariant checker is subscribed to it here).
        log_heartbeats: also log heartbeat requests and responses.
    """

    def __init__(
        self,
        loaded: LoadedScenario,
        seed: int,
        *,
        log: EventLog | None = None,
        log_heartbeats: bool | None = None,
    ) -> None:
        scenario = loaded.scenario
        self.loaded = loaded
        self.seed = seed
        self.rng = random.Random(seed)
        self.log = log if log is not None else EventLog()
        self.checker = InvariantChecker()
        self.log.subscribe(self._check)
        self.log_heartbeats = scenario.log_heartbeats if log_heartbeats is None else log_heartbeats
        self.latency_ms = scenario.network.latency_ms
        self.jitter_ms = scenario.network.jitter_ms
        self.now_ms = 0

        self.coordinator = GroupCoordinator(
            GROUP_ID,
            loaded.coordinator_config,
            self._new_member_id,
        )
        self.workers: dict[str, ConnectWorker] = {}  # address -> live worker
        self.addresses: dict[str, str] = {}  # name -> current address
        self.worker_configs: dict[str, WorkerConfig] = {}
        self._incarnations: dict[str, int] = {}
        self._pending_restart: dict[str, tuple[WorkerConfig, int]] = {}

        self.config_offset = 0
        self.connectors: dict[str, int] = {}
        self.session_key: SessionKey | None = None

        # Faults on a member's link with the coordinator (by worker name).
        self._partitioned: set[str] = set()
        self._loss: dict[str, tuple[str, float, int]] = {}  # direction, probability, until
        self._latency: dict[str, tuple[int, int]] = {}  # extra ms, until
        self.coordinator_up = True

        self._queue: list[tuple[int, int, int, Any, Any, Any]] = []
        self._seq = 0
        self._timers: dict[tuple[str, str], int] = {}
        self._link_clock: dict[tuple[str, str], int] = {}
        self._checking = False

        self.end_ms = self._plan()

    # ------------------------------------------------------------------ set-up

    def _plan(self) -> int:
        """Log the start, write the initial config and schedule workers and steps."""
        loaded = self.loaded
        self.log.emit(
            0,
            "run_start",
            log_version=LOG_VERSION,
            scenario=loaded.scenario.name,
            seed=self.seed,
            workers=[w.name for w in loaded.workers],
            connectors=dict(loaded.connectors),
        )
        if loaded.connectors:
            self._write_config(dict(loaded.connectors), records=len(loaded.connectors))
        for spec in loaded.workers:
            self.worker_configs[spec.name] = spec.config
            self._push(spec.start_ms, _START, spec.name, spec.config, None)
        for step in loaded.steps:
            self._push(step.at_ms, _STEP, step, None, None)
        return loaded.end_ms

    def _new_member_id(self, client_id: str) -> str:
        return f"{client_id}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"

    # ------------------------------------------------------------------ queue

    def _push(self, at_ms: int, kind: int, a: Any, b: Any, c: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at_ms, self._seq, kind, a, b, c))

    def next_time(self) -> int | None:
        """Virtual time of the next queued event, or None when the queue is empty."""
        return self._queue[0][0] if self._queue else None

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
        elif kind == _START:
            self._start_worker(a, b)
        else:
            a(*b)

    def run_until(self, end_ms: int | None = None) -> None:
        """Process every event up to ``end_ms`` (default: the scenario's end) synchronously."""
        end = self.end_ms if end_ms is None else end_ms
        queue = self._queue
        while queue and queue[0][0] <= end:
            self.process_next()
        self.now_ms = max(self.now_ms, end)

    # ------------------------------------------------------------------ dispatch

    def _deliver(self, dest: str, source: str, message: Any) -> None:
        now = self.now_ms
        if dest == COORDINATOR_ADDRESS:
            if type(message) is FindCoordinatorRequest:
                up = self.coordinator_up
                error = ErrorCode.NONE if up else ErrorCode.COORDINATOR_NOT_AVAILABLE
                self._send(COORDINATOR_ADDRESS, source, FindCoordinatorResponse(error))
            elif self.coordinator_up:
                self._apply(COORDINATOR_ADDRESS, self.coordinator.handle(source, message, now))
            else:  # the old coordinator's broker answers, the new one is still loading
                reply = _NOT_COORDINATOR.get(type(message))
                if reply is not None:
                    self._send(COORDINATOR_ADDRESS, source, reply)
        elif dest == CONFIG_ADDRESS:
            if isinstance(message, ReadConfigToEnd):
                self._send(CONFIG_ADDRESS, source, self._config_update())
            elif isinstance(message, WriteSessionKey):
                self.session_key = message.key
                self._write_config(self.connectors)
            elif isinstance(message, WriteTaskConfigs) and message.connector in self.connectors:
                self._write_config({**self.connectors, message.connector: message.tasks})
        else:
            if dest.startswith("worker:"):  # REST: whichever incarnation runs there now
                dest = self.addresses.get(dest[len("worker:") :], "")
            worker = self.workers.get(dest)
            if worker is not None:
                self._apply(dest, worker.handle(message, now))

    def _fire(self, owner: str, key: str) -> None:
        now = self.now_ms
        if owner == COORDINATOR_ADDRESS:
            if self.coordinator_up:
                self._apply(owner, self.coordinator.fire(key, now))
        else:
            worker = self.workers.get(owner)
            if worker is not None:
                self._apply(owner, worker.fire(key, now))

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
            worker = self.workers.get(owner)
            if worker is not None and worker.state is MemberState.STOPPED:
                self._retire(owner)

    def _send(self, source: str, dest: str, message: Any) -> None:
        """Deliver after the network latency; each link keeps FIFO order, as TCP does.

        A member's link with the coordinator may be cut (partition), lossy or slow (faults).
        """
        latency = self.latency_ms
        if self.jitter_ms:
            latency += self.rng.randint(0, self.jitter_ms)
        if source == COORDINATOR_ADDRESS or dest == COORDINATOR_ADDRESS:
            outbound = dest == COORDINATOR_ADDRESS
            member = _name_of(source if outbound else dest)
            if member in self._partitioned:
                return
            loss = self._loss.get(member)
            if loss is not None and self.now_ms < loss[2]:
                direction = "to_coordinator" if outbound else "from_coordinator"
                if loss[0] in ("both", direction) and self.rng.random() < loss[1]:
                    return
            slow = self._latency.get(member)
            if slow is not None and self.now_ms < slow[1]:
                latency += slow[0]
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

    # ------------------------------------------------------------------ workers

    def _start_worker(self, name: str, config: WorkerConfig) -> None:
        if name in self.addresses:
            return  # already running: a join step for a live worker does nothing
        incarnation = self._incarnations.get(name, 0) + 1
        self._incarnations[name] = incarnation
        address = f"{name}#{incarnation}"
        self.worker_configs[name] = config
        worker = ConnectWorker(
            name,
            config,
            group_id=GROUP_ID,
            config_view=ConfigSnapshot(offset=self.config_offset, connectors=dict(self.connectors)),
            address=address,
            log_heartbeats=self.log_heartbeats,
            session_key=self.session_key,
        )
        self.workers[address] = worker
        self.addresses[name] = address
        self._apply(address, worker.start(self.now_ms))

    def _retire(self, address: str) -> None:
        """Forget a worker whose process stopped; schedule its restart if one is pending."""
        self.workers.pop(address, None)
        name = _name_of(address)
        if self.addresses.get(name) == address:
            del self.addresses[name]
        for key in [k for k in self._timers if k[0] == address]:
            del self._timers[key]
        restart = self._pending_restart.pop(name, None)
        if restart is not None:
            config, down_ms = restart
            self._push(self.now_ms + down_ms, _START, name, config, None)

    def _apply_step(self, step: Step) -> None:
        fields = step.record_fields()
        self.log.emit(self.now_ms, "step", **fields)
        action = step.action
        if action == "phase":
            self.log.emit(self.now_ms, "phase", name=step.name)
        elif action == "join":
            assert step.member is not None  # the loader guarantees it
            config = step.config or self.worker_configs.get(step.member) or WorkerConfig()
            self._start_worker(step.member, config)
        elif action in ("leave", "crash", "restart"):
            assert step.member is not None
            self._stop_worker(step.member, step, action)
        elif action in _FAULTS:
            self._apply_fault(step)
        elif action == "set_tasks" and (owner := self._connector_owner(step.connector)):
            # The connector's worker generates the new task configs and has them written
            # (forwarding them to the leader, signed, when it is not the leader: KIP-507).
            assert step.connector is not None and step.tasks is not None
            message = ReconfigureTasks(step.connector, step.tasks)
            self._push(self.now_ms, _DELIVER, owner, "operator", message)
        elif action in ("add_connector", "set_tasks", "remove_connector"):
            assert step.connector is not None
            connectors = dict(self.connectors)
            if action == "remove_connector":
                connectors.pop(step.connector, None)
            else:
                assert step.tasks is not None
                connectors[step.connector] = step.tasks
            self._write_config(connectors)

    def _stop_worker(self, name: str, step: Step, action: str) -> None:
        address = self.addresses.get(name)
        if action == "restart":
            config = step.config or self.worker_configs[name]
            down_ms = step.down_ms or 0
            if address is None:  # not running: just start it after the pause
                self._push(self.now_ms + down_ms, _START, name, config, None)
                return
            self._pending_restart[name] = (config, down_ms)
            clean = step.clean if step.clean is not None else True
        else:
            if address is None:
                return
            clean = action == "leave"
        worker = self.workers[address]
        effects = worker.shutdown(self.now_ms) if clean else worker.crash(self.now_ms)
        self._apply(address, effects)

    # ------------------------------------------------------------------ config topic

    def _apply_fault(self, step: Step) -> None:
        """Inject a fault (DESIGN.md §6); each is a ``fault`` record in the log."""
        action, member, now = step.action, step.member, self.now_ms
        duration = getattr(step, "duration_ms", None)
        fields: dict[str, Any] = {"fault": action}
        if member is not None:
            fields["member"] = member
        if action == "partition":
            assert member is not None
            self._partitioned.add(member)
            if duration:
                self._push(now + duration, _CALL, self._heal, (member,), None)
        elif action == "heal":
            assert member is not None
            self._heal(member, logged=False)
        elif action == "loss":
            assert member is not None and duration is not None
            direction = getattr(step, "direction", None) or "both"
            probability = float(getattr(step, "probability", None) or 1.0)
            self._loss[member] = (direction, probability, now + duration)
            fields.update(direction=direction, probability=probability, until_ms=now + duration)
        elif action == "latency":
            assert member is not None and duration is not None
            extra = int(getattr(step, "extra_ms", None) or 0)
            self._latency[member] = (extra, now + duration)
            fields.update(extra_ms=extra, until_ms=now + duration)
        elif action == "slow":
            address = self.addresses.get(member or "")
            stall = int(getattr(step, "stall_ms", None) or 0)
            fields["stall_ms"] = stall
            if address is not None:
                self._push(now, _DELIVER, address, "fault", HerderStall(stall))
        elif action == "coordinator_failover":
            down = int(getattr(step, "down_ms", None) or 0)
            fields["down_ms"] = down
            self._unload_coordinator()
            self._push(now + down, _CALL, self._load_coordinator, (), None)
        if duration is not None and action == "partition":
            fields["duration_ms"] = duration
        self.log.emit(now, "fault", **fields)

    def _heal(self, member: str, logged: bool = True) -> None:
        if member in self._partitioned:
            self._partitioned.discard(member)
            if logged:
                self.log.emit(self.now_ms, "fault", fault="heal", member=member)

    def _unload_coordinator(self) -> None:
        """The group's partition moves: in-flight joins and syncs get NOT_COORDINATOR."""
        self._apply(COORDINATOR_ADDRESS, self.coordinator.unload(self.now_ms))
        for key in [k for k in self._timers if k[0] == COORDINATOR_ADDRESS]:
            del self._timers[key]
        self.coordinator_up = False

    def _load_coordinator(self) -> None:
        """The new coordinator loads the group from its last stored record."""
        record = self.coordinator.stored_record()
        self.coordinator, effects = GroupCoordinator.load(
            GROUP_ID,
            self.loaded.coordinator_config,
            self._new_member_id,
            record,
            self.now_ms,
        )
        self.coordinator_up = True
        self._apply(COORDINATOR_ADDRESS, effects)

    def _connector_owner(self, connector: str | None) -> str | None:
        """Address of the worker running ``connector``, if any."""
        for address, worker in self.workers.items():
            if worker.running_connectors.get(connector or "") == "running":
                return address
        return None

    def _write_config(self, connectors: dict[str, int], records: int = 1) -> None:
        self.config_offset += records
        self.connectors = connectors
        fields: dict[str, Any] = {"offset": self.config_offset, "connectors": dict(connectors)}
        if self.session_key is not None:
            fields["session_key_id"] = self.session_key.key_id
        self.log.emit(self.now_ms, "config", **fields)
        update = self._config_update()
        for address, worker in self.workers.items():
            at = self.now_ms + worker.config.config_read_lag_ms
            self._push(at, _DELIVER, address, CONFIG_ADDRESS, update)

    def _config_update(self) -> ConfigUpdate:
        return ConfigUpdate(
            offset=self.config_offset,
            connectors=dict(self.connectors),
            session_key=self.session_key,
        )


_FAULTS = frozenset({"partition", "heal", "loss", "latency", "slow", "coordinator_failover"})


def _rename_members(fields: dict[str, Any]) -> dict[str, Any]:
    """Coordinator records name members by address; the log names them by worker name."""
    renamed = dict(fields)
    for key in ("member", "leader"):
        value = renamed.get(key)
        if isinstance(value, str):
            renamed[key] = _name_of(value)
    members = renamed.get("members")
    if isinstance(members, list):
        renamed["members"] = [_name_of(m) if isinstance(m, str) else m for m in members]
    return renamed


async def run_world(world: World, *, on_progress: Callable[[int], None] | None = None) -> None:
    """Drive ``world`` to its end under trio, moving the MockClock to each event's time.

    Must run inside ``trio.run(..., clock=trio.testing.MockClock(autojump_threshold=0))``
    (see :func:`scenarios.sim.runner.simulate`). The clock is jumped synchronously rather than
    slept on, so throughput is not bounded by trio's wake-ups; the loop still yields to trio
    every few thousand events so other tasks (a progress bar) can run.
    """
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, trio.testing.MockClock):
        raise RuntimeError("run_world needs trio.testing.MockClock as the run's clock")
    queue = world._queue
    end = world.end_ms
    processed = 0
    base = trio.current_time()
    while queue and queue[0][0] <= end:
        at_ms = queue[0][0]
        lag = base + at_ms / 1000.0 - trio.current_time()
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
