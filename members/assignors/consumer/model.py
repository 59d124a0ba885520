"""The inputs every consumer assignor reads, and the Java orders they are walked in.

Kafka's leader (``ConsumerCoordinator.onLeaderElected``) puts each member's decoded
``Subscription`` into a ``java.util.HashMap`` keyed by member id, in JoinGroup order, and hands
``ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)`` that map and the cluster
metadata. Iteration orders of those maps leak into the assignment, so the inputs here are
ordered sequences and :func:`member_order` / :func:`topic_order` replay the Java orders
(:mod:`protocol.java_hash_order`, :mod:`protocol.java_hashmap`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from operator import attrgetter, is_, itemgetter

import msgspec

from protocol.consumer_batch import decode_subscriptions
from protocol.consumer_codec import Subscription, TopicPartition, decode_subscription
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash
from protocol.java_strings import java_string_key
from protocol.topic_partitions import shared_partitions

__all__ = [
    "ConsumerMember",
    "PartitionRacks",
    "ClusterTopics",
    "GroupAssignment",
    "decode_members",
    "member_order",
    "subscribed_topic_order",
    "member_sort_key",
    "member_info_order",
    "topic_lists",
    "topic_partitions",
    "everyone_subscribes",
    "partition_sort_key",
]

#: Per partition (index = partition number), the racks of its replicas (``Node.rack()``,
#: ``None`` for a broker without ``broker.rack``). An empty tuple: no replicas known.
PartitionRacks = tuple[tuple[str | None, ...], ...]
#: The cluster metadata the assignors read: topic → its partitions' replica racks. A topic
#: missing here (or with no partitions) is skipped, as Kafka skips a topic without metadata.
ClusterTopics = Mapping[str, PartitionRacks]
#: The result: member id → assigned partitions, in the order the assignor listed them.
GroupAssignment = dict[str, list[TopicPartition]]


class ConsumerMember(msgspec.Struct, frozen=True):
    """One JoinGroup member as the leader sees it.

    Attributes:
        member_id: the coordinator-given member id.
        subscription: its decoded :class:`protocol.consumer_codec.Subscription`.
        group_instance_id: ``group.instance.id`` (KIP-345 static membership), or ``None``.
    """

    member_id: str
    subscription: Subscription
    group_instance_id: str | None = None

    @property
    def rack(self) -> str | None:
        """The member's rack as ``Subscription.rackId()``: ``None`` when null or empty."""
        return self.subscription.rack_id or None


def decode_members(
    members: Sequence[tuple[str, str | None, bytes]],
) -> list[ConsumerMember]:
    """The leader's first step (``ConsumerCoordinator.onLeaderElected``:
    ``ConsumerProtocol.deserializeSubscription`` of every JoinGroup member's metadata).

    Args:
        members: (member id, ``group.instance.id`` or ``None``, subscription bytes) in
            JoinGroup order.

    Returns:
        The :class:`ConsumerMember` of each, in the same order. Members sending the same bytes
        (every member of a fresh group subscribing to the same topics does) share one decoded
        :class:`Subscription` (immutable): the bytes are read once per distinct value, and
        many distinct values (a settled group: each member's own partitions) are read
        together (:func:`protocol.consumer_batch.decode_subscriptions`).

    Raises:
        protocol.consumer_codec.ConsumerProtocolError: bytes Kafka's reader rejects.
    """
    seen: dict[bytes, Subscription] = {}
    datas = list(map(_DATA, members))
    if len(datas) >= _BATCH_MEMBERS and datas.count(datas[0]) < len(datas):
        unique = dict.fromkeys(datas)
        if len(unique) >= _BATCH_MEMBERS:  # many distinct: read alike ones together
            seen = dict(zip(unique, decode_subscriptions(list(unique)), strict=True))
    out: list[ConsumerMember] = []
    for member_id, instance, data in members:
        sub = seen.get(data)
        if sub is None:
            sub = seen[data] = decode_subscription(data)
        out.append(ConsumerMember(member_id, sub, instance))
    return out


#: From this many distinct subscriptions :func:`decode_members` hands them to
#: :func:`protocol.consumer_batch.decode_subscriptions` at once.
_BATCH_MEMBERS = 32


