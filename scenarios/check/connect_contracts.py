"""Contract checkers over the Connect leader's incremental (KIP-415) assignment.

Pure functions over one run's records, like :mod:`scenarios.check.contracts` (which adds them
to ``CONTRACT_CHECKERS``). Each reads the leader's ``assignor`` records of the ``compatible``
and ``sessioned`` protocols (``IncrementalCooperativeAssignor``; KIP-987's ``static`` places
its static jobs by other rules and is not judged here) that carry ``inputs`` (the members'
JoinGroup metadata, whose embedded allocation is what each member holds, and the config
snapshots; docs/event-log.md). Older logs without ``inputs`` are not judged. One pass over the
log; O(size of the record) per ``assignor``.

Every rule is a bound Kafka's algorithm keeps, not its exact output (that is the referee's,
docs/chaos.md "Contract rules").

``revoked_below_floor`` — KIP-415,
    ``IncrementalCooperativeAssignor#performLoadBalancingRevocations``:
    load balancing revokes only a worker's excess: a worker never gives up so much that it
    keeps fewer than ``floor(configured / workers)`` connectors (tasks), counted separately.
    With ``held`` a member's allocation (decoded from its metadata), ``revoked`` and
    ``assigned`` its lists in the record and ``lost`` the record's lost work: a member that
    has a load-balancing revocation (a revoked item that is configured — in the snapshot whose
    offset is the record's ``config_offset`` — and held by no other member) keeps
    ``|held − revoked| + |assigned ∩ lost|`` ≥ the floor (Kafka deals lost work to candidate
    workers before it computes the revocations, and counts unconfigured items it did not
    revoke as load).
``revoked_while_balanced`` — KIP-415, same method: load balancing revokes only when the load
    it starts from is unbalanced (Kafka revokes nothing when exactly ``configured % workers``
    workers hold one more than ``floor(configured / workers)`` and the rest hold the floor).
    The load of a member is ``|held − other revocations|`` (its deleted and duplicated work
    revoked, unconfigured work it keeps counted) plus the lost work dealt to it when a
    candidate worker is present; a round with a load-balancing revocation of one kind from a
    balanced load of that kind is a violation.
``revocation_leaves_excess`` — KIP-415, same method: a round that revokes for load balancing
    takes every worker down to the ceiling: from the same load, minus the member's
    load-balancing revocations, no member holds more than ``floor + 1`` and at most
    ``configured % workers`` hold ``floor + 1`` (Kafka lets the first such workers keep one
    above the floor and takes the rest to it).
``lost_work_not_returned`` — KIP-415, ``IncrementalCooperativeAssignor#handleLostAssignments``:
    when the scheduled delay expires, lost work goes to the candidate workers (those that came
    back empty while the delay ran, the record's ``candidates``) that are members of the round,
    round robin; only when none is present is it assigned like new work. A lost connector or
    task in ``assigned`` of a member outside ``candidates`` while some candidate is a member is
    a violation.
``lost_work_dealt_unevenly`` — KIP-415, same method: the lost work handed to the candidate
    workers at the delay's expiry is dealt round robin, connectors and tasks each from the
    first present candidate on, so the candidates' shares of the lost connectors (tasks)
    differ by one at most. Judged on rounds whose lost work handed out all went to present
    candidates (what a candidate got, when some was withheld).
``new_work_not_least_loaded`` — KIP-415, ``IncrementalCooperativeAssignor#assignConnectors``
    / ``#assignTasks``: new work (created, or lost work handed out as new) is water filled:
    the workers sorted by their count of that kind (``WorkerLoad#connectorComparator`` /
    ``#taskComparator``), each item goes to one of the least loaded, level by level. They
    fill ``nextWorkerAssignment``, i.e. every member's held work minus all its revocations
    (deleted, duplicated, load balancing: ``removeAll`` before the fill) plus the lost work
    ``handleLostAssignments`` dealt to candidate workers. So afterwards, with a member's final
    load ``|held − revoked| + |assigned|`` (per kind; ``assigned`` is ``next − current`` and
    holds no item the member held), a member that received new work ends with at most
    ``min(final loads of all members) + 1``. New work is ``assigned`` minus ``lost`` when a
    candidate worker is present (that lost work went round robin to the candidates, not by
    load); all of ``assigned`` otherwise.
"""

from __future__ import annotations

import base64
import functools
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import TypeGuard

from msgspec import UNSET

from protocol.connect_codec import decode_subscription_v1
from protocol.primitives import DecodeError
from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.eventlog import kinds as k
from scenarios.eventlog.records import LogRecord

__all__ = [
    "CONNECT_CONTRACT_INVARIANTS",
    "CONNECT_CONTRACT_CHECKERS",
    "check_revocation_floor",
    "check_revoked_while_balanced",
    "check_revocation_leaves_excess",
    "check_lost_work_to_candidates",
    "check_lost_work_dealt_evenly",
    "check_new_work_least_loaded",
]

