"""``replay --conform``: the order of a recorded request and a groupsim timer due near it.

A loaded broker runs a timer late (its timer wheel and event loop lag) and takes a request late
(its request queue), so a timer and a request within ``max_lag_ms`` of each other may have come
in either order (``GroupMetadataManager``'s ``InitialDelayedJoin`` and its extensions, the join
and sync deadlines, session expiry). :class:`TimerOrders` tries both and keeps the deadline
order unless the other one matches the trace strictly better.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from protocol.effects import Send
from scenarios.serve import wire
from scenarios.serve.translate import from_group_response, to_group_request

from .exchanges import RESPONSE_API_KEY, Exchange, coordinator_unavailable, first_difference
from .frames import decode_response, to_json
from .verdict import Difference

if TYPE_CHECKING:
    from .conform import _State

__all__ = ["MAX_TIMER_POSITIONS", "MAX_LOOKAHEAD", "TimerOrders"]

#: Most later requests a timer that the broker may have run late is tried after (positions).
MAX_TIMER_POSITIONS = 8
#: Most requests replayed to judge one order of a timer and a request.
MAX_LOOKAHEAD = 256

#: Most timers of one group whose order with one request is chosen (nearest deadlines first).
_MAX_NEAR = 4


class TimerOrders:
    """Chooses, for a timer of a request's group due within ``max_lag_ms`` of the request,
    whether it ran before or after the request on the real broker (see
    :func:`~scenarios.record.conform.conform_coordinator`).

    A timer due at or before the request (groupsim fires it first) may instead fire after it,
    or after up to :data:`MAX_TIMER_POSITIONS` requests (all within ``max_lag_ms`` of the
    deadline): the broker's timer wheel and event loop run it late. A timer due after the
    request may instead fire before it (the request reached the broker later than the proxy):
    tried only when groupsim's answer to the request is not already the recorded one. Each
    order is judged on a copy by replaying what follows in recorded order until the broker had
    answered the group's requests concerned (at most :data:`MAX_LOOKAHEAD` requests); the
    deadline order stands unless another has strictly fewer divergences and overdue answers.
    Each timer's order is chosen once, so the cost is at most ``1 + MAX_TIMER_POSITIONS``
    lookaheads per timer that fires near a request, and two per timer (at most ``_MAX_NEAR``
    per request) that a request whose answer differs could have come after.
    """

    def __init__(self, exchanges: list[Exchange], tolerance_ms: int, max_lag_ms: int) -> None:
        self.exchanges = exchanges
        self.tolerance_ms = tolerance_ms
        self.max_lag_ms = max_lag_ms
        self._groups: dict[int, str | None] = {}

    def group_of(self, index: int) -> str | None:
        """The group id of the trace's ``index``-th request (None: groupsim cannot decode it)."""
        if index not in self._groups:
            try:
                req = to_group_request(wire.decode_request(self.exchanges[index].request_raw))
            except wire.WireError:
                self._groups[index] = None
            else:
                self._groups[index] = req.group_id
        return self._groups[index]

    def settle(self, state: _State, index: int) -> _State:
        """The state with an order chosen for each undecided timer near the ``index``-th
        request of the trace (a timing difference, ``field = "timer:<key>"``, for each timer
        whose deadline order is not the one taken)."""
        group = self.group_of(index)
        if self.max_lag_ms <= 0 or group is None or group not in state.replay.groups:
            return state
        ex = self.exchanges[index]
        tried: set[tuple[str, int]] = set()
        alike: bool | None = None  # groupsim's answer to the request now is the recorded one
        weighed = 0
        while weighed < _MAX_NEAR:
            replay = state.replay
            now_ms = max(ex.t_ms, replay.clock)
            near = [
                timer
                for timer in replay.near_timers(group, now_ms, self.max_lag_ms)
                if (timer[2], timer[1]) not in tried
            ]
            if not near:
                break
            at_ms, seq, key = near[0]
            tried.add((key, seq))
            if at_ms <= now_ms:
                replay.decided.add((group, key, seq))
                if not replay.fires_something(group, key, at_ms):
                    continue
                options = [  # fire after this many requests
                    p
                    for p in range(1, MAX_TIMER_POSITIONS + 1)
                    if index + p - 1 < len(self.exchanges)
                    and self.exchanges[index + p - 1].t_ms <= at_ms + self.max_lag_ms
                ]
            else:
                if alike is None:
                    alike = _answered_alike(state, ex, now_ms)
                if alike or not replay.fires_something(group, key, at_ms):
                    continue
                options = [0]  # fire before the request
            weighed += 1
            if self._choose(state, index, group, (at_ms, seq, key), options):
                alike = None  # the group changed
        return state

    def _choose(
        self, state: _State, index: int, group: str, timer: tuple[int, int, str], options: list[int]
    ) -> bool:
        """Puts the timer in the order that matches the trace best (see the class); whether
        that is another than the deadline order (then ``state`` is changed, and the timing
        difference listed)."""
        at_ms, seq, key = timer
        end, horizon = self._lookahead(state, index, group, at_ms, max(options, default=1))
        floor = len(state.verdict.divergences)
        best_score = self._trial(state, index, end, horizon, timer, group, None)
        best: int | None = None
        if best_score[0] > floor:
            for option in options:
                score = self._trial(state, index, end, horizon, timer, group, option)
                if score < best_score:
                    best_score, best = score, option
                    if score[0] == floor:
                        break
        if best is None:
            return False
        _reorder(state, index, group, timer, best)
        ex = self.exchanges[index]
        late = best > 0
        state.verdict.differences.append(
            Difference(
                "timing",
                ex.t_ms,
                ex.conn,
                ex.api,
                group,
                f"timer:{key}",
                "after" if late else "before",  # the timer against this request, as recorded
                "before" if late else "after",  # and at groupsim's exact deadline
            )
        )
        return True

    def _lookahead(
        self, state: _State, index: int, group: str, at_ms: int, positions: int
    ) -> tuple[int, int]:
        """(the end index, the time) up to which an order is judged: every request the options
        place the timer among, and until the broker had answered those of the group's requests
        that are among them or held by groupsim now; at most :data:`MAX_LOOKAHEAD` requests."""
        exchanges = self.exchanges
        last = min(len(exchanges), index + positions) - 1
        horizon = max(at_ms, exchanges[last].t_ms)
        for j in range(index, last + 1):
            if self.group_of(j) == group and exchanges[j].response_t_ms is not None:
                horizon = max(horizon, exchanges[j].response_t_ms or 0)
        for queue in state.waiting.values():
            for ex, _request, req in queue:
                if req.group_id == group and ex.response_t_ms is not None:
                    horizon = max(horizon, ex.response_t_ms)
        end = index
        while (
            end < len(exchanges) and end - index < MAX_LOOKAHEAD and exchanges[end].t_ms <= horizon
        ):
            end += 1
        if end < len(exchanges) and exchanges[end].t_ms <= horizon:
            horizon = exchanges[end - 1].t_ms  # cut at MAX_LOOKAHEAD requests
        return end, horizon

    def _trial(
        self,
        state: _State,
        index: int,
        end: int,
        horizon: int,
        timer: tuple[int, int, str],
        group: str,
        option: int | None,
    ) -> tuple[int, int]:
        """(divergences + answers the broker gave by ``horizon`` that groupsim still holds, all
        differences) after replaying requests ``index`` to ``end`` with the timer in ``option``'s
        order (None: the deadline order)."""
        trial = copy.deepcopy(state)
        if option is not None:
            _reorder(trial, index, group, timer, option)
        for j in range(index, end):
            trial.step(self.exchanges[j], self.tolerance_ms, j)
        trial.replay.index = len(self.exchanges)
        trial.replay.advance(horizon + self.tolerance_ms)
        trial.match(self.tolerance_ms)
        overdue = sum(
            1
            for queue in trial.waiting.values()
            for ex, _request, _req in queue
            if ex.response_t_ms is not None and ex.response_t_ms <= horizon
        )
        return len(trial.verdict.divergences) + overdue, len(trial.verdict.differences)


