"""KIP-881's rack rule for the sticky assignors, judged on a consumer leader's round (issue 23;
registered with the protocol checkers in :mod:`scenarios.check.protocol_checkers`;
docs/chaos.md "Contract rules").

``sticky_rack_unmatched`` — KIP-881, ``AbstractStickyAssignor.ConstrainedAssignmentBuilder``
    (the path of equal subscriptions, ``allSubscriptionsEqual``) when rack-aware assignment
    applies (``AbstractPartitionAssignor#useRackAwareAssignment``: a member's ``client.rack``
    holds a replica and the partitions' rack sets are not all the same). A member with a rack
    never keeps an owned partition off its rack (``assignOwnedPartitions`` gives it up to
    ``maybeRevokedPartitions``) and ``assignRackAwareRoundRobin`` gives only partitions on its
    rack, so a partition off its rack reaches it only in the plain round robin after that pass,
    which serves the members then still below ``minQuota`` (``unfilledMembers``) or allowed
    ``maxQuota`` (``membersWithExactlyMinQuotaPartitions``); members join those lists only
    from the first. And a partition the pass could not place on its racks — it ends on a
    member with a rack not among its replicas' — found no member on those racks in either
    list. So no member with rack R holds a partition off R while a partition with a replica on
    R is held by a member with a rack, not one of that partition's: that member on R was in
    neither list at the partition's turn and could take nothing afterwards. Judged on every
    ``sticky`` / ``cooperative-sticky`` ``consumer_assignor`` record with ``inputs`` (the
    members' racks and topics decoded from their subscription bytes, the replica racks of
    ``inputs.topics``); ``CooperativeStickyAssignor#adjustAssignment`` only takes partitions
    changing owner out of the logged assignment, so what it shows held the builder placed.
    Sound on Kafka's output (``tests/scenarios/check/test_rack_contracts.py`` runs groupsim's
    sticky assignors, equal to Kafka's in the differential tests, over random rack rounds).
    Not judged: unequal subscriptions (``GeneralAssignmentBuilder``: its balancing moves
    follow iteration orders, the referee replays those rounds), a partition held by a member
    without a rack (it keeps owned partitions whatever their racks), a round whose member
    metadata does not decode. The counts the pass leads to (which partitions stay, how many
    each member gets) are the assignor's exact output and stay the referee's.

Input: the log's ``consumer_assignor`` records decoded into their Structs
(``log_rules.reads_typed``), in log order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scenarios.check.consumer_contracts import member_subscriptions, partition_owners
from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog.records import LogRecord

__all__ = [
    "RACK_CONTRACT_CHECKERS",
    "RACK_CONTRACT_INVARIANTS",
    "check_sticky_rack_matching",
    "use_rack_aware_assignment",
]

STICKY_RACK_UNMATCHED = "sticky_rack_unmatched"
RACK_CONTRACT_INVARIANTS = (STICKY_RACK_UNMATCHED,)

_STICKY = frozenset({"sticky", "cooperative-sticky"})


def _member_racks(inputs: ku.ConsumerAssignorInputs) -> dict[str, str | None] | None:
    """Member id -> ``client.rack`` (``None``: none) when every member subscribes to the same
    topics; ``None`` for unequal subscriptions or metadata that does not decode."""
    subscribed = member_subscriptions(inputs)
    if subscribed is None or len({topics for _, topics in subscribed.values()}) != 1:
        return None
    return {member_id: rack for member_id, (rack, _) in subscribed.items()}


def _partition_racks(inputs: ku.ConsumerAssignorInputs) -> dict[tuple[str, int], frozenset[str]]:
    """(topic, partition) -> its replicas' racks, for every partition of ``inputs.topics``
    (the leader's metadata of the subscribed topics)."""
    return {
        (topic, p): frozenset(r for r in replicas if r is not None)
        for topic, per_partition in inputs.topics.items()
        for p, replicas in enumerate(per_partition)
    }


def use_rack_aware_assignment(
    racks: Mapping[str, str | None], replicas: Sequence[frozenset[str]]
) -> bool:
    """``AbstractPartitionAssignor#useRackAwareAssignment`` (written out, not imported from the
    assignor under judgement): some member rack (``racks``: member id -> ``client.rack`` or
    ``None``) holds a replica, and the partitions' rack sets (``replicas``) are not all the
    same. Returns whether a round with them is rack-aware."""
    member_racks = {r for r in racks.values() if r is not None}
    union: set[str] = set().union(*replicas) if replicas else set()
    return not member_racks.isdisjoint(union) and any(r != union for r in replicas)


@reads_typed("consumer_assignor")
def check_sticky_rack_matching(records: Sequence[LogRecord]) -> list[Violation]:
    """``sticky_rack_unmatched``: a sticky leader with equal subscriptions placed a partition
    off its replicas' racks while a member on them held fewer than ``floor(P / n)``
    partitions (module docstring)."""
    found: list[Violation] = []
    for r in records:
        if not isinstance(r, ku.ConsumerAssignor):
            continue
        inputs = r.inputs
        if r.assignor not in _STICKY or not isinstance(inputs, ku.ConsumerAssignorInputs):
            continue
        racks = _member_racks(inputs)
        if not racks:
            continue
        replicas = _partition_racks(inputs)
        if not use_rack_aware_assignment(racks, list(replicas.values())):
            continue
        what = _unmatched(partition_owners(r.assigned), replicas, racks)
        if what:
            found.append(
                violation_at(
                    STICKY_RACK_UNMATCHED,
                    f"generation {r.generation} ({r.assignor}, KIP-881): {what}",
                    r,
                    generation=r.generation,
                )
            )
    return found


def _unmatched(
    owner: Mapping[tuple[str, int], str],
    replicas: Mapping[tuple[str, int], frozenset[str]],
    racks: Mapping[str, str | None],
) -> str:
    """A member with a rack holding a partition off it while a partition on its rack is held
    by a member with a rack off that partition's racks (the first such pair), or ""."""
    off: dict[str, tuple[str, int]] = {}  # rack -> a partition off it held by a member on it
    stranded: list[tuple[tuple[str, int], str]] = []  # partitions held off their racks
    for tp, holder in sorted(owner.items()):
        rack = racks.get(holder)
        on = replicas.get(tp, frozenset())
        if rack is None or rack in on:
            continue
        off.setdefault(rack, tp)
        if on:
            stranded.append((tp, holder))
    for (topic, p), holder in stranded:
        on = replicas[(topic, p)]
        for rack in sorted(on & off.keys()):
            other = off[rack]
            return (
                f"{topic}-{p} (replicas on {sorted(on)}) went to {holder} on rack "
                f"{racks[holder]}, while {owner[other]} on rack {rack} took "
                f"{other[0]}-{other[1]} off its rack (replicas on "
                f"{sorted(replicas.get(other, frozenset()))}): assignRackAwareRoundRobin "
                f"would have given {topic}-{p} to a member on {rack}"
            )
    return ""


RACK_CONTRACT_CHECKERS = (check_sticky_rack_matching,)
