"""KIP-62's poll timer and KIP-266's JoinGroup timeout, judged on the member side's
``poll_timeout`` and ``join_timeout`` records (issue 23;
registered with the protocol checkers in :mod:`scenarios.check.protocol_checkers`;
docs/chaos.md "Contract rules").

Kafka: ``Heartbeat#poll`` resets ``pollTimer`` (``max.poll.interval.ms``; Connect's
``rebalance.timeout.ms``) at every ``poll()``; ``AbstractCoordinator.HeartbeatThread.run``
tests ``heartbeat.pollTimeoutExpired(now)`` each time it wakes — at most
``retry.backoff.ms`` apart while it has no Heartbeat to send — and on expiry calls
``handlePollTimeoutExpiry`` → ``maybeLeaveGroup("consumer poll timeout has expired.")``,
which sends LeaveGroup only for a dynamic member still in the group (a member id, not
UNJOINED; KIP-345: a static member is removed by its session timeout alone). The
heartbeat thread notices the expiry only while it runs — not while the member has not joined
(``MemberState#hasNotJoinedGroup``: it disables itself), and only after its
coordinator-unknown and session-expired tests — so groupsim's ``poll`` timer, at the deadline
itself, logs ``poll_timeout`` (``last_poll_ms``, ``max_poll_interval_ms``, ``in_group``,
``static``) and then the ``leave_group`` (reason ``poll timeout expired``) in the same ms
only when the member has joined and knows its coordinator
(``GroupClient._poll_timer_due``); an expiry while the coordinator is unknown is noticed
when it is found again (``coordinator_found`` in the same ms, before the ``poll_timeout``;
``FindCoordinatorResponseHandler`` resets the session timer), unless a poll came first.

``poll_timer_off_deadline`` — a ``poll_timeout`` before ``last_poll_ms +
    max_poll_interval_ms``, or after it without a ``coordinator_found`` of its member in the
    same ms (late with nothing that kept the heartbeat thread from noticing); or one whose
    member's latest stall record
    (``poll_stall``, ``stream_thread_stall``, ``herder_stall``) began after ``last_poll_ms``
    (the timer was not reset by the poll before it) or, begun at ``last_poll_ms``, ended
    before the expiry (the poll loop polled again: the timer must not expire); or a
    ``leave_group`` with reason ``poll timeout expired`` with no ``poll_timeout`` of that
    member in the same ms (a leave before, or without, the expiry).
``poll_timeout_not_left`` — a ``poll_timeout`` with ``in_group`` of a dynamic member
    (``static`` false) not followed by its ``leave_group`` (``poll timeout expired``) in the
    same ms; or such a ``leave_group`` after a ``poll_timeout`` with ``static`` true or
    ``in_group`` false (``maybeLeaveGroup`` sends none then).
``join_timeout_off_bound`` — KIP-266 (``AbstractCoordinator#sendJoinGroupRequest``: a
    JoinGroup's request timeout is ``max(request.timeout.ms, rebalance timeout +
    JOIN_GROUP_TIMEOUT_LAPSE)``, the lapse 5 s, so that the coordinator may hold it for the
    whole rebalance timeout): a ``join_timeout`` at a time other than ``sent_ms`` plus that
    bound, or whose ``sent_ms`` is not the time of the member's latest ``join_group_request``
    (the timer was not re-armed by the JoinGroup in flight). Not judged: a JoinGroup held past
    the bound with no ``join_timeout`` (its answer, a lost connection or a stop may each
    cancel the timer; the log does not show every cancellation).

Input: the log's ``poll_timeout``, ``join_timeout``, ``join_group_request``, ``leave_group``,
``coordinator_found`` and stall records decoded into their Structs
(``log_rules.reads_typed``), in log order. A log without ``poll_timeout`` or ``join_timeout``
records (written before they existed) has nothing judged.
"""

from __future__ import annotations

from collections.abc import Sequence

