"""The served broker: one trio TCP server, groupsim's group coordinators behind it.

Real Kafka clients connect to ``host:port`` and see a one-broker cluster: node 0 is every
partition's leader and every group's coordinator. Group requests (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup) are translated into :mod:`protocol.group` values and handed to a
:class:`coordinator.group.GroupCoordinator` — one per group id, created on first use — and its
effects are carried out here: ``Send`` answers the connection the request came from,
``SetTimer``/``CancelTimer`` arm keyed timers on trio's clock, ``Log`` goes to the event log,
with the wire taps of :mod:`scenarios.sim.wire_tap` (``bounded_join`` too, when the
``[coordinator]`` settings are not Kafka's defaults, as the engine writes it). Other APIs
(ApiVersions, Metadata, FindCoordinator, OffsetCommit/OffsetFetch in memory, ListOffsets, Fetch
of empty partitions, DescribeGroups, ListGroups) are answered here. Like a Kafka broker
(``SocketServer`` mutes a channel while its request is processed), each connection has at most
one request in progress: a JoinGroup or SyncGroup the coordinator parks blocks its connection
until it is answered. Time is virtual ms = real ms since the server started
(``trio.current_time()``), so the coordinator's timers run on trio's clock.

The sockets and request frames are :mod:`scenarios.serve.connection`'s.

Network addresses: a connection is ``"<client.id>#<n>"`` (``n`` counts connections), so a
member's ``source`` in the coordinator and ``member`` in the log name its client and
connection. Faults match clients by ``client.id``.
"""

from __future__ import annotations

import dataclasses
import math
import random
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from heapq import heappop, heappush
from pathlib import Path
from typing import Any

import trio

from coordinator.group import GroupCoordinator
from protocol import group as pg
from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from scenarios.eventlog import LOG_VERSION, EventLog
from scenarios.sim import wire_tap

from . import wire
from .apis import OtherApis
from .config import CoordinatorFailover, FaultStep, Heal, Latency, Loss, Partition, ServeOptions
from .connection import Connection, Slot, serve_tcp
from .translate import error_response, from_group_response, to_group_request

__all__ = ["Broker", "open_broker", "GroupSnapshot"]

_GROUP_APIS = {11: "JoinGroup", 14: "SyncGroup", 12: "Heartbeat", 13: "LeaveGroup"}
_E = pg.ErrorCode


@dataclasses.dataclass(frozen=True)
class GroupSnapshot:
    """A group as the broker sees it (for tests and summaries).

    ``assignments`` maps member id -> its consumer-protocol partitions ``"<topic>-<n>"``
    (``None`` when the bytes are not a consumer assignment); ``clients`` maps member id ->
    its ``client.id``.
    """

    group_id: str
    state: str
    generation: int
    protocol: str | None
    leader_id: str | None
    members: tuple[str, ...]
    clients: dict[str, str]
    assignments: dict[str, list[str] | None]


