"""``groupsim replay --conform``: hold groupsim's coordinator to a recorded trace.

The group requests of ``trace.jsonl`` (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) go, in
recorded order and at recorded times, through a fresh :class:`coordinator.group.GroupCoordinator`
per group id — with the member ids the real broker handed out (``ClassicGroup#generateMemberId``
is random; the replay takes each new id from the recorded answer instead). Every answer
groupsim gives is compared with the recorded one field by field, as the client read it (the
same API version, decoded by kio; ``throttle_time_ms`` aside).

Times: the real broker's timers run on a timer wheel and its purgatory, groupsim's on exact
deadlines, and the trace's times are the proxy's, not the broker's. So an answer that is equal
but comes more than ``tolerance_ms`` earlier or later than recorded is a *timing difference*.
A timer of a request's group due within ``max_lag_ms`` of the request (the initial delay and
its extensions, the join and sync deadlines, a session expiry) may have run in either order on
a loaded broker: both orders are tried, and when the other one than groupsim's deadline order
gives the recorded answers it is taken and counted as a timing difference
(``field = "timer:<key>"``, see :class:`~scenarios.record.timer_orders.TimerOrders`). An
answer that differs while a timer whose other order was *not* tried fell within
:data:`TIMER_SLACK_MS` of the request is a timing difference too. Everything else that
differs is a divergence, with the first differing field. Nothing is dropped silently: requests
groupsim cannot replay are counted as skipped with their reason.
"""

from __future__ import annotations

import copy
import functools
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from heapq import heappop, heappush
from typing import Any

from coordinator.config import CoordinatorConfig
from coordinator.group import JOIN_TIMER, GroupCoordinator
from protocol import group as pg
from protocol.effects import CancelTimer, Send, SetTimer
from scenarios.serve import wire
from scenarios.serve.translate import from_group_response, to_group_request

from .exchanges import (
    GROUP_APIS,
    RESPONSE_API_KEY,
    Exchange,
    TraceError,
    coordinator_unavailable,
    first_difference,
    read_exchanges,
)
from .frames import NEXT_GEN_GROUP_APIS, decode_response, to_json
from .moves import Move, coordinator_moves, deliver, run_moves
from .reorder import (
    DEFAULT_REORDER_INFLIGHT_MS,
    DEFAULT_REORDER_MS,
    MAX_REORDER,
    best_order,
    reorderable,
)
from .timer_orders import TimerOrders
from .verdict import Conformance, Difference

__all__ = [
    "Exchange",
    "TraceError",
    "Difference",
    "Conformance",
    "read_exchanges",
    "conform_coordinator",
    "MAX_REORDER",
    "DEFAULT_REORDER_MS",
    "DEFAULT_REORDER_INFLIGHT_MS",
]

_HEARTBEAT = 12
#: Default tolerance between the broker's timer wheel and groupsim's exact deadlines (ms).
DEFAULT_TOLERANCE_MS = 100
#: How close a timer and a request must be for a differing answer to count as a timing
#: difference (the two orders of a timeout and a request are both Kafka's), ms.
TIMER_SLACK_MS = 20
#: Default of how much later than its deadline the broker may run a join timer (ms), and how
#: close a request and a timer deadline must be for the replay to try both of their orders.
DEFAULT_MAX_LAG_MS = 2000


