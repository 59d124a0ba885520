"""Kafka's consumer partition assignors as pure functions (``partition.assignment.strategy``).

Each takes the JoinGroup members (:class:`ConsumerMember`, JoinGroup order) and the cluster
metadata (:data:`ClusterTopics`) and returns member id → assigned partitions, as
``ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)`` of Kafka 4.0 does:

* ``range`` — :func:`assign_range` (``RangeAssignor``, rack-aware per KIP-881);
* ``roundrobin`` — :func:`assign_roundrobin` (``RoundRobinAssignor``);
* ``sticky`` — :func:`assign_sticky` (``StickyAssignor``, KIP-54/KIP-341, rack-aware per KIP-881);
* ``cooperative-sticky`` — :func:`assign_cooperative_sticky` (``CooperativeStickyAssignor``,
  KIP-429/KIP-792).

Checked against Kafka's own classes by ``tests/kafka_oracle/test_consumer_differential.py``
(docs/consumer.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .model import ClusterTopics, ConsumerMember, GroupAssignment, PartitionRacks
from .range import RANGE, assign_range
from .roundrobin import ROUNDROBIN, assign_roundrobin
from .sticky import (
    COOPERATIVE_STICKY,
    STICKY,
    StickyAssignmentError,
    assign_cooperative_sticky,
    assign_sticky,
)

__all__ = [
    "ASSIGNORS",
    "ClusterTopics",
    "ConsumerMember",
    "GroupAssignment",
    "PartitionRacks",
    "StickyAssignmentError",
    "assign_cooperative_sticky",
    "assign_sticky",
    "assign_range",
    "assign_roundrobin",
]

#: Assignor name (``ConsumerPartitionAssignor.name()``) → its function.
ASSIGNORS: dict[str, Callable[[Sequence[ConsumerMember], ClusterTopics], GroupAssignment]] = {
    RANGE: assign_range,
    ROUNDROBIN: assign_roundrobin,
    STICKY: assign_sticky,
    COOPERATIVE_STICKY: assign_cooperative_sticky,
}
