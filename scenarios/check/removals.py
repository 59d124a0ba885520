"""``unexplained_removal``: the coordinator never evicts a healthy member.

In Kafka's classic protocol a member is removed without asking (``member_removed`` with reason
``session_timeout``, ``not_rejoined`` or ``sync_timeout``) only when it went silent: no
Heartbeat for ``session.timeout.ms`` (``GroupMetadataManager#onHeartbeatExpiration``), no
JoinGroup within the rebalance timeout of a join phase (``ClassicGroup#maybeCompleteJoin``'s
``notYetRejoinedMembers``) or no SyncGroup within it after one
(``GroupMetadataManager#expirePendingSync``). A member whose process runs and whose link with
the coordinator works heartbeats every ``heartbeat.interval.ms`` from its own thread and
answers REBALANCE_IN_PROGRESS at once, so it is never removed that way.

**Predicate.** Such a removal is *explained* when the member id belongs to a process that no
longer runs (a crash, a stop, a restart, a fatal error: the id of an earlier incarnation), or
when a fault touched the member, or the coordinator failed over, at some moment within the
timeout the reason names (``session_timeout_ms`` for ``session_timeout``,
``rebalance_timeout_ms`` for the others, as the ``member_removed`` record carries them) plus
:data:`SLACK_MS` before the removal. A fault touches a member from its start to its end:
``partition`` until its ``duration_ms`` or its ``heal``; ``loss`` until ``until_ms``;
``latency`` and ``delay_request`` until ``until_ms`` plus their extra delay (a message sent
just before then arrives that much later); ``slow`` for ``stall_ms``; ``coordinator_failover``
(every member) for ``down_ms``. Anything else is a violation: a coordinator that drops healthy
members, or a client that stops heartbeating or rejoining while healthy.

A ``loss`` of answers only (``direction = "from_coordinator"``) is weaker: the member's
Heartbeats still arrive. A Connect worker that was Stable when it began (a SyncGroup answered
NONE, no lost coordinator between that and the loss, no JoinGroup or SyncGroup since up to
the removal) keeps heartbeating every ``heartbeat.interval.ms`` until its own
session timer, last pushed back by an answer sent before the loss, runs out
(``Heartbeat#sessionTimerExpired`` marks the coordinator unknown), so the coordinator cannot
expire it before ``2 × (session.timeout.ms − heartbeat.interval.ms)`` after the loss began
(less :data:`SLACK_MS`); an earlier ``session_timeout`` removal is not explained by that loss
(a client that stops heartbeating while an answer is missing would be caught here). Kafka
Streams logs do not carry their heartbeat interval: there any loss explains.

A member whose process crashed while Stable (a SyncGroup answered NONE, no JoinGroup or
SyncGroup since) has no request parked at the coordinator, so its last Heartbeat arrived by
the crash and ``session.timeout.ms`` later its deadline expires: its eviction later than that
(plus :data:`SLACK_MS`) is a violation unless a fault touched its link, or the coordinator
failed over, from the crash on (a coordinator that expires members late only shows this way).
A join phase that completes with the crashed member still in the group (a static member is
kept when it does not rejoin, KIP-345) restarts its deadline: ``completeClassicGroupJoin``
reschedules the heartbeat expiry of every member of the new generation, so the deadline then
counts from the ``generation`` record (found by consumer chaos: a static consumer whose
replacement died of ``INCONSISTENT_GROUP_PROTOCOL``).

A member that sent a JoinGroup while a fault touched its link, and has had no answer to it
(no ``join_group_response``, no ``coordinator_unknown``, no restart) when it is removed, is
explained too: the JoinGroup may be lost, and the client waits ``rebalance.timeout.ms`` + 5 s
for its answer without heartbeating (``AbstractCoordinator``: no heartbeats while it has not
joined), which outlasts a shorter session of a member the join phase kept (a KIP-345 static
member, or one whose answer was lost) — found on clean code by consumer chaos, seed 1 run 133.

A member that sent a LeaveGroup (``leave_group``) is removed by it
(``GroupMetadataManager#classicGroupLeave``), at once: an eviction of that member id later,
even after its process stopped, is a violation unless a fault touched its link, or the
coordinator failed over, between the LeaveGroup and the eviction (a coordinator that ignores
LeaveGroup only shows this way: the member is evicted one session timeout later).

Only logs whose members log their own side are judged (``member_start`` and
``join_group_response``): a ``groupsim serve`` log of real clients is not.
"""

from __future__ import annotations

from collections.abc import Sequence

from members.config import WORKER_DEFAULTS
from scenarios.check.log_rules import reads_typed
from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k
from scenarios.eventlog.records import LogRecord

__all__ = ["UNEXPLAINED_REMOVAL", "SLACK_MS", "OPEN_END", "check_unexplained_removal", "fault_span"]

UNEXPLAINED_REMOVAL = "unexplained_removal"