REVOKED_BELOW_FLOOR = "revoked_below_floor"
REVOKED_WHILE_BALANCED = "revoked_while_balanced"
REVOCATION_LEAVES_EXCESS = "revocation_leaves_excess"
LOST_WORK_NOT_RETURNED = "lost_work_not_returned"
LOST_WORK_DEALT_UNEVENLY = "lost_work_dealt_unevenly"
NEW_WORK_NOT_LEAST_LOADED = "new_work_not_least_loaded"

CONNECT_CONTRACT_INVARIANTS = (
    REVOKED_BELOW_FLOOR,
    REVOKED_WHILE_BALANCED,
    REVOCATION_LEAVES_EXCESS,
    LOST_WORK_NOT_RETURNED,
    LOST_WORK_DEALT_UNEVENLY,
    NEW_WORK_NOT_LEAST_LOADED,
)

#: protocols whose leader runs ``IncrementalCooperativeAssignor`` on every job
_INCREMENTAL = frozenset({"compatible", "sessioned"})
_KINDS = ("connectors", "tasks")


def _judged(r: LogRecord) -> TypeGuard[k.Assignor]:
    return (
        isinstance(r, k.Assignor)
        and r.protocol in _INCREMENTAL
        and r.error == 0
        and isinstance(r.inputs, k.AssignorInputs)
    )


def _inputs(r: k.Assignor) -> k.AssignorInputs:
    """The inputs of a judged round (:func:`_judged`)."""
    assert isinstance(r.inputs, k.AssignorInputs)
    return r.inputs


def _held(inputs: k.AssignorInputs) -> dict[str, dict[str, set[str]]] | None:
    """Member id -> {connectors, tasks} it holds, from its JoinGroup metadata (``None`` if a
    member's bytes do not decode)."""
    out: dict[str, dict[str, set[str]]] = {}
    for member_id, encoded in inputs.members:
        allocation = _allocation(encoded)
        if allocation is None:
            return None
        out[member_id] = {"connectors": set(allocation[0]), "tasks": set(allocation[1])}
    return out