class Broker(OtherApis):
    """The served broker (see the module docstring).

    Args:
        options: listen address, topics, coordinator settings, seed, fault timeline.
        log: the event log to write into (a new one by default).

    Use :func:`open_broker` to run it; :attr:`port` is the bound port once it listens.
    """

    def __init__(self, options: ServeOptions, log: EventLog | None = None) -> None:
        self.options = options
        self.log = log if log is not None else EventLog()
        # Member ids and loss draws have their own generators: a loss fault never changes
        # the member ids a seed gives.
        self.rng = random.Random(options.seed)
        self.loss_rng = random.Random(f"loss:{options.seed}")
        self.port = options.port
        #: The host Metadata and FindCoordinator give for node 0.
        self.advertised_host = options.advertised_host or options.host
        self.groups: dict[str, GroupCoordinator] = {}
        self.offsets: dict[tuple[str, str, int], tuple[int, str | None]] = {}
        self.down = False
        self.topic_ids = {
            name: uuid.uuid5(uuid.NAMESPACE_URL, f"groupsim:{name}") for name in options.topics
        }
        self._ids_topic = {tid: name for name, tid in self.topic_ids.items()}
        self._conns: dict[str, Connection] = {}
        self._hosts: dict[str, str] = {}
        self._conn_count = 0
        self._t0 = 0.0
        self._timers: dict[tuple[str, str], tuple[int, int]] = {}
        self._heap: list[tuple[int, int, str, str]] = []
        self._timer_seq = 0
        self._timer_changed = trio.Event()
        self._partitioned: set[str] = set()
        self._loss: dict[str, tuple[str, float, int]] = {}
        self._latency: dict[str, tuple[int, int]] = {}
        self._slow: dict[str, int] = {}
        self._nursery: trio.Nursery | None = None
        self._dispatch: dict[int, Callable[[Connection, wire.Request], Any]] = {
            18: self._api_versions,
            3: self._metadata,
            10: self._find_coordinator,
            11: self._group_request,
            14: self._group_request,
            12: self._group_request,
            13: self._group_request,
            8: self._offset_commit,
            9: self._offset_fetch,
            2: self._list_offsets,
            1: self._fetch,
            15: self._describe_groups,
            16: self._list_groups,
        }

    # ------------------------------------------------------------------ clock and log

    def now_ms(self) -> int:
        """Virtual time: whole real milliseconds since the server started."""
        return max(0, int((trio.current_time() - self._t0) * 1000))

    def _emit(self, kind: str, *, at_ms: int | None = None, **fields: Any) -> None:
        self.log.emit(self.now_ms() if at_ms is None else at_ms, kind, **fields)

    # ------------------------------------------------------------------ running

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen, serve connections, run timers and the fault timeline until cancelled."""
        self._t0 = trio.current_time()
        options = self.options
        self._emit(
            "run_start",
            log_version=LOG_VERSION,
            scenario=options.name,
            seed=options.seed,
            mode="serve",
            host=options.host,
            port=options.port,
            topics=dict(options.topics),
            workers=[],
            connectors={},
        )
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            listeners = await nursery.start(
                serve_tcp, self._handle_connection, options.port, options.host, nursery
            )
            self.port = listeners[0].socket.getsockname()[1]
            self._emit("listening", host=options.host, port=self.port)
            nursery.start_soon(self._timer_loop)
            for step in options.timeline:
                nursery.start_soon(self._run_step, step)
            task_status.started(self.port)

    def finish(self) -> None:
        """Append ``run_end`` (call once, after :meth:`run` returned)."""
        self._emit("run_end", groups=[self.snapshot(g).state for g in sorted(self.groups)])

    def snapshot(self, group_id: str) -> GroupSnapshot:
        """The group ``group_id`` now (an Empty, generation-0 view if it never existed)."""
        coord = self.groups.get(group_id)
        if coord is None:
            return GroupSnapshot(group_id, "Empty", 0, None, None, (), {}, {})
        members = coord.members()
        return GroupSnapshot(
            group_id=group_id,
            state=coord.state.value,
            generation=coord.generation_id,
            protocol=coord.protocol_name,
            leader_id=coord.leader_id,
            members=tuple(m.member_id for m in members),
            clients={m.member_id: m.client_id for m in members},
            assignments={
                m.member_id: wire.decode_consumer_assignment(m.assignment) for m in members
            },
        )

    # ------------------------------------------------------------------ connections

    async def _handle_connection(self, stream: trio.SocketStream) -> None:
        self._conn_count += 1
        try:
            host = stream.socket.getpeername()[0]
        except OSError:
            host = "unknown"
        conn = Connection(self._conn_count, stream, host, self.options.connections_max_idle_ms)
        try:
            await self._serve_connection(conn)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        except wire.WireError as exc:
            self._emit("connection_error", member=conn.address, error=str(exc))
        except Exception as exc:  # a groupsim bug must not stop the broker: log, close
            error = f"internal error: {type(exc).__name__}: {exc}"
            self._emit("connection_error", member=conn.address, error=error)
        finally:
            if self._conns.get(conn.address) is conn:
                del self._conns[conn.address]
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def _serve_connection(self, conn: Connection) -> None:
        while True:
            frame = await conn.read_frame()
            if frame is None:
                return
            request = wire.decode_request(frame)
            if not conn.client_id and conn.address.startswith("?"):
                conn.client_id = request.client_id
                conn.address = f"{request.client_id or 'client'}#{conn.number}"
                self._conns[conn.address] = conn
                self._hosts[conn.address] = conn.host
            client = conn.client_id
            if self._cut(client, "to_coordinator"):
                continue  # lost on the way in: never answered
            await self._delay(client)
            if client in self._partitioned:
                continue  # partitioned while the request was delayed
            body = await self._dispatch[request.api_key](conn, request)
            if conn.eof or body is None:
                return
            await self._delay(client)
            until = self._slow.get(client)
            if until is not None and until > self.now_ms():
                await trio.sleep((until - self.now_ms()) / 1000)
            if self._cut(client, "from_coordinator"):
                continue  # the answer is lost: the client times the request out
            version = request.api_version if request.body is not None else 0  # KIP-511: v0
            data = wire.encode_response(request.api_key, version, request.correlation_id, body)
            await conn.stream.send_all(data)

    async def _await_slot(self, conn: Connection, slot: Slot) -> None:
        """Wait for a parked request's answer; give up if the peer closes meanwhile."""
        if slot.answer is not None:
            return
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                await conn.watch_eof()
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch)
            await slot.done.wait()
            nursery.cancel_scope.cancel()

    # ------------------------------------------------------------------ faults

    def _cut(self, client: str, direction: str) -> bool:
        if client in self._partitioned:
            return True
        loss = self._loss.get(client)
        if loss is None:
            return False
        way, probability, until = loss
        if self.now_ms() >= until:
            del self._loss[client]
            return False
        if way not in ("both", direction):
            return False
        return self.loss_rng.random() < probability

    async def _delay(self, client: str) -> None:
        latency = self._latency.get(client)
        if latency is None:
            return
        extra, until = latency
        if self.now_ms() >= until:
            del self._latency[client]
            return
        await trio.sleep(extra / 1000)

    async def _run_step(self, step: FaultStep) -> None:
        await trio.sleep_until(self._t0 + step.at_ms / 1000)
        self.inject(step)

    def inject(self, step: FaultStep) -> None:
        """Apply a fault step now (its ``at_ms`` is ignored); logs a ``fault`` record.

        ``partition``: the client's requests and answers are dropped (both ways) until
        ``heal`` or ``duration_ms``; ``loss``: each is dropped with ``probability`` in
        ``direction`` for ``duration_ms``; ``latency``: ``extra_ms`` before processing each
        request and before writing each answer; ``slow``: answers to the client are held
        until ``stall_ms`` from now; ``coordinator_failover``: every group is unloaded
        (parked requests answered NOT_COORDINATOR, group requests answered NOT_COORDINATOR
        and FindCoordinator COORDINATOR_NOT_AVAILABLE while down), then loaded from its last
        stored record ``down_ms`` later (``GroupCoordinator.load``).
        """
        now = self.now_ms()
        action = type(step).__struct_config__.tag
        fields: dict[str, Any] = {"fault": action}
        if isinstance(step, CoordinatorFailover):
            fields["down_ms"] = step.down_ms
            self._emit("fault", **fields)
            self._unload_all()
            self._later(step.down_ms, self._load_all)
            return
        member = step.member
        fields["member"] = member
        if isinstance(step, Partition):
            self._partitioned.add(member)
            if step.duration_ms:
                fields["duration_ms"] = step.duration_ms
                self._later(step.duration_ms, lambda: self._heal(member, logged=True))
        elif isinstance(step, Heal):
            self._heal(member, logged=False)
        elif isinstance(step, Loss):
            until = now + step.duration_ms
            probability = float(step.probability)  # logged as a float, as the engine does
            self._loss[member] = (step.direction, probability, until)
            fields.update(direction=step.direction, probability=probability, until_ms=until)
        elif isinstance(step, Latency):
            until = now + step.duration_ms
            self._latency[member] = (step.extra_ms, until)
            fields.update(extra_ms=step.extra_ms, until_ms=until)
        else:  # Slow
            self._slow[member] = now + step.stall_ms
            fields["stall_ms"] = step.stall_ms
        self._emit("fault", **fields)

    def _later(self, delay_ms: int, action: Callable[[], None]) -> None:
        assert self._nursery is not None

        async def run() -> None:
            await trio.sleep(delay_ms / 1000)
            action()

        self._nursery.start_soon(run)

    def _heal(self, member: str, logged: bool) -> None:
        if member in self._partitioned:
            self._partitioned.discard(member)
            if logged:
                self._emit("fault", fault="heal", member=member)

    def _unload_all(self) -> None:
        self.down = True
        now = self.now_ms()
        for group_id, coord in self.groups.items():
            self._apply(group_id, coord.unload(now), now)
            for key in [k for k in self._timers if k[0] == group_id]:
                del self._timers[key]

    def _load_all(self) -> None:
        now = self.now_ms()
        for group_id, old in list(self.groups.items()):
            coord, effects = GroupCoordinator.load(
                group_id, self.options.coordinator, self._new_member_id, old.stored_record(), now
            )
            self.groups[group_id] = coord
            self._apply(group_id, effects, now)
        self.down = False

    # ------------------------------------------------------------------ coordinators

    def _new_member_id(self, client_id: str) -> str:
        """``ClassicGroup#generateMemberId``: ``<client.id>-<uuid4>`` (seeded)."""
        return f"{client_id}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"

    def _coordinator(self, group_id: str) -> GroupCoordinator:
        coord = self.groups.get(group_id)
        if coord is None:
            coord = GroupCoordinator(group_id, self.options.coordinator, self._new_member_id)
            self.groups[group_id] = coord
        return coord

    def _apply(self, group_id: str, effects: list[Effect], now: int) -> None:
        """Carry out a coordinator's effects in list order, its records at ``now`` (the time
        it was handed: the checkers read one coordinator step as one ``t_ms``)."""
        for effect in effects:
            if isinstance(effect, Send):
                self._deliver(group_id, effect.dest, effect.message, now)
            elif isinstance(effect, SetTimer):
                self._set_timer(group_id, effect.key, effect.at_ms)
            elif isinstance(effect, CancelTimer):
                self._timers.pop((group_id, effect.key), None)
            elif isinstance(effect, Log):
                self._emit(effect.kind, at_ms=now, group=group_id, **effect.fields)

    def _deliver(self, group_id: str, dest: str, message: Any, now: int) -> None:
        conn = self._conns.get(dest)
        slot = conn.slot if conn is not None else None
        if slot is None or slot.answer is not None:
            api = type(message).__name__
            self._emit("answer_dropped", at_ms=now, group=group_id, member=dest, api=api)
            return
        slot.answer = message
        slot.done.set()

    def _set_timer(self, group_id: str, key: str, at_ms: int) -> None:
        self._timer_seq += 1
        entry = (at_ms, self._timer_seq)
        self._timers[(group_id, key)] = entry
        heappush(self._heap, (at_ms, self._timer_seq, group_id, key))
        if self._heap[0][1] == self._timer_seq:
            self._timer_changed.set()

    async def _timer_loop(self) -> None:
        heap = self._heap
        while True:
            while heap:
                at_ms, seq, group_id, key = heap[0]
                if self._timers.get((group_id, key)) != (at_ms, seq):
                    heappop(heap)  # replaced or cancelled
                    continue
                if at_ms > self.now_ms():
                    break
                heappop(heap)
                del self._timers[(group_id, key)]
                coord = self.groups.get(group_id)
                if coord is not None and not self.down:
                    now = self.now_ms()
                    self._apply(group_id, coord.fire(key, now), now)
            self._timer_changed = trio.Event()
            deadline = math.inf if not heap else self._t0 + heap[0][0] / 1000 + 0.0005
            with trio.move_on_at(deadline):
                await self._timer_changed.wait()

    # ------------------------------------------------------------------ group APIs

    async def _group_request(self, conn: Connection, request: wire.Request) -> Any:
        """JoinGroup / SyncGroup / Heartbeat / LeaveGroup through the group's coordinator."""
        group_request = to_group_request(request)
        api = _GROUP_APIS[request.api_key]
        log_it = request.api_key != 12 or self.options.log_heartbeats
        if log_it:
            self._log_request(conn, api, request.api_version, group_request)
        if self.down:
            answer: Any = error_response(group_request, _E.NOT_COORDINATOR)
        else:
            slot = Slot()
            conn.slot = slot
            coord = self._coordinator(group_request.group_id)
            tapped = wire_tap.taps(coord, group_request)
            rejoin = wire_tap.completing_join(coord, group_request)
            bounded = wire_tap.bounded_join(coord, group_request)
            now = self.now_ms()
            effects = coord.handle(conn.address, group_request, now)
            if rejoin is not None:  # before the answer leaves, as the engine logs it
                tap = wire_tap.completing_join_answer(rejoin, effects, conn.address, conn.address)
                self._emit("completing_join", at_ms=now, group=group_request.group_id, **tap)
            if bounded is not None:  # [coordinator] not Kafka's defaults: KIP-389, session bounds
                tap = wire_tap.bounded_join_answer(bounded, effects, conn.address, conn.address)
                self._emit("bounded_join", at_ms=now, group=group_request.group_id, **tap)
            self._apply(group_request.group_id, effects, now)
            await self._await_slot(conn, slot)
            conn.slot = None
            if slot.answer is None:
                return None  # the peer closed while its request was parked
            answer = slot.answer
            if tapped and isinstance(group_request, pg.HeartbeatRequest):
                tap = wire_tap.rebalance_heartbeat(coord, group_request, answer, conn.address)
                self._emit(tapped, group=group_request.group_id, **tap)
        if log_it:
            self._log_response(conn, api, group_request, answer)
        return from_group_response(request, group_request, answer)

    def _log_request(self, conn: Connection, api: str, version: int, req: Any) -> None:
        fields: dict[str, Any] = {
            "api": api,
            "version": version,
            "member": conn.address,
            "client_id": conn.client_id,
            "group": req.group_id,
        }
        if isinstance(req, pg.LeaveGroupRequest):
            leaving = (m.member_id for m in getattr(req, "members", ()))
            fields["member_ids"] = [*req.member_ids, *leaving]
        else:
            fields["member_id"] = req.member_id
        if isinstance(req, pg.JoinGroupRequest):
            fields["protocols"] = [name for name, _ in req.protocols]
            fields["group_instance_id"] = req.group_instance_id
        elif isinstance(req, pg.SyncGroupRequest | pg.HeartbeatRequest):
            fields["generation"] = req.generation_id
        self._emit("wire_request", **fields)

    def _log_response(self, conn: Connection, api: str, req: Any, answer: Any) -> None:
        fields: dict[str, Any] = {
            "api": api,
            "member": conn.address,
            "group": req.group_id,
            "error": _E(answer.error).name,
        }
        if isinstance(answer, pg.JoinGroupResponse):
            fields.update(
                member_id=answer.member_id,
                generation=answer.generation_id,
                protocol=answer.protocol_name,
                leader_id=answer.leader,
                skip_assignment=answer.skip_assignment,
            )
        elif isinstance(answer, pg.SyncGroupResponse):
            fields.update(member_id=req.member_id, generation=req.generation_id)
            fields["partitions"] = wire.decode_consumer_assignment(answer.assignment)
        self._emit("wire_response", **fields)


@asynccontextmanager
async def open_broker(options: ServeOptions, out: Path | None = None) -> AsyncIterator[Broker]:
    """Run a :class:`Broker` in the background for the body of the ``async with``.

    On exit (normal, error or cancellation) the server stops, ``run_end`` is logged and, with
    ``out``, ``events.jsonl`` and ``summary.json`` are written there (see
    :func:`scenarios.serve.outputs.write_outputs`). If the server never listened (the
    address is taken: ``OSError``, possibly inside an exception group) nothing is written.
    """
    broker = Broker(options)
    listening = False
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(broker.run)
            listening = True
            try:
                yield broker
            finally:
                nursery.cancel_scope.cancel()
    finally:
        if listening:
            broker.finish()
            if out is not None:
                from .outputs import write_outputs

                write_outputs(broker, out)
