"""Skipping the quiet stretches of a run: whole periods of nothing but heartbeats.

A stable group with no fault, no jitter and no heartbeat records does the same thing every
heartbeat period: each member's heartbeat timer fires, its Heartbeat reaches the coordinator,
which pushes the member's session deadline back and answers NONE; the member pushes its own
session timer back. Processing is translation invariant (every time is ``now`` plus a
constant), so once two moments a period apart look the same *relative to now* — the queued
heartbeat events and timers (times and sequence numbers), each member's heartbeat fields, the
coordinator's session deadlines — every further period repeats them exactly, shifted by the
period in virtual time and by the number of pushes per period in sequence numbers. The
:class:`QuietSkipper` then moves all of it forward by whole periods at once, up to (never
reaching) the next event of any other kind and never past the run's end. Nothing is logged
in such a stretch, so the event log is byte for byte the one of the run without skipping
(``tests/scenarios/sim/test_engine_fast_path.py`` compares them). Between its snapshots,
after the skip, while a fault is in force and when no period shows, the heartbeat rounds are
replayed on a small queue of their own (:mod:`scenarios.sim.fastpath.heartbeats`), which
gives the same log too; so does :class:`QuietTail`, for jittered runs.

Engine contract (:class:`scenarios.sim.fastpath.host.Host`): the engine clears ``quiet`` on
every event or effect that is not a pure heartbeat step (see ``Engine.apply``), and calls
:meth:`QuietSkipper.after_heartbeat` after a member's heartbeat timer fired. The members'
Heartbeats in flight and the coordinator's session deadlines move through their own hooks
(``GroupClient.shift_heartbeats``, ``GroupCoordinator.shift_sessions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from coordinator.group import HEARTBEAT_PREFIX
from members.group_client import COORDINATOR_ADDRESS
from protocol.group import HeartbeatRequest, HeartbeatResponse
from scenarios.sim.events import Deliver, TimerDue
from scenarios.sim.fastpath.heartbeats import forward_heartbeats

if TYPE_CHECKING:
    from scenarios.sim.fastpath.host import Host

__all__ = ["QuietSkipper", "QuietTail", "heartbeat_timer"]

#: Snapshots kept per quiet stretch before giving up on finding a period in it.
MAX_SNAPSHOTS = 16


def heartbeat_timer(owner: str, key: str) -> bool:
    """True for the timers a heartbeat re-arms: a member's ``heartbeat`` and ``session``,
    the coordinator's ``heartbeat:<member id>`` session deadlines."""
    if owner == COORDINATOR_ADDRESS:
        return key.startswith(HEARTBEAT_PREFIX)
    return key == "heartbeat" or key == "session"


def _is_heartbeat_entry(event: Any) -> bool:
    """A queued timer of :func:`heartbeat_timer`, or a Heartbeat request or response."""
    if isinstance(event, TimerDue):
        return heartbeat_timer(event.owner, event.key)
    return isinstance(event, Deliver) and type(event.message) in _HEARTBEAT_MESSAGES


def _relative(event: Deliver | TimerDue, seq: int, now: int) -> tuple[Any, ...]:
    """A heartbeat entry with its timer token relative to sequence number ``seq`` and its
    message's correlation id (a send time) relative to ``now``."""
    if isinstance(event, TimerDue):
        return (event.owner, event.key, event.token - seq)
    message = event.message
    fields = msgspec.structs.astuple(msgspec.structs.replace(message, correlation_id=0))
    relative = message.correlation_id - now
    return (event.dest, event.source, type(message).__name__, fields, relative)


_HEARTBEAT_MESSAGES = (HeartbeatRequest, HeartbeatResponse)


def _faults_end(host: Host, end: int) -> int:
    """``end``, or the end of the loss, latency and delay faults in force if that is
    sooner."""
    until = host.network.faults_until_ms()
    return min(end, until) if until > host.now_ms else end


