"""``replay --conform``: the orders in which the real broker may have taken requests that the
proxy recorded on different connections, and the one of them that matches the trace best.

The proxy stamps a request (``Exchange.t_ms``) just before it forwards it to the broker, and
an answer (``response_t_ms``) when it reads it back. Requests on one connection are taken in
order (``SocketServer``'s ``Processor`` mutes a channel until its answer is sent). Requests on
different connections pass through different network threads and then queues the broker
drains at its own pace: ``RequestChannel``'s request queue to the ``KafkaRequestHandler``
threads, and in Kafka 4's group coordinator ``CoordinatorRuntime``'s event queue. So the broker
took each request at some time in an interval starting at its stamp (:func:`taken_by`):

* up to ``reorder_ms`` after it: two sockets, two network threads;
* up to ``inflight_ms`` after it while it was in flight;
* never after its answer came back, whichever bound: the broker answers only what it took.
  A request sent after another one's answer came back was taken after it; trying the other
  order would hide a divergence. A JoinGroup or SyncGroup that ``ClassicGroup`` parks until
  the rebalance moves on is answered seconds later but was taken on arrival, so
  ``inflight_ms`` bounds it too: a parked request opens no window over what was sent meanwhile.

An order of a run of such requests is possible when they can be given non-decreasing times
within their intervals (:func:`possible_orders`). :func:`best_order` tries the possible orders,
the recorded one first, and keeps another only when it matches the trace strictly better.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from scenarios.serve import wire
from scenarios.serve.translate import to_group_request

from .exchanges import Exchange
from .timer_orders import MAX_LOOKAHEAD
from .verdict import Difference

if TYPE_CHECKING:
    from .conform import _State

__all__ = [
    "MAX_REORDER",
    "DEFAULT_REORDER_MS",
    "DEFAULT_REORDER_INFLIGHT_MS",
    "taken_by",
    "reorderable",
    "possible_orders",
    "best_order",
]

#: Most requests whose order is searched at once (5! = 120 orders).
MAX_REORDER = 5
#: Default of how much later than its proxy stamp the broker may have taken any request (ms).
DEFAULT_REORDER_MS = 5
#: Default of how much later than its proxy stamp the broker may have taken a request still in
#: flight (ms). A loaded broker queues a request twice before the group coordinator runs it
#: (``RequestChannel``'s request queue, ``CoordinatorRuntime``'s event queue): a CI run of
#: test_real_vs_sim had it take a request 8 ms after one sent later on another connection. 50 ms
#: is six times that, and still 60 times shorter than the 3 s heartbeat interval of consumers and
#: Connect workers, so a window spans one burst of requests (a rebalance's JoinGroups, the
#: SyncGroups after it), never two heartbeat rounds. The cost stays bounded: at most
#: :data:`MAX_REORDER` requests per window, only their possible orders, a bounded lookahead.
DEFAULT_REORDER_INFLIGHT_MS = 50


def taken_by(ex: Exchange, reorder_ms: int, inflight_ms: int) -> int:
    """The latest time (ms, the trace's clock) the broker may have taken the request: its
    stamp plus the larger of ``reorder_ms`` and ``inflight_ms``, but never later than its
    answer came back (the broker answers what it took; no answer recorded: in flight until
    then)."""
    latest = ex.t_ms + max(reorder_ms, inflight_ms)
    if ex.response_t_ms is not None:
        latest = min(latest, ex.response_t_ms)
    return latest


def reorderable(
    exchanges: list[Exchange], start: int, reorder_ms: int, inflight_ms: int
) -> list[Exchange]:
    """The run of requests from ``start`` on distinct connections each of which the broker may
    have taken before an earlier one of the run (it was stamped no later than that one's
    :func:`taken_by`): at most :data:`MAX_REORDER`, one when none qualifies."""
    window = [exchanges[start]]
    conns = {exchanges[start].conn}
    latest = taken_by(exchanges[start], reorder_ms, inflight_ms)
    for ex in exchanges[start + 1 :]:
        if len(window) == MAX_REORDER or ex.conn in conns or ex.t_ms > latest:
            break
        window.append(ex)
        conns.add(ex.conn)
        latest = max(latest, taken_by(ex, reorder_ms, inflight_ms))
    return window


def possible_orders(
    window: list[Exchange], reorder_ms: int, inflight_ms: int
) -> Iterator[tuple[Exchange, ...]]:
    """The orders the broker may have taken the window's requests in, the recorded one first:
    those in which each request can be taken no earlier than its stamp, no later than its
    :func:`taken_by`, and no earlier than the one before it (the recorded order always, even
    with stamps out of order)."""
    yield tuple(window)
    for order in itertools.islice(itertools.permutations(window), 1, None):
        clock = 0
        for ex in order:
            clock = max(clock, ex.t_ms)
            if clock > taken_by(ex, reorder_ms, inflight_ms):
                break
        else:
            yield order


def best_order(
    state: _State,
    window: list[Exchange],
    start: int,
    later: list[Exchange],
    tolerance_ms: int,
    reorder_ms: int,
    inflight_ms: int,
) -> _State:
    """The state after the window's requests in the possible order that matches the trace
    best (the recorded order unless another one is strictly better); another order is recorded
    as a timing difference, ``field = "order"``.

    An order is judged by what follows until the broker had answered every request of the
    window (a JoinGroup may be parked for a whole rebalance, and the order decides e.g. the
    leader only then): the ``later`` requests up to that time, at most :data:`MAX_LOOKAHEAD`,
    are replayed in recorded order on a copy, and the differences counted. The window starts at
    the trace's ``start``-th request.
    """
    horizon = max((ex.response_t_ms or ex.t_ms for ex in window), default=0)
    lookahead = list(itertools.takewhile(lambda ex: ex.t_ms <= horizon, later))
    if len(lookahead) > MAX_LOOKAHEAD:
        lookahead = lookahead[:MAX_LOOKAHEAD]
        horizon = lookahead[-1].t_ms  # cut: judge only what was answered by then
    baseline = state.mismatches([], horizon)
    best: tuple[int, tuple[Exchange, ...]] | None = None
    for order in possible_orders(window, reorder_ms, inflight_ms):
        trial = copy.deepcopy(state)
        for k, ex in enumerate((*order, *lookahead)):
            trial.step(ex, tolerance_ms, start + k)
        trial.replay.advance(horizon)
        trial.match(tolerance_ms)
        score = trial.mismatches(window, horizon)
        if best is None or score < best[0]:
            best = (score, order)
            if score == baseline:
                break  # no new difference: nothing better to find
    assert best is not None  # the recorded order is always tried
    _, order = best
    for k, ex in enumerate(order):
        state.step(ex, tolerance_ms, start + k)
    if list(order) != window:
        first = window[0]
        state.verdict.differences.append(
            Difference(
                "timing",
                first.t_ms,
                first.conn,
                first.api,
                _group_of(first),
                "order",
                [ex.conn for ex in window],
                [ex.conn for ex in order],
            )
        )
    return state


def _group_of(ex: Exchange) -> str:
    """The group id of ``ex``'s request ("" when it cannot be decoded: the replay skips it)."""
    try:
        return to_group_request(wire.decode_request(ex.request_raw)).group_id
    except wire.WireError:
        return ""
