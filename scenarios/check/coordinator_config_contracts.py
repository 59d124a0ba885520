"""Contract checkers for the coordinator's ``[coordinator]`` settings (issue 23): KIP-389's
``group.max.size``, the session-timeout bounds ``group.{min,max}.session.timeout.ms`` and
KIP-134's extension of ``group.initial.rebalance.delay.ms``.

Pure functions over one run's records, like :mod:`scenarios.check.contracts` (which adds them
to ``CONTRACT_CHECKERS``); one pass over the log each. The first three read the wire tap's
``bounded_join`` record (:mod:`scenarios.sim.wire_tap`), which a run logs only when its
coordinator's ``group.max.size`` or session bounds are not Kafka's defaults — other logs are
not judged by them.

``session_timeout_accepted`` / ``session_timeout_refused`` — ``GroupCoordinatorService
    #joinGroup``: a JoinGroup whose ``session.timeout.ms`` is below
    ``group.min.session.timeout.ms`` or above ``group.max.session.timeout.ms`` is answered
    INVALID_SESSION_TIMEOUT before the group sees it; both bounds are inclusive. A
    ``bounded_join`` whose ``session_timeout_ms`` is outside ``[min_session_timeout_ms,
    max_session_timeout_ms]`` answered anything but INVALID_SESSION_TIMEOUT (or an answer that
    comes before it: COORDINATOR_NOT_AVAILABLE, INVALID_GROUP_ID, NOT_COORDINATOR) — let in
    (parked, ``error`` null), MEMBER_ID_REQUIRED, … — is ``session_timeout_accepted``; one
    inside answered INVALID_SESSION_TIMEOUT is ``session_timeout_refused``.
``max_size_exceeded`` / ``max_size_refused_with_room`` — KIP-389,
    ``GroupMetadataManager#classicGroupJoinToClassicGroup`` → ``acceptJoiningMember``: an
    Empty group takes any joiner; in PreparingRebalance a member already awaiting a JoinGroup
    answer is taken, anyone else only while fewer than ``group.max.size`` members await one
    (so the last members to rejoin a shrunk group are the ones turned away); in
    CompletingRebalance and Stable a member is taken, a newcomer only while the group has
    fewer than ``group.max.size`` members. A refused joiner is answered GROUP_MAX_SIZE_REACHED
    (and removed, if it was a member). Judged on each ``bounded_join`` that passed the session
    bounds and reached the group (no earlier error): refused by that rule but answered
    otherwise is ``max_size_exceeded``; accepted by it but answered GROUP_MAX_SIZE_REACHED is
    ``max_size_refused_with_room``.
``generation_over_max_size`` — the bound KIP-389 promises, judged on the coordinator's own
    records without the tap's counts: the members of a ``generation`` that rejoined in its
    join phase (its ``member_ids`` minus its ``not_rejoined`` KIP-345 static members, whom
    ``completeClassicGroupJoin`` keeps without a rejoin) are never more than
    ``group.max.size`` (the ``max_size`` of the group's latest ``bounded_join``): each was
    taken while fewer awaited. (A generation may hold more when static members kept without a
    rejoin fill it: Kafka's behaviour, not judged.)
``initial_delay_not_extended`` — KIP-134, ``GroupMetadataManager
    #tryCompleteInitialRebalanceElseSchedule`` (``InitialDelayedJoin``): a join phase begun
    from Empty (its ``group_state`` to PreparingRebalance carries ``initial_rebalance_delay_ms``
    D and ``rebalance_timeout_ms`` R) fires first at its start + D with R − D remaining; at
    each firing, if a member was added since the last one (``newMemberAdded``) and time
    remains, it fires again min(D, remaining) later with remaining − the last delay left,
    else the join completes. :func:`initial_delay_completion` replays that chain over the
    phase's ``member_added`` times; a member added at the very instant of a firing is
    counted for neither side of it (the order of a timer and a request in one millisecond is
    not logged), so the replay gives the earliest time Kafka completes (a flag left set by an
    earlier phase only delays it more). A phase that completes (``generation``, or leaving
    PreparingRebalance other than to Dead) at or after start + D but before that time is a
    violation (sooner than start + D is ``initial_delay_skipped``'s). Phases with a removal
    (``member_removed``, ``member_pending_removed``: it may complete them at once) or a reload
    in them are not judged; served logs get
    :data:`~scenarios.check.coordinator_contracts.SERVE_TIMER_SLACK_MS`. How long the chain
    may run at most is ``join_phase_overran``'s. This rule reads no ``[coordinator]`` table:
    every run's first join phase is judged (Kafka's default delay is 3 s).

Clients: ``AbstractCoordinator.JoinGroupResponseHandler`` raises both errors
(``GroupMaxSizeReachedException``, ``InvalidSessionTimeoutException``) out of ``poll()`` — fatal
to the member (``members/join_group.py`` ``FATAL_JOIN_ERRORS``: the Connect herder, the
Streams stream thread and the consumer's poll loop die; ``member_fatal``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scenarios.check.coordinator_contracts import SERVE_TIMER_SLACK_MS
from scenarios.check.join_phases import PHASE_KINDS, EmptyJoinPhases, group_of
from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_coordinator as kg
from scenarios.eventlog.records import LogRecord

__all__ = [
    "COORDINATOR_CONFIG_INVARIANTS",
    "COORDINATOR_CONFIG_CHECKERS",
    "check_session_bounds",
    "check_max_size_answers",
    "check_generation_size",
    "check_initial_delay_extended",
    "accepts_joining_member",
    "initial_delay_completion",
]

SESSION_TIMEOUT_ACCEPTED = "session_timeout_accepted"
SESSION_TIMEOUT_REFUSED = "session_timeout_refused"
MAX_SIZE_EXCEEDED = "max_size_exceeded"
MAX_SIZE_REFUSED_WITH_ROOM = "max_size_refused_with_room"
GENERATION_OVER_MAX_SIZE = "generation_over_max_size"
INITIAL_DELAY_NOT_EXTENDED = "initial_delay_not_extended"

COORDINATOR_CONFIG_INVARIANTS = (
    SESSION_TIMEOUT_ACCEPTED,
    SESSION_TIMEOUT_REFUSED,
    MAX_SIZE_EXCEEDED,
    MAX_SIZE_REFUSED_WITH_ROOM,
    GENERATION_OVER_MAX_SIZE,
    INITIAL_DELAY_NOT_EXTENDED,
)

_INVALID_SESSION = "INVALID_SESSION_TIMEOUT"
_MAX_SIZE = "GROUP_MAX_SIZE_REACHED"
#: Answers ``GroupCoordinatorService#joinGroup`` may give before the session-bound check (or a
#: broker that no longer hosts the group gives): the request never reached the bounds.
_BEFORE_SESSION = frozenset({"COORDINATOR_NOT_AVAILABLE", "INVALID_GROUP_ID", "NOT_COORDINATOR"})
#: Answers before ``acceptJoiningMember`` (the session check's among them).
_BEFORE_GROUP = _BEFORE_SESSION | {_INVALID_SESSION, "COORDINATOR_LOAD_IN_PROGRESS"}


def _in_bounds(r: kg.BoundedJoin) -> bool:
    return r.min_session_timeout_ms <= r.session_timeout_ms <= r.max_session_timeout_ms


def _answer(error: str | None) -> str:
    return "let in" if error is None else f"answered {error}"


def _judge_bounded_joins(
    records: Sequence[LogRecord], verdict: Callable[[kg.BoundedJoin], tuple[str, str] | None]
) -> list[Violation]:
    """A violation naming the member and its member id for each ``bounded_join`` record
    ``verdict`` turns into ``(invariant, detail)``."""
    found: list[Violation] = []
    for r in records:
        if not isinstance(r, kg.BoundedJoin):
            continue
        judged = verdict(r)
        if judged is not None:
            invariant, detail = judged
            found.append(violation_at(invariant, detail, r, member=r.member, member_id=r.member_id))
    return found


def _session_verdict(r: kg.BoundedJoin) -> tuple[str, str] | None:
    error = r.error
    inside = _in_bounds(r)
    bounds = f"[{r.min_session_timeout_ms}, {r.max_session_timeout_ms}] ms"
    asked = f"{r.member}'s JoinGroup with session.timeout.ms {r.session_timeout_ms}"
    if not inside and error != _INVALID_SESSION and error not in _BEFORE_SESSION:
        return SESSION_TIMEOUT_ACCEPTED, (
            f"{asked} outside {bounds} was {_answer(error)} "
            "(GroupCoordinatorService#joinGroup: INVALID_SESSION_TIMEOUT)"
        )
    if inside and error == _INVALID_SESSION:
        return SESSION_TIMEOUT_REFUSED, (
            f"{asked} inside {bounds} (both bounds inclusive) was answered INVALID_SESSION_TIMEOUT"
        )
    return None


@reads_typed("bounded_join")
def check_session_bounds(records: Sequence[LogRecord]) -> list[Violation]:
    """``session_timeout_accepted`` / ``session_timeout_refused`` (module docstring)."""
    return _judge_bounded_joins(records, _session_verdict)


def accepts_joining_member(
    state: str, size: int, awaiting: int, known: bool, awaiting_member: bool, max_size: int
) -> bool:
    """``GroupMetadataManager#acceptJoiningMember``: whether a JoinGroup reaching a group in
    ``state`` (``group_state``'s names) with ``size`` members, ``awaiting`` of them awaiting a
    JoinGroup answer, from a member (``known``) that itself awaits one (``awaiting_member``)
    or a newcomer, is taken under ``group.max.size`` = ``max_size``."""
    if state in ("Empty", "Dead"):
        return True
    if state == "PreparingRebalance":
        return (known and awaiting_member) or awaiting < max_size
    return known or size < max_size


def _max_size_verdict(r: kg.BoundedJoin) -> tuple[str, str] | None:
    error = r.error
    if not _in_bounds(r) or error in _BEFORE_GROUP:
        return None
    accept = accepts_joining_member(
        r.state, r.size, r.awaiting, r.known, r.awaiting_member, r.max_size
    )
    asked = f"{r.member}'s JoinGroup ({'a member' if r.known else 'a newcomer'})"
    counts = (
        f"{r.state}, {r.size} members, {r.awaiting} awaiting a JoinGroup answer, "
        f"group.max.size {r.max_size}"
    )
    if not accept and error != _MAX_SIZE:
        return MAX_SIZE_EXCEEDED, (
            f"{asked} reached a full group ({counts}) and was {_answer(error)}: "
            "acceptJoiningMember refuses it, GROUP_MAX_SIZE_REACHED"
        )
    if accept and error == _MAX_SIZE:
        return MAX_SIZE_REFUSED_WITH_ROOM, (
            f"{asked} was answered GROUP_MAX_SIZE_REACHED although acceptJoiningMember takes "
            f"it ({counts})"
        )
    return None


@reads_typed("bounded_join")
def check_max_size_answers(records: Sequence[LogRecord]) -> list[Violation]:
    """``max_size_exceeded`` / ``max_size_refused_with_room`` (module docstring)."""
    return _judge_bounded_joins(records, _max_size_verdict)


@reads_typed("bounded_join", "generation")
def check_generation_size(records: Sequence[LogRecord]) -> list[Violation]:
    """``generation_over_max_size`` (module docstring)."""
    found: list[Violation] = []
    max_size: dict[str | None, int] = {}  # group -> its coordinator's group.max.size
    for r in records:
        if isinstance(r, kg.BoundedJoin):
            max_size[group_of(r)] = r.max_size
        elif isinstance(r, k.Generation) and (group := group_of(r)) in max_size:
            kept = set(r.not_rejoined or ())
            rejoined = [m for m in r.member_ids if m not in kept]
            if len(rejoined) > max_size[group]:
                found.append(
                    violation_at(
                        GENERATION_OVER_MAX_SIZE,
                        f"generation {r.generation} completed with {len(rejoined)} "
                        f"members that joined it, above group.max.size {max_size[group]} "
                        "(KIP-389: acceptJoiningMember takes a joiner only while fewer await)",
                        r,
                        generation=r.generation,
                        group=group,
                    )
                )
    return found


def initial_delay_completion(
    start_ms: int, delay_ms: int, rebalance_timeout_ms: int, added_ms: Sequence[int]
) -> int:
    """The earliest time (virtual ms) an ``InitialDelayedJoin`` chain begun at ``start_ms``
    with ``group.initial.rebalance.delay.ms`` = ``delay_ms`` and the group's rebalance timeout
    ``rebalance_timeout_ms`` completes, members being added at ``added_ms`` (a time equal to
    a firing counts for neither side of it). Kafka:
    ``GroupMetadataManager#tryCompleteInitialRebalanceElseSchedule``."""
    remaining = max(rebalance_timeout_ms - delay_ms, 0)
    last, at, delay = start_ms, start_ms + delay_ms, delay_ms
    while any(last < t < at for t in added_ms) and remaining != 0:
        new_delay = min(delay_ms, remaining)
        remaining = max(remaining - delay, 0)
        last, at, delay = at, at + new_delay, new_delay
    return at


@reads_typed(*PHASE_KINDS)
def check_initial_delay_extended(records: Sequence[LogRecord]) -> list[Violation]:
    """``initial_delay_not_extended`` (module docstring)."""
    found: list[Violation] = []
    phases = EmptyJoinPhases()
    for r in records:
        phase = phases.see(r)
        if phase is None or phase.disturbed:
            continue
        group = group_of(r)
        t = r.t_ms
        begun, delay = phase.begun_ms, phase.delay_ms
        timeout = phase.rebalance_timeout_ms
        earliest = initial_delay_completion(begun, delay, timeout, phase.added_ms)
        slack = SERVE_TIMER_SLACK_MS if group is not None else 0
        if begun + delay <= t + slack and t + slack < earliest:
            found.append(
                violation_at(
                    INITIAL_DELAY_NOT_EXTENDED,
                    f"the join phase begun from Empty at {begun} ms completed at {t} "
                    f"ms although members kept arriving: with "
                    f"group.initial.rebalance.delay.ms {delay} and rebalance timeout "
                    f"{timeout} ms, InitialDelayedJoin runs until {earliest} ms at "
                    "the earliest (KIP-134: each new member extends the delay)",
                    r,
                    generation=getattr(r, "generation", None),
                    group=group,
                )
            )
    return found


COORDINATOR_CONFIG_CHECKERS = (
    check_session_bounds,
    check_max_size_answers,
    check_generation_size,
    check_initial_delay_extended,
)
