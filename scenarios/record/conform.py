"""``groupsim replay --conform``: hold groupsim's coordinator to a recorded trace.

The group requests of ``trace.jsonl`` (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) go, in
recorded order and at recorded times, through a fresh :class:`coordinator.group.GroupCoordinator`
per group id — with the member ids the real broker handed out (``ClassicGroup#generateMemberId``
is random; the replay takes each new id from the recorded answer instead). Every answer
groupsim gives is compared with the recorded one field by field, as the client read it (the
same API version, decoded by kio; ``throttle_time_ms`` aside).

Times: the real broker's timers run on a timer wheel and its purgatory, groupsim's on exact
deadlines, and the trace's times are the proxy's, not the broker's. So an answer that is equal
but comes more than ``tolerance_ms`` earlier or later than recorded is a *timing difference*,
and an answer that differs while one of groupsim's timers fell within :data:`TIMER_SLACK_MS` of
the request is reported as a timing difference too (the two orderings of a timeout and a request
are both Kafka's). Everything else that differs is a divergence, with the first differing
field. Nothing is dropped silently: requests groupsim cannot replay are counted as skipped
with their reason.
"""

from __future__ import annotations

import base64
import copy
import functools
import itertools
import json
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from heapq import heappop, heappush
from pathlib import Path
from typing import Any

from coordinator.config import CoordinatorConfig
from coordinator.group import JOIN_TIMER, GroupCoordinator
from protocol import group as pg
from protocol.effects import CancelTimer, Send, SetTimer
from protocol.errors import InputError
from scenarios.serve import wire
from scenarios.serve.translate import from_group_response, to_group_request

from .frames import NEXT_GEN_GROUP_APIS, decode_response, to_json

__all__ = ["Exchange", "Difference", "Conformance", "read_exchanges", "conform_coordinator"]

