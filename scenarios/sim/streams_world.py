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
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import trio
import trio.testing

from coordinator.group import GroupCoordinator
from members.assignors.streams import TaskId
from members.streams_client import COORDINATOR_ADDRESS, MemberState, StreamsClient
from members.streams_state import StoreState
from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from scenarios.check.invariants import InvariantChecker
from scenarios.check.streams_summary import (
    streams_end_violations,
    streams_expect_failures,
    summarize_streams,
)
from scenarios.eventlog import LOG_VERSION, EventLog
from scenarios.input.streams import ClientSpec, LoadedStreamsScenario, StreamsStep
from scenarios.sim.runner import RunResult

__all__ = [
    "StreamsWorld",
    "simulate_streams",
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
            if client is not None and client.state is MemberState.STOPPED:
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
    failures = streams_expect_failures(loaded.expect, summary)
    return RunResult(
        scenario=loaded.scenario.name,
        seed=seed,
        records=log.records,
        summary=summary,
        failures=failures,
    )