#: Allowance beyond the timeout for the network and timer granularity (virtual ms): a
#: heartbeat interval's worth of messages in flight.
SLACK_MS = 3_000

_EVICTIONS = ("session_timeout", "not_rejoined", "sync_timeout")
#: Connect's ``heartbeat.interval.ms`` default (a worker's ``member_start`` logs another one)
_HEARTBEAT_INTERVAL_MS = WORKER_DEFAULTS.heartbeat_interval_ms
#: the end of a partition with no duration (until its ``heal``), in :func:`fault_span`
OPEN_END = 1 << 62
#: the record kinds :func:`check_unexplained_removal` reads
_KINDS = (
    "member_start",
    "member_stop",
    "member_crash",
    "member_fatal",
    "member_replaced",
    "member_removed",
    "generation",
    "leave_group",
    "join_group_request",
    "join_group_response",
    "sync_group_request",
    "sync_group_response",
    "coordinator_unknown",
    "fault",
)


def _ms(value: int | object) -> int:
    """An optional ms field's value, 0 when absent (``UNSET``) or ``None``."""
    return value if isinstance(value, int) else 0


def fault_span(r: k.Fault) -> tuple[int, int]:
    """``(start, end)`` of a ``fault`` record's effect on its member's link, or of a
    ``coordinator_failover`` on every member's (virtual ms; the module docstring says how
    long each fault lasts; a partition with no duration ends at :data:`OPEN_END`)."""
    t = r.t_ms
    until = r.until_ms if isinstance(r.until_ms, int) else None
    match r.fault:
        case "partition":
            return t, t + r.duration_ms if isinstance(
                r.duration_ms, int
            ) and r.duration_ms else OPEN_END
        case "latency" | "delay_request":
            extra = _ms(r.extra_ms) or _ms(r.delay_ms)
            return t, (until if until is not None else t) + extra
        case "slow":
            return t, t + _ms(r.stall_ms)
        case "coordinator_failover":
            return t, t + _ms(r.down_ms)
    return t, until if until is not None else t


def _answers_lost_explain(
    start: int,
    t: int,
    session_ms: int,
    heartbeat_ms: int | None,
    settled: int | None,
    joined: int,
    lost: int,
) -> bool:
    """A loss of the coordinator's answers to a member from ``start`` explains its
    ``session_timeout`` removal at ``t`` (see the module docstring). ``heartbeat_ms``: a
    Connect worker's interval (``None`` for a Streams client); ``settled``, ``joined``,
    ``lost``: when the member last became Stable, last sent a JoinGroup or SyncGroup (or
    started), last lost the coordinator."""
    if (
        heartbeat_ms is None  # a Streams client
        or settled is None
        or settled > start  # not Stable yet when the loss began
        or joined >= settled  # rejoining since
        or settled <= lost < start  # lost the coordinator before the loss began
    ):
        return True
    return t >= start + 2 * (session_ms - heartbeat_ms) - SLACK_MS


def _evicted_late(r: k.MemberRemoved, crash: int, session: int) -> Violation:
    return Violation(
        invariant=UNEXPLAINED_REMOVAL,
        detail=(
            f"the coordinator removed {r.member} ({r.reason}) at {r.t_ms} ms, "
            f"{r.t_ms - crash} ms after its process crashed while Stable: "
            f"later than session.timeout.ms ({session} ms) with no fault on its link since"
        ),
        member=r.member,
        cause_seq=r.seq,
    )


def _left_but_evicted(r: k.MemberRemoved, sent: int) -> Violation:
    return Violation(
        invariant=UNEXPLAINED_REMOVAL,
        detail=(
            f"the coordinator removed {r.member} ({r.reason}) at {r.t_ms} ms though "
            f"it sent LeaveGroup at {sent} ms and no fault touched its link since"
        ),
        member=r.member,
        cause_seq=r.seq,
    )


