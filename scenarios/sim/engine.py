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
import uuid
from collections.abc import Callable
from typing import Any, Protocol

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
from scenarios.sim.network import Network, member_name, renamed_members
from scenarios.sim.quiet import QuietSkipper, QuietTail, heartbeat_timer

_STOPPED = MemberState.STOPPED

__all__ = ["Engine", "RunKind", "PROGRESS_EVERY"]

#: :meth:`Engine.run_until` calls its ``on_progress`` every this many events (a power of 2).
PROGRESS_EVERY = 1024


class RunKind(Protocol):
    """One run of one kind of group: what the engine and the runner call (the kind's
    :meth:`scenarios.kinds.GroupKind.run_kind` builds it).

    ``loaded`` is the loaded scenario: ``scenario`` (its name, ``network``,
    ``log_heartbeats``), ``steps`` (:class:`scenarios.input.steps.Planned`), ``end_ms`` and
    ``coordinator_config``.
    """

    group_id: str
    loaded: Any

    def run_start_fields(self) -> dict[str, Any]:
        """The kind's fields of the ``run_start`` record (after ``log_version``, ``scenario``,
        ``seed``)."""

    def plan(self, engine: Engine) -> list[tuple[int, str, Any]]:
        """Prepare the run (initial config, state directories); return the initial member
        starts as ``(at_ms, name, config)``."""

    def new_member(self, engine: Engine, name: str, address: str, config: Any) -> GroupClient:
        """A new incarnation of member ``name`` at ``address`` (``config`` from the start)."""

    def start_config(self, engine: Engine, planned: Planned) -> Any:
        """The config a ``join`` step starts its member with."""

    def restart_config(self, engine: Engine, planned: Planned) -> Any:
        """The config a ``restart`` step restarts its member with (and any state change the
        restart makes, such as wiping a Streams state directory)."""

    def shutdown(self, member: GroupClient, planned: Planned, now_ms: int) -> list[Effect]:
        """A clean stop of ``member`` for a ``leave`` or clean ``restart`` step."""

    def deliver(self, engine: Engine, dest: str, source: str, message: Any) -> bool:
        """Deliver to an address that is not a member's (Connect's config topic, a worker's
        REST address); False when ``dest`` is not the kind's."""

    def apply_step(self, engine: Engine, planned: Planned) -> None:
        """A timeline step only this kind has (Connect's connector changes)."""

    def summarize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """The run's summary (``summary.json``) from its log."""

    def end_violations(self, records: list[dict[str, Any]], summary: Any) -> list[dict[str, Any]]:
        """The end-of-run check's violations (logged before ``run_end``)."""

    def expect_failures(self, summary: dict[str, Any]) -> list[str]:
        """One line per unmet ``[expect]`` of the scenario."""


