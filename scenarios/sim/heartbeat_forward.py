"""Heartbeat rounds between other events, run on a small queue of their own.

While the coordinator and every member are Stable in one generation, the only thing that
happens until the next event of another kind is each member's heartbeat round, every
``heartbeat.interval.ms``: its heartbeat timer fires and it sends a Heartbeat
(``AbstractCoordinator.HeartbeatThread``), the coordinator pushes the member's session
deadline back and answers NONE (``GroupMetadataManager#classicGroupHeartbeat``), and the
member pushes its own session timer back (``HeartbeatResponseHandler``). Nothing is logged.
:func:`forward_heartbeats` replays exactly those steps, in the engine's ``(time, sequence
number)`` order, with the engine's sequence numbers and the network's arrivals and draws
(jitter, loss), on plain tuples; then puts the engine's queue, timers, deadlines and clocks
where the engine would have them. It stops at the first moment anything else would happen:
an event of another kind, a session timer or deadline that expires (a partitioned member's),
a round whose previous answer is still missing (the member's own code decides that one).
The event log is byte for byte the one of the run without it
(``tests/scenarios/sim/test_engine_fast_path.py``).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from coordinator.state import GroupState
from members.group_client import COORDINATOR_ADDRESS, GroupClient, MemberState
from protocol.group import ErrorCode, HeartbeatRequest, HeartbeatResponse
from scenarios.sim.events import Deliver, TimerDue

if TYPE_CHECKING:
    from scenarios.sim.engine import Engine

__all__ = ["forward_heartbeats"]

# the small queue's entries: (at_ms, seq, step, member index, correlation id), the steps of a
# heartbeat round (the heartbeat timer fires, the Heartbeat and its answer arrive), and when
# a member's session timer or its deadline at the coordinator is due (one entry each, moved
# on when it comes up re-armed, as Engine._set_timer does)
_FIRE, _REQUEST, _RESPONSE, _SESSION, _DEADLINE, _STOP = 0, 1, 2, 3, 4, 5


class _Member:
    """What the replay needs of one member (index ``i`` in the small queue's entries)."""

    __slots__ = ("client", "address", "connection", "record", "session", "deadline")

    def __init__(self, client: GroupClient, record: Any, session: list[int], deadline: list[int]):
        self.client = client
        self.address = client.address
        self.connection = client.connection_address
        self.record = record  # the coordinator's member record
        self.session = session  # [token, due at] of the member's session timer
        self.deadline = deadline  # [token, due at] of the coordinator's deadline timer


def _members(engine: Engine) -> list[_Member]:
    """The members whose heartbeat rounds can be replayed: Stable in the coordinator's
    generation and knowing it, with their timers armed, and no ``delay_request`` fault on
    their Heartbeats in force; none unless the coordinator is up and Stable. The others'
    queued events (a partitioned member's, a rejoining member's) are where the replay stops."""
    coordinator = engine.coordinator
    if not engine.coordinator_up or coordinator.state is not GroupState.STABLE:
        return []
    now = engine.now_ms
    held = {
        member
        for member, (request, _, until) in engine.network.delays.items()
        if until > now and request in ("heartbeat", "any")
    }
    records = coordinator._members
    generation = coordinator.generation_id
    timers = engine.timers
    members = []
    for address, client in engine.members.items():
        record = records.get(client.member_id)
        if (
            record is None
            or client.state is not MemberState.STABLE
            or not client.coordinator_known
            or client.generation != generation
            or client.log_heartbeats
            or client.name in held
            or coordinator._validate_member(client.member_id, client.group_instance_id) is not None
        ):
            continue
        session = timers.armed(address, "session")
        deadline = timers.armed(COORDINATOR_ADDRESS, record.hb_key)
        heartbeat = timers.get((address, "heartbeat"))
        if (
            session is None
            or deadline is None
            or heartbeat is None
            or heartbeat.deferred is not None
        ):
            continue
        members.append(_Member(client, record, list(session), list(deadline)))
    return members


def forward_heartbeats(engine: Engine, until: tuple[int, int]) -> int:
    """Carry out every heartbeat step queued before ``until`` (an ``(at_ms, seq)`` queue key:
    ``(end_ms + 1, 0)`` for every step due by ``end_ms``) that comes before any other event,
    as the engine would; return the virtual ms forwarded.

    A queued entry this replay does not know (another kind of event, a stale generation's
    Heartbeat, another member id's deadline, an event of a member it does not replay: see
    :func:`_members`) is where the engine takes over. With the coordinator down or not Stable
    nothing is forwarded.
    """
    members = _members(engine)
    if not members:
        return 0
    started = engine.now_ms
    small, messages, rest, stop = _split(engine, members, until)
    for i, m in enumerate(members):  # when a session timer or deadline would expire
        small.append((m.session[1], m.session[0], _SESSION, i, 0))
        small.append((m.deadline[1], m.deadline[0], _DEADLINE, i, 0))
    heapq.heapify(small)
    _replay(engine, members, small, stop)
    _put_back(engine, members, small, messages, rest)
    return engine.now_ms - started


def _split(
    engine: Engine, members: list[_Member], stop: tuple[int, int]
) -> tuple[
    list[tuple[int, int, int, int, int]],
    dict[tuple[int, int], Deliver],
    list[tuple[int, int, Any]],
    tuple[int, int],
]:
    """The queue split into the heartbeat steps replayed (small queue entries, and the
    queued messages among them by key, to be put back unchanged) and the rest, kept as it is;
    and where the replay must stop: ``stop``, or the first entry before it that the replay
    does not know (another kind of event, a stale generation's Heartbeat, another member
    id's deadline). A session timer's or deadline's entry, and a stale one, is dropped:
    :func:`_put_back` gives each replayed timer one entry."""
    connections = {m.connection: i for i, m in enumerate(members)}
    timers: dict[tuple[str, str], int] = {}  # the timers replayed -> member index
    for i, m in enumerate(members):
        timers[(m.address, "heartbeat")] = i
        timers[(m.address, "session")] = i
        timers[(COORDINATOR_ADDRESS, m.record.hb_key)] = i
    coordinator = engine.coordinator
    table = engine.timers
    small: list[tuple[int, int, int, int, int]] = []
    messages: dict[tuple[int, int], Deliver] = {}
    rest = []
    for entry in engine._queue:
        at, seq, event = entry
        if isinstance(event, TimerDue):
            timer = (event.owner, event.key)
            replayed = timers.get(timer)
            if replayed is not None:
                state = table[timer]
                if event.key == "heartbeat" and state.token == seq and state.entry == (at, seq):
                    small.append((at, seq, _FIRE, replayed, 0))
                elif state.entry == (at, seq):
                    state.entry = None  # its entry goes (put back by _put_back)
                continue
            if (at, seq) < stop and table.drop_stale(at, seq, event):
                continue
        elif isinstance(event, Deliver):
            message = event.message
            step = -1
            if type(message) is HeartbeatRequest:
                i = connections.get(event.source, -1)
                if (
                    i >= 0
                    and message.generation_id == coordinator.generation_id
                    and message.member_id == members[i].client.member_id
                    and message.group_id == coordinator.group_id
                    and message.group_instance_id == members[i].client.group_instance_id
                ):
                    step = _REQUEST
            elif type(message) is HeartbeatResponse:
                i = connections.get(event.dest, -1)
                if (
                    i >= 0
                    and message.error == ErrorCode.NONE
                    and message.correlation_id in members[i].client._heartbeats
                ):
                    step = _RESPONSE
            if step >= 0:
                small.append((at, seq, step, i, message.correlation_id))
                messages[(at, seq)] = event
                continue
        if (at, seq) < stop:
            stop = (at, seq)  # the engine takes over there
        rest.append(entry)
    return small, messages, rest, stop


def _replay(
    engine: Engine,
    members: list[_Member],
    small: list[tuple[int, int, int, int, int]],
    stop: tuple[int, int],
) -> None:
    """Run the small queue up to ``stop``: ``GroupClient._send_heartbeat``,
    ``GroupCoordinator._heartbeat`` and ``GroupClient._on_heartbeat_response`` of a Stable
    member, with the effects in the order ``Engine.apply`` carries them out (a timer armed
    takes a sequence number, a message sent draws its arrival and, unless a fault drops it,
    takes one). Stops early where a session timer or deadline expires or a member's previous
    answer is still missing, leaving that entry first in ``small``."""
    network = engine.network
    now = engine.now_ms
    # With no fault in force (none can start before the next other event), an arrival is
    # Network.arrival_ms without its fault lookups: the latency, a jitter draw (randint(0,
    # jitter_ms) as the network draws it) and the link's FIFO clock.
    faulted = (
        bool(network.partitioned)
        or any(until > now for _, _, until in network._loss.values())
        or any(until > now for _, until in network._latency.values())
    )
    arrival = network.arrival_ms
    latency, jitter = network.latency_ms, network.jitter_ms
    width, bits, draw = network._jitter_width, network._jitter_bits, network._getrandbits
    pop, push, replace = heapq.heappop, heapq.heappush, heapq.heapreplace
    generation = engine.coordinator.generation_id
    in_flight = [m.client._heartbeats for m in members]
    # each member's two links with the coordinator, and their FIFO clocks (written back)
    links = [
        ((m.connection, COORDINATOR_ADDRESS), (COORDINATOR_ADDRESS, m.connection)) for m in members
    ]
    clocks = network._link_clock
    clock = [[clocks.get(out, 0), clocks.get(back, 0)] for out, back in links]
    intervals = [m.client.timeouts.heartbeat_interval_ms for m in members]
    sessions = [m.client.timeouts.session_timeout_ms for m in members]
    coordinator_sessions = [m.record.session_timeout_ms for m in members]
    session = [m.session for m in members]
    deadline = [m.deadline for m in members]
    seq = engine._seq
    push(small, (*stop, _STOP, 0, 0))  # comes up after every entry before ``stop``
    while True:
        at, s, step, i, corr = small[0]
        if step == _FIRE:
            heartbeats = in_flight[i]
            if heartbeats:
                break  # an answer is missing (lost, or slow): the member's own code decides
            seq += 1  # the heartbeat timer re-armed, then the Heartbeat sent
            replace(small, (at + intervals[i], seq, _FIRE, i, 0))
            corr = at  # its correlation id: the send time (none other is in flight)
            heartbeats[corr] = generation
            direction = 0
        elif step == _REQUEST:
            seq += 1  # the session deadline pushed back, then the answer sent
            timer = deadline[i]
            timer[0], timer[1] = seq, at + coordinator_sessions[i]
            direction = 1
            pop(small)
        elif step == _RESPONSE:
            pop(small)
            if in_flight[i].pop(corr, None) is not None:
                seq += 1  # the session timer pushed back
                timer = session[i]
                timer[0], timer[1] = seq, at + sessions[i]
            now = at
            continue
        elif step == _STOP:
            break
        else:  # a session timer or deadline due: expired, or re-armed later meanwhile
            timer = session[i] if step == _SESSION else deadline[i]
            if timer[0] == s:
                break  # it expires: the engine fires it
            replace(small, (timer[1], timer[0], step, i, 0))
            continue
        now = at
        if faulted:
            link = links[i][direction]
            arrive = arrival(link[0], link[1], at)
            if arrive is None:
                continue  # dropped (a partition or a loss fault): no sequence number
        else:
            arrive = at + latency
            if jitter:
                extra = draw(bits)
                while extra >= width:
                    extra = draw(bits)
                arrive += extra
            member_clock = clock[i]
            if arrive < member_clock[direction]:
                arrive = member_clock[direction]
            member_clock[direction] = arrive
        seq += 1
        push(small, (arrive, seq, step + 1, i, corr))  # the Heartbeat, or its answer
    small.remove(next(e for e in small if e[2] == _STOP))
    heapq.heapify(small)
    if not faulted:
        for (out, back), (out_clock, back_clock) in zip(links, clock, strict=True):
            clocks[out], clocks[back] = out_clock, back_clock
    engine._seq = seq
    engine.now_ms = now


def _put_back(
    engine: Engine,
    members: list[_Member],
    small: list[tuple[int, int, int, int, int]],
    messages: dict[tuple[int, int], Deliver],
    rest: list[tuple[int, int, Any]],
) -> None:
    """The engine's queue and timers as processing one event at a time leaves them (each timer
    with one entry at its due time: see ``Engine._set_timer``)."""
    timers = engine.timers
    queue = rest
    for at, seq, step, i, corr in small:
        if step >= _SESSION:
            continue  # not queue entries (the timers' own entries go in below)
        m = members[i]
        if step == _FIRE:
            queue.append((at, seq, timers.settle(m.address, "heartbeat", seq, at)))
            continue
        message = messages.get((at, seq))  # queued before the replay: the same message
        if message is None and step == _REQUEST:
            request = m.client.heartbeat_request(corr)
            message = Deliver(COORDINATOR_ADDRESS, m.connection, request)
        elif message is None:
            response = HeartbeatResponse(ErrorCode.NONE, corr)
            message = Deliver(m.connection, COORDINATOR_ADDRESS, response)
        queue.append((at, seq, message))
    for m in members:
        for owner, key, (token, due) in (
            (m.address, "session", m.session),
            (COORDINATOR_ADDRESS, m.record.hb_key, m.deadline),
        ):
            queue.append((due, token, timers.settle(owner, key, token, due)))
        m.record.hb_deadline = m.deadline[1]
    heapq.heapify(queue)
    engine._queue[:] = queue
