"""Safety rules of a plain consumer group, judged from its event log.

Who owns which partition follows the consumers' own records (:mod:`members.consumer`):
``consumer_assignment`` (the member now owns exactly ``owned``, in ``generation``; ``assigned``
is what the leader gave it),
``partitions_revoked`` and ``partitions_lost`` (it stopped owning them), ``member_stop`` /
``member_crash`` (the process is gone), and the coordinator's ``member_removed`` (the member
id left the group: whatever that process still consumes, Kafka no longer counts it as an
owner — a zombie) and ``member_replaced`` (KIP-345: another process took the static member's
instance over; the old member id is fenced, what its process still consumes until it hears so
is judged by ``zombie_owns_work``, :mod:`scenarios.check.zombie_contracts`).

* ``double_ownership`` — no partition is given to a member in generation *g* while another
  member owns it in the same generation *g* (``ConsumerCoordinator``'s guarantee for both
  protocols: eager members revoke everything before joining).
* ``cooperative_move_without_revocation`` — under the COOPERATIVE protocol (KIP-429) a
  partition goes to a new member only once its previous owner has revoked it in an earlier
  generation: the assignment that takes it away and the one that gives it out are two
  rebalances. An owner of an older generation still holding it, or an owner that let it go in
  the very generation that gives it out, is a violation — unless that owner did not join the
  generation that gives it out (no JoinGroup answered for it: a KIP-345 static member the join
  phase kept with its last subscription, cut off or stalled): the leader could not know, and
  Kafka's consumer keeps consuming until its next Heartbeat fails. That is named as the known
  behaviour ``consumer-zombie`` (:data:`scenarios.check.consumer_known.CONSUMER_ZOMBIE`).
  A process that took over a static member's instance (``member_replaced``, KIP-345) is that
  member: the coordinator hands it the instance's assignment of the current generation
  (``ClassicGroup#replaceStaticMember``, no rebalance), so what the process it replaced, or
  any earlier process of that instance, gave up in that generation is not a move.

Input: the log's records decoded into their Structs (:mod:`scenarios.eventlog.records`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from msgspec import UNSET

from scenarios.check.consumer_known import CONSUMER_ZOMBIE
from scenarios.check.consumer_liveness import consumer_end_state, consumer_liveness
from scenarios.check.protocol_checkers import protocol_violations
from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog.records import LogRecord, decode_log

__all__ = ["OwnershipViolation", "consumer_log_violations", "ownership_violations"]


class OwnershipViolation(NamedTuple):
    """One broken rule: ``rule`` (name above), at ``t_ms`` (virtual ms), and what happened;
    ``known_issue`` names a known behaviour (``consumer-zombie``) or is ``None``."""

    rule: str
    t_ms: int
    message: str
    known_issue: str | None = None


class _Owner(NamedTuple):
    member: str
    member_id: str
    generation: int


#: The record classes :func:`ownership_violations` reads.
_OWNERSHIP_RECORDS = (
    ku.ConsumerAssignment,
    k.JoinGroupResponse,
    ku.PartitionsRevoked,
    ku.PartitionsLost,
    k.MemberStop,
    k.MemberCrash,
    k.MemberFatal,
    k.MemberRemoved,
    k.MemberReplaced,
)


def ownership_violations(records: Iterable[LogRecord]) -> list[OwnershipViolation]:
    """Every breach of the two rules in ``records`` (log order)."""
    owner: dict[str, _Owner] = {}  # partition label -> its owner
    released: dict[str, _Owner] = {}  # partition -> its last owner (generation: when given up)
    joined: dict[str, set[int]] = {}  # member -> generations whose JoinGroup it was answered
    took_over: dict[str, set[str]] = {}  # member id -> earlier member ids of its static instance
    out: list[OwnershipViolation] = []

    def drop(partitions: Iterable[str], member: str) -> None:
        for p in partitions:
            if p in owner and owner[p].member == member:
                released[p] = owner[p]
                del owner[p]

    for r in records:
        if not isinstance(r, _OWNERSHIP_RECORDS):
            continue  # (most of a log: one check instead of every case below)
        match r:
            case ku.ConsumerAssignment(member=member, generation=generation):
                for p in r.revoked:  # given up in this generation
                    if p in owner and owner[p].member == member:
                        owner[p] = owner[p]._replace(generation=generation)
                drop([p for p, o in owner.items() if o.member == member], member)
                out.extend(_assignment_violations(r, owner, released, joined, took_over))
                for p in r.owned:
                    owner[p] = _Owner(member, r.member_id, generation)
                    released.pop(p, None)  # owned again: no longer given up by anyone
            case k.JoinGroupResponse(member=member, error="NONE", generation=generation):
                joined.setdefault(member, set()).add(generation)
            case ku.PartitionsRevoked(member=member, generation=generation, partitions=parts):
                for p in parts:
                    if p in owner and owner[p].member == member:
                        owner[p] = owner[p]._replace(generation=generation)
                drop(parts, member)
            case ku.PartitionsLost(member=member, partitions=parts):
                drop(parts, member)
            case (
                k.MemberStop(member=member)
                | k.MemberCrash(member=member)
                | k.MemberFatal(member=member)
            ):
                drop([p for p, o in owner.items() if o.member == member], member)
            case k.MemberRemoved(member_id=gone) | k.MemberReplaced(old_member_id=gone):
                if isinstance(r, k.MemberReplaced):
                    # every earlier member id of the instance: a takeover of a takeover is
                    # still the same member (consumer seed 23 run 5819)
                    took_over[r.member_id] = {gone, *took_over.get(gone, ())}
                # a takeover (KIP-345: another process joined with the static member's
                # group.instance.id) moves the instance to a new member id: the old process is
                # a zombie until it hears FENCED_INSTANCE_ID (judged by zombie_owns_work)
                for p in [p for p, o in owner.items() if o.member_id == gone]:
                    del owner[p]
    return out


def _assignment_violations(
    r: ku.ConsumerAssignment,
    owner: dict[str, _Owner],
    released: dict[str, _Owner],
    joined: dict[str, set[int]],
    took_over: dict[str, set[str]],
) -> list[OwnershipViolation]:
    """The breaches ``r`` (a consumer applying its assignment, its own partitions already
    released) makes against the other consumers' ``owner``ship and ``released`` partitions
    (``took_over``: per member id, the earlier member ids of its static instance, the same
    member)."""
    member, generation, t = r.member, r.generation, r.t_ms
    cooperative = r.rebalance_protocol == "COOPERATIVE"
    assigned = set(r.assigned)
    same_member = took_over.get(r.member_id, set())
    out: list[OwnershipViolation] = []
    for p in r.added:
        last = released.get(p)
        if (
            cooperative
            and last
            and last.member != member
            and last.generation == generation
            and last.member_id not in same_member
        ):
            out.append(
                OwnershipViolation(
                    "cooperative_move_without_revocation",
                    t,
                    f"{p} given to {member} in generation {generation}, the generation"
                    f" in which {last.member} revoked it",
                )
            )
    for p in r.owned:
        held = owner.get(p)
        if held is None or p not in assigned:
            continue
        if held.generation == generation:
            out.append(
                OwnershipViolation(
                    "double_ownership",
                    t,
                    f"{p} given to {member} in generation {generation} while"
                    f" {held.member} owns it in the same generation",
                )
            )
        elif cooperative:
            missed = generation not in joined.get(held.member, ())
            out.append(
                OwnershipViolation(
                    "cooperative_move_without_revocation",
                    t,
                    f"{p} given to {member} in generation {generation} before"
                    f" {held.member} (generation {held.generation}) revoked it"
                    + (f" ({held.member} did not join generation {generation})" if missed else ""),
                    CONSUMER_ZOMBIE if missed else None,
                )
            )
    return out


def consumer_log_violations(
    records: list[dict[str, Any]], typed: list[LogRecord] | None = None
) -> list[Violation]:
    """The violations (``invariant``, ``detail``) of a consumer group's whole log: the two
    rules above, the protocol checkers (:mod:`scenarios.check.protocol_checkers`), then
    ``liveness`` at the log's end (:mod:`scenarios.check.consumer_liveness`). The log is
    decoded once for all three (``typed``: ``records`` decoded by
    :func:`scenarios.eventlog.records.decode_log`, when the caller has them)."""
    if typed is None:
        typed = decode_log(records)
    found = [
        Violation(
            invariant=v.rule,
            detail=f"at {v.t_ms} ms: {v.message}",
            known_issue=v.known_issue or UNSET,
        )
        for v in ownership_violations(typed)
    ]
    return (
        found + protocol_violations(records, typed) + consumer_liveness(consumer_end_state(typed))
    )