from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_connect as kc
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog import kinds_streams as ks
from scenarios.eventlog.records import LogRecord

__all__ = [
    "JOIN_TIMEOUT_OFF_BOUND",
    "POLL_CONTRACT_CHECKERS",
    "POLL_CONTRACT_INVARIANTS",
    "POLL_TIMEOUT_NOT_LEFT",
    "POLL_TIMER_OFF_DEADLINE",
    "POLL_TIMEOUT_REASON",
    "check_join_timeout",
    "check_poll_timeout",
]

POLL_TIMER_OFF_DEADLINE = "poll_timer_off_deadline"
POLL_TIMEOUT_NOT_LEFT = "poll_timeout_not_left"
JOIN_TIMEOUT_OFF_BOUND = "join_timeout_off_bound"
POLL_CONTRACT_INVARIANTS = (POLL_TIMER_OFF_DEADLINE, POLL_TIMEOUT_NOT_LEFT, JOIN_TIMEOUT_OFF_BOUND)
#: ``AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE`` (ms), restated from Kafka rather than read
#: from the model the rule judges.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000
#: ``leave_group.reason`` of the heartbeat thread's leave on poll-timer expiry.
POLL_TIMEOUT_REASON = "poll timeout expired"


def _not_left(expired: ku.PollTimeout) -> Violation:
    return violation_at(
        POLL_TIMEOUT_NOT_LEFT,
        f"{expired.member}'s poll timer expired at {expired.t_ms} (last poll "
        f"{expired.last_poll_ms}, max.poll.interval.ms {expired.max_poll_interval_ms}) while "
        "it was a dynamic member of the group, and it sent no LeaveGroup "
        "(HeartbeatThread → maybeLeaveGroup, KIP-62)",
        expired,
        member=expired.member,
    )


@reads_typed(
    "poll_timeout",
    "leave_group",
    "coordinator_found",
    "poll_stall",
    "stream_thread_stall",
    "herder_stall",
)
def check_poll_timeout(records: Sequence[LogRecord]) -> list[Violation]:
    """``poll_timer_off_deadline`` and ``poll_timeout_not_left`` (module docstring) over
    ``records``: the kinds it reads, typed, in log order. Returns the violations in log
    order of the record each names (a missing leave is named by its ``poll_timeout``)."""
    found: list[Violation] = []
    # member -> (start ms, stall ms) of its latest stall record
    stalls: dict[str, tuple[int, int]] = {}
    # member -> the ms of its latest coordinator_found
    found_at: dict[str, int] = {}
    # member -> its poll_timeout whose leave_group (if one is due) is not seen yet
    pending: dict[str, ku.PollTimeout] = {}

    def flush(before_ms: int | None) -> None:
        for member, expired in list(pending.items()):
            if before_ms is None or expired.t_ms < before_ms:
                del pending[member]
                if expired.in_group and not expired.static:
                    found.append(_not_left(expired))

    for r in records:
        flush(r.t_ms)
        match r:
            case ku.PollStall() | ks.StreamThreadStall() | kc.HerderStall():
                stalls[r.member] = (r.t_ms, r.stall_ms)
            case k.CoordinatorFound(member=member):
                found_at[member] = r.t_ms
            case ku.PollTimeout(member=member):
                prior = pending.pop(member, None)  # a second expiry in the same ms
                if prior is not None and prior.in_group and not prior.static:
                    found.append(_not_left(prior))
                found.extend(_off_deadline(r, stalls.get(member), found_at.get(member) == r.t_ms))
                pending[member] = r
            case k.LeaveGroup(member=member, reason=reason) if reason == POLL_TIMEOUT_REASON:
                expired = pending.pop(member, None)
                if expired is None:
                    found.append(
                        violation_at(
                            POLL_TIMER_OFF_DEADLINE,
                            f"{member} left on poll timeout at {r.t_ms} with no poll timer "
                            "expiring then (KIP-62: the heartbeat thread leaves when "
                            "max.poll.interval.ms has passed since the last poll)",
                            r,
                            member=member,
                        )
                    )
                elif expired.static or not expired.in_group:
                    why = "a static member (KIP-345)" if expired.static else "not in the group"
                    found.append(
                        violation_at(
                            POLL_TIMEOUT_NOT_LEFT,
                            f"{member} sent LeaveGroup on poll timeout at {r.t_ms}, being "
                            f"{why}: maybeLeaveGroup sends none then",
                            r,
                            member=member,
                        )
                    )
    flush(None)
    found.sort(key=lambda v: v.cause_seq if isinstance(v.cause_seq, int) else -1)
    return found