@reads_typed(*_KINDS)
def check_unexplained_removal(records: Sequence[LogRecord]) -> list[Violation]:
    """``unexplained_removal`` violations (see the module docstring), one per removal."""
    found: list[Violation] = []
    running: set[str] = set()  # members whose process runs
    ids: dict[str, set[str]] = {}  # member -> member ids of its running process
    touched: dict[str, list[list[int]]] = {}  # member -> fault spans on its link
    everyone: list[tuple[int, int]] = []  # coordinator failovers
    interval: dict[str, int] = {}  # Connect worker -> heartbeat.interval.ms
    # member -> when it last started joining (a start, a JoinGroup or SyncGroup sent), last
    # lost the coordinator, and last became Stable (a SyncGroup answered NONE)
    joined: dict[str, int] = {}
    lost: dict[str, int] = {}
    settled: dict[str, int] = {}
    left: dict[str, int] = {}  # member id -> when its LeaveGroup was sent
    crashed: dict[str, int] = {}  # member id -> when its process crashed while Stable
    awaiting: dict[str, int] = {}  # member -> when it sent the JoinGroup it awaits an answer to

    def link_spans(member: str) -> list[list[int]]:
        """The fault spans on ``member``'s link, and the coordinator failovers."""
        return [*touched.get(member, ()), *([start, end] for start, end in everyone)]

    def touched_between(member: str, start: int, end: int) -> bool:
        return any(span[0] <= end and span[1] >= start for span in link_spans(member))

    for r in records:
        match r:
            case k.MemberCrash(member=member, t_ms=t):
                stable_from = settled.get(member)
                stable = stable_from is not None and joined.get(member, 0) < stable_from
                if member in running and stable:
                    for mid in ids.get(member, ()):
                        crashed[mid] = t
                awaiting.pop(member, None)
                running.discard(member)
            case k.MemberStop(member=member) | k.MemberFatal(member=member):
                awaiting.pop(member, None)
                running.discard(member)
            case k.Generation(member_ids=member_ids, t_ms=t):
                for mid in member_ids:
                    if mid in crashed:
                        crashed[mid] = t
            case k.LeaveGroup(member_id=member_id, t_ms=t):
                if member_id:
                    left[member_id] = t
            case k.MemberStart(member=member, config=config, t_ms=t):
                running.add(member)
                ids[member] = set()
                if isinstance(config.connect_protocol, str):
                    beat = config.heartbeat_interval_ms
                    interval[member] = beat if isinstance(beat, int) else _HEARTBEAT_INTERVAL_MS
                else:
                    interval.pop(member, None)
                awaiting.pop(member, None)
                joined[member] = t
            case k.JoinGroupRequest(member=member, member_id=member_id, t_ms=t):
                awaiting[member] = t
                joined[member] = t
                if member_id:
                    ids.setdefault(member, set()).add(member_id)
            case k.JoinGroupResponse(member=member, member_id=member_id):
                awaiting.pop(member, None)
                if member_id:
                    ids.setdefault(member, set()).add(member_id)
            case k.CoordinatorUnknown(member=member, t_ms=t):
                awaiting.pop(member, None)
                lost[member] = t
            case k.SyncGroupRequest(member=member, t_ms=t):
                joined[member] = t
            case k.SyncGroupResponse(member=member, error="NONE", t_ms=t):
                settled[member] = t
            case k.MemberReplaced(member=member, member_id=member_id):
                ids.setdefault(member, set()).add(member_id)
            case k.Fault(member=str(member)) if r.fault == "heal":
                for open_span in touched.get(member, ()):
                    if open_span[1] == OPEN_END:
                        open_span[1] = r.t_ms
            case k.Fault(member=str(member)):
                span = list(fault_span(r))
                if r.fault == "loss" and r.direction == "from_coordinator":
                    touched.setdefault(member, []).append([*span, 1])  # answers lost only
                else:
                    touched.setdefault(member, []).append(span)
            case k.Fault() if r.fault != "heal":
                everyone.append(fault_span(r))
            case k.MemberRemoved(member=member, member_id=member_id, reason=reason, t_ms=t):
                if reason not in _EVICTIONS:
                    continue
                sent = left.get(member_id)
                if sent is not None:  # it left: removed by its LeaveGroup unless a fault did
                    if not touched_between(member, sent - SLACK_MS, t):
                        found.append(_left_but_evicted(r, sent))
                    continue
                crash = crashed.get(member_id)
                session = r.session_timeout_ms
                if (
                    crash is not None
                    and isinstance(session, int)
                    and t > crash + session + SLACK_MS
                ):
                    if not touched_between(member, crash - SLACK_MS, t):
                        found.append(_evicted_late(r, crash, session))
                    continue
                if member not in running or member_id not in ids.get(member, ()):
                    continue  # an earlier incarnation's id, or a process that stopped
                timeout = (
                    r.session_timeout_ms if reason == "session_timeout" else r.rebalance_timeout_ms
                )
                if not isinstance(timeout, int):
                    continue  # a log from before removals carried their timeouts
                asked = awaiting.get(member)
                if asked is not None and touched_between(member, asked - SLACK_MS, asked):
                    continue  # its JoinGroup sent in a fault may be lost: it waits, silent
                since = t - timeout - SLACK_MS
                if any(
                    span[0] <= t
                    and span[1] >= since
                    and (
                        len(span) == 2
                        or reason != "session_timeout"
                        or _answers_lost_explain(
                            span[0],
                            t,
                            timeout,
                            interval.get(member),
                            settled.get(member),
                            joined.get(member, 0),
                            lost.get(member, 0),
                        )
                    )
                    for span in link_spans(member)
                ):
                    continue
                found.append(
                    Violation(
                        invariant=UNEXPLAINED_REMOVAL,
                        detail=(
                            f"the coordinator removed {member} ({reason}) at {t} ms though its "
                            f"process runs and no fault touched it in the {timeout} ms before"
                        ),
                        member=member,
                        cause_seq=r.seq,
                    )
                )
    return found