class QuietSkipper:
    """Finds the period of a quiet stretch and skips whole periods of it.

    Args:
        engine: the engine to fast-forward (its queue, timers, members and coordinator).
        replay: whether the heartbeat replay may stand for the engine's own processing
            (:func:`scenarios.sim.calibration.replay_holds`); False: only whole periods
            are skipped.
    """

    def __init__(self, engine: Host, replay: bool) -> None:
        self.engine = engine
        self.replay = replay
        self.anchor: str | None = None
        self.seen: dict[Any, tuple[int, int]] = {}
        self.skipped_ms = 0  # virtual ms skipped so far (for benchmarks and tests)
        self.forwarded_ms = 0  # virtual ms of heartbeats replayed by forward_heartbeats

    def after_heartbeat(self, owner: str) -> None:
        """Member ``owner``'s heartbeat timer fired (its effects are applied)."""
        engine = self.engine
        if not engine.quiet:
            engine.quiet = True
            self.anchor = owner
            self.seen.clear()
        elif owner != self.anchor:
            return
        end = engine.run_end_ms
        if len(self.seen) >= MAX_SNAPSHOTS:  # no period found: replay to the next event
            self.forwarded_ms += self._forward((end + 1, 0))
            return
        if not self._network_quiet():  # replay to the end of the faults in force
            self.forwarded_ms += self._forward((_faults_end(engine, end) + 1, 0))
            return
        signature, others_at = self._signature()
        now, seq = engine.now_ms, engine.seq
        earlier = self.seen.get(signature)
        if earlier is None:
            # replay up to this member's next heartbeat, which takes the next snapshot
            self.seen[signature] = (now, seq)
            timer = engine.timers[(owner, "heartbeat")]
            next_heartbeat = timer.entry if timer.token is not None else None
            self.forwarded_ms += self._forward(next_heartbeat or (end + 1, 0))
            return
        period, pushes = now - earlier[0], seq - earlier[1]
        limit = min(others_at - 1, end)  # the last time the skip may reach
        periods = (limit - now) // period if period > 0 else 0
        if periods > 0:
            self._shift(periods * period, periods * pushes)
            self.seen = {signature: (engine.now_ms, engine.seq)}
        # less than a period is left before the next other event: replay it
        self.forwarded_ms += self._forward((end + 1, 0))

    # ------------------------------------------------------------------ internals

    def _forward(self, until: tuple[int, int]) -> int:
        """:func:`forward_heartbeats`, where the replay holds."""
        return forward_heartbeats(self.engine, until) if self.replay else 0

    def _network_quiet(self) -> bool:
        network = self.engine.network
        return not network.jitter_ms and not network.faults_in_force(self.engine.now_ms)

    def _signature(self) -> tuple[Any, int]:
        """Everything a heartbeat period touches, relative to now; and the earliest time of
        any other queued event."""
        engine = self.engine
        now, seq = engine.now_ms, engine.seq
        others_at = 1 << 62
        entries = []
        for at, s, event in engine.queued():
            if _is_heartbeat_entry(event):
                if type(event) is TimerDue:
                    continue  # stated by its timer below, wherever lazy re-arming has it
                entry = _relative(event, seq, now)  # type: ignore[arg-type]
                entries.append((at - now, s - seq, entry))
            elif at < others_at and (
                type(event) is not TimerDue or engine.timers.live(event)  # type: ignore[arg-type]
            ):
                others_at = at  # (a stale timer entry changes nothing when it comes up)
        entries.sort()
        # Each armed heartbeat timer by when it fires and its token. Lazy re-arming keeps
        # an earlier entry queued that pushes the real one when it comes up (Engine._set_timer);
        # where that entry is does not change when or in which order anything happens, so
        # it is left out: a period is found even when the re-arming cycle is longer.
        timers = sorted(
            (owner, key, due - now, token - seq)
            for (owner, key) in engine.timers
            if heartbeat_timer(owner, key)
            and (armed := engine.timers.armed(owner, key)) is not None
            for token, due in (armed,)
        )
        members = tuple(
            (
                address,
                m.state,
                m.generation,
                m.coordinator_known,
                tuple((sent - now, generation) for sent, generation in m.heartbeats_in_flight()),
            )
            for address, m in sorted(engine.members.items())
        )
        coordinator = engine.coordinator
        deadlines = tuple((mid, at - now) for mid, at in coordinator.session_deadlines())
        signature = (
            tuple(entries),
            tuple(timers),
            members,
            deadlines,
            engine.coordinator_up,
            id(coordinator),
        )
        return signature, others_at

    def _shift(self, dt: int, ds: int) -> None:
        """Move every heartbeat event, timer and time forward by ``dt`` virtual ms and
        ``ds`` sequence numbers (what ``dt / period`` periods of processing would do)."""
        engine = self.engine
        queue = []
        for at, s, event in engine.queued():
            if _is_heartbeat_entry(event):
                if isinstance(event, TimerDue):
                    event = TimerDue(event.owner, event.key, event.token + ds)
                elif isinstance(event, Deliver):  # a Heartbeat or its answer:
                    message = event.message  # its correlation id is a send time
                    shifted = message.correlation_id + dt
                    message = msgspec.structs.replace(message, correlation_id=shifted)
                    event = Deliver(event.dest, event.source, message)
                queue.append((at + dt, s + ds, event))
            elif at >= engine.now_ms + dt or not (
                type(event) is TimerDue and engine.timers.drop_stale(at, s, event)  # type: ignore[arg-type]
            ):
                queue.append((at, s, event))  # (a stale timer entry skipped over goes)
        engine.replace_queue(queue)
        engine.timers.shift(dt, ds, heartbeat_timer)
        for member in engine.members.values():
            member.shift_heartbeats(dt)
        engine.coordinator.shift_sessions(dt)
        # The network's per-link clocks stay: with no jitter and no latency fault in force,
        # every later message arrives after any clock value, the skipped ones' included.
        engine.advance(engine.now_ms + dt, engine.seq + ds)
        self.skipped_ms += dt


