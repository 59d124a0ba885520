"""groupsim's ``sticky`` and ``cooperative-sticky`` assignors against Kafka's classes, over
several generations.

Each example is a short group history: 2–4 rebalances of one cluster. Between rounds members
join and leave, change subscriptions (equal and unequal subscriptions, so both the constrained
and the general path run), miss a round (they then claim older partitions with an older
generation), or claim another member's partitions in the same generation (a zombie); topics
gain partitions. Each round's subscriptions carry what the previous round gave, as a Kafka
consumer would send them: ``sticky`` its previous assignment and generation in the user data
(``StickyAssignor.subscriptionUserData``; eager, so no owned partitions), ``cooperative-sticky``
owned partitions and the generation (v2 ``generationId``, or only the user data as a pre-v2
client). Every round goes through groupsim and through Kafka's assignor
(``GroupsimConsumerDriver``, verb ``assign``); every member's list must be equal, in order, or
both must fail. The user data bytes are compared with Kafka's ``subscriptionUserData`` too.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from members.assignors import consumer as consumer_assignors
from members.assignors.consumer import ConsumerMember, StickyAssignmentError
from members.assignors.consumer.sticky_data import (
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from protocol.consumer_codec import Subscription, TopicPartition
from tests.kafka_oracle.oracle import KafkaOracle, OracleError, b64
from tests.kafka_oracle.test_consumer_differential import _sub_json, names

pytestmark = pytest.mark.kafka

#: Histories per assignor. 50 by default keeps the ``-m kafka`` suite within its time budget
#: (a history is 2–4 assignments on both sides); the recorded runs in docs/consumer.md use
#: ``GROUPSIM_ORACLE_EXAMPLES=1000``.
EXAMPLES = int(os.environ.get("GROUPSIM_ORACLE_EXAMPLES", 0)) or 50
_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
_RACKS = ["r0", "r1", "r2"]

Cluster = dict[str, list[list[str | None]]]


class _State:
    """One member across rounds: what it subscribes to and what it last got."""

    def __init__(self, member_id: str, instance: str | None, rack: str | None) -> None:
        self.member_id = member_id
        self.instance = instance
        self.rack = rack
        self.topics: tuple[str, ...] = ()
        self.owned: list[TopicPartition] = []
        self.generation = -1  # -1: never assigned


def _subscription(assignor: str, s: _State, pre_v2: bool) -> Subscription:
    """What the member's ``ConsumerCoordinator`` would put in its JoinGroup."""
    if assignor == "sticky":
        user = None if s.generation < 0 else encode_sticky_user_data(s.owned, s.generation)
        return Subscription(s.topics, user, (), s.generation, s.rack)
    return Subscription(
        s.topics,
        encode_cooperative_user_data(s.generation),
        tuple(s.owned),
        -1 if pre_v2 else s.generation,
        s.rack,
    )


@st.composite
def histories(draw: st.DrawFn) -> dict[str, Any]:
    """A cluster, a pool of members and a plan of 2–4 rounds (drawn choices, applied by the
    test as it goes, since each round starts from the previous round's result)."""
    big = draw(st.integers(0, 9)) == 0
    topics = draw(names(draw(st.integers(1, 8 if big else 4)), "topic-"))
    rack_mode = draw(st.sampled_from(["none", "some", "all"]))
    cluster: Cluster = {}
    for t in topics:
        parts: list[list[str | None]] = []
        for _ in range(draw(st.integers(1, 20 if big else 8))):
            if rack_mode == "none":
                parts.append([None])
            else:
                n = draw(st.integers(0 if rack_mode == "some" else 1, 2))
                parts.append(draw(st.lists(st.sampled_from(_RACKS), min_size=n, max_size=n)))
        cluster[t] = parts
    pool = draw(names(draw(st.integers(2, 16 if big else 7)), "consumer-"))
    members = []
    for mid in pool:
        instance = f"instance-{draw(st.integers(0, 30))}" if draw(st.booleans()) else None
        rack = draw(st.none() | st.sampled_from(["", *_RACKS])) if rack_mode != "none" else None
        members.append(_State(mid, instance, rack))
    rounds = draw(st.integers(2, 4))
    return {
        "cluster": cluster,
        "members": members,
        "rounds": rounds,
        "pre_v2": draw(st.integers(0, 4)) == 0,
    }


def _kafka_assign(
    oracle: KafkaOracle, assignor: str, members: list[ConsumerMember], cluster: Cluster
) -> Any:
    request = [
        {"id": m.member_id, "instance": m.group_instance_id, **_sub_json(m.subscription)}
        for m in members
    ]
    try:
        return oracle.call("consumer.assign", assignor=assignor, members=request, topics=cluster)
    except OracleError:
        return "error"


