"""The names the safety checker (:mod:`scenarios.check.invariants`, which re-exports them)
gives what it finds: its invariants, the known upstream issues that explain a violation, and
Kafka's ``ClassicGroupState`` transitions it holds the coordinator to."""

from __future__ import annotations

from scenarios.check.consumer_known import CONSUMER_KNOWN_ISSUES

__all__ = [
    "DELETED_NOT_REVOKED",
    "FAILOVER_PROTOCOL_REPLAY",
    "KAFKA_13816",
    "KAFKA_16056",
    "KAFKA_9184",
    "KNOWN_ISSUES",
    "SAFETY_INVARIANTS",
    "STATIC_MEMBER_KEPT",
    "STREAMS_ZOMBIE",
    "VALID_PREVIOUS_STATES",
]

#: The upstream issue a downgrade to eager reproduces (docs/upgrades.md).
KAFKA_13816 = "KAFKA-13816"
#: A removed member's work runs until it gives up on the coordinator (zombie window).
KAFKA_9184 = "KAFKA-9184"
#: A worker whose poll timer expired leaves the group still running its work.
KAFKA_16056 = "KAFKA-16056"
#: After a coordinator failover the loaded group knows only each member's elected protocol
#: (Kafka stores just that one); a worker rejoining with another protocol list is refused with
#: INCONSISTENT_GROUP_PROTOCOL and its herder thread exits. Not a JIRA: Kafka's design.
FAILOVER_PROTOCOL_REPLAY = "failover-protocol-replay"
#: A Kafka Streams client the coordinator removed while it could not hear it keeps
#: processing its active tasks until it hears the coordinator again: its consumer keeps
#: fetching while the coordinator is unknown, and only the next Heartbeat's
#: UNKNOWN_MEMBER_ID makes ``ConsumerCoordinator`` call ``onPartitionsLost`` (the
#: StreamThread then closes its tasks dirty). Not a JIRA: Kafka's design — exactly-once
#: fences the zombie's producer (KIP-447), at-least-once may process records twice.
STREAMS_ZOMBIE = "streams-zombie"
#: A Connect leader whose view of the previous assignment is cleared neither revokes deleted
#: work a worker still owns nor leaves it out of that worker's load
#: (``IncrementalCooperativeAssignor``). Not a JIRA: Kafka's design (check/deleted_work.py).
DELETED_NOT_REVOKED = "deleted-not-revoked"
#: A gone KIP-345 static Streams client stays a member while rebalances follow each other
#: faster than its session timeout (``completeClassicGroupJoin`` reschedules every member's
#: session) and keeps being assigned tasks. Not a JIRA: Kafka's design (docs/chaos.md).
STATIC_MEMBER_KEPT = "static-member-kept"
KNOWN_ISSUES = (
    KAFKA_13816,
    KAFKA_9184,
    KAFKA_16056,
    FAILOVER_PROTOCOL_REPLAY,
    STREAMS_ZOMBIE,
    DELETED_NOT_REVOKED,
    STATIC_MEMBER_KEPT,
) + CONSUMER_KNOWN_ISSUES  # scenarios.check.consumer_known

SAFETY_INVARIANTS = (
    "double_ownership",
    "stale_generation",
    "illegal_transition",
    "foreign_assignment",
    "active_and_standby",
)

#: Kafka ``ClassicGroupState``: state → the states it may be entered from.
VALID_PREVIOUS_STATES: dict[str, frozenset[str]] = {
    "Empty": frozenset({"PreparingRebalance"}),
    "PreparingRebalance": frozenset({"Stable", "CompletingRebalance", "Empty"}),
    "CompletingRebalance": frozenset({"PreparingRebalance"}),
    "Stable": frozenset({"CompletingRebalance"}),
    "Dead": frozenset({"Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"}),
}