class QuietTail:
    """Ends a jittered run early once nothing but heartbeats can happen before its end, and
    replays the heartbeat rounds before any other event on a small queue of their own
    (:func:`scenarios.sim.fastpath.heartbeats.forward_heartbeats`).

    Jitter draws from the run's generator for every message, so a jittered stretch never
    repeats and :class:`QuietSkipper` cannot skip it. But once a whole heartbeat period has
    passed with nothing else, no other event is queued before the run's end, no fault is in
    force, the group and every member are Stable, and every member's session outlasts its
    heartbeat interval by more than two round trips at the worst jitter, the rest of the run
    is heartbeats that log nothing: each Heartbeat is answered NONE and no session timer can
    expire. Dropping them leaves the event log byte for byte the same
    (``tests/scenarios/sim/test_engine_fast_path.py``); the generator's later state is never
    used. Until then, from the first heartbeat of a quiet stretch, the heartbeat rounds are
    replayed up to the next other event (or the end of the faults in force, so that the tail
    can still go).

    Engine contract: as :class:`QuietSkipper`'s (``quiet``, ``after_heartbeat``); ``replay``
    as its.
    """

    def __init__(self, engine: Host, replay: bool) -> None:
        self.engine = engine
        self.replay = replay
        self.anchor: str | None = None
        self.skipped_ms = 0  # virtual ms dropped at the end of runs
        self.forwarded_ms = 0  # virtual ms of heartbeats replayed by forward_heartbeats

    def after_heartbeat(self, owner: str) -> None:
        """Member ``owner``'s heartbeat timer fired (its effects are applied)."""
        engine = self.engine
        end = engine.run_end_ms
        first = not engine.quiet
        if first:
            engine.quiet = True
            self.anchor = owner
        elif owner != self.anchor:
            return
        if not self.replay:  # the heartbeat code is not what the replay models
            return
        if end == engine.end_ms and self._safe() and not self._other_before(end):
            if not first:  # a whole quiet heartbeat period has passed
                self.skipped_ms += max(0, end - engine.now_ms)
                engine.replace_queue([])  # only heartbeats are left (checked by _other_before)
            return
        # up to the end of the faults in force at most, so that the tail can still go
        until = (_faults_end(engine, end) + 1, 0)
        self.forwarded_ms += forward_heartbeats(engine, until)

    def _other_before(self, end: int) -> bool:
        """Some queued event due by ``end`` is neither a heartbeat step nor a stale timer
        entry."""
        for at, _, event in self.engine.queued():
            if (
                at <= end
                and not _is_heartbeat_entry(event)
                and (not isinstance(event, TimerDue) or self.engine.timers.live(event))
            ):
                return True
        return False

    def _safe(self) -> bool:
        engine = self.engine
        network = engine.network
        now = engine.now_ms
        if not engine.coordinator_up or network.faults_in_force(now) or engine.requests_held():
            return False
        coordinator = engine.coordinator
        if coordinator.state.name != "STABLE":
            return False
        round_trip = 2 * (network.latency_ms + network.jitter_ms)
        for member in engine.members.values():
            t = member.timeouts
            if member.state.name != "STABLE" or not member.coordinator_known:
                return False
            if t.session_timeout_ms - t.heartbeat_interval_ms <= 2 * round_trip + 1:
                return False
            if t.request_timeout_ms <= round_trip + 1:
                return False
            if any(now - sent > round_trip for sent, _ in member.heartbeats_in_flight()):
                return False  # an answer was lost: that request will time out
        views = coordinator.members()
        longest = max(
            (x.timeouts.heartbeat_interval_ms for x in engine.members.values()), default=0
        )  # (the longest heartbeat interval, once: not once per member)
        for m in views:
            if m.session_timeout_ms <= 2 * round_trip + 1 + longest:
                return False
        return len(views) == len(engine.members)