_GROUP_APIS = {11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup"}
_HEARTBEAT = 12
_RESPONSE_OF: dict[type, int] = {
    pg.JoinGroupResponse: 11,
    pg.SyncGroupResponse: 14,
    pg.HeartbeatResponse: 12,
    pg.LeaveGroupResponse: 13,
}
#: Default tolerance between the broker's timer wheel and groupsim's exact deadlines (ms).
DEFAULT_TOLERANCE_MS = 100
#: Most requests whose order is searched at once (5! = 120 orders).
MAX_REORDER = 5
#: Default closeness of two requests on different connections that may be reordered (ms).
DEFAULT_REORDER_MS = 5
#: How close a timer and a request must be for a differing answer to count as a timing
#: difference (the two orders of a timeout and a request are both Kafka's), ms.
TIMER_SLACK_MS = 20
#: Default of how much later than its deadline the broker may run a join timer (ms).
DEFAULT_MAX_LAG_MS = 2000


class TraceError(InputError):
    """``trace.jsonl`` is missing, unreadable or not a trace (the message names file and line)."""


@dataclass(slots=True)
class Exchange:
    """One recorded group request and its answer (``response_*`` None when none came back)."""

    conn: int
    t_ms: int
    api_key: int
    version: int
    correlation_id: int
    request_raw: bytes
    response_t_ms: int | None = None
    response_raw: bytes | None = None

    @property
    def api(self) -> str:
        return _GROUP_APIS.get(self.api_key) or NEXT_GEN_GROUP_APIS[self.api_key]


@dataclass(frozen=True, slots=True)
class Difference:
    """One answer groupsim gave otherwise than the real broker: ``kind`` is ``"divergence"``
    or ``"timing"``; ``field`` the first differing field (``"time"`` for a late or early
    answer, ``"answer"`` when one side did not answer)."""

    kind: str
    t_ms: int
    conn: int
    api: str
    group: str
    field: str
    recorded: Any
    groupsim: Any


@dataclass(slots=True)
class Conformance:
    """The verdict: answers ``compared`` per API, ``equal`` (same fields, in time), the
    ``differences`` (timing first, divergences after, each in trace order) and ``skipped``
    requests with why."""

    compared: dict[str, int] = field(default_factory=dict)
    equal: int = 0
    differences: list[Difference] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    deferred_timers: int = 0

    @property
    def divergences(self) -> list[Difference]:
        return [d for d in self.differences if d.kind == "divergence"]

    @property
    def timing(self) -> list[Difference]:
        return [d for d in self.differences if d.kind == "timing"]

    def to_json(self) -> dict[str, Any]:
        """``conformance.json``'s content."""
        return {
            "compared": dict(sorted(self.compared.items())),
            "total": sum(self.compared.values()),
            "equal": self.equal,
            "timing_differences": len(self.timing),
            "divergences": len(self.divergences),
            "skipped": dict(sorted(self.skipped.items())),
            "deferred_join_timers": self.deferred_timers,
            "differences": [
                {
                    "kind": d.kind,
                    "t_ms": d.t_ms,
                    "conn": d.conn,
                    "api": d.api,
                    "group": d.group,
                    "field": d.field,
                    "recorded": d.recorded,
                    "groupsim": d.groupsim,
                }
                for d in self.differences
            ],
        }


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from None
    with handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError as exc:
                raise TraceError(f"{path}:{lineno}: not JSON ({exc})") from None
            if not isinstance(entry, dict):
                raise TraceError(f"{path}:{lineno}: expected an object")
            yield lineno, entry


def read_exchanges(path: Path) -> list[Exchange]:
    """The group exchanges of a ``trace.jsonl``, in request order, times in ms since the first
    line of the trace: the classic group APIs, and the heartbeats of the newer group protocols
    (:data:`~scenarios.record.frames.NEXT_GEN_GROUP_APIS`, which :func:`conform_coordinator`
    counts as skipped).

    Raises:
        TraceError: the file cannot be read or a line is not a trace entry.
    """
    exchanges: list[Exchange] = []
    open_requests: dict[tuple[int, int], Exchange] = {}
    start: int | None = None
    for lineno, entry in _lines(path):
        t_ms = entry.get("t_ms")
        if not isinstance(t_ms, int):
            raise TraceError(f"{path}:{lineno}: no integer t_ms")
        start = t_ms if start is None else start
        api_key = entry.get("api_key")
        if (
            api_key not in _GROUP_APIS and api_key not in NEXT_GEN_GROUP_APIS
        ) or "raw" not in entry:
            continue
        try:
            raw = base64.b64decode(entry["raw"], validate=True)
            key = (int(entry["conn"]), int(entry["correlation_id"]))
            version = int(entry["version"])
        except (KeyError, TypeError, ValueError) as exc:
            raise TraceError(f"{path}:{lineno}: malformed frame entry ({exc})") from None
        if entry.get("dir") == "request":
            ex = Exchange(key[0], t_ms - start, api_key, version, key[1], raw)
            exchanges.append(ex)
            open_requests[key] = ex
        elif entry.get("dir") == "response":
            ex_open = open_requests.pop(key, None)
            if ex_open is not None:
                ex_open.response_t_ms = t_ms - start
                ex_open.response_raw = raw
    return exchanges


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
        while heap and heap[0][0] <= until_ms:
            at_ms, seq, group_id, key = heappop(heap)
            if self._timers.get((group_id, key)) != (at_ms, seq):
                continue  # re-armed or cancelled since
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
            self.fired_at.append(at_ms)
            self.apply(group_id, self.groups[group_id].fire(key, at_ms), at_ms)

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
        trial = copy.deepcopy(self.groups[group_id])
        answers = [
            e.message
            for e in trial.fire(JOIN_TIMER, at_ms)
            if isinstance(e, Send) and isinstance(e.message, pg.JoinGroupResponse)
        ]
        if not answers:
            return None
        return frozenset(m.member_id for a in answers for m in a.members)

    def timer_near(self, t_ms: int, tolerance_ms: int) -> bool:
        """A timer fired, or is armed to fire, within ``tolerance_ms`` of ``t_ms``."""
        if any(abs(at - t_ms) <= tolerance_ms for at in self.fired_at[-64:]):
            return True
        return any(abs(at - t_ms) <= tolerance_ms for at, _ in self._timers.values())


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
        request = wire.decode_request(ex.request_raw)
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


#: Errors a broker answers before the group's state machine runs
#: (``GroupCoordinatorService``/``CoordinatorRuntime``: the group's shard is not loaded).
_UNAVAILABLE = {
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
}


def _coordinator_unavailable(ex: Exchange) -> str | None:
    """The name of the recorded answer's error when it is one of :data:`_UNAVAILABLE`."""
    if ex.response_raw is None:
        return None
    _, answer = decode_response(ex.response_raw, ex.api_key, ex.version)
    code = getattr(answer, "error_code", None)
    if code is None:
        return None
    return _UNAVAILABLE.get(int(getattr(code, "value", code)))


def _first_difference(recorded: Any, ours: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first field (dotted path) where two decoded answers differ, or None."""
    if isinstance(recorded, dict) and isinstance(ours, dict):
        for key in dict.fromkeys([*recorded, *ours]):  # the message's field order
            if key == "throttle_time":
                continue
            found = _first_difference(recorded.get(key), ours.get(key), f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(ours, list):
        if len(recorded) != len(ours):
            return (f"{path}.length".lstrip("."), len(recorded), len(ours))
        for i, (a, b) in enumerate(zip(recorded, ours, strict=True)):
            found = _first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if recorded == ours else (path.lstrip("."), recorded, ours)


def conform_coordinator(
    exchanges: list[Exchange],
    config: CoordinatorConfig | None = None,
    tolerance_ms: int = DEFAULT_TOLERANCE_MS,
    reorder_ms: int = DEFAULT_REORDER_MS,
    max_lag_ms: int = DEFAULT_MAX_LAG_MS,
) -> Conformance:
    """Replays the exchanges through groupsim's coordinator and compares every answer.

    Requests on different connections that reached the proxy within ``reorder_ms`` of each other
    may have reached the broker in the other order (two TCP connections, two network threads):
    for such a run of at most :data:`MAX_REORDER` requests every order is tried, the recorded one
    first, and the one whose answers match the trace best is taken; taking another order than the
    recorded one counts as a timing difference (``field = "order"``).

    Args:
        exchanges: :func:`read_exchanges`' output.
        config: the real broker's group settings (``group.initial.rebalance.delay.ms``, …);
            Kafka's defaults when None.
        tolerance_ms: how far the broker's timer wheel may stray from exact deadlines (ms).
        reorder_ms: how close two requests on different connections must be to be reorderable.
        max_lag_ms: how much later than its deadline the broker may have run a join timer
            (see :meth:`_Replay.advance`).

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
    exchanges = [ex for ex in exchanges if ex.api_key in _GROUP_APIS]
    i = 0
    while i < len(exchanges):
        window = _reorderable(exchanges, i, reorder_ms)
        if len(window) == 1 or all(ex.api_key == _HEARTBEAT for ex in window):
            # Heartbeats commute: each reads the group and re-arms only its own member's
            # session timer (GroupMetadataManager#classicGroupHeartbeat)
            for ex in window:
                state.step(ex, tolerance_ms)
        else:
            later = exchanges[i + len(window) :]
            state = _best_order(state, window, later, tolerance_ms)
        i += len(window)
    end = max((ex.response_t_ms or ex.t_ms for ex in exchanges), default=0)
    state.finish(end + tolerance_ms, tolerance_ms)
    verdict = state.verdict
    verdict.deferred_timers = state.replay.deferred
    verdict.differences.sort(key=lambda d: (d.kind != "timing", d.t_ms))
    return verdict


def _reorderable(exchanges: list[Exchange], start: int, reorder_ms: int) -> list[Exchange]:
    """The run of requests from ``start`` on distinct connections, each within ``reorder_ms``
    of the previous one (at most :data:`MAX_REORDER`; one when none qualifies)."""
    window = [exchanges[start]]
    conns = {exchanges[start].conn}
    for ex in exchanges[start + 1 :]:
        if len(window) == MAX_REORDER or ex.conn in conns:
            break
        if ex.t_ms - window[-1].t_ms > reorder_ms:
            break
        window.append(ex)
        conns.add(ex.conn)
    return window


def _best_order(
    state: _State, window: list[Exchange], later: list[Exchange], tolerance_ms: int
) -> _State:
    """The state after the window's requests in the order that matches the trace best (the
    recorded order unless another one is strictly better).

    An order is judged by what follows until the broker had answered every request of the
    window (a JoinGroup may be parked for a whole rebalance, and the order decides e.g. the
    leader only then): the ``later`` requests up to that time are replayed in recorded order
    on a copy, and the differences counted.
    """
    horizon = max((ex.response_t_ms or ex.t_ms for ex in window), default=0)
    lookahead = list(itertools.takewhile(lambda ex: ex.t_ms <= horizon, later))
    baseline = len(state.verdict.differences)
    best: tuple[int, tuple[Exchange, ...]] | None = None
    for order in itertools.permutations(window):  # the recorded order comes first
        trial = copy.deepcopy(state)
        for ex in (*order, *lookahead):
            trial.step(ex, tolerance_ms)
        trial.replay.advance(horizon)
        trial.match(tolerance_ms)
        score = trial.mismatches(window, horizon)
        if best is None or score < best[0]:
            best = (score, order)
            if score == baseline:
                break  # no new difference: nothing better to find
    assert best is not None
    _, order = best
    for ex in order:
        state.step(ex, tolerance_ms)
    if list(order) != window:
        first = window[0]
        state.verdict.differences.append(
            Difference(
                "timing",
                first.t_ms,
                first.conn,
                first.api,
                "",
                "order",
                [ex.conn for ex in window],
                [ex.conn for ex in order],
            )
        )
    return state


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

    def step(self, ex: Exchange, tolerance_ms: int) -> None:
        """Delivers one recorded request at its recorded time."""
        replay = self.replay
        replay.advance(ex.t_ms)
        try:
            request = wire.decode_request(ex.request_raw)
            req = to_group_request(request)
        except wire.WireError as exc:
            reason = f"{ex.api} v{ex.version}: {exc}"
            self.verdict.skipped[reason] = self.verdict.skipped.get(reason, 0) + 1
            return
        unloaded = _coordinator_unavailable(ex)
        if unloaded:
            # GroupCoordinatorService answers these before any group state is read (the
            # __consumer_offsets partition is not loaded here yet, or has moved): the group's
            # state machine never saw the request, so groupsim's does not either.
            reason = f"answered {unloaded} by the broker, not by the group (coordinator loading)"
            self.verdict.skipped[reason] = self.verdict.skipped.get(reason, 0) + 1
            return
        self.waiting[ex.conn].append((ex, request, req))
        coordinator = replay.coordinator(req.group_id)
        replay.apply(req.group_id, coordinator.handle(str(ex.conn), req, ex.t_ms), ex.t_ms)
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
        """How badly this state matches the trace: differences found, plus requests of the
        window the broker had answered before ``horizon`` that groupsim still holds."""
        found = len(self.verdict.differences)
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
            api_key = _RESPONSE_OF[type(message)]
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
    first = _first_difference(to_json(recorded), to_json(ours))
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
