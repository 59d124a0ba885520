"""What each member of a sticky group still owns (``AbstractStickyAssignor.
allSubscriptionsEqual``, Kafka 4.0): every member's claimed partitions read from its
subscription (:mod:`.sticky_data`), double claims settled by KIP-341 generations (the higher
generation keeps the partition; two claims in one generation drop it from both), and whether
every member subscribes to the same topics (which picks the constrained or the general builder).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from operator import attrgetter, itemgetter

from protocol.consumer_codec import Subscription, TopicPartition

from .model import ConsumerMember
from .sticky_data import (
    BATCHED_READERS,
    DEFAULT_GENERATION,
    MemberData,
    subscription_generation,
)
from .sticky_partitions import remove_first

__all__ = ["collect_owned", "settle_claims"]

_SUBSCRIPTION = attrgetter("subscription")
_MEMBER_ID = attrgetter("member_id")
_TOPIC = itemgetter(0)


def _generation_or_default(g: int | None) -> int:
    """A member's generation, ``DEFAULT_GENERATION`` when its subscription carries none."""
    return DEFAULT_GENERATION if g is None else g


def collect_owned(
    ordered: Sequence[ConsumerMember],
    per_topic: dict[str, int],
    member_data: Callable[[Subscription], MemberData],
    max_generation: int,
) -> tuple[bool, dict[str, list[TopicPartition]], set[TopicPartition], int]:
    """``allSubscriptionsEqual``: whether every member lists the same topics, each member's
    owned partitions still valid (higher generation wins a double claim, equal generations lose
    it both), the partitions claimed twice in one generation, and the new ``maxGeneration``.

    Each distinct subscription is read once (members sending the same bytes share one decoded
    :class:`Subscription`). When no partition is claimed twice and every claimed topic is
    still subscribed (a group that settled), Kafka's walk keeps every claim in order: that is
    checked once over all claims (one set of them, in C) instead of member by member."""
    equal = True
    topics: set[str] = set()
    same: tuple[str, ...] | None = None  # a topics tuple already found equal to ``topics``
    read: dict[int, tuple[MemberData, int]] = {}
    reads: list[tuple[MemberData, int]] = []
    # many distinct subscriptions (a settled group): their member data read together
    batch = BATCHED_READERS.get(member_data)
    ahead: dict[int, MemberData] = {}
    if batch is not None and len(ordered) >= 32:
        distinct = list({id(s): s for s in map(_SUBSCRIPTION, ordered)}.values())
        together = batch(distinct) if len(distinct) >= 32 else None
        if together is not None:
            ahead = dict(zip(map(id, distinct), together, strict=True))
    for sub in map(_SUBSCRIPTION, ordered):
        known = read.get(id(sub))
        if known is None:
            sub_topics = sub.topics
            if sub_topics is not same:  # members alike share one topics tuple too
                if not topics:
                    topics.update(sub_topics)
                elif equal and not (
                    len(sub_topics) == len(topics) and topics.issuperset(sub_topics)
                ):
                    equal = False
                if equal:
                    same = sub_topics
            data = ahead.get(id(sub)) or member_data(sub)
            generation = DEFAULT_GENERATION if data.generation is None else data.generation
            known = read[id(sub)] = (data, generation)
            if generation > max_generation:
                max_generation = generation
        reads.append(known)
    claims = [data.partitions for data, _ in reads]
    claimed = list(chain.from_iterable(claims))
    if len(set(claimed)) == len(claimed) and set(per_topic).issuperset(map(_TOPIC, claimed)):
        owned = dict(zip(map(_MEMBER_ID, ordered), map(list, claims), strict=True))
        return equal, owned, set(), max_generation
    owned, doubly = settle_claims(ordered, per_topic, reads)
    return equal, owned, doubly, max_generation


def settle_claims(
    ordered: Sequence[ConsumerMember],
    per_topic: dict[str, int],
    reads: list[tuple[MemberData, int]],
) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition]]:
    """``AbstractStickyAssignor.allSubscriptionsEqual``'s walk over the members' claims
    (``reads``: each member's :class:`MemberData` and generation, in ``ordered``'s order): a
    partition claimed again goes to the higher generation, and is dropped from both claims in
    the same generation (returned as claimed twice); claims of unknown topics are skipped."""
    owned: dict[str, list[TopicPartition]] = {}
    owner_of: dict[TopicPartition, str] = {}
    doubly: set[TopicPartition] = set()
    by_id = {m.member_id: m for m in ordered}
    all_known = set(per_topic)
    for m, (data, generation) in zip(ordered, reads, strict=True):
        mine: list[TopicPartition] = []
        owned[m.member_id] = mine
        partitions = data.partitions
        if not partitions:  # nothing claimed (a member joining empty)
            continue
        if not all_known.issuperset(map(_TOPIC, partitions)):
            partitions = [tp for tp in partitions if tp.topic in per_topic]
        claims = dict.fromkeys(partitions, m.member_id)
        if len(claims) == len(partitions) and owner_of.keys().isdisjoint(claims):
            # no partition claimed twice: the loop below would keep each one, in order
            mine += partitions
            owner_of.update(claims)
            continue
        for tp in partitions:
            if tp.topic not in per_topic:
                continue
            other = owner_of.get(tp)
            if other is None:
                mine.append(tp)
                owner_of[tp] = m.member_id
                continue
            other_generation = _generation_or_default(
                subscription_generation(by_id[other].subscription)
            )
            if generation == other_generation:
                doubly.add(tp)
                remove_first(owned[other], tp)
                owner_of[tp] = m.member_id
            elif generation > other_generation:
                mine.append(tp)
                remove_first(owned[other], tp)
                owner_of[tp] = m.member_id
    return owned, doubly
