"""Known behaviours of plain consumer groups, named on their violations instead of failing
them (part of :data:`scenarios.check.invariants.KNOWN_ISSUES`; docs/chaos.md "Consumer
campaigns")."""

from __future__ import annotations

__all__ = [
    "CONSUMER_ZOMBIE",
    "STICKY_UNSUBSCRIBED_OWNER",
    "KAFKA_12759",
    "EAGER_MEMBER_COOPERATIVE_LOOP",
    "CONSUMER_KNOWN_ISSUES",
]

#: A plain consumer that missed a rebalance (cut off or stalled: a KIP-345 static member the
#: join phase kept with the subscription of its last JoinGroup) keeps consuming what the
#: leader, reading that stale subscription, gave to another consumer, until its next
#: Heartbeat fails and ``onPartitionsLost`` runs. Not a JIRA: Kafka's design (the zombie's
#: offset commits are fenced by generation; at-least-once may process records twice). Judged
#: in :mod:`scenarios.check.consumer_ownership`.
CONSUMER_ZOMBIE = "consumer-zombie"

#: Kafka's sticky assignors (``AbstractStickyAssignor.performReassignments``) move a partition
#: back to its previous-generation owner without checking that the owner still subscribes to
#: its topic; that consumer refuses the assignment (``checkAssignmentMatchedSubscription``) and
#: rejoins without ``onAssignment``, so its stale user data brings the same assignment back:
#: the group rebalances for ever. Found by consumer chaos (a consumer that narrowed its
#: subscription after missing generations), confirmed against Kafka 4.0.2's and 4.4.0's
#: StickyAssignor (tests/kafka_oracle/test_consumer_sticky_unsubscribed.py). No JIRA found.
#: Judged in :mod:`scenarios.check.consumer_liveness`.
STICKY_UNSUBSCRIBED_OWNER = "sticky-unsubscribed-owner"

#: A process that takes a static member's instance over (KIP-345, a new process with its
#: ``group.instance.id``) in a Stable group rebalances nothing unless the elected protocol
#: changes (``GroupMetadataManager#updateStaticMemberThenRebalanceOrCompleteJoin`` compares
#: the selected protocol only), even when it subscribes to topics the group's last assignment
#: did not cover: no member owns those partitions until something else rebalances the group.
#: KAFKA-12759 ("Rebalance when a static member's subscription changes", open at the Kafka
#: commit groupsim follows). Found by consumer chaos (a twin with the default subscription
#: replacing a consumer that had narrowed its own). Judged in
#: :mod:`scenarios.check.consumer_liveness`.
KAFKA_12759 = "KAFKA-12759"

#: A consumer on the EAGER rebalance protocol (its assignors include one that knows only
#: EAGER, e.g. ``[range, cooperative-sticky]``: ``ConsumerCoordinator`` runs the protocol all
#: its assignors support) in a group that elected ``cooperative-sticky`` revokes everything
#: before each JoinGroup and so sends no owned partitions. With rack-aware placement (KIP-881)
#: and unequal subscriptions, ``CooperativeStickyAssignor`` can then withhold a partition that
#: changes owner in every round: the cooperative member that gave it up rejoins (KIP-429) and
#: the next round withholds another, for ever. This is the state of the second bounce of
#: KIP-429's upgrade. Found by consumer chaos (seed 22 run 1780); Kafka 4.0.2's real consumers
#: on a real three-rack cluster give the same assignments and the same endless cycle
#: (tests/kafka_oracle/test_real_cluster_eager_member_oscillation.py). No JIRA found. Judged in
#: :mod:`scenarios.check.consumer_liveness`.
EAGER_MEMBER_COOPERATIVE_LOOP = "eager-member-cooperative-loop"

CONSUMER_KNOWN_ISSUES = (
    CONSUMER_ZOMBIE,
    STICKY_UNSUBSCRIBED_OWNER,
    KAFKA_12759,
    EAGER_MEMBER_COOPERATIVE_LOOP,
)