class _Replay:
    """The coordinators, their timers and the answers they send, replaying one trace."""

    def __init__(
        self, config: CoordinatorConfig, member_ids: dict[str, deque[str]], max_lag_ms: int
    ) -> None:
        self.config = config
        self._member_ids = member_ids
        self._made = 0
        self.groups: dict[str, GroupCoordinator] = {}
        self._timers: dict[tuple[str, str], tuple[int, int]] = {}
        self._heap: list[tuple[int, int, str, str]] = []
        self._seq = 0
        # conn -> answers sent to it and not yet matched: (time, message)
        self.answers: dict[int, list[tuple[int, Any]]] = defaultdict(list)
        self.fired_at: list[int] = []
        #: group id -> when the broker first answered a JoinGroup groupsim holds (or None), and
        #: the member ids that answer's generation gave its leader (None when not recorded)
        self.join_evidence: Callable[[str], tuple[int | None, frozenset[str] | None]] | None = None
        self.max_lag_ms = max_lag_ms
        self.deferred = 0
        # (group id, timer key) -> the deadline of a join timer waiting for the trace's evidence
        self._deferring: dict[tuple[str, str], int] = {}
        #: the replay's clock: when the last request was delivered or timer fired (ms); a timer
        #: held past a request fires at this time, never earlier than what came before it
        self.clock = 0
        #: the index (in the trace's group exchanges) of the request being delivered
        self.index = 0
        # (group id, timer key, arming seq) -> index of the first request it may fire before
        self.hold: dict[tuple[str, str, int], int] = {}
        # (group id, timer key, arming seq) of the timers whose order has been chosen
        self.decided: set[tuple[str, str, int]] = set()
        #: the trace's coordinator moves (:func:`.moves.coordinator_moves`); how far each has
        #: run (1: the old coordinator is gone, 2: the new one has loaded the group)
        self.moves: tuple[Move, ...] = ()
        self.moved: dict[int, int] = {}
        #: groups whose coordinator is gone and not yet loaded by the next one
        self.down: set[str] = set()

    def _new_member_id(self, prefix: str) -> str:
        queue = self._member_ids.get(prefix)
        if queue:
            return queue.popleft()
        self._made += 1
        return f"{prefix}-groupsim-{self._made}"

    def coordinator(self, group_id: str) -> GroupCoordinator:
        coord = self.groups.get(group_id)
        if coord is None:
            coord = GroupCoordinator(group_id, self.config, self._new_member_id)
            self.groups[group_id] = coord
        return coord

    def apply(self, group_id: str, effects: Iterable[Any], now_ms: int) -> None:
        for effect in effects:
            if isinstance(effect, Send):
                self.answers[int(effect.dest)].append((now_ms, effect.message))
            elif isinstance(effect, SetTimer):
                self._seq += 1
                self._timers[(group_id, effect.key)] = (effect.at_ms, self._seq)
                heappush(self._heap, (effect.at_ms, self._seq, group_id, effect.key))
            elif isinstance(effect, CancelTimer):
                self._timers.pop((group_id, effect.key), None)

    def advance(self, until_ms: int) -> None:
        """Fires every timer due at or before ``until_ms``, in (deadline, arming) order.

        A ``join`` timer that would end the join phase fires when the trace shows the broker's
        did. The broker runs it on a timer wheel and an event loop that a loaded broker runs late
        (``GroupMetadataManager#prepareRebalance`` schedules it; with
        ``group.initial.rebalance.delay.ms = 0`` it is due at once), so JoinGroups that reached
        the proxy after the deadline may still be in the generation it completes. The evidence is
        the broker's answer to those JoinGroups: the members its leader was given
        (:meth:`_State.join_evidence`). While the members groupsim would complete the join
        with are fewer than those, and the broker answered later than the deadline, the timer
        waits, re-checked one millisecond after each request, at most until just before the
        broker's first answer and ``max_lag_ms`` past its deadline. Each timer that waits is
        counted once in ``deferred``. With no recorded leader answer to read, it waits until just
        before the first answer (bounded the same way).
        """
        heap = self._heap
        held: list[tuple[int, int, str, str]] = []
        while heap and heap[0][0] <= until_ms:
            at_ms, seq, group_id, key = heappop(heap)
            if self._timers.get((group_id, key)) != (at_ms, seq):
                continue  # re-armed or cancelled since
            if self.hold.get((group_id, key, seq), -1) > self.index:
                held.append((at_ms, seq, group_id, key))  # the broker ran it later (see _State)
                continue
            self.hold.pop((group_id, key, seq), None)
            if key == JOIN_TIMER and self.join_evidence is not None:
                deadline = self._deferring.get((group_id, key), at_ms)
                later = self._join_deferral(group_id, at_ms, deadline, until_ms)
                if later is not None:
                    if (group_id, key) not in self._deferring:
                        self._deferring[(group_id, key)] = at_ms
                        self.deferred += 1
                    self._seq += 1
                    self._timers[(group_id, key)] = (later, self._seq)
                    heappush(heap, (later, self._seq, group_id, key))
                    continue
            self._deferring.pop((group_id, key), None)
            del self._timers[(group_id, key)]
            now_ms = max(at_ms, self.clock)
            self.clock = now_ms
            if (group_id, key, seq) not in self.decided:
                self.fired_at.append(now_ms)
            self.apply(group_id, self.groups[group_id].fire(key, now_ms), now_ms)
        for item in held:
            heappush(heap, item)

    def run_moves(self, index: int, verdict: Conformance) -> None:
        """Carries out the coordinator moves due by the trace's ``index``-th request
        (:func:`.moves.run_moves`)."""
        run_moves(self, index, verdict)

    def new_member_id(self, prefix: str) -> str:
        """The member id the broker gave the next JoinGroup of ``prefix``."""
        return self._new_member_id(prefix)

    def drop_timers(self, group_id: str) -> None:
        """Forgets every armed timer of the group (its coordinator is gone)."""
        for key in [key for key in self._timers if key[0] == group_id]:
            del self._timers[key]

    def _join_deferral(
        self, group_id: str, at_ms: int, deadline_ms: int, until_ms: int
    ) -> int | None:
        """When a join timer due at ``at_ms`` (first due at ``deadline_ms``) should be checked
        again instead of firing now (None: fire now); see :meth:`advance`."""
        assert self.join_evidence is not None
        shown, recorded_members = self.join_evidence(group_id)
        if shown is None or shown - 1 <= at_ms:
            return None
        members = self._members_answered(group_id, at_ms)
        if members is None:
            return None  # firing now only extends the initial delay (InitialDelayedJoin)
        if recorded_members is not None and not members < recorded_members:
            return None  # the broker's generation has no member groupsim still waits for
        limit = min(shown - 1, deadline_ms + self.max_lag_ms)
        if recorded_members is None:
            return limit if limit > at_ms else None
        later = min(max(at_ms, until_ms) + 1, limit)
        return later if later > at_ms else None

    def _members_answered(self, group_id: str, at_ms: int) -> frozenset[str] | None:
        """The member ids the join timer firing now would put in the leader's JoinGroup answer
        (None when it would answer no JoinGroup: it only extends ``InitialDelayedJoin``)."""
        trial = self.sandbox(group_id)
        answers = [
            e.message
            for e in trial.fire(JOIN_TIMER, at_ms)
            if isinstance(e, Send) and isinstance(e.message, pg.JoinGroupResponse)
        ]
        if not answers:
            return None
        return frozenset(m.member_id for a in answers for m in a.members)

    def near_timers(self, group_id: str, t_ms: int, max_lag_ms: int) -> list[tuple[int, int, str]]:
        """The group's armed timers due within ``max_lag_ms`` of ``t_ms`` that no order has been
        chosen for yet: ``(deadline ms, arming seq, key)`` in deadline order. A join timer
        waiting for the trace's evidence (:meth:`advance`) is left to that rule."""
        return sorted(
            (at_ms, seq, key)
            for (group, key), (at_ms, seq) in self._timers.items()
            if group == group_id
            and abs(at_ms - t_ms) <= max_lag_ms
            and (group, key, seq) not in self.decided
            and (group, key) not in self._deferring
        )

    def sandbox(self, group_id: str) -> GroupCoordinator:
        """A copy of the group's coordinator to try something on (its new member ids come
        from a copy of the recorded ones, so trying takes none from the replay)."""
        shadow = copy.copy(self)
        shadow._member_ids = copy.deepcopy(self._member_ids)
        return copy.deepcopy(self.coordinator(group_id), {id(self): shadow})

    def fires_something(self, group_id: str, key: str, at_ms: int) -> bool:
        """Whether the timer, fired at ``at_ms``, would change or answer anything (a heartbeat
        deadline that moved on, or a join timer of a group no longer rebalancing, does not)."""
        return bool(self.sandbox(group_id).fire(key, max(at_ms, self.clock)))

    def timer_near(self, t_ms: int, tolerance_ms: int) -> bool:
        """A timer fired, or is armed to fire, within ``tolerance_ms`` of ``t_ms``, other than
        one whose order the replay chose (``decided``: the order that matched the trace best
        was taken, and what still differs is a divergence)."""
        if any(abs(at - t_ms) <= tolerance_ms for at in self.fired_at[-64:]):
            return True
        return any(
            abs(at - t_ms) <= tolerance_ms
            for (group, key), (at, seq) in self._timers.items()
            if (group, key, seq) not in self.decided
        )


