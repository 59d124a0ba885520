"""Kafka's consumer partition assignors as pure functions (``partition.assignment.strategy``).

Each takes the JoinGroup members (:class:`ConsumerMember`, JoinGroup order) and the cluster
metadata (:data:`ClusterTopics`) and returns member id → assigned partitions, as
``ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)`` of Kafka 4.0 does:

* ``range`` — :func:`assign_range` (``RangeAssignor``, rack-aware per KIP-881);
* ``roundrobin`` — :func:`assign_roundrobin` (``RoundRobinAssignor``).

Checked against Kafka's own classes by ``tests/kafka_oracle/test_consumer_differential.py``
(docs/consumer.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .model import ClusterTopics, ConsumerMember, GroupAssignment, PartitionRacks
from .range import RANGE, assign_range
from .roundrobin import ROUNDROBIN, assign_roundrobin

__all__ = [
    "ASSIGNORS",
    "ClusterTopics",
    "ConsumerMember",
    "GroupAssignment",
    "PartitionRacks",
    "assign_range",
    "assign_roundrobin",
]

#: Assignor name (``ConsumerPartitionAssignor.name()``) → its function.
ASSIGNORS: dict[str, Callable[[Sequence[ConsumerMember], ClusterTopics], GroupAssignment]] = {
    RANGE: assign_range,
    ROUNDROBIN: assign_roundrobin,
}
