"""Kafka's sticky consumer assignors: ``sticky`` (KIP-54, eager) and ``cooperative-sticky``
(KIP-429), both ``AbstractStickyAssignor`` of Kafka 4.0, rack-aware per KIP-881.

The assignment is balanced (partition counts differ by at most one where subscriptions allow)
and keeps as many previously owned partitions as balance permits. What a member owned, and in
which generation, comes from :mod:`.sticky_data` and :mod:`.sticky_owned` (KIP-341
generations settle claims of two members on one partition: the higher generation keeps it; two
claims in one generation drop it from both).

Two paths, as in Kafka:

* **constrained** (``ConstrainedAssignmentBuilder``, :mod:`.sticky_constrained`) when every
  member subscribes to the same topics: each member keeps up to its quota of owned partitions
  (sorted by partition, then topic), the rest are dealt round-robin to members under quota
  (sorted by member id), first to members on a replica's rack when rack-aware (the racks:
  :mod:`.sticky_racks`);
* **general** (``GeneralAssignmentBuilder``, :mod:`.sticky_general`, with
  ``PartitionMovements`` in :mod:`.sticky_movements`) otherwise: keep valid ownership, give each
  unassigned partition to the least-loaded subscribed member, then move partitions one by one
  towards balance (back to their previous-generation owner where that helps), reverting if the
  balance score did not improve.

``cooperative-sticky`` then removes from the result every partition that changes owner
(``CooperativeStickyAssignor.adjustAssignment``): its current owner must revoke it first, and
the follow-up rebalance hands it over.

Java's ``HashMap``/``HashSet``/``TreeSet`` orders that reach the result are replayed: the
leader's member map (:func:`.model.member_order`), the topic map, ``TreeSet`` of members by
(assigned count, member id), and the ``HashSet`` of moved partitions whose first element
``PartitionMovements`` picks (``TopicPartition.hashCode``). Checked against Kafka's classes on
multi-generation examples in ``tests/kafka_oracle/test_consumer_sticky_differential.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from protocol.consumer_codec import Subscription, TopicPartition
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash

from .model import (
    ClusterTopics,
    ConsumerMember,
    GroupAssignment,
    member_order,
    subscribed_topic_order,
)
from .sticky_constrained import constrained_assignment
from .sticky_data import (
    DEFAULT_GENERATION,
    MemberData,
    cooperative_member_data,
    sticky_member_data,
)
from .sticky_general import GeneralAssignmentBuilder
from .sticky_owned import collect_owned
from .sticky_partitions import StickyAssignmentError, remove_first
from .sticky_racks import RackInfo

__all__ = [
    "STICKY",
    "COOPERATIVE_STICKY",
    "StickyAssignmentError",
    "StickyResult",
    "assign_sticky",
    "assign_cooperative_sticky",
    "sticky_assignment",
]

#: ``StickyAssignor.STICKY_ASSIGNOR_NAME``.
STICKY = "sticky"
#: ``CooperativeStickyAssignor.COOPERATIVE_STICKY_ASSIGNOR_NAME``.
COOPERATIVE_STICKY = "cooperative-sticky"


class StickyResult:
    """One ``assign`` call's outcome.

    Attributes:
        assignment: member id → partitions, in the order Kafka lists them.
        max_generation: the assignor's ``maxGeneration()`` after the call (it never decreases:
            a leader's assignor instance keeps the highest generation it has seen).
        transferring: partition → new owner for partitions that change owner
            (``partitionsTransferringOwnership``), or ``None`` when the general path ran (the
            cooperative assignor then derives them from owned and assigned partitions).
    """

    __slots__ = ("assignment", "max_generation", "transferring")

    def __init__(
        self,
        assignment: GroupAssignment,
        max_generation: int,
        transferring: dict[TopicPartition, str] | None,
    ) -> None:
        self.assignment = assignment
        self.max_generation = max_generation
        self.transferring = transferring


# ------------------------------------------------------------------------------ entry points


def sticky_assignment(
    members: Sequence[ConsumerMember],
    cluster: ClusterTopics,
    member_data: Callable[[Subscription], MemberData],
    max_generation: int = DEFAULT_GENERATION,
) -> StickyResult:
    """``AbstractStickyAssignor.assignPartitions`` reached through ``assign(Cluster,
    GroupSubscription)``.

    Args:
        members: the JoinGroup members in JoinGroup order (distinct member ids).
        cluster: topic → partitions' replica racks.
        member_data: how the assignor reads a member's previous partitions and generation
            (:func:`.sticky_data.sticky_member_data` or ``cooperative_member_data``).
        max_generation: the assignor instance's ``maxGeneration`` before the call (-1 for a
            fresh instance).

    Raises:
        StickyAssignmentError: where Kafka's assignor throws.
    """
    ordered = member_order(members)
    per_topic = {t: len(cluster[t]) for t in subscribed_topic_order(ordered, cluster)}
    racks = RackInfo(ordered, per_topic, cluster)
    equal, owned, doubly, max_generation = collect_owned(
        ordered, per_topic, member_data, max_generation
    )
    # the HashMap of owned partitions, filled in ``ordered``'s order, iterates in this order
    owned_order = hash_order([m.member_id for m in ordered], string_hash)
    if equal:
        assignment, transferring = constrained_assignment(
            per_topic, racks, owned, owned_order, doubly
        )
        return StickyResult(assignment, max_generation, transferring)
    general = GeneralAssignmentBuilder(ordered, per_topic, racks, owned, owned_order)
    return StickyResult(general.build(ordered, member_data, max_generation), max_generation, None)


def assign_sticky(members: Sequence[ConsumerMember], cluster: ClusterTopics) -> GroupAssignment:
    """``StickyAssignor.assign(Cluster, GroupSubscription)`` of a fresh assignor: previous
    partitions and generations from each member's user data (:mod:`.sticky_data`).

    Returns:
        Member id → partitions in Kafka's list order, for every member.

    Raises:
        StickyAssignmentError: where Kafka's assignor throws.
    """
    return sticky_assignment(members, cluster, sticky_member_data).assignment


def cooperative_adjust(members: Sequence[ConsumerMember], result: StickyResult) -> GroupAssignment:
    """``CooperativeStickyAssignor.assignPartitions``' second half: drop from the assignment
    every partition moving to a new owner (``adjustAssignment``); after the general path the
    moving partitions are those assigned to a member that did not own them and owned by a member
    no longer assigned them (``computePartitionsTransferringOwnership``)."""
    assignment = result.assignment
    transferring = result.transferring
    if transferring is None:
        owned = {m.member_id: m.subscription.owned_partitions for m in members}
        added: dict[TopicPartition, str] = {}
        revoked: set[TopicPartition] = set()
        for consumer, parts in assignment.items():
            mine = set(owned[consumer])
            for tp in parts:
                if tp not in mine:
                    added[tp] = consumer
            now = set(parts)
            revoked.update(tp for tp in owned[consumer] if tp not in now)
        transferring = {tp: c for tp, c in added.items() if tp in revoked}
    for tp, consumer in transferring.items():
        remove_first(assignment[consumer], tp)
    return assignment


def assign_cooperative_sticky(
    members: Sequence[ConsumerMember], cluster: ClusterTopics
) -> GroupAssignment:
    """``CooperativeStickyAssignor.assign(Cluster, GroupSubscription)`` of a fresh assignor:
    owned partitions from the subscriptions, generations from ``generationId`` (v2+) or the
    user data, and partitions changing owner left out until their owner revoked them.

    Raises:
        StickyAssignmentError: where Kafka's assignor throws.
    """
    result = sticky_assignment(members, cluster, cooperative_member_data)
    return cooperative_adjust(members, result)