@functools.lru_cache(maxsize=4096)
def _join_answer(raw: bytes, version: int) -> tuple[int, frozenset[str]]:
    """A recorded JoinGroup answer's generation id and the member ids it lists (the leader's)."""
    _, answer = decode_response(raw, 11, version)
    if answer is None:
        return -1, frozenset()
    return int(answer.generation_id), frozenset(m.member_id for m in answer.members)


def _recorded_member_ids(exchanges: list[Exchange]) -> dict[str, deque[str]]:
    """For each ``group.instance.id`` or client id, the member ids the broker gave to its
    JoinGroups without one, in order (``ClassicGroup#generateMemberId``'s prefix)."""
    found: dict[str, deque[str]] = defaultdict(deque)
    seen: set[str] = set()
    for ex in exchanges:
        if ex.api_key != 11 or ex.response_raw is None:
            continue
        try:
            request = wire.decode_request(ex.request_raw)
        except wire.WireError:
            continue  # counted as skipped when replayed (_State.step)
        if request.body.member_id:
            continue
        _, answer = decode_response(ex.response_raw, 11, ex.version)
        member_id = getattr(answer, "member_id", "") if answer is not None else ""
        if not member_id or member_id in seen:
            continue
        seen.add(member_id)
        instance = getattr(request.body, "group_instance_id", None)
        found[instance if instance is not None else request.client_id].append(member_id)
    return found