class Engine:
    """A scenario in progress. Build it, then :meth:`run_until`.

    ``LAZY_TIMERS`` (class attribute, default True) enables the lazy re-arming of
    :meth:`_set_timer`; False pushes every arming at once. ``SKIP_QUIET`` (default True, and
    only while heartbeats are not logged) skips whole heartbeat periods of a quiet group
    (:mod:`scenarios.sim.quiet`). With both False the engine processes every event one by
    one: the reference ``tests/scenarios/sim/test_engine_fast_path.py`` compares logs with.

    Args:
        kind: the kind of group and its loaded scenario.
        seed: the run's seed; every random choice derives from it.
        log: where records go (the invariant checker is subscribed to it here).
        log_heartbeats: also log heartbeat requests and responses (default: the scenario's).
        replay: asked once, if quiet stretches may be skipped, whether the heartbeat replay
            holds (:func:`scenarios.sim.calibration.replay_holds`); None: never replay.
        coordinator_io: also log the coordinator's traffic for the Kafka referee
            (:mod:`scenarios.sim.coordinator_io`, as :attr:`io`); no quiet skipping then.

    Attributes:
        now_ms: the virtual time of the event being processed (virtual ms).
        members: live members by address; ``addresses``: member name → current address.
        end_ms: when the run ends.
    """

    LAZY_TIMERS = True
    SKIP_QUIET = True

    def __init__(
        self,
        kind: RunKind,
        seed: int,
        *,
        log: EventLog | None = None,
        log_heartbeats: bool | None = None,
        replay: Callable[[], bool] | None = None,
        coordinator_io: bool = False,
    ) -> None:
        loaded = kind.loaded
        scenario = loaded.scenario
        self.kind = kind
        self.seed = seed
        self.rng = random.Random(seed)
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
        # (owner, key) -> [token (seq) of its arming, None once fired or disarmed;
        #                  its entry (at_ms, seq) in the queue, or None;
        #                  lazy re-arming (see _set_timer): the due time of a later arming
        #                  whose entry is pushed when that entry comes up, or None]
        # (one record per timer: a heartbeat re-arms three timers, each with one lookup)
        self._timer_state: dict[tuple[str, str], list[Any]] = {}
        # Quiet stretches (scenarios.sim.quiet): False after anything but a heartbeat step.
        self._quiet_ok = False
        self._run_end = 0
        # Jitter draws from the run's generator for every message: never periodic.
        skip = self.SKIP_QUIET and not self.log_heartbeats and not coordinator_io
        self._replay = skip and replay is not None and replay()  # sim.heartbeat_forward
        self._skipper: QuietSkipper | QuietTail | None = None
        if skip:
            # a jittered run is never periodic: only its quiet tail can go (QuietTail)
            self._skipper = QuietTail(self) if scenario.network.jitter_ms else QuietSkipper(self)
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

    def _new_member_id(self, client_id: str) -> str:
        return f"{client_id}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"

    # ------------------------------------------------------------------ queue

    def push(self, at_ms: int, event: QueueEvent) -> None:
        """Schedule ``event`` at virtual time ``at_ms``."""
        self._seq += 1
        heapq.heappush(self._queue, (at_ms, self._seq, event))

    def _process_rare(self, kind: type, event: QueueEvent) -> None:
        """Every queue event but a delivery and a timer: steps, starts, heals, reloads."""
        if kind is StepDue:
            self._quiet_ok = False
            self._apply_step(event.planned)  # type: ignore[union-attr]
        else:
            self._quiet_ok = False
            if kind is StartMember:
                self._start_member(event.name, event.config)  # type: ignore[union-attr]
            elif kind is HealDue:
                self._heal(event.member)  # type: ignore[union-attr]
            elif kind is CoordinatorReload:
                self._load_coordinator()
            elif kind is LateDeliver:
                self._deliver_late(event)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ timers

    def _set_timer(self, owner: str, key: str, at_ms: int) -> None:
        """Arm ``owner``'s timer ``key`` at ``at_ms`` (replacing any earlier arming).

        The timer takes the next sequence number now, as every push does, so ties at equal
        virtual times resolve exactly as if it were pushed now. But when the timer already
        has an entry in the queue due no later than ``at_ms`` (a heartbeat deadline pushed
        back again), the new entry is pushed only when that one comes up: the queue holds the
        same ``(at_ms, seq)`` keys at every moment they can be popped, so the order of all
        events is unchanged, with far fewer stale entries (one per timer, not one per
        heartbeat).
        """
        self._seq += 1
        seq = self._seq
        timer = (owner, key)
        state = self._timer_state.get(timer)
        if state is None:
            state = self._timer_state[timer] = [seq, None, None]
        else:
            state[0] = seq
            sentinel = state[1]
            if sentinel is not None and sentinel[0] <= at_ms and self.LAZY_TIMERS:
                state[2] = at_ms
                return
        state[2] = None
        state[1] = (at_ms, seq)
        heapq.heappush(self._queue, (at_ms, seq, TimerDue(owner, key, seq)))

    def _timer_due(self, owner: str, key: str, token: int) -> None:
        state = self._timer_state.get((owner, key))
        if state is None:
            return
        sentinel = state[1]
        if sentinel is not None and sentinel[1] == token:
            at_ms = state[2]
            if at_ms is not None:  # re-armed later meanwhile: its entry goes in now
                seq = state[0]
                state[1] = (at_ms, seq)
                state[2] = None
                heapq.heappush(self._queue, (at_ms, seq, TimerDue(owner, key, seq)))
                return
            state[1] = None
        if state[0] == token:
            state[0] = None
            self._fire(owner, key)
            if key == "heartbeat" and owner != COORDINATOR_ADDRESS:
                skipper = self._skipper
                # (after_heartbeat returns at once unless the stretch just became quiet or
                # this is the member it watches)
                if skipper is not None and (not self._quiet_ok or owner == skipper.anchor):
                    skipper.after_heartbeat(owner)
            elif self._quiet_ok and not heartbeat_timer(owner, key):
                self._quiet_ok = False

    def _disarm(self, owner: str) -> None:
        """Disarm every timer of ``owner`` (a retired member, an unloaded coordinator)."""
        for timer, state in self._timer_state.items():
            if timer[0] == owner:
                state[0] = state[2] = None  # its queued entry, if any, comes up stale

    def run_until(
        self, end_ms: int | None = None, *, on_progress: Callable[[int], None] | None = None
    ) -> None:
        """Process every event up to ``end_ms`` (default: the run's end); ``on_progress`` is
        called with the virtual time every :data:`PROGRESS_EVERY` events (the run's budget
        is checked there, :func:`scenarios.sim.runner.simulate`)."""
        end = self.end_ms if end_ms is None else end_ms
        self._run_end = end
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
        if self._quiet_ok:
            message_type = type(message)
            if message_type is HeartbeatResponse:
                if message.error != ErrorCode.NONE:
                    self._quiet_ok = False
            elif message_type is not HeartbeatRequest:
                self._quiet_ok = False
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
                if self._quiet_ok and not (
                    key.startswith(HEARTBEAT_PREFIX)
                    if owner == COORDINATOR_ADDRESS
                    else key == "heartbeat" or key == "session"
                ):  # heartbeat_timer, inlined
                    self._quiet_ok = False
                self._set_timer(owner, key, effect.at_ms)  # type: ignore[union-attr]
            elif kind is CancelTimer:
                self._quiet_ok = False
                state = self._timer_state.get((owner, effect.key))  # type: ignore[union-attr]
                if state is not None:
                    state[0] = state[2] = None
            elif kind is Log:
                self._quiet_ok = False
                fields = effect.fields  # type: ignore[union-attr]
                if owner == COORDINATOR_ADDRESS:
                    fields = renamed_members(fields)
                self.log.emit(self.now_ms, effect.kind, **fields)  # type: ignore[union-attr]
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
                self.log.emit(record["t_ms"], "violation", **violation)
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
        self._quiet_ok = False
        self.members.pop(address, None)
        name = member_name(address)
        if self.addresses.get(name) == address:
            del self.addresses[name]
        self._disarm(address)
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
        """The group's partition moves: in-flight joins and syncs get NOT_COORDINATOR."""
        self.apply(COORDINATOR_ADDRESS, self.coordinator.unload(self.now_ms))
        self._disarm(COORDINATOR_ADDRESS)
        self.coordinator_up = False
        self.coordinator_epoch += 1

    def _load_coordinator(self) -> None:
        """The new coordinator loads the group from its last stored record."""
        record = self.coordinator.stored_record()
        self.coordinator, effects = GroupCoordinator.load(
            self.kind.group_id,
            self.kind.loaded.coordinator_config,
            self._new_member_id,
            record,
            self.now_ms,
        )
        self.coordinator_up = True
        self.apply(COORDINATOR_ADDRESS, effects)
