"""Heartbeat rounds between other events, run on a small queue of their own.

While the coordinator and every member are Stable in one generation, the only thing that
happens until the next event of another kind is each member's heartbeat round, every
``heartbeat.interval.ms``: its heartbeat timer fires and it sends a Heartbeat
(``AbstractCoordinator.HeartbeatThread``), the coordinator pushes the member's session
deadline back and answers NONE (``GroupMetadataManager#classicGroupHeartbeat``), and the
member pushes its own session timer back (``HeartbeatResponseHandler``). Nothing is logged.
:func:`forward_heartbeats` carries out exactly those steps through the owners' steady
heartbeat hooks (``GroupClient.heartbeat_round`` and ``heartbeat_answered``,
``ClassicGroup.extend_session`` of ``GroupCoordinator.group``, ``Network.arrival_ms``), in
the engine's ``(time, sequence number)`` order and taking sequence numbers where the engine
would, on a small queue of plain tuples instead of the engine's queue of effects and events;
then puts the engine's queue and timers where the engine would have them. It stops at the
first moment anything else would happen: an event of another kind, a session timer or
deadline that expires (a partitioned member's), a round whose previous answer is still
missing (the member's own code decides that one). The event log is byte for byte the one of
the run without it (``tests/scenarios/sim/test_engine_fast_path.py``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from coordinator.group import heartbeat_key
from coordinator.state import GroupState
from members.group_client import COORDINATOR_ADDRESS, GroupClient
from protocol.group import ErrorCode, HeartbeatRequest, HeartbeatResponse
from scenarios.sim.events import Deliver, TimerDue

if TYPE_CHECKING:
    from scenarios.sim.fastpath.host import Host, QueueEntry

__all__ = ["forward_heartbeats"]

# the small queue's entries: (at_ms, seq, step, member index, correlation id), the steps of a
# heartbeat round (the heartbeat timer fires, the Heartbeat and its answer arrive), and when
# a member's session timer or its deadline at the coordinator is due (one entry each, moved
# on when it comes up re-armed, as Engine._set_timer does)
_FIRE, _REQUEST, _RESPONSE, _SESSION, _DEADLINE, _STOP = 0, 1, 2, 3, 4, 5

Small = list[tuple[int, int, int, int, int]]


class _Member:
    """What the replay needs of one member (index ``i`` in the small queue's entries): its
    steady heartbeat hooks, links and timeouts, read once per :func:`forward_heartbeats`."""

    __slots__ = (
        "client",
        "address",
        "connection",
        "member_id",
        "hb_key",
        "session",
        "deadline",
        "heartbeat_round",
        "heartbeat_answered",
        "up",
        "down",
        "send_up",
        "send_down",
        "interval_ms",
        "session_ms",
    )

    def __init__(
        self, client: GroupClient, hb_key: str, session: list[int], deadline: list[int]
    ) -> None:
        self.client = client
        self.address = client.address
        self.connection = connection = client.connection_address
        self.member_id = client.member_id
        self.hb_key = hb_key  # its session timer at the coordinator
        self.session = session  # [token, due at] of the member's session timer
        self.deadline = deadline  # [token, due at] of the coordinator's deadline timer
        self.heartbeat_round, self.heartbeat_answered = client.steady_heartbeat_hooks()
        self.up = (connection, COORDINATOR_ADDRESS)  # its link to the coordinator
        self.down = (COORDINATOR_ADDRESS, connection)  # and back
        # when a message sent at a time arrives on each (None: dropped), set by _replay
        self.send_up: Callable[[int], int | None] = _unset
        self.send_down: Callable[[int], int | None] = _unset
        timeouts = client.timeouts
        self.interval_ms = timeouts.heartbeat_interval_ms
        self.session_ms = timeouts.session_timeout_ms


def _unset(_at_ms: int) -> int | None:
    raise AssertionError("the replay sets a member's arrival functions first")


def _members(host: Host) -> list[_Member]:
    """The members whose heartbeat rounds can be replayed: steady in the coordinator's
    generation (``GroupClient.heartbeats_steady``, ``GroupCoordinator.heartbeat_steady``) with
    their timers armed, and no ``delay_request`` fault on their Heartbeats in force; none
    unless the coordinator is up and Stable. The others' queued events (a partitioned
    member's, a rejoining member's) are where the replay stops."""
    coordinator = host.coordinator
    if not host.coordinator_up or coordinator.state is not GroupState.STABLE:
        return []
    now, network, timers = host.now_ms, host.network, host.timers
    generation = coordinator.generation_id
    delayed = bool(network.delays)  # (a delay_request fault was injected)
    members = []
    for address, client in host.members.items():
        if (
            not client.heartbeats_steady(generation)
            or (delayed and network.request_delay(client.name, "heartbeat", now) is not None)
            or not coordinator.heartbeat_steady(client.heartbeat_request(0))
        ):
            continue
        hb_key = heartbeat_key(client.member_id)
        session = timers.armed(address, "session")
        deadline = timers.armed(COORDINATOR_ADDRESS, hb_key)
        heartbeat = timers.get((address, "heartbeat"))
        if (
            session is None
            or deadline is None
            or heartbeat is None
            or heartbeat.deferred is not None
        ):
            continue
        members.append(_Member(client, hb_key, list(session), list(deadline)))
    return members


def forward_heartbeats(host: Host, until: tuple[int, int]) -> int:
    """Carry out every heartbeat step queued before ``until`` (an ``(at_ms, seq)`` queue key:
    ``(end_ms + 1, 0)`` for every step due by ``end_ms``) that comes before any other event,
    as the engine would; return the virtual ms forwarded.

    A queued entry this replay does not know (another kind of event, a stale generation's
    Heartbeat, another member id's deadline, an event of a member it does not replay: see
    :func:`_members`) is where the engine takes over. With the coordinator down or not Stable
    nothing is forwarded.
    """
    members = _members(host)
    if not members or _engine_first(host, members, until):
        return 0
    started = host.now_ms
    small, messages, rest, stop = _split(host, members, until)
    for i, m in enumerate(members):  # when a session timer or deadline would expire
        small.append((m.session[1], m.session[0], _SESSION, i, 0))
        small.append((m.deadline[1], m.deadline[0], _DEADLINE, i, 0))
    heapq.heapify(small)
    _replay(host, members, small, stop)
    _put_back(host, members, small, messages, rest)
    return host.now_ms - started


def _engine_first(host: Host, members: list[_Member], until: tuple[int, int]) -> bool:
    """True when the queue's first entry, due before ``until``, is one the replay of
    ``members`` does not know (see :func:`_split`): a live timer other than their heartbeat
    and session timers and the coordinator's deadlines, a message other than their
    Heartbeats and its answers, any other event. The replay would then stop before its
    first step and the engine take over at once, so it is not set up (the timers' queue
    entries stay as lazy re-arming left them: ``TimerTable.arm``, the same order of events).
    Cheap: most calls on short stretches between two other events end here."""
    queue = host.queued()
    if not queue or queue[0][:2] >= until:
        return False
    event = queue[0][2]
    if isinstance(event, TimerDue):
        if not host.timers.live(event):
            return False  # stale: the replay drops it and looks further
        if event.owner == COORDINATOR_ADDRESS:
            return all(event.key != m.hb_key for m in members)
        if event.key not in ("heartbeat", "session"):
            return True
        return all(event.owner != m.address for m in members)
    if isinstance(event, Deliver):
        message = type(event.message)
        if message is HeartbeatRequest:
            return all(event.source != m.connection for m in members)
        if message is HeartbeatResponse:
            return all(event.dest != m.connection for m in members)
    return True


def _split(
    host: Host, members: list[_Member], stop: tuple[int, int]
) -> tuple[Small, dict[tuple[int, int], Deliver], list[QueueEntry], tuple[int, int]]:
    """The queue split into the heartbeat steps replayed (small queue entries, and the
    queued messages among them by key, to be put back unchanged) and the rest, kept as it is;
    and where the replay must stop: ``stop``, or the first entry before it that the replay
    does not know (another kind of event, a stale generation's Heartbeat, another member
    id's deadline). A session timer's or deadline's entry, and a stale one, is dropped:
    :func:`_put_back` gives each replayed timer one entry."""
    connections = {m.connection: i for i, m in enumerate(members)}
    replayed_timers: dict[tuple[str, str], int] = {}  # -> member index
    for i, m in enumerate(members):
        replayed_timers[(m.address, "heartbeat")] = i
        replayed_timers[(m.address, "session")] = i
        replayed_timers[(COORDINATOR_ADDRESS, m.hb_key)] = i
    coordinator = host.coordinator
    timers = host.timers
    small: Small = []
    messages: dict[tuple[int, int], Deliver] = {}
    rest = []
    for entry in host.queued():
        at, seq, event = entry
        if isinstance(event, TimerDue):
            timer = (event.owner, event.key)
            replayed = replayed_timers.get(timer)
            if replayed is not None:
                state = timers[timer]
                if event.key == "heartbeat" and state.token == seq and state.entry == (at, seq):
                    small.append((at, seq, _FIRE, replayed, 0))
                elif state.entry == (at, seq):
                    state.entry = None  # its entry goes (put back by _put_back)
                continue
            if (at, seq) < stop and timers.drop_stale(at, seq, event):
                continue
        elif isinstance(event, Deliver):
            message = event.message
            step = -1
            if type(message) is HeartbeatRequest:
                i = connections.get(event.source, -1)
                if (
                    i >= 0
                    and message.member_id == members[i].member_id
                    and coordinator.heartbeat_steady(message)
                ):
                    step = _REQUEST
            elif type(message) is HeartbeatResponse:
                i = connections.get(event.dest, -1)
                if (
                    i >= 0
                    and message.error == ErrorCode.NONE
                    and members[i].client.awaits_heartbeat(message.correlation_id)
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


def _replay(host: Host, members: list[_Member], small: Small, stop: tuple[int, int]) -> None:
    """Run the small queue up to ``stop``: each step through its owner's steady heartbeat
    hook, with the effects in the order ``Engine.apply`` carries them out (a timer armed
    takes a sequence number, a message sent draws its arrival from the network and, unless a
    fault drops it, takes one). Stops early where a session timer or deadline expires or a
    member's previous answer is still missing, leaving that entry first in ``small``."""
    network = host.network
    # no link fault can start before the next other event (a fault is a step); one in
    # force now may drop or slow messages: then every arrival looks the faults up. Without
    # one, each member's two links have an arrival function of their own
    # (Network.fault_free_link: no link lookup per message, two messages a round).
    if network.link_faults_in_force(host.now_ms):
        for m in members:
            m.send_up = partial(network.arrival_ms, *m.up)
            m.send_down = partial(network.arrival_ms, *m.down)
    else:
        for m in members:
            m.send_up = network.fault_free_link(*m.up)
            m.send_down = network.fault_free_link(*m.down)
    # the group's own deadline push-back, which the coordinator's Heartbeat handler calls
    # too (GroupCoordinator.extend_session delegates to it: one call less per heartbeat)
    extend = host.coordinator.group.extend_session
    pop, push, replace = heapq.heappop, heapq.heappush, heapq.heapreplace
    now, seq = host.now_ms, host.seq
    push(small, (*stop, _STOP, 0, 0))  # comes up after every entry before ``stop``
    while True:
        at, s, step, i, corr = small[0]
        m = members[i]
        if step == _FIRE:
            corr = m.heartbeat_round(at)
            if corr < 0:
                break  # an answer is missing (lost, or slow): the member's own code decides
            seq += 1  # the heartbeat timer re-armed, then the Heartbeat sent
            replace(small, (at + m.interval_ms, seq, _FIRE, i, 0))
            now = at
            arrive = m.send_up(at)
            if arrive is not None:  # (None: dropped by a partition or a loss fault)
                seq += 1
                push(small, (arrive, seq, _REQUEST, i, corr))
        elif step == _REQUEST:
            seq += 1  # the session deadline pushed back, then the answer sent
            timer = m.deadline
            timer[0], timer[1] = seq, extend(m.member_id, at)
            now = at
            arrive = m.send_down(at)
            if arrive is None:
                pop(small)
            else:  # this step's entry leaves as the answer's comes in: one heap operation
                seq += 1  # (entries' keys are unique: the order they come up is the same)
                replace(small, (arrive, seq, _RESPONSE, i, corr))
        elif step == _RESPONSE:
            pop(small)
            if m.heartbeat_answered(corr):
                seq += 1  # the session timer pushed back
                timer = m.session
                timer[0], timer[1] = seq, at + m.session_ms
            now = at
        elif step == _STOP:
            break
        else:  # a session timer or deadline due: expired, or re-armed later meanwhile
            timer = m.session if step == _SESSION else m.deadline
            if timer[0] == s:
                break  # it expires: the engine fires it
            replace(small, (timer[1], timer[0], step, i, 0))
    small.remove(next(e for e in small if e[2] == _STOP))
    heapq.heapify(small)
    host.advance(now, seq)


def _put_back(
    host: Host,
    members: list[_Member],
    small: Small,
    messages: dict[tuple[int, int], Deliver],
    rest: list[QueueEntry],
) -> None:
    """The engine's queue and timers as processing one event at a time leaves them (each timer
    with one entry at its due time: see ``Engine._set_timer``)."""
    timers = host.timers
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
            (COORDINATOR_ADDRESS, m.hb_key, m.deadline),
        ):
            queue.append((due, token, timers.settle(owner, key, token, due)))
    host.replace_queue(queue)