def conform_coordinator(
    exchanges: list[Exchange],
    config: CoordinatorConfig | None = None,
    tolerance_ms: int = DEFAULT_TOLERANCE_MS,
    reorder_ms: int = DEFAULT_REORDER_MS,
    max_lag_ms: int = DEFAULT_MAX_LAG_MS,
    reorder_inflight_ms: int = DEFAULT_REORDER_INFLIGHT_MS,
) -> Conformance:
    """Replays the exchanges through groupsim's coordinator and compares every answer.

    Requests on different connections that reached the proxy within ``reorder_ms`` of each other
    may have reached the broker in the other order (two TCP connections, two network threads),
    and so may two up to ``reorder_inflight_ms`` apart while the first was still in flight (its
    answer came back after the second was sent: the broker's request queues). For such a run of
    at most :data:`MAX_REORDER` requests every possible order is tried, the recorded one first,
    and the one whose answers match the trace best is taken; taking another order than the
    recorded one counts as a timing difference (``field = "order"``; see :mod:`.reorder`).

    A timer of the request's group due within ``max_lag_ms`` of it may fire on the other side
    of it (held past up to ``timer_orders.MAX_TIMER_POSITIONS`` requests, or fired first with
    the request delivered at its deadline); each order is judged by replaying what follows, at
    most ``timer_orders.MAX_LOOKAHEAD`` requests, and the deadline order stands unless another
    gives strictly fewer divergences (:class:`~scenarios.record.timer_orders.TimerOrders`).
    Choosing another order is a timing difference, ``field = "timer:<key>"``, ``recorded``
    "after" or "before" (the timer against the request). The choice is deterministic, and each
    timer's order is chosen once: at most ``1 + MAX_TIMER_POSITIONS`` lookaheads per timer
    firing near a request, and two per timer (at most four per request) that a request whose
    answer differs could have come after, so the cost grows linearly with the trace.

    Args:
        exchanges: :func:`read_exchanges`' output.
        config: the real broker's group settings (``group.initial.rebalance.delay.ms``, …);
            Kafka's defaults when None.
        tolerance_ms: how far the broker's timer wheel may stray from exact deadlines (ms).
        reorder_ms: how close two requests on different connections must be to be reorderable.
        reorder_inflight_ms: how much later than its stamp the broker may have taken a request
            it had not answered yet (0: ``reorder_ms`` alone).
        max_lag_ms: how much later than its deadline the broker may have run a join timer
            (see :meth:`_Replay.advance`), and how close a timer and a request must be for
            both of their orders to be tried; 0 tries only the deadline order.

    Returns:
        the :class:`Conformance` verdict.
    """
    replay = _Replay(config or CoordinatorConfig(), _recorded_member_ids(exchanges), max_lag_ms)
    state = _State(replay)
    for ex in exchanges:
        if ex.api_key in NEXT_GEN_GROUP_APIS:
            # GroupMetadataManager runs these groups (KIP-848/932/1071) on another state
            # machine than the classic JoinGroup/SyncGroup one groupsim emulates.
            reason = f"{ex.api}: a group on the new group protocol, which groupsim does not replay"
            state.verdict.skipped[reason] = state.verdict.skipped.get(reason, 0) + 1
    exchanges = [ex for ex in exchanges if ex.api_key in GROUP_APIS]
    replay.moves = coordinator_moves(exchanges)
    timers = TimerOrders(exchanges, tolerance_ms, max_lag_ms)
    i = 0
    while i < len(exchanges):
        window = reorderable(exchanges, i, reorder_ms, reorder_inflight_ms)
        if len(window) == 1 or all(ex.api_key == _HEARTBEAT for ex in window):
            # Heartbeats commute: each reads the group and re-arms only its own member's
            # session timer (GroupMetadataManager#classicGroupHeartbeat)
            for k, ex in enumerate(window):
                state = timers.settle(state, i + k)
                state.step(ex, tolerance_ms, i + k)
        else:
            state = timers.settle(state, i)
            later = exchanges[i + len(window) :]
            state = best_order(
                state, window, i, later, tolerance_ms, reorder_ms, reorder_inflight_ms
            )
        i += len(window)
    end = max((ex.response_t_ms or ex.t_ms for ex in exchanges), default=0)
    state.replay.index = len(exchanges)  # every held timer may fire now
    state.finish(end + tolerance_ms, tolerance_ms)
    verdict = state.verdict
    verdict.deferred_timers = state.replay.deferred
    verdict.differences.sort(key=lambda d: (d.kind != "timing", d.t_ms))
    return verdict