def member_order(members: Sequence[ConsumerMember]) -> list[ConsumerMember]:
    """``members`` (JoinGroup order) in the iteration order of the leader's
    ``HashMap<String, Subscription>`` (``new HashMap<>()``, put in JoinGroup order)."""
    by_id = {m.member_id: m for m in members}
    return [by_id[i] for i in hash_order(by_id, string_hash)]


def subscribed_topic_order(ordered: Sequence[ConsumerMember], cluster: ClusterTopics) -> list[str]:
    """Topics in the iteration order of ``AbstractPartitionAssignor.assign``'s
    ``partitionsPerTopic`` ``HashMap``: every subscribed topic with partitions, put in the order
    of the ``HashSet`` of all subscribed topics (filled member by member in ``ordered`` =
    :func:`member_order`, each member's topics in its list order)."""
    topics: dict[str, None] = {}  # a key already in a HashSet keeps its place
    for listed in topic_lists(ordered):
        topics.update(dict.fromkeys(listed))
    subscribed = hash_order(topics, string_hash)
    return hash_order([t for t in subscribed if cluster.get(t)], string_hash)


def topic_lists(members: Iterable[ConsumerMember]) -> list[tuple[str, ...]]:
    """The members' subscribed topic tuples in member order, each tuple object once (members
    whose subscriptions decoded from equal topic bytes share one tuple; equal tuples that are
    distinct objects are both kept). Walking these instead of every member's topics gives the
    same first-appearance order of topics, with a dict lookup per member instead of one per
    member and topic."""
    lists = list(map(_TOPICS, members))
    if lists and all(map(is_, lists, repeat(lists[0]))):  # one shared tuple: a fresh group
        return lists[:1]
    return list({id(t): t for t in lists}.values())


def member_sort_key(member_id: str, group_instance_id: str | None) -> tuple[int, bytes]:
    """``AbstractPartitionAssignor.MemberInfo.compareTo``: members with a
    ``group.instance.id`` first, by it; then the others by member id (Java string order)."""
    if group_instance_id is not None:
        return (0, java_string_key(group_instance_id))
    return (1, java_string_key(member_id))


def member_info_order(members: Iterable[ConsumerMember]) -> list[ConsumerMember]:
    """``members`` sorted by ``MemberInfo.compareTo`` (:func:`member_sort_key`). Without static
    members and with ASCII member ids (as the coordinator gives them), Java's UTF-16 order is
    Python's, so the ids are compared natively instead of through a key per member."""
    members = list(members)
    if all(map(is_, map(_INSTANCE_ID, members), repeat(None))) and all(
        map(str.isascii, map(_MEMBER_ID, members))
    ):
        return sorted(members, key=_MEMBER_ID)
    return sorted(members, key=lambda m: member_sort_key(m.member_id, m.group_instance_id))


_MEMBER_ID = attrgetter("member_id")
_DATA = itemgetter(2)
_INSTANCE_ID = attrgetter("group_instance_id")
_TOPICS = attrgetter("subscription.topics")


def everyone_subscribes(members: Iterable[ConsumerMember], topics: Iterable[str]) -> bool:
    """Whether every member's subscription lists every one of ``topics`` (each distinct topic
    list is checked once: members of a fresh group share one decoded list)."""
    wanted = set(topics)
    return all(wanted.issubset(t) for t in topic_lists(members))


def partition_sort_key(tp: TopicPartition) -> tuple[bytes, int]:
    """``TopicPartitionComparator`` (and ``Utils.sorted`` of ``TopicPartition``s): topic, then
    partition."""
    return (java_string_key(tp.topic), tp.partition)


def topic_partitions(topic: str, count: int) -> tuple[TopicPartition, ...]:
    """``TopicPartition(topic, 0)`` … ``TopicPartition(topic, count - 1)``: the shared values
    of :func:`protocol.topic_partitions.shared_partitions` (built once per topic, in C; the
    decoder hands out the same values for partitions it reads)."""
    return shared_partitions(topic, count)


def partition_racks(racks: PartitionRacks) -> list[frozenset[str]]:
    """Each partition's set of non-null replica racks."""
    return [frozenset(r for r in replicas if r is not None) for replicas in racks]