def _off_deadline(
    expired: ku.PollTimeout, stall: tuple[int, int] | None, on_found: bool
) -> list[Violation]:
    """``poll_timer_off_deadline`` on one ``poll_timeout`` given its member's latest stall
    (start, length in virtual ms), if any, and whether its member found its coordinator in
    the same ms (``on_found``: a late expiry is noticed then)."""
    deadline = expired.last_poll_ms + expired.max_poll_interval_ms
    detail = None
    if expired.t_ms < deadline or (expired.t_ms > deadline and not on_found):
        detail = (
            f"expired at {expired.t_ms}, not at its deadline {deadline} (last poll "
            f"{expired.last_poll_ms} + max.poll.interval.ms {expired.max_poll_interval_ms})"
        )
        if expired.t_ms > deadline:
            detail += " nor when the heartbeat thread could first notice it (coordinator_found)"
    elif stall is not None and stall[0] > expired.last_poll_ms:
        detail = (
            f"expired at {expired.t_ms} on a last poll at {expired.last_poll_ms}, but the "
            f"stall since {stall[0]} began after a poll that reset the timer"
        )
    elif stall is not None and stall[0] == expired.last_poll_ms and sum(stall) < expired.t_ms:
        detail = (
            f"expired at {expired.t_ms}, but the stall since {stall[0]} ended at "
            f"{sum(stall)}: the poll then reset the timer"
        )
    if detail is None:
        return []
    return [
        violation_at(
            POLL_TIMER_OFF_DEADLINE,
            f"{expired.member}'s poll timer {detail} (KIP-62, Heartbeat#pollTimeoutExpired)",
            expired,
            member=expired.member,
        )
    ]


@reads_typed("join_group_request", "join_timeout")
def check_join_timeout(records: Sequence[LogRecord]) -> list[Violation]:
    """``join_timeout_off_bound`` (module docstring) over ``records``: the kinds it reads,
    typed, in log order. Returns the violations in log order."""
    found: list[Violation] = []
    sent: dict[str, int] = {}  # member -> time of its latest join_group_request
    for r in records:
        match r:
            case k.JoinGroupRequest(member=member):
                sent[member] = r.t_ms
            case ku.JoinTimeout(member=member):
                bound = max(
                    r.request_timeout_ms, r.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS
                )
                detail = None
                if r.t_ms != r.sent_ms + bound:
                    detail = (
                        f"timed out at {r.t_ms}, {r.t_ms - r.sent_ms} ms after it was sent at "
                        f"{r.sent_ms}, not max(request.timeout.ms {r.request_timeout_ms}, "
                        f"rebalance timeout {r.rebalance_timeout_ms} + 5 s) = {bound} ms"
                    )
                elif sent.get(member) != r.sent_ms:
                    detail = (
                        f"timed out as sent at {r.sent_ms}, but its latest JoinGroup went at "
                        f"{sent.get(member)}"
                    )
                if detail is not None:
                    found.append(
                        violation_at(
                            JOIN_TIMEOUT_OFF_BOUND,
                            f"{member}'s JoinGroup {detail} (KIP-266, "
                            "AbstractCoordinator#sendJoinGroupRequest)",
                            r,
                            member=member,
                        )
                    )
    return found


POLL_CONTRACT_CHECKERS = (check_poll_timeout, check_join_timeout)