class _State:
    """A replay in progress: the coordinators, the requests awaiting groupsim's answer and the
    verdict so far (deep-copied to try request orders)."""

    def __init__(self, replay: _Replay) -> None:
        self.replay = replay
        self.verdict = Conformance()
        # conn -> the requests sent on it still waiting for groupsim's answer
        self.waiting: dict[int, deque[tuple[Exchange, Any, Any]]] = defaultdict(deque)
        replay.join_evidence = self.join_evidence

    def join_evidence(self, group_id: str) -> tuple[int | None, frozenset[str] | None]:
        """When the broker first answered one of the group's JoinGroups groupsim still holds
        (None: none answered), and the member ids that answer's generation gave its leader
        (None when the leader's answer is not among them)."""
        held = [
            ex
            for queue in self.waiting.values()
            for ex, _request, req in queue
            if ex.api_key == 11 and req.group_id == group_id and ex.response_raw is not None
        ]
        if not held:
            return None, None
        first = min(held, key=lambda ex: ex.response_t_ms or 0)
        generation, _ = _join_answer(first.response_raw or b"", first.version)
        for ex in held:
            answered_generation, members = _join_answer(ex.response_raw or b"", ex.version)
            if answered_generation == generation and members:
                return first.response_t_ms, members
        return first.response_t_ms, None

    def step(self, ex: Exchange, tolerance_ms: int, index: int) -> None:
        """Delivers one recorded request, the trace's ``index``-th, at its recorded time (or at
        the replay's clock, if a timer the broker ran before it moved that past the request)."""
        replay = self.replay
        replay.index = index
        if replay.moves:
            replay.run_moves(index, self.verdict)
        now_ms = max(ex.t_ms, replay.clock)
        replay.advance(now_ms)
        replay.clock = max(replay.clock, now_ms)
        try:
            request = wire.decode_request(ex.request_raw)
            req = to_group_request(request)
        except wire.WireError as exc:
            reason = f"{ex.api} v{ex.version}: {exc}"
            self.verdict.skipped[reason] = self.verdict.skipped.get(reason, 0) + 1
            return
        unloaded = coordinator_unavailable(ex)
        if unloaded:
            # GroupCoordinatorService answers these before any group state is read (the
            # __consumer_offsets partition is not loaded here yet, or has moved): the group's
            # state machine never saw the request, so groupsim's does not either.
            reason = f"answered {unloaded} by the broker, not by the group (coordinator loading)"
            self.verdict.skipped[reason] = self.verdict.skipped.get(reason, 0) + 1
            return
        if req.group_id in replay.down:
            # Sent after the group's coordinator last answered and before the next one
            # loaded the group: to a broker that stopped (no answer came back).
            reason = f"{ex.api}: sent while the group's coordinator was moving (no answer)"
            self.verdict.skipped[reason] = self.verdict.skipped.get(reason, 0) + 1
            return
        self.waiting[ex.conn].append((ex, request, req))
        coordinator = replay.coordinator(req.group_id)
        replay.apply(req.group_id, deliver(coordinator, ex, req, now_ms), now_ms)
        self.match(tolerance_ms)

    def match(self, tolerance_ms: int) -> None:
        _match(self.replay, self.waiting, self.verdict, tolerance_ms)

    def finish(self, end_ms: int, tolerance_ms: int) -> None:
        """Runs the timers out to ``end_ms``; a recorded answer groupsim never gave differs."""
        self.replay.advance(end_ms)
        self.match(tolerance_ms)
        for queue in self.waiting.values():
            for ex, _request, req in queue:
                if ex.response_raw is not None:
                    _differ(
                        self.verdict, self.replay, ex, req, "answer", "answered", None, tolerance_ms
                    )

    def mismatches(self, window: list[Exchange], horizon: int) -> int:
        """How badly this state matches the trace: differences found other than an answer's
        time (every order of a window is as likely; the tolerance judges time), plus requests of
        the window the broker had answered before ``horizon`` that groupsim still holds."""
        found = sum(1 for d in self.verdict.differences if d.field != "time")
        ids = {(ex.conn, ex.correlation_id) for ex in window}
        for queue in self.waiting.values():
            for ex, _request, _req in queue:
                answered = ex.response_t_ms is not None and ex.response_t_ms <= horizon
                if answered and (ex.conn, ex.correlation_id) in ids:
                    found += 1
        return found


