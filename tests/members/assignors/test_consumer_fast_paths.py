"""members/assignors/consumer: the shortcuts taken for common groups give what the general
steps give (docs/assignor-performance.md, "Third pass").

* range without member racks (``_assign_without_racks``) against the per-topic state path,
  reached by giving every member a rack that no partition replica has (a member rack alone
  does not make a topic rack-aware, so Kafka's result is the same);
* roundrobin's strides where every member subscribes to every topic against the
  per-partition circle walk;
* MemberInfo order compared natively against :func:`member_sort_key`.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from members.assignors.consumer import ConsumerMember, assign_range, assign_roundrobin
from members.assignors.consumer import roundrobin as roundrobin_mod
from members.assignors.consumer.model import member_info_order, member_sort_key
from protocol.consumer_codec import Subscription

TOPICS = ["a", "b", "t-1", "é"]


@st.composite
def groups(draw: st.DrawFn) -> tuple[list[ConsumerMember], dict]:
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=4, unique=True))
    cluster = {t: ((None,),) * draw(st.integers(0, 14)) for t in topics}
    ids = draw(
        st.lists(
            st.text("abcé\U0001f600-0", min_size=1, max_size=4), min_size=1, max_size=9, unique=True
        )
    )
    same = draw(st.booleans())
    members = []
    for i, mid in enumerate(ids):
        sub = (
            tuple(topics)
            if same
            else tuple(draw(st.lists(st.sampled_from(topics), min_size=1, unique=True)))
        )
        instance = draw(st.none() | st.just(f"i{i % 3}{mid}"))
        members.append(ConsumerMember(mid, Subscription(sub), instance))
    return members, cluster


def _with_rack(members: list[ConsumerMember]) -> list[ConsumerMember]:
    return [
        ConsumerMember(
            m.member_id,
            Subscription(m.subscription.topics, rack_id="rack-without-replicas"),
            m.group_instance_id,
        )
        for m in members
    ]


@given(groups())
def test_range_without_racks_equals_the_topic_state_path(group: tuple) -> None:
    members, cluster = group
    assert assign_range(members, cluster) == assign_range(_with_rack(members), cluster)


@given(groups())
def test_roundrobin_strides_equal_the_circle_walk(
    group: tuple,
) -> None:
    members, cluster = group
    fast = assign_roundrobin(members, cluster)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(roundrobin_mod, "everyone_subscribes", lambda *_: False)
        walked = assign_roundrobin(members, cluster)
    assert fast == walked


@given(groups())
def test_member_info_order_equals_member_sort_key_order(group: tuple) -> None:
    members, _ = group
    expected = sorted(members, key=lambda m: member_sort_key(m.member_id, m.group_instance_id))
    assert member_info_order(members) == expected
    plain = [ConsumerMember(m.member_id, m.subscription) for m in members]
    assert member_info_order(plain) == sorted(
        plain, key=lambda m: member_sort_key(m.member_id, None)
    )
