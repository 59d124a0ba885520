"""Contract checkers for the coordinator's ``[coordinator]`` settings (issue 23): KIP-389's
``group.max.size`` and the session-timeout bounds ``group.{min,max}.session.timeout.ms``.

Pure functions over one run's records, like :mod:`scenarios.check.contracts` (which adds them
to ``CONTRACT_CHECKERS``); one pass over the log each. They read the wire tap's
``bounded_join`` record (:mod:`scenarios.sim.wire_tap`), which a run logs only when its
coordinator's ``group.max.size`` or session bounds are not Kafka's defaults — every other log
is not judged.

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

Clients: ``AbstractCoordinator.JoinGroupResponseHandler`` raises both errors
(``GroupMaxSizeReachedException``, ``InvalidSessionTimeoutException``) out of ``poll()`` — fatal
to the member (``members/group_client.py`` ``FATAL_JOIN_ERRORS``: the Connect herder, the
Streams stream thread and the consumer's poll loop die; ``member_fatal``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scenarios.check.log_rules import Record, Violation, reads, violation

__all__ = [
    "COORDINATOR_CONFIG_INVARIANTS",
    "COORDINATOR_CONFIG_CHECKERS",
    "check_session_bounds",
    "check_max_size_answers",
    "check_generation_size",
    "accepts_joining_member",
]

SESSION_TIMEOUT_ACCEPTED = "session_timeout_accepted"
SESSION_TIMEOUT_REFUSED = "session_timeout_refused"
MAX_SIZE_EXCEEDED = "max_size_exceeded"
MAX_SIZE_REFUSED_WITH_ROOM = "max_size_refused_with_room"
GENERATION_OVER_MAX_SIZE = "generation_over_max_size"

COORDINATOR_CONFIG_INVARIANTS = (
    SESSION_TIMEOUT_ACCEPTED,
    SESSION_TIMEOUT_REFUSED,
    MAX_SIZE_EXCEEDED,
    MAX_SIZE_REFUSED_WITH_ROOM,
    GENERATION_OVER_MAX_SIZE,
)

_INVALID_SESSION = "INVALID_SESSION_TIMEOUT"
_MAX_SIZE = "GROUP_MAX_SIZE_REACHED"
#: Answers ``GroupCoordinatorService#joinGroup`` may give before the session-bound check (or a
#: broker that no longer hosts the group gives): the request never reached the bounds.
_BEFORE_SESSION = frozenset({"COORDINATOR_NOT_AVAILABLE", "INVALID_GROUP_ID", "NOT_COORDINATOR"})
#: Answers before ``acceptJoiningMember`` (the session check's among them).
_BEFORE_GROUP = _BEFORE_SESSION | {_INVALID_SESSION, "COORDINATOR_LOAD_IN_PROGRESS"}


def _in_bounds(r: Record) -> bool:
    return (
        int(r["min_session_timeout_ms"])
        <= int(r["session_timeout_ms"])
        <= int(r["max_session_timeout_ms"])
    )


@reads("bounded_join")
def check_session_bounds(records: Sequence[Record]) -> list[Violation]:
    """``session_timeout_accepted`` / ``session_timeout_refused`` (module docstring)."""
    found: list[Violation] = []
    for r in records:
        if r.get("kind") != "bounded_join":
            continue
        error = r.get("error")
        inside = _in_bounds(r)
        bounds = f"[{r['min_session_timeout_ms']}, {r['max_session_timeout_ms']}] ms"
        if not inside and error != _INVALID_SESSION and error not in _BEFORE_SESSION:
            answer = "let in" if error is None else f"answered {error}"
            found.append(
                violation(
                    SESSION_TIMEOUT_ACCEPTED,
                    f"{r.get('member')}'s JoinGroup with session.timeout.ms "
                    f"{r['session_timeout_ms']} outside {bounds} was {answer} "
                    "(GroupCoordinatorService#joinGroup: INVALID_SESSION_TIMEOUT)",
                    r,
                    member=r.get("member"),
                    member_id=r.get("member_id"),
                )
            )
        elif inside and error == _INVALID_SESSION:
            found.append(
                violation(
                    SESSION_TIMEOUT_REFUSED,
                    f"{r.get('member')}'s JoinGroup with session.timeout.ms "
                    f"{r['session_timeout_ms']} inside {bounds} (both bounds inclusive) was "
                    "answered INVALID_SESSION_TIMEOUT",
                    r,
                    member=r.get("member"),
                    member_id=r.get("member_id"),
                )
            )
    return found


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


@reads("bounded_join")
def check_max_size_answers(records: Sequence[Record]) -> list[Violation]:
    """``max_size_exceeded`` / ``max_size_refused_with_room`` (module docstring)."""
    found: list[Violation] = []
    for r in records:
        if r.get("kind") != "bounded_join" or not _in_bounds(r):
            continue
        error = r.get("error")
        if error in _BEFORE_GROUP:
            continue
        max_size = int(r["max_size"])
        accept = accepts_joining_member(
            str(r["state"]),
            int(r["size"]),
            int(r["awaiting"]),
            bool(r["known"]),
            bool(r["awaiting_member"]),
            max_size,
        )
        who = "a member" if r.get("known") else "a newcomer"
        counts = (
            f"{r['state']}, {r['size']} members, {r['awaiting']} awaiting a JoinGroup answer, "
            f"group.max.size {max_size}"
        )
        if not accept and error != _MAX_SIZE:
            answer = "let in" if error is None else f"answered {error}"
            found.append(
                violation(
                    MAX_SIZE_EXCEEDED,
                    f"{r.get('member')}'s JoinGroup ({who}) reached a full group ({counts}) "
                    f"and was {answer}: acceptJoiningMember refuses it, GROUP_MAX_SIZE_REACHED",
                    r,
                    member=r.get("member"),
                    member_id=r.get("member_id"),
                )
            )
        elif accept and error == _MAX_SIZE:
            found.append(
                violation(
                    MAX_SIZE_REFUSED_WITH_ROOM,
                    f"{r.get('member')}'s JoinGroup ({who}) was answered GROUP_MAX_SIZE_REACHED "
                    f"although acceptJoiningMember takes it ({counts})",
                    r,
                    member=r.get("member"),
                    member_id=r.get("member_id"),
                )
            )
    return found


@reads("bounded_join", "generation")
def check_generation_size(records: Sequence[Record]) -> list[Violation]:
    """``generation_over_max_size`` (module docstring)."""
    found: list[Violation] = []
    max_size: dict[Any, int] = {}  # group -> its coordinator's group.max.size
    for r in records:
        kind = r.get("kind")
        group = r.get("group")
        if kind == "bounded_join":
            max_size[group] = int(r["max_size"])
        elif kind == "generation" and group in max_size:
            kept = set(r.get("not_rejoined") or ())
            rejoined = [m for m in r.get("member_ids") or () if m not in kept]
            if len(rejoined) > max_size[group]:
                found.append(
                    violation(
                        GENERATION_OVER_MAX_SIZE,
                        f"generation {r.get('generation')} completed with {len(rejoined)} "
                        f"members that joined it, above group.max.size {max_size[group]} "
                        "(KIP-389: acceptJoiningMember takes a joiner only while fewer await)",
                        r,
                        generation=r.get("generation"),
                        group=group,
                    )
                )
    return found


COORDINATOR_CONFIG_CHECKERS = (check_session_bounds, check_max_size_answers, check_generation_size)
