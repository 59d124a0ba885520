"""The one deterministic engine: a group coordinator, members of either kind, a network.

Everything that happens goes through **one queue ordered by (virtual time, sequence number)**
of typed events (:mod:`scenarios.sim.events`): message deliveries, timer firings, timeline
steps, member starts. Ties at the same virtual time go in the order the events were scheduled,
and every random choice (member ids, network jitter and loss) draws from one
``random.Random(seed)``, so the same scenario and seed always give the same event log. The
engine runs its own loop; nothing here depends on trio's task interleaving or on a clock.

What differs between kinds of group (Connect, Streams, plain consumers) — which members
exist, how they start and stop, the Connect config topic — is the :class:`RunKind` the
engine hosts (:meth:`scenarios.kinds.GroupKind.run_kind`). The coordinator
(:class:`coordinator.group.GroupCoordinator`), the member core
(:class:`members.group_client.GroupClient`), the network with every fault, the timers and
the invariant checker are shared.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from coordinator.group import HEARTBEAT_PREFIX, GroupCoordinator
from members.group_client import COORDINATOR_ADDRESS, GroupClient, MemberState, PollStall
from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from protocol.group import (
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
)
from scenarios.check.invariants import InvariantChecker
from scenarios.eventlog import LOG_VERSION, EventLog
from scenarios.input import schema
from scenarios.input.steps import Planned
from scenarios.sim import late as late_requests
from scenarios.sim import wire_tap
from scenarios.sim.coordinator_io import CoordinatorIO
from scenarios.sim.events import (
    CoordinatorReload,
    Deliver,
    HealDue,
    LateDeliver,
    QueueEvent,
    StartMember,
    StepDue,
    TimerDue,
)
from scenarios.sim.fastpath.quiet import QuietSkipper, QuietTail, heartbeat_timer
from scenarios.sim.member_ids import MemberIds
from scenarios.sim.network import Network, member_name, rename_members
from scenarios.sim.run_kind import RunKind
from scenarios.sim.timers import TimerTable

_STOPPED = MemberState.STOPPED

__all__ = ["Engine", "RunKind", "PROGRESS_EVERY"]

#: :meth:`Engine.run_until` calls its ``on_progress`` every this many events (a power of 2).
PROGRESS_EVERY = 1024


class Engine:
    """A scenario in progress. Build it, then :meth:`run_until`.

    Two fast paths, each a setting of this engine, leave the event log byte for byte the same:
    ``lazy_timers`` (the lazy re-arming of :meth:`_set_timer`) and ``skip_quiet`` (whole
    heartbeat periods of a quiet group skipped, the heartbeat rounds between other events
    replayed, only while heartbeats are not logged: :mod:`scenarios.sim.quiet`). With both
    False the engine processes every event one by one: the reference
    ``tests/scenarios/sim/test_engine_fast_path.py`` compares logs with.

    Args:
        kind: the kind of group and its loaded scenario.
        seed: the run's seed; every random choice derives from it.
        log: where records go (the invariant checker is subscribed to it here).
        log_heartbeats: also log heartbeat requests and responses (default: the scenario's).
        replay: asked once, if quiet stretches may be skipped, whether the heartbeat replay
            holds (:func:`scenarios.sim.calibration.replay_holds`); None: never replay.
        member_ids: per client id, ids to hand out in order, a recorded run's (:class:`MemberIds`).
        lazy_timers: push a re-armed timer's queue entry only when its earlier entry comes
            up (default True).
        skip_quiet: skip and replay quiet heartbeat stretches (default True; never while
            heartbeats are logged).
        coordinator_io: also log the coordinator's traffic for the Kafka referee
            (:mod:`scenarios.sim.coordinator_io`, as :attr:`io`); no quiet skipping then.

    Attributes:
        now_ms: the virtual time of the event being processed (virtual ms).
        members: live members by address; ``addresses``: member name → current address.
        end_ms: when the run ends.
    """

    def __init__(
        self,
        kind: RunKind,
        seed: int,
        *,
        log: EventLog | None = None,
        log_heartbeats: bool | None = None,
        replay: Callable[[], bool] | None = None,
        member_ids: Mapping[str, Sequence[str]] | None = None,
        lazy_timers: bool = True,
        skip_quiet: bool = True,
        coordinator_io: bool = False,
    ) -> None:
        loaded = kind.loaded
        scenario = loaded.scenario
        self.kind = kind
        self.seed = seed
        self.rng = random.Random(seed)
        self._new_member_id = MemberIds(self.rng, member_ids)
        self.log = log if log is not None else EventLog()
        self.checker = InvariantChecker()
        self.log.subscribe(self._check)
        self._checking = False
        self.log_heartbeats = scenario.log_heartbeats if log_heartbeats is None else log_heartbeats
        self.network = Network(scenario.network.latency_ms, scenario.network.jitter_ms, self.rng)
        self.now_ms = 0

        self.io = CoordinatorIO(self.log, kind.group_id, loaded) if coordinator_io else None
        self.coordinator = GroupCoordinator(
            kind.group_id,
            loaded.coordinator_config,
            self._new_member_id if self.io is None else self.io.drawing(self._new_member_id),
        )
        self.coordinator_up = True
        self.coordinator_epoch = 0  # coordinator failovers so far (scenarios.sim.late)
        self.members: dict[str, GroupClient] = {}  # address -> live member
        self.addresses: dict[str, str] = {}  # name -> current address
        self._incarnations: dict[str, int] = {}
        self._pending_restart: dict[str, tuple[Any, int]] = {}

        self._queue: list[tuple[int, int, QueueEvent]] = []
        self._seq = 0
        #: every timer's arming and queue entry (one record per timer: a heartbeat re-arms
        #: three timers, each with one lookup)
        self.timers = TimerTable()
        #: a quiet stretch (scenarios.sim.fastpath.quiet): False after anything but a
        #: heartbeat step
        self.quiet = False
        #: where the current run_until stops (virtual ms)
        self.run_end_ms = 0
        self.lazy_timers = lazy_timers
        skip = skip_quiet and not self.log_heartbeats and not coordinator_io
        holds = skip and replay is not None and replay()  # the heartbeat replay may stand in
        self._skipper: QuietSkipper | QuietTail | None = None
        if skip:
            # Jitter draws from the run's generator for every message: a jittered run is
            # never periodic, only its quiet tail can go (QuietTail).
            quiet = QuietTail if scenario.network.jitter_ms else QuietSkipper
            self._skipper = quiet(self, holds)
        # delay_request: held requests not arrived yet, by (sender address, request type).
        self._held: dict[tuple[str, type], list[LateDeliver]] = {}
        self.end_ms = self._plan()

    # ------------------------------------------------------------------ set-up

    def _plan(self) -> int:
        loaded = self.kind.loaded
        self.log.emit(
            0,
            "run_start",
            log_version=LOG_VERSION,
            scenario=loaded.scenario.name,
            seed=self.seed,
            **self.kind.run_start_fields(),
        )
        for at_ms, name, config in self.kind.plan(self):
            self.push(at_ms, StartMember(name, config))
        for planned in loaded.steps:
            self.push(planned.at_ms, StepDue(planned))
        return int(loaded.end_ms)

    # ------------------------------------------------------------------ queue

    def push(self, at_ms: int, event: QueueEvent) -> None:
        """Schedule ``event`` at virtual time ``at_ms``."""
        self._seq += 1
        heapq.heappush(self._queue, (at_ms, self._seq, event))

    def _process_rare(self, kind: type, event: QueueEvent) -> None:
        """Every queue event but a delivery and a timer: steps, starts, heals, reloads."""
        if kind is StepDue:
            self.quiet = False
            self._apply_step(event.planned)  # type: ignore[union-attr]
        else:
            self.quiet = False
            if kind is StartMember:
                self._start_member(event.name, event.config)  # type: ignore[union-attr]
            elif kind is HealDue:
                self._heal(event.member)  # type: ignore[union-attr]
            elif kind is CoordinatorReload:
                self._load_coordinator()
            elif kind is LateDeliver:
                self._deliver_late(event)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ fast paths' host

    @property
    def seq(self) -> int:
        """The last sequence number taken (every queue push and timer arming takes one)."""
        return self._seq

    def queued(self) -> list[tuple[int, int, QueueEvent]]:
        """The queue's entries ``(at_ms, seq, event)``, in heap order (read only)."""
        return self._queue

    def replace_queue(self, entries: list[tuple[int, int, QueueEvent]]) -> None:
        """Make ``entries`` (any order) the queue (the fast paths, which move heartbeat
        events: :mod:`scenarios.sim.fastpath`)."""
        heapq.heapify(entries)
        self._queue[:] = entries

    def advance(self, now_ms: int, seq: int) -> None:
        """Move the virtual time and the last sequence number taken forward to where
        processing the events a fast path skipped or replayed would have left them.

        Raises:
            ValueError: either would move back.
        """
        if now_ms < self.now_ms or seq < self._seq:
            raise ValueError(f"cannot move back to {now_ms} ms, seq {seq}")
        self.now_ms, self._seq = now_ms, seq

    def requests_held(self) -> bool:
        """True while a ``delay_request`` fault holds a request not yet arrived."""
        return bool(self._held)

    # ------------------------------------------------------------------ timers

    def _set_timer(self, owner: str, key: str, at_ms: int) -> None:
        """Arm ``owner``'s timer ``key`` at ``at_ms``, replacing any earlier arming; it takes
        the next sequence number now, as every push does (lazy re-arming:
        :meth:`TimerTable.arm`)."""
        self._seq += 1
        seq = self._seq
        if self.timers.arm(owner, key, at_ms, seq, self.lazy_timers):
            heapq.heappush(self._queue, (at_ms, seq, TimerDue(owner, key, seq)))

    def _timer_due(self, owner: str, key: str, token: int) -> None:
        timer = self.timers.get((owner, key))
        if timer is None:
            return
        entry = timer.entry
        if entry is not None and entry[1] == token:
            at_ms = timer.deferred
            if at_ms is not None:  # re-armed later meanwhile: its entry goes in now
                seq = timer.token
                assert seq is not None  # (disarming clears deferred too)
                timer.entry = (at_ms, seq)
                timer.deferred = None
                heapq.heappush(self._queue, (at_ms, seq, TimerDue(owner, key, seq)))
                return
            timer.entry = None
        if timer.token == token:
            timer.token = None
            self._fire(owner, key)
            if key == "heartbeat" and owner != COORDINATOR_ADDRESS:
                skipper = self._skipper
                # (after_heartbeat returns at once unless the stretch just became quiet or
                # this is the member it watches)
                if skipper is not None and (not self.quiet or owner == skipper.anchor):
                    skipper.after_heartbeat(owner)
            elif self.quiet and not heartbeat_timer(owner, key):
                self.quiet = False

    def run_until(
        self, end_ms: int | None = None, *, on_progress: Callable[[int], None] | None = None
    ) -> None:
        """Process every event up to ``end_ms`` (default: the run's end); ``on_progress`` is
        called with the virtual time every :data:`PROGRESS_EVERY` events (the run's budget
        is checked there, :func:`scenarios.sim.runner.simulate`)."""
        end = self.end_ms if end_ms is None else end_ms
        self.run_end_ms = end
        queue = self._queue
        pop, push = heapq.heappop, heapq.heappush
        deliver, timer_due, process = self._deliver, self._timer_due, self._process_rare
        # by type, the two most frequent kinds first (cheaper than ``match``); the first
        # event past the end is popped and put back
        processed = 0
        while queue:
            entry = pop(queue)
            at_ms, _, event = entry
            if at_ms > end:
                push(queue, entry)
                break
            self.now_ms = at_ms
            kind = type(event)
            if kind is Deliver:
                deliver(event.dest, event.source, event.message)  # type: ignore[union-attr]
            elif kind is TimerDue:
                timer_due(event.owner, event.key, event.token)  # type: ignore[union-attr]
            else:
                process(kind, event)
            if on_progress is not None:
                processed += 1
                if processed & (PROGRESS_EVERY - 1) == 0:
                    on_progress(self.now_ms)
        self.now_ms = max(self.now_ms, end)

    # ------------------------------------------------------------------ dispatch

    def _deliver(self, dest: str, source: str, message: Any) -> None:
        now = self.now_ms
        if self.quiet:
            message_type = type(message)
            if message_type is HeartbeatResponse:
                if message.error != ErrorCode.NONE:
                    self.quiet = False
            elif message_type is not HeartbeatRequest:
                self.quiet = False
        if dest == COORDINATOR_ADDRESS:
            if type(message) is FindCoordinatorRequest:
                up = self.coordinator_up
                error = ErrorCode.NONE if up else ErrorCode.COORDINATOR_NOT_AVAILABLE
                self.send(COORDINATOR_ADDRESS, source, FindCoordinatorResponse(error))
            elif self.coordinator_up:
                effects = wire_tap.answered(
                    self.coordinator, self.log, source, message, now, self.io
                )
                self.apply(COORDINATOR_ADDRESS, effects)
            else:  # the old coordinator's broker answers, the new one is still loading
                reply = late_requests.not_coordinator(message)
                if reply is not None:
                    self.send(COORDINATOR_ADDRESS, source, reply)
        else:
            member = self.members.get(dest)
            if member is None and self.kind.deliver(self, dest, source, message):
                return  # the kind's own address (Connect's config topic or REST)
            # an answer travels on the connection its request came on (Send.via); on a
            # dropped connection it is lost
            if source == COORDINATOR_ADDRESS and (
                member is None or member.connection_address != dest
            ):
                member = self.member_at(dest)
                dest = member.address if member is not None else dest
            if member is not None:
                self.apply(dest, member.handle(message, now))

    def _fire(self, owner: str, key: str) -> None:
        now = self.now_ms
        if owner == COORDINATOR_ADDRESS:
            if self.coordinator_up:
                effects = self.coordinator.fire(key, now)
                if self.io is not None:
                    self.io.timer(now, key, effects)
                self.apply(owner, effects)
        else:
            member = self.members.get(owner)
            if member is not None:
                self.apply(owner, member.fire(key, now))

    def apply(self, owner: str, effects: list[Effect]) -> None:
        """Carry out ``owner``'s effects in order; retire a member that stopped."""
        for effect in effects:
            kind = type(effect)
            if kind is Send:  # self.send, inlined (the most frequent effect)
                dest = effect.dest  # type: ignore[union-attr]
                source = effect.via or owner  # type: ignore[union-attr]
                network = self.network
                at = network.arrival_ms(source, dest, self.now_ms)
                if (
                    (network.delays or self._held)
                    and dest == COORDINATOR_ADDRESS
                    and self._hold(source, effect.message, at)  # type: ignore[union-attr]
                ):
                    continue
                if at is not None:
                    self._seq += 1
                    deliver = Deliver(dest, source, effect.message)  # type: ignore[union-attr]
                    heapq.heappush(self._queue, (at, self._seq, deliver))
            elif kind is SetTimer:
                key = effect.key  # type: ignore[union-attr]
                if self.quiet and not (
                    key.startswith(HEARTBEAT_PREFIX)
                    if owner == COORDINATOR_ADDRESS
                    else key == "heartbeat" or key == "session"
                ):  # heartbeat_timer, inlined
                    self.quiet = False
                self._set_timer(owner, key, effect.at_ms)  # type: ignore[union-attr]
            elif kind is CancelTimer:
                self.quiet = False
                self.timers.cancel(owner, effect.key)  # type: ignore[union-attr]
            elif kind is Log:
                self.quiet = False
                fields = effect.fields  # type: ignore[union-attr]
                if owner == COORDINATOR_ADDRESS:
                    fields = rename_members(fields)
                self.log.emit_fields(self.now_ms, effect.kind, fields)  # type: ignore[union-attr]
        if owner != COORDINATOR_ADDRESS:
            member = self.members.get(owner)
            if member is not None and member.state is _STOPPED:
                self._retire(owner)

    def member_at(self, address: str) -> GroupClient | None:
        """The live member whose current connection to the coordinator is ``address`` (its
        incarnation's address, or ``w1#2/3`` after it reconnected); ``None`` for a dropped
        connection or a stopped process."""
        member = self.members.get(address.partition("/")[0])
        if member is None or member.connection_address != address:
            return None
        return member

    def send(self, source: str, dest: str, message: Any) -> None:
        """Deliver ``message`` after the network's delay (dropped by a fault: not at all)."""
        at = self.network.arrival_ms(source, dest, self.now_ms)
        if at is not None:
            self.push(at, Deliver(dest, source, message))

    def _check(self, record: dict[str, Any]) -> None:
        if self._checking or record["kind"] == "violation":
            return
        self._checking = True
        try:
            for violation in self.checker.feed(record):
                self.log.emit(record["t_ms"], "violation", **violation.fields())
        finally:
            self._checking = False

    # ------------------------------------------------------------------ members

    def _start_member(self, name: str, config: Any) -> None:
        if name in self.addresses:
            return  # already running: a join step for a live member does nothing
        incarnation = self._incarnations.get(name, 0) + 1
        self._incarnations[name] = incarnation
        address = f"{name}#{incarnation}"
        member = self.kind.new_member(self, name, address, config)
        self.members[address] = member
        self.addresses[name] = address
        self.apply(address, member.start(self.now_ms))

    def _retire(self, address: str) -> None:
        """Forget a member whose process stopped; schedule its restart if one is pending."""
        self.quiet = False
        self.members.pop(address, None)
        name = member_name(address)
        if self.addresses.get(name) == address:
            del self.addresses[name]
        self.timers.disarm(address)
        restart = self._pending_restart.pop(name, None)
        if restart is not None:
            config, down_ms = restart
            self.push(self.now_ms + down_ms, StartMember(name, config))

    def _apply_step(self, planned: Planned) -> None:
        self.log.emit(self.now_ms, "step", **planned.record_fields())
        step = planned.step
        match step:
            case schema.Phase(name=name):
                self.log.emit(self.now_ms, "phase", name=name)
            case _ if planned.action == "join":  # every kind's step vocabulary
                self._start_member(planned.member or "", self.kind.start_config(self, planned))
            case _ if planned.action in ("leave", "crash", "restart"):
                self._stop_member(planned)
            case (
                schema.Partition()
                | schema.Heal()
                | schema.Loss()
                | schema.Latency()
                | schema.Slow()
                | schema.CoordinatorFailover()
                | schema.DelayRequest()
            ):
                self._apply_fault(planned)
            case _:
                self.kind.apply_step(self, planned)

    def _stop_member(self, planned: Planned) -> None:
        name = planned.member or ""
        step = planned.step
        address = self.addresses.get(name)
        if planned.action == "restart":
            config = self.kind.restart_config(self, planned)
            if address is None:  # not running: just start it after the pause
                self.push(self.now_ms + step.down_ms, StartMember(name, config))
                return
            self._pending_restart[name] = (config, step.down_ms)
            clean = step.clean
        else:
            if address is None:
                return
            clean = planned.action == "leave"
        member = self.members[address]
        if clean:
            effects = self.kind.shutdown(member, planned, self.now_ms)
        else:
            effects = member.crash(self.now_ms)
        self.apply(address, effects)

    # ------------------------------------------------------------------ faults

    def _apply_fault(self, planned: Planned) -> None:
        """Inject a fault (docs/scenario-format.md); each is a ``fault`` record in the log."""
        step, now, network = planned.step, self.now_ms, self.network
        member = getattr(step, "member", None)
        fields: dict[str, Any] = {"fault": planned.action}
        if member is not None:
            fields["member"] = member
        match step:
            case schema.Partition(duration_ms=duration):
                network.partition(step.member)
                if duration:
                    self.push(now + duration, HealDue(step.member))
                    fields["duration_ms"] = duration
            case schema.Heal():
                network.heal(step.member)
            case schema.Loss(direction=direction, probability=probability, duration_ms=duration):
                p = float(probability)
                network.lose(step.member, direction, p, now + duration)
                fields.update(direction=direction, probability=p, until_ms=now + duration)
            case schema.Latency(extra_ms=extra, duration_ms=duration):
                network.slow_down(step.member, extra, now + duration)
                fields.update(extra_ms=extra, until_ms=now + duration)
            case schema.Slow(stall_ms=stall):
                fields["stall_ms"] = stall
                address = self.addresses.get(step.member)
                if address is not None:
                    self.push(now, Deliver(address, "fault", PollStall(stall)))
            case schema.DelayRequest(request=request, delay_ms=delay, duration_ms=duration):
                network.delay_requests(step.member, request, delay, now + duration)
                fields.update(request=request, delay_ms=delay, until_ms=now + duration)
            case schema.CoordinatorFailover(down_ms=down):
                fields["down_ms"] = down
                self._unload_coordinator()
                self.push(now + down, CoordinatorReload())
        self.log.emit(now, "fault", **fields)

    def _hold(self, owner: str, message: Any, at: int | None) -> bool:
        """A ``delay_request`` fault may hold this request (:func:`scenarios.sim.late.hold`)."""
        return late_requests.hold(self, owner, message, at)

    def _deliver_late(self, late: LateDeliver) -> None:
        late_requests.deliver(self, late)

    def _heal(self, member: str) -> None:
        if self.network.heal(member):
            self.log.emit(self.now_ms, "fault", fault="heal", member=member)

    def _unload_coordinator(self) -> None:
        """The group's partition moves: in-flight joins and syncs get NOT_COORDINATOR
        (logged as the coordinator's answers when its traffic is tapped: the referee
        compares them with ``GroupMetadataManager#onUnloaded``'s)."""
        effects = self.coordinator.unload(self.now_ms)
        if self.io is not None:
            self.io.answers(self.now_ms, effects)
        self.apply(COORDINATOR_ADDRESS, effects)
        self.timers.disarm(COORDINATOR_ADDRESS)
        self.coordinator_up = False
        self.coordinator_epoch += 1

    def _load_coordinator(self) -> None:
        """The new coordinator loads the group from its last stored record."""
        record = self.coordinator.stored_record()
        self.coordinator, effects = GroupCoordinator.load(
            self.kind.group_id,
            self.kind.loaded.coordinator_config,
            self._new_member_id if self.io is None else self.io.drawing(self._new_member_id),
            record,
            self.now_ms,
        )
        self.coordinator_up = True
        self.apply(COORDINATOR_ADDRESS, effects)
