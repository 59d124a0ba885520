"""The windows in which a removed member's work may still run in Kafka (KAFKA-9184,
KAFKA-16056): when they open and when Kafka's own client would have given up.

:class:`KnownIssueWindows` follows, from the event log, each member's timers (its
``member_start`` config: ``session.timeout.ms`` S, ``heartbeat.interval.ms`` H,
``rebalance.timeout.ms`` R, the herder's stop and start times), the network faults on its
coordinator link, coordinator failovers and herder stalls. The
:class:`scenarios.check.invariants.InvariantChecker` asks it whether a removal opens a window
(:meth:`KnownIssueWindows.trigger`) and whether a time is still inside it
(:meth:`KnownIssueWindows.deadline`). All times are virtual ms.

**KAFKA-9184** ("Redundant task creation after worker fails to rejoin"; its fix is
``WorkerCoordinator#poll`` revoking everything once the coordinator has been unknown for
``heartbeat.interval.ms``): opens when the coordinator removes a member (``session_timeout``,
``not_rejoined``, ``sync_timeout``) while it could not hear the coordinator — a ``partition``,
``loss``, ``latency`` or ``delay_request`` step on its link, or a ``coordinator_failover``,
whose last message arrived no more than ``R_group + S`` before the removal (``R_group``:
the largest ``rebalance.timeout.ms`` of the group, how long a join phase that ends in
``not_rejoined`` lasts; ``S``: the member's own session timeout, how long the coordinator
waits for a heartbeat). It closes at the member's
give-up time, per fault ``F`` (``[start, end]``, extra latency ``L``) on its link from then on:

- cut off from ``c = max(removal, F.start)``, the member got its last answer by ``c + L``; its
  session timer (``AbstractCoordinator``'s heartbeat thread: no successful heartbeat response
  for ``session.timeout.ms``) marks the coordinator unknown by ``c + L + S`` — unless it
  waits on a JoinGroup or SyncGroup it had in flight at ``c`` or sent before then (the log's
  ``*_request``/``*_response`` records; the heartbeat thread is off during a rebalance),
  which marks it unknown only when that request times out (JoinGroup:
  ``rebalance.timeout.ms`` + ``JOIN_GROUP_TIMEOUT_LAPSE`` 5 s; SyncGroup:
  ``request.timeout.ms`` 40 s); ``WorkerCoordinator#poll`` revokes its assignment snapshot
  ``H`` later: ``give_up = max(c + L + S, request sent + its timeout) + H``;
- if ``F`` ends before that, or does not cut every message (a ``loss`` with probability < 1,
  a ``latency``: FindCoordinator may still succeed, so the member never gives up), the
  member hears the coordinator again: its next heartbeat (``H``) gets UNKNOWN_MEMBER_ID and
  it rejoins; a JoinGroup (or other request) lost meanwhile is retried only after its timeout
  (``rebalance.timeout.ms`` + ``JOIN_GROUP_TIMEOUT_LAPSE`` 5 s, or ``request.timeout.ms``
  40 s, whichever is longer); the join phase lasts at most ``R_group``; so the next
  generation's assignment — which revokes what others now own — comes by
  ``F.end + L + H + timeout + R_group`` (+ network): the window is ``max(give_up, that)``;

plus :data:`NETWORK_ALLOWANCE_MS` for each of four messages, the herder's time to stop what
the member owns (and to finish a start job), and, if its herder is stalled meanwhile, the rest
of the stall. The window also closes earlier, when the member applies an assignment of a later
generation or restarts (the checker's own rule).

**KAFKA-16056** ("Worker poll timeout expiry fails to revoke"): opens when a member's poll
timer expires (``leave_group`` with reason ``poll timeout expired``: its herder stalled past
``rebalance.timeout.ms``) or the coordinator removes it while its herder is stalled. Kafka's
client leaves without revoking; once the herder runs again it rejoins (eager: revoking all
first; cooperative: the next assignment revokes the duplicates). It closes at
``stall end + H + R_group`` plus the same allowances, or later per link fault as above.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
from msgspec import UNSET

from members.config import WORKER_CONFIG_KEYS, WorkerConfig
from members.join_group import JOIN_GROUP_TIMEOUT_LAPSE_MS
from members.streams_client import REQUEST_TIMEOUT_MS as STREAMS_REQUEST_TIMEOUT
from members.worker import REQUEST_TIMEOUT_MS
from protocol.kafka_configs import STREAMS_DEFAULTS, StreamsSettings, setting_names
from scenarios.eventlog import kinds as k

__all__ = ["KnownIssueWindows", "LinkFault", "GroupRequest", "MemberTimers", "NETWORK_ALLOWANCE_MS"]

#: One-way delay allowed per message (virtual ms): the scenario's base latency and jitter are
#: not in the log (chaos draws at most 6 ms).
NETWORK_ALLOWANCE_MS = 100
_DEFAULT = WorkerConfig()
#: Kafka Streams' consumer defaults (``StreamsConfig``/``ConsumerConfig``) for a client whose
#: ``member_start`` config leaves them out.
_STREAMS_DEFAULTS = {
    key: getattr(STREAMS_DEFAULTS, setting_names(StreamsSettings)[key])
    for key in ("session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms")
}
#: Kafka Streams' consumer ``request.timeout.ms`` (``members.streams_client``).
STREAMS_REQUEST_TIMEOUT_MS = STREAMS_REQUEST_TIMEOUT
#: The group client's FindCoordinator retry backoff (``retry.backoff.ms``) with slack.
FIND_COORDINATOR_BACKOFF_MS = 1_000
_NEVER = 1 << 62


#: ``member_start.config``'s field for each Kafka-named key it logs
_LOGGED_FIELDS = {f.encode_name: f.name for f in msgspec.structs.fields(k.MemberConfig)}


def _logged(config: k.MemberConfig, key: str, default: int) -> int:
    """The Kafka setting ``key`` of a ``member_start`` config, else ``default`` (a key the
    record does not log, or left out as Kafka's default)."""
    name = _LOGGED_FIELDS.get(key)
    value = UNSET if name is None else getattr(config, name)
    return default if value is UNSET else int(value)


def _setting(config: k.MemberConfig, key: str) -> int:
    return _logged(config, key, getattr(_DEFAULT, WORKER_CONFIG_KEYS[key]))


@dataclass(slots=True, frozen=True)
class LinkFault:
    """A partition, loss, latency or delayed request on a member's link (or a coordinator
    failover, on every link), ``start_ms`` to ``end_ms`` (virtual ms; no end: ``_NEVER``)
    adding ``extra_ms`` to each message; ``full``: it cuts every message (a partition, a loss
    of probability 1, a failover), FindCoordinator too."""

    start_ms: int
    end_ms: int
    extra_ms: int
    full: bool


@dataclass(slots=True)
class GroupRequest:
    """A JoinGroup/SyncGroup a member sent at ``sent_ms``, in flight until ``answered_ms``
    (``None``: not answered) or ``sent_ms + timeout_ms``."""

    sent_ms: int
    timeout_ms: int
    answered_ms: int | None = None


@dataclass(slots=True)
class MemberTimers:
    """What the windows know of one member: its ``member_start`` config (the record's
    :class:`scenarios.eventlog.kinds.MemberConfig`), whether it is a Kafka Streams client,
    the faults on its link, when its herder (StreamThread) stall ends (-1: none) and its
    latest JoinGroup/SyncGroup requests (at most 8)."""

    config: k.MemberConfig = field(default_factory=k.MemberConfig)
    streams: bool = False
    link: list[LinkFault] = field(default_factory=list)
    stalled_until_ms: int = -1
    requests: list[GroupRequest] = field(default_factory=list)


class KnownIssueWindows:
    """Per-member timers and faults, fed the log's records in order (see module docstring):
    the rare ones typed (``member_start``, ``step``, ``member_replaced``:
    :mod:`scenarios.eventlog.kinds`), the JoinGroup/SyncGroup requests and answers and the
    stalls as their few values (the online checker reads them as they are emitted)."""

    def __init__(self) -> None:
        self._members: dict[str, MemberTimers] = {}
        self._failovers: list[LinkFault] = []
        self._group_rebalance_ms = _DEFAULT.rebalance_timeout_ms
        self._process_of: dict[str, str] = {}  # member id -> the member that heard it

    def _member(self, name: str) -> MemberTimers:
        member = self._members.get(name)
        if member is None:
            member = self._members[name] = MemberTimers()
        return member

    # ------------------------------------------------------------------ feeding

    def on_member_start(self, record: k.MemberStart) -> None:
        """A member's process (re)starts with ``record.config``."""
        member = record.member
        timers = self._member(member)
        timers.config = record.config
        if record.config.process_id is not UNSET:  # a Kafka Streams client (docs/streams.md)
            timers.streams = True
        timers.stalled_until_ms = -1
        timers.requests = []
        self._group_rebalance_ms = max(
            self._group_rebalance_ms, self._timer(member, "rebalance.timeout.ms")
        )

    def on_step(self, record: k.Step) -> None:
        """A fault on a member's link (``partition``, ``loss``, ``latency``,
        ``delay_request``), its ``heal``, or a ``coordinator_failover``."""
        action = record.action
        start = record.t_ms
        member = str(None if record.member is UNSET else record.member)
        if action in ("partition", "loss", "latency", "delay_request"):
            duration = record.duration_ms
            end = start + duration if duration is not UNSET else _NEVER
            # a latency adds extra_ms to every message; a delay_request holds the member's
            # requests sent in its window for delay_ms
            extra = 0
            if action == "latency":
                extra = record.extra_ms or 0
            elif action == "delay_request":
                extra = record.delay_ms or 0
            full = action == "partition" or (action == "loss" and (record.probability or 0) >= 1)
            self._member(member).link.append(LinkFault(start, end, extra, full))
        elif action == "heal":
            timers = self._member(member)
            timers.link = [
                LinkFault(f.start_ms, min(f.end_ms, start), f.extra_ms, f.full)
                if f.start_ms <= start
                else f
                for f in timers.link
            ]
        elif action == "coordinator_failover":
            down = record.down_ms or 0
            self._failovers.append(LinkFault(start, start + down, 0, True))

    def on_request(self, member: str, join: bool, sent_ms: int) -> None:
        """``member`` sent a JoinGroup (``join``) or SyncGroup at ``sent_ms``
        (``join_group_request``/``sync_group_request``): in flight until its response or its
        timeout (JoinGroup: ``rebalance.timeout.ms`` + 5 s; SyncGroup:
        ``request.timeout.ms``)."""
        if join:
            timeout = self._timer(member, "rebalance.timeout.ms") + JOIN_GROUP_TIMEOUT_LAPSE_MS
        else:
            timeout = REQUEST_TIMEOUT_MS
        requests = self._member(member).requests
        requests.append(GroupRequest(sent_ms, timeout))
        del requests[:-8]

    def on_response(self, member: str, answered_ms: int, joined_id: str | None) -> None:
        """``member`` got the answer to its JoinGroup/SyncGroup at ``answered_ms``
        (``join_group_response``/``sync_group_response``): its request is answered;
        ``joined_id``: the member id a successful JoinGroup handed it (else ``None``)."""
        if joined_id is not None:
            self._process_of[joined_id] = member
        for request in reversed(self._member(member).requests):
            if request.answered_ms is None:
                request.answered_ms = answered_ms
                break

    def _waiting_until(self, member: str, cut_ms: int, session_ms: int) -> int:
        """When the member stops waiting on a JoinGroup/SyncGroup it had in flight when it was
        cut off at ``cut_ms``, or sent before its session timer would expire (the heartbeat
        thread is off during a rebalance): that request's timeout; else 0."""
        until = 0
        for r in self._member(member).requests:
            answered = r.answered_ms
            if r.sent_ms <= cut_ms + session_ms and (answered is None or answered > cut_ms):
                until = max(until, r.sent_ms + r.timeout_ms)
        return until

    def on_herder_stall(self, member: str, until_ms: int) -> None:
        """``member``'s herder (StreamThread) is blocked until ``until_ms``
        (``herder_stall``/``stream_thread_stall``: ``t_ms`` + ``stall_ms``)."""
        timers = self._member(member)
        timers.stalled_until_ms = max(until_ms, timers.stalled_until_ms, 0)

    # ------------------------------------------------------------------ questions

    def stalled(self, member: str, now_ms: int) -> bool:
        """The member's herder thread is blocked at ``now_ms`` (a ``slow`` fault)."""
        return now_ms < self._member(member).stalled_until_ms

    def stalled_in_session(self, member: str, now_ms: int) -> bool:
        """The member's herder thread was blocked at some time in the ``session.timeout.ms``
        before ``now_ms``: a session that ran out then ran out because of the stall. Mid-join
        nothing heartbeats (``AbstractCoordinator``'s heartbeat thread is off while a JoinGroup
        is in flight, KIP-62), and a SyncGroup to a Stable group renews no session
        (``GroupMetadataManager#classicGroupSyncToClassicGroup``): a member that handles its
        held JoinGroup answer when its stall ends just before that session runs out is removed
        while it starts its new assignment's work (Streams seed 24 run 1169)."""
        session = self._timer(member, "session.timeout.ms")
        return now_ms < self._member(member).stalled_until_ms + session

    def _faults(self, member: str) -> list[LinkFault]:
        return self._member(member).link + self._failovers

    def could_not_hear(self, member: str, now_ms: int) -> bool:
        """KAFKA-9184's trigger: a fault on the member's link (or a coordinator failover) was
        active or ended no more than ``R_group + S`` before ``now_ms``."""
        window = self._group_rebalance_ms + self._timer(member, "session.timeout.ms")
        return any(
            f.start_ms <= now_ms and now_ms - (f.end_ms + f.extra_ms) <= window
            for f in self._faults(member)
        )

    def zombie_of(self, replaced: k.MemberReplaced) -> str | None:
        """The Streams client a ``member_replaced`` made a zombie (KIP-345: a second process
        with its ``group.instance.id`` took over the member id it heard; the zombie fault), or
        None (the same process rejoining, or a member id nobody heard). It runs its tasks until
        its next request hears FENCED_INSTANCE_ID (its link back, its stall over): the removed
        client's ``streams-zombie`` window (:meth:`streams_deadline`), opened at the takeover."""
        previous = self._process_of.get(replaced.old_member_id)
        if previous in (None, replaced.member) or not self.is_streams(str(previous)):
            return None
        return previous

    def is_streams(self, member: str) -> bool:
        """``member`` is a Kafka Streams client (its ``member_start`` names a process id)."""
        return self._member(member).streams

    def _timer(self, member: str, key: str) -> int:
        timers = self._member(member)
        config = timers.config
        if timers.streams:
            # Streams' consumer configs; the rebalance timeout is max.poll.interval.ms
            key = "max.poll.interval.ms" if key == "rebalance.timeout.ms" else key
            return _logged(config, key, _STREAMS_DEFAULTS[key])
        return _setting(config, key)

    def streams_deadline(self, member: str, removed_ms: int, now_ms: int) -> int:
        """When a removed Streams client stops running its active tasks, as known at
        ``now_ms``: it never gives up on the coordinator by itself (its consumer keeps
        fetching while the coordinator is unknown), so per fault ``F`` on its link it hears
        the coordinator again at ``F.end + L`` (a partition without an end: never, yet) — or,
        with a Heartbeat lost in the fault still in flight, when that request times out
        (the consumer's ``request.timeout.ms``, 30 s) — finds it (``retry.backoff.ms``), and
        its next Heartbeat (``H``) gets UNKNOWN_MEMBER_ID:
        ``onPartitionsLost`` closes its tasks. A JoinGroup or SyncGroup it had in flight is
        answered (or times out) first: that request's timeout bounds it too. A client removed
        while its StreamThread stalls (``stream_thread_stall``) closes them once it polls
        again, at the stall's end."""
        heartbeat = self._timer(member, "heartbeat.interval.ms")
        session = self._timer(member, "session.timeout.ms")
        window = self._group_rebalance_ms + session
        close = removed_ms + heartbeat
        for f in self._faults(member):
            if f.start_ms > now_ms or f.end_ms < removed_ms - window:
                continue
            if f.end_ms >= _NEVER:
                return _NEVER
            # a Heartbeat lost in the fault is waited for until request.timeout.ms first
            heard = f.end_ms + f.extra_ms + STREAMS_REQUEST_TIMEOUT_MS + FIND_COORDINATOR_BACKOFF_MS
            close = max(close, heard + heartbeat)
            close = max(close, self._waiting_until(member, f.end_ms, 0) + heartbeat)
        # a stalled StreamThread finds it left the group on its next poll: onPartitionsLost
        close = max(close, self._member(member).stalled_until_ms)
        return close + 4 * NETWORK_ALLOWANCE_MS

    def deadline(self, member: str, issue: str, removed_ms: int, now_ms: int, owned: int) -> int:
        """When the window ``issue`` (``KAFKA-9184``/``KAFKA-16056``) opened at ``removed_ms``
        closes, as known at ``now_ms`` (faults that start later may extend it); ``owned`` is
        how many instances the member owns (its herder stops them one by one). A Streams
        client's ``streams-zombie`` window: :meth:`streams_deadline`."""
        if issue == "streams-zombie":
            return self.streams_deadline(member, removed_ms, now_ms)
        session = self._timer(member, "session.timeout.ms")
        heartbeat = self._timer(member, "heartbeat.interval.ms")
        # the next heartbeat, a JoinGroup (or other request) lost meanwhile timing out, the
        # join phase, four messages
        outstanding = max(
            self._timer(member, "rebalance.timeout.ms") + JOIN_GROUP_TIMEOUT_LAPSE_MS,
            REQUEST_TIMEOUT_MS,
        )
        rejoin = heartbeat + outstanding + self._group_rebalance_ms + 4 * NETWORK_ALLOWANCE_MS
        stall_end = self._member(member).stalled_until_ms
        if issue == "KAFKA-16056":
            close = max(removed_ms, stall_end) + rejoin
        else:
            close = removed_ms + session + heartbeat + 4 * NETWORK_ALLOWANCE_MS
        window = self._group_rebalance_ms + session
        for f in self._faults(member):
            if f.start_ms > now_ms or f.end_ms < removed_ms - window:
                continue
            cut = max(removed_ms, f.start_ms) + f.extra_ms + NETWORK_ALLOWANCE_MS
            give_up = max(cut + session, self._waiting_until(member, cut, session)) + heartbeat
            if f.full and f.end_ms >= give_up:
                close = max(close, give_up)
            else:
                close = max(close, give_up, min(f.end_ms, _NEVER) + f.extra_ms + rejoin)
        if stall_end > removed_ms:
            close = max(close, stall_end)
        config = self._member(member).config
        per_job = max(
            _setting(config, "groupsim.task.stop.ms"),
            _setting(config, "groupsim.connector.stop.ms"),
        ) + max(
            _setting(config, "groupsim.task.start.ms"),
            _setting(config, "groupsim.connector.start.ms"),
        )
        return close + (owned + 1) * per_job
