"""The engine's timer table: per ``(owner, key)`` timer, its current arming and its entry in the
engine's queue.

A member or the coordinator arms a timer with ``SetTimer(key, at_ms)`` and disarms it with
``CancelTimer(key)`` (Kafka's ``Timer`` objects and ``CoordinatorTimer``); re-arming replaces
the earlier arming. The engine's queue cannot remove an entry, so an arming is recognised by
its *token* (the sequence number it took): a queued :class:`~scenarios.sim.events.TimerDue`
whose token is no longer the timer's is stale and does nothing when it comes up.

*Lazy re-arming* (``Engine._set_timer``): when a timer already has an entry queued no later
than its new due time (a heartbeat deadline pushed back again), the new arming's entry is
pushed only when that earlier entry comes up. :attr:`Timer.deferred` holds the new due time
meanwhile; the order of events is unchanged (docs in ``Engine._set_timer``).
"""

from __future__ import annotations

from collections.abc import Callable

from scenarios.sim.events import TimerDue

__all__ = ["Timer", "TimerTable"]


class Timer:
    """One timer's state.

    Attributes:
        token: the sequence number of its current arming; ``None`` once it fired or was
            disarmed.
        entry: ``(at_ms, seq)`` of its one entry in the engine's queue that is not stale,
            or ``None`` when it has none.
        deferred: with lazy re-arming, the due time (virtual ms) of an arming whose queue
            entry is pushed when :attr:`entry` comes up; ``None`` otherwise.
    """

    __slots__ = ("token", "entry", "deferred")

    def __init__(
        self, token: int | None, entry: tuple[int, int] | None, deferred: int | None = None
    ) -> None:
        self.token = token
        self.entry = entry
        self.deferred = deferred

    def due_ms(self) -> int | None:
        """When the current arming fires (virtual ms), lazy re-arming resolved; ``None`` when
        the timer is not armed or has no entry."""
        if self.token is None or self.entry is None:
            return None
        return self.entry[0] if self.deferred is None else self.deferred

    def shift(self, dt: int, ds: int) -> None:
        """Move the timer ``dt`` virtual ms and ``ds`` sequence numbers later (a skipped
        stretch of periods, :mod:`scenarios.sim.fastpath.quiet`)."""
        if self.token is not None:
            self.token += ds
        if self.entry is not None:
            self.entry = (self.entry[0] + dt, self.entry[1] + ds)
        if self.deferred is not None:
            self.deferred += dt


class TimerTable(dict[tuple[str, str], Timer]):
    """Every timer of a run by ``(owner address, key)``: a dict, with the queries and updates
    the engine and its fast paths (:mod:`scenarios.sim.fastpath`) make."""

    def arm(self, owner: str, key: str, at_ms: int, seq: int, lazy: bool) -> bool:
        """Arm timer ``(owner, key)`` at ``at_ms`` with token ``seq`` (the sequence number it
        takes now, as every push does, so ties at equal virtual times resolve exactly as if
        it were pushed now), replacing any earlier arming. True when the caller must queue
        its entry ``(at_ms, seq, TimerDue(owner, key, seq))`` now.

        With ``lazy`` (lazy re-arming), when the timer already has an entry in the queue due
        no later than ``at_ms`` (a heartbeat deadline pushed back again), the new entry is
        queued only when that one comes up (:attr:`Timer.deferred`): the queue holds the same
        ``(at_ms, seq)`` keys at every moment they can be popped, so the order of all events
        is unchanged, with far fewer stale entries (one per timer, not one per heartbeat).
        """
        timer = self.get((owner, key))
        if timer is None:
            self[(owner, key)] = Timer(seq, (at_ms, seq))
            return True
        timer.token = seq
        entry = timer.entry
        if lazy and entry is not None and entry[0] <= at_ms:
            timer.deferred = at_ms
            return False
        timer.deferred = None
        timer.entry = (at_ms, seq)
        return True

    def live(self, event: TimerDue) -> bool:
        """False for a queued timer entry that is stale (cancelled or re-armed: the engine
        does nothing when it comes up, see ``Engine._timer_due``)."""
        timer = self.get((event.owner, event.key))
        if timer is None:
            return False
        if timer.token == event.token:
            return True
        entry = timer.entry
        return entry is not None and entry[1] == event.token and timer.deferred is not None

    def drop_stale(self, at_ms: int, seq: int, event: TimerDue) -> bool:
        """True if the queue entry ``(at_ms, seq, event)`` is stale, so that the caller may
        drop it from the queue; the timer then forgets that entry (a later arming pushes its
        own)."""
        if self.live(event):
            return False
        timer = self.get((event.owner, event.key))
        if timer is not None and timer.entry == (at_ms, seq):
            timer.entry = None
        return True

    def armed(self, owner: str, key: str) -> tuple[int, int] | None:
        """``(token, due at ms)`` of an armed timer (lazy re-arming resolved), else ``None``."""
        timer = self.get((owner, key))
        if timer is None:
            return None
        due = timer.due_ms()
        return None if due is None or timer.token is None else (timer.token, due)

    def settle(self, owner: str, key: str, token: int, due_ms: int) -> TimerDue:
        """Record that timer ``(owner, key)`` is armed with ``token`` and has its one queue
        entry ``(due_ms, token)``; return that entry's event for the caller to queue."""
        timer = self.get((owner, key))
        if timer is None:
            self[(owner, key)] = Timer(token, (due_ms, token))
        else:  # (the fast paths settle every replayed timer: no new object each time)
            timer.token, timer.entry, timer.deferred = token, (due_ms, token), None
        return TimerDue(owner, key, token)

    def cancel(self, owner: str, key: str) -> None:
        """Disarm one timer (its queued entry, if any, comes up stale)."""
        timer = self.get((owner, key))
        if timer is not None:
            timer.token = timer.deferred = None

    def disarm(self, owner: str) -> None:
        """Disarm every timer of ``owner`` (a retired member, an unloaded coordinator)."""
        for (timer_owner, _), timer in self.items():
            if timer_owner == owner:
                timer.token = timer.deferred = None

    def shift(self, dt: int, ds: int, which: Callable[[str, str], bool]) -> None:
        """:meth:`Timer.shift` every timer ``(owner, key)`` for which ``which`` is true."""
        for (owner, key), timer in self.items():
            if which(owner, key):
                timer.shift(dt, ds)