@functools.lru_cache(maxsize=4096)
def _allocation(encoded: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """(connectors, tasks) a member's base64 JoinGroup metadata (Connect ``ConnectProtocol``
    v1/v2 subscription) says it holds, ``None`` if it does not decode. Cached: a member's
    bytes recur in every round until its assignment changes, and three rules read each
    round; the result is a function of the string alone."""
    try:
        allocation = decode_subscription_v1(base64.b64decode(encoded)).allocation
    except (DecodeError, ValueError):
        return None
    if allocation is None:
        return frozenset(), frozenset()
    return frozenset(allocation.connectors), frozenset(str(t) for t in allocation.tasks)


def _configured(r: k.Assignor, inputs: k.AssignorInputs) -> dict[str, set[str]] | None:
    """The snapshot the leader assigned: the one whose offset is the record's
    ``config_offset`` (``configSnapshot`` or ``configFreshSnapshot``)."""
    for snap in (inputs.snapshot, inputs.fresh_snapshot):
        if isinstance(snap, k.ConfigView) and snap.offset == r.config_offset:
            counts = snap.connectors
            return {
                "connectors": set(counts),
                "tasks": {f"{c}-{i}" for c, n in counts.items() for i in range(n)},
            }
    return None


def _items(work: k.Work | object, kind: str) -> set[str]:
    """The ``kind`` (``connectors`` or ``tasks``) of a ``Work`` (none when absent)."""
    if not isinstance(work, k.Work):
        return set()
    return set(work.connectors if kind == "connectors" else work.tasks)


def _work(works: Mapping[str, k.Work], member_id: str, kind: str) -> set[str]:
    """The ``kind`` of ``member_id``'s entry in ``assigned`` or ``revoked``."""
    return _items(works.get(member_id), kind)


class _Round:
    """One judged ``assignor`` record with what both revocation rules read: each member's
    held work, the configured work and the work held twice (per kind)."""

    def __init__(
        self, r: k.Assignor, held: dict[str, dict[str, set[str]]], configured: dict[str, set[str]]
    ) -> None:
        self.r = r
        self.held = held
        self.configured = configured
        members = set(held)
        self.candidates_present = any(c in members for c in r.candidates or ())

    def lost(self, kind: str) -> set[str]:
        """The round's lost work of ``kind``."""
        return _items(self.r.lost, kind)

    def twice(self, kind: str) -> set[str]:
        counts = Counter(x for h in self.held.values() for x in h[kind])
        return {x for x, n in counts.items() if n > 1}

    def load_balancing(self, member_id: str, kind: str, twice: set[str]) -> set[str]:
        """The member's load-balancing revocations: configured, held by no one else."""
        return (_work(self.r.revoked, member_id, kind) & self.configured[kind]) - twice

    def dealt(self, member_id: str, kind: str) -> set[str]:
        """Lost work dealt to this member before the revocations were computed (to candidate
        workers at the delay's expiry: ``handleLostAssignments`` adds it to their load)."""
        if not self.candidates_present:
            return set()
        given = _work(self.r.assigned, member_id, kind) | _work(self.r.revoked, member_id, kind)
        mine = self.held.get(member_id, {}).get(kind, set())
        return (given & self.lost(kind)) - mine


def _rounds(records: Sequence[LogRecord]) -> Iterator[_Round]:
    for r in records:
        if not _judged(r) or not r.revoked:
            continue
        held = _held(_inputs(r))
        configured = _configured(r, _inputs(r))
        if held and configured is not None:
            yield _Round(r, held, configured)


@reads_typed("assignor")
def check_revocation_floor(records: Sequence[LogRecord]) -> list[Violation]:
    """``revoked_below_floor``: load balancing never takes a worker below the floor."""
    found: list[Violation] = []
    for rnd in _rounds(records):
        r = rnd.r
        for kind in _KINDS:
            floor = len(rnd.configured[kind]) // len(rnd.held)
            twice = rnd.twice(kind)
            for member_id in r.revoked:
                if not rnd.load_balancing(member_id, kind, twice):
                    continue
                mine = rnd.held.get(member_id, {}).get(kind, set())
                revoked = _work(r.revoked, member_id, kind)
                dealt = _work(r.assigned, member_id, kind) & rnd.lost(kind)
                keeps = len(mine - revoked) + len(dealt)
                if keeps < floor:
                    found.append(
                        violation_at(
                            REVOKED_BELOW_FLOOR,
                            f"generation {r.generation}: {member_id} keeps {keeps} "
                            f"{kind} after revoking {sorted(revoked)}; load balancing keeps at "
                            f"least floor({len(rnd.configured[kind])} / {len(rnd.held)}) = "
                            f"{floor}",
                            r,
                            generation=r.generation,
                            member=member_id,
                        )
                    )
    return found


def _balancing(
    records: Sequence[LogRecord],
) -> Iterator[tuple[k.Assignor, str, dict[str, set[str]], dict[str, int], int]]:
    """Per judged round and kind with load-balancing revocations: the record, the kind, each
    member's load-balancing revocations, each member's load before them, and the configured
    count."""
    for rnd in _rounds(records):
        r = rnd.r
        for kind in _KINDS:
            twice = rnd.twice(kind)
            moving = {m: rnd.load_balancing(m, kind, twice) for m in r.revoked}
            moving = {m: items for m, items in moving.items() if items}
            if not moving:
                continue
            loads = {}
            for member_id, work in rnd.held.items():
                other = _work(r.revoked, member_id, kind) - moving.get(member_id, set())
                loads[member_id] = len(work[kind] - other) + len(rnd.dealt(member_id, kind))
            yield r, kind, moving, loads, len(rnd.configured[kind])


@reads_typed("assignor")
def check_revoked_while_balanced(records: Sequence[LogRecord]) -> list[Violation]:
    """``revoked_while_balanced``: load balancing revokes only from an unbalanced load."""
    found: list[Violation] = []
    for r, kind, moving, by_member, total in _balancing(records):
        loads = list(by_member.values())
        low, extra = divmod(total, len(loads))
        if loads.count(low + 1) == extra and loads.count(low) + extra == len(loads):
            member_id = min(moving)
            found.append(
                violation_at(
                    REVOKED_WHILE_BALANCED,
                    f"generation {r.generation}: {kind} "
                    f"{sorted(moving[member_id])} revoked from {member_id} for load "
                    f"balancing although the loads {sorted(loads)} were balanced "
                    f"({total} over {len(loads)} workers)",
                    r,
                    generation=r.generation,
                    member=member_id,
                )
            )
    return found


@reads_typed("assignor")
def check_revocation_leaves_excess(records: Sequence[LogRecord]) -> list[Violation]:
    """``revocation_leaves_excess``: a load-balancing round revokes every excess."""
    found: list[Violation] = []
    for r, kind, moving, by_member, total in _balancing(records):
        low, extra = divmod(total, len(by_member))
        after = {m: n - len(moving.get(m, ())) for m, n in by_member.items()}
        over = sorted(m for m, n in after.items() if n > low + 1)
        at_ceiling = sorted(m for m, n in after.items() if n == low + 1)
        if over or len(at_ceiling) > extra:
            found.append(
                violation_at(
                    REVOCATION_LEAVES_EXCESS,
                    f"generation {r.generation}: after the load-balancing revocations "
                    f"the {kind} loads are {dict(sorted(after.items()))}: "
                    f"{total} over {len(after)} workers allows at most {extra} at {low + 1} "
                    "and none above",
                    r,
                    generation=r.generation,
                    member=(over or at_ceiling)[0],
                )
            )
    return found


def _present_candidates(r: k.Assignor) -> list[str]:
    """The round's candidate workers (``candidates``) that are members of it."""
    members = {m for m, _ in _inputs(r).members}
    return [c for c in r.candidates or () if c in members]


@reads_typed("assignor")
def check_lost_work_to_candidates(records: Sequence[LogRecord]) -> list[Violation]:
    """``lost_work_not_returned``: lost work handed out goes to the candidate workers."""
    found: list[Violation] = []
    for r in records:
        if not _judged(r) or r.lost is UNSET or not r.candidates:
            continue
        present = _present_candidates(r)
        if not present:
            continue
        for member_id in r.assigned:
            if member_id in present:
                continue
            for kind in _KINDS:
                given = _work(r.assigned, member_id, kind) & _items(r.lost, kind)
                if given:
                    found.append(
                        violation_at(
                            LOST_WORK_NOT_RETURNED,
                            f"generation {r.generation}: lost {kind} {sorted(given)} "
                            f"assigned to {member_id}, not to the candidate workers {present}",
                            r,
                            generation=r.generation,
                            member=member_id,
                        )
                    )
    return found


@reads_typed("assignor")
def check_lost_work_dealt_evenly(records: Sequence[LogRecord]) -> list[Violation]:
    """``lost_work_dealt_unevenly``: the candidates' shares of the lost work differ by one at
    most (per kind), when the lost work handed out in the round went to present candidates
    only (some of it may be withheld: the shares count what each candidate got)."""
    found: list[Violation] = []
    for r in records:
        if not _judged(r) or r.lost is UNSET or not r.candidates:
            continue
        present = _present_candidates(r)
        if len(present) < 2:
            continue
        for kind in _KINDS:
            lost = _items(r.lost, kind)
            shares = {c: _work(r.assigned, c, kind) & lost for c in present}
            given = set().union(*(_work(r.assigned, m, kind) & lost for m in r.assigned))
            # judged when lost work was handed out and only to present candidates: at the
            # expiry Kafka deals all of it, so a candidate left short of its share (the rest
            # withheld for a later round) breaks the rule as much as one given too much
            if not given or given != set().union(*shares.values()):
                continue
            counts = {c: len(got) for c, got in shares.items()}
            if max(counts.values()) - min(counts.values()) > 1:
                found.append(
                    violation_at(
                        LOST_WORK_DEALT_UNEVENLY,
                        f"generation {r.generation}: lost {kind} dealt to the candidate "
                        f"workers as {counts} (round robin differs by one at most)",
                        r,
                        generation=r.generation,
                    )
                )
    return found


def _final_loads(r: k.Assignor, held: dict[str, dict[str, set[str]]], kind: str) -> dict[str, int]:
    """Each member's count of ``kind`` after the round: held minus revoked plus assigned."""
    return {
        m: len(h[kind] - _work(r.revoked, m, kind)) + len(_work(r.assigned, m, kind))
        for m, h in held.items()
    }


@reads_typed("assignor")
def check_new_work_least_loaded(records: Sequence[LogRecord]) -> list[Violation]:
    """``new_work_not_least_loaded``: a member given new connectors (tasks) ends with at most
    one more of that kind than the least loaded member (water filling)."""
    found: list[Violation] = []
    for r in records:
        if not _judged(r) or not r.assigned:
            continue
        held = _held(_inputs(r))
        if not held:
            continue
        by_lost = bool(_present_candidates(r))
        for kind in _KINDS:
            lost = _items(r.lost, kind) if by_lost else set()
            new = {m: _work(r.assigned, m, kind) - lost for m in r.assigned if m in held}
            if not any(new.values()):
                continue
            loads = _final_loads(r, held, kind)
            low = min(loads.values())
            for member_id in sorted(m for m, items in new.items() if items):
                if loads[member_id] > low + 1:
                    found.append(
                        violation_at(
                            NEW_WORK_NOT_LEAST_LOADED,
                            f"generation {r.generation}: new {kind} "
                            f"{sorted(new[member_id])} dealt to {member_id}, which ends with "
                            f"{loads[member_id]} while the least loaded member ends with "
                            f"{low} (loads {dict(sorted(loads.items()))}; KIP-415 fills the "
                            "least loaded first)",
                            r,
                            generation=r.generation,
                            member=member_id,
                        )
                    )
    return found


CONNECT_CONTRACT_CHECKERS = (
    check_revocation_floor,
    check_revoked_while_balanced,
    check_revocation_leaves_excess,
    check_lost_work_to_candidates,
    check_lost_work_dealt_evenly,
    check_new_work_least_loaded,
)