def _match(
    replay: _Replay,
    waiting: dict[int, deque[tuple[Exchange, Any, Any]]],
    verdict: Conformance,
    tolerance_ms: int,
) -> None:
    """Pairs every answer groupsim sent with the oldest request of its type on that connection."""
    for conn, answers in replay.answers.items():
        while answers:
            at_ms, message = answers.pop(0)
            api_key = RESPONSE_API_KEY[type(message)]
            queue = waiting[conn]
            pick = next((item for item in queue if item[0].api_key == api_key), None)
            if pick is None:
                continue  # an answer to a request the trace holds no answer for
            queue.remove(pick)
            _compare(verdict, replay, pick, message, at_ms, tolerance_ms)


def _compare(
    verdict: Conformance,
    replay: _Replay,
    pick: tuple[Exchange, Any, Any],
    message: Any,
    at_ms: int,
    tolerance_ms: int,
) -> None:
    ex, request, req = pick
    if ex.response_raw is None:
        return  # the real client never saw an answer (it disconnected): nothing to hold to
    verdict.compared[ex.api] = verdict.compared.get(ex.api, 0) + 1
    _, recorded = decode_response(ex.response_raw, ex.api_key, ex.version)
    ours = from_group_response(request, req, message)
    first = first_difference(to_json(recorded), to_json(ours))
    if first is not None:
        _differ(verdict, replay, ex, req, *first, tolerance_ms)
        return
    assert ex.response_t_ms is not None
    if abs(at_ms - ex.response_t_ms) > tolerance_ms:
        verdict.differences.append(
            Difference(
                "timing", ex.t_ms, ex.conn, ex.api, req.group_id, "time", ex.response_t_ms, at_ms
            )
        )
        return
    verdict.equal += 1


def _differ(
    verdict: Conformance,
    replay: _Replay,
    ex: Exchange,
    req: Any,
    name: str,
    recorded: Any,
    ours: Any,
    tolerance_ms: int,
) -> None:
    kind = "timing" if replay.timer_near(ex.t_ms, TIMER_SLACK_MS) else "divergence"
    if name == "answer":
        verdict.compared[ex.api] = verdict.compared.get(ex.api, 0) + 1
    verdict.differences.append(
        Difference(kind, ex.t_ms, ex.conn, ex.api, req.group_id, name, recorded, ours)
    )
