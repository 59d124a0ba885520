"""Partition lists both sticky assignment builders share (``AbstractStickyAssignor``,
Kafka 4.0): every partition of a topic list, ``getUnassignedPartitions``, ``List.remove``, and
the error Kafka's assignor throws on inputs it cannot assign.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import filterfalse

from protocol.consumer_codec import TopicPartition

from .model import topic_partitions

__all__ = ["StickyAssignmentError", "all_partitions", "remove_first", "unassigned_partitions"]


class StickyAssignmentError(RuntimeError):
    """Kafka's sticky assignor fails on these inputs (an ``IllegalStateException`` such as "No
    more unfilled consumers to be assigned", or a ``NullPointerException`` on owned partitions
    it cannot place); the leader's ``assign`` throws and the group gets no assignment."""


def remove_first(items: list[TopicPartition], tp: TopicPartition) -> None:
    """``List.remove(Object)``: drop the first occurrence of ``tp`` from ``items``, if any."""
    if tp in items:
        items.remove(tp)


def all_partitions(topics: Iterable[str], per_topic: dict[str, int]) -> list[TopicPartition]:
    """Every partition of ``topics`` in that order, partitions ascending (the tuples built by
    ``tuple.__new__`` in C, without ``TopicPartition``'s Python-level constructor)."""
    out: list[TopicPartition] = []
    for t in topics:
        out += topic_partitions(t, per_topic[t])
    return out


def unassigned_partitions(
    all_sorted: list[TopicPartition],
    assigned: list[TopicPartition],
    sort_assigned: Callable[[list[TopicPartition]], None],
) -> list[TopicPartition]:
    """``getUnassignedPartitions``: ``all_sorted`` minus ``assigned`` by Kafka's two-pointer
    walk over both in one order (``sort_assigned`` sorts ``assigned`` into it); once the
    assigned list is used up, the rest is taken as is.

    When the assigned partitions are distinct and all in ``all_sorted`` (the usual case), the
    walk matches each of them in turn, so the result is ``all_sorted`` without them, in order:
    taken with one set lookup per partition in C, without sorting ``assigned``. Otherwise (an
    owned partition beyond its topic's count stalls Kafka's walk) the walk itself runs."""
    taken = set(assigned)
    if len(taken) == len(assigned):
        rest = list(filterfalse(taken.__contains__, all_sorted))
        if len(rest) + len(taken) == len(all_sorted):
            return rest
    sort_assigned(assigned)
    out: list[TopicPartition] = []
    it = iter(assigned)
    nxt = next(it)
    direct = False
    for tp in all_sorted:
        if direct or nxt != tp:
            out.append(tp)
        else:
            try:
                nxt = next(it)
            except StopIteration:
                direct = True
    return out