def run_history(oracle: KafkaOracle, assignor: str, h: dict[str, Any], draw: Any) -> int:
    """Plays one history through both sides (``draw``: ``st.data().draw`` for the choices made
    as it goes); returns the rounds compared."""
    cluster: Cluster = h["cluster"]
    topics = list(cluster) + (["no-metadata"] if draw(st.booleans()) else [])
    pool: list[_State] = h["members"]
    live = [s for s in pool if draw(st.booleans())] or pool[:1]
    compared = 0
    for generation in range(1, h["rounds"] + 1):
        if generation > 1:  # churn between rounds
            for s in pool:
                if s in live and len(live) > 1 and draw(st.integers(0, 5)) == 0:
                    live.remove(s)
                elif s not in live and draw(st.integers(0, 3)) == 0:
                    live.append(s)
                    s.owned, s.generation = (
                        ([], -1) if draw(st.booleans()) else (s.owned, s.generation)
                    )
            if draw(st.integers(0, 4)) == 0:
                t = draw(st.sampled_from(list(cluster)))
                cluster[t] = cluster[t] + [list(cluster[t][-1])] * draw(st.integers(1, 3))
            if len(live) > 1 and draw(st.integers(0, 5)) == 0:  # a zombie claim, same generation
                a, b = draw(st.sampled_from(live)), draw(st.sampled_from(live))
                a.owned = a.owned + [tp for tp in b.owned if tp not in a.owned][:2]
                a.generation = b.generation
        equal = draw(st.booleans())
        common = tuple(sorted(draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))))
        for s in live:
            if generation == 1 or draw(st.integers(0, 3)) == 0:
                s.topics = (
                    common
                    if equal
                    else tuple(sorted(draw(st.lists(st.sampled_from(topics), unique=True))))
                )
        members = [
            ConsumerMember(s.member_id, _subscription(assignor, s, h["pre_v2"]), s.instance)
            for s in live
        ]
        racks = {t: tuple(tuple(r) for r in parts) for t, parts in cluster.items()}
        kafka = _kafka_assign(oracle, assignor, members, cluster)
        try:
            ours = consumer_assignors.ASSIGNORS[assignor](members, racks)
        except StickyAssignmentError:
            assert kafka == "error", (generation, members)
            return compared
        assert kafka != "error", (generation, members)
        assert {m: [list(tp) for tp in parts] for m, parts in ours.items()} == kafka, (
            generation,
            members,
        )
        compared += 1
        for s in live:
            if draw(st.integers(0, 6)) == 0 and s.generation >= 0:
                continue  # missed this round's SyncGroup: keeps its older claim
            s.owned = list(ours[s.member_id])
            s.generation = generation
    return compared


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_sticky_assignor_equals_kafka_over_generations(
    kafka_oracle: KafkaOracle, assignor: str
) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_SLOW)
    @given(h=histories(), data=st.data())
    def run(h: dict[str, Any], data: st.DataObject) -> None:
        rounds = run_history(kafka_oracle, assignor, h, data.draw)
        kafka_oracle.compared[f"consumer {assignor} histories"] += 1
        kafka_oracle.compared[f"consumer {assignor} rounds"] += rounds

    run()


@settings(max_examples=100, deadline=None, suppress_health_check=_SLOW)
@given(
    parts=st.lists(
        st.tuples(st.sampled_from(["t0", "t1", "é中", "Aa", "BB"]), st.integers(0, 40)),
        max_size=20,
        unique=True,
    ),
    generation=st.integers(-1, 2**31 - 1),
)
def test_user_data_bytes_equal_kafka(
    kafka_oracle: KafkaOracle, parts: list[tuple[str, int]], generation: int
) -> None:
    tps = [TopicPartition(t, p) for t, p in parts]
    fields = {"partitions": [list(tp) for tp in tps], "generation": generation}
    sticky = kafka_oracle.call("consumer.sticky_user_data", assignor="sticky", **fields)
    assert b64(encode_sticky_user_data(tps, generation)) == sticky
    coop = kafka_oracle.call("consumer.sticky_user_data", assignor="cooperative-sticky", **fields)
    assert b64(encode_cooperative_user_data(generation)) == coop
    kafka_oracle.compared["consumer sticky user data"] += 1


def test_planted_sticky_bug_is_caught(
    kafka_oracle: KafkaOracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sticky assignor that lets the lower generation win a double claim must be told apart."""
    from members.assignors.consumer import sticky_owned as sticky_mod

    real = sticky_mod._generation_or_default
    monkeypatch.setattr(sticky_mod, "_generation_or_default", lambda g: -real(g))

    @settings(max_examples=300, deadline=None, suppress_health_check=_SLOW, database=None)
    @given(h=histories(), data=st.data())
    def run(h: dict[str, Any], data: st.DataObject) -> None:
        run_history(kafka_oracle, "sticky", h, data.draw)

    # Hypothesis raises an ExceptionGroup when it finds several distinct differences
    with pytest.raises((AssertionError, ExceptionGroup)) as caught:
        run()
    if isinstance(caught.value, ExceptionGroup):
        assert all(isinstance(e, AssertionError) for e in caught.value.exceptions)


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_kafkas_illegal_state_is_ours_too(kafka_oracle: KafkaOracle, assignor: str) -> None:
    """An owner keeps a partition number past its topic's end: the constrained path runs out
    of unfilled members for the real partition, and both sides fail."""
    owner = _State("a", None, None)
    owner.topics, owner.owned, owner.generation = ("t0",), [TopicPartition("t0", 9)], 1
    other = _State("b", None, None)
    other.topics, other.generation = ("t0",), 1
    members = [
        ConsumerMember(s.member_id, _subscription(assignor, s, False)) for s in (owner, other)
    ]
    assert _kafka_assign(kafka_oracle, assignor, members, {"t0": [[None]]}) == "error"
    with pytest.raises(StickyAssignmentError, match="No more unfilled consumers"):
        consumer_assignors.ASSIGNORS[assignor](members, {"t0": ((None,),)})