def _reorder(
    state: _State, index: int, group: str, timer: tuple[int, int, str], option: int
) -> None:
    """Puts the timer after ``option`` requests from the ``index``-th on (held past them), or,
    with ``option`` 0, fires it before that request (the clock moves to its deadline)."""
    at_ms, seq, key = timer
    replay = state.replay
    replay.decided.add((group, key, seq))
    if option > 0:
        replay.hold[(group, key, seq)] = index + option
        return
    replay.index = index
    replay.advance(at_ms)
    replay.clock = max(replay.clock, at_ms)


def _answered_alike(state: _State, ex: Exchange, now_ms: int) -> bool:
    """Whether groupsim, given the request now, answers it at once as the broker did (True as
    well when there is nothing to compare: no recorded answer, or one the group never saw)."""
    if ex.response_raw is None or coordinator_unavailable(ex):
        return True
    try:
        request = wire.decode_request(ex.request_raw)
        req = to_group_request(request)
    except wire.WireError:
        return True
    effects = state.replay.sandbox(req.group_id).handle(str(ex.conn), req, now_ms)
    answer = next(
        (
            e.message
            for e in effects
            if isinstance(e, Send)
            and int(e.dest) == ex.conn
            and RESPONSE_API_KEY.get(type(e.message)) == ex.api_key
        ),
        None,
    )
    if answer is None:
        return False  # held: what it gets depends on what the timer does
    _, recorded = decode_response(ex.response_raw, ex.api_key, ex.version)
    return (
        first_difference(to_json(recorded), to_json(from_group_response(request, req, answer)))
        is None
    )
