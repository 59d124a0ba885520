"""``sticky_rack_unmatched`` (scenarios/check/rack_contracts.py): KIP-881's rack preference of
the sticky assignors with equal subscriptions — silent on a round that keeps it, reported on
one that breaks it (hand-made logs), sound on groupsim's sticky assignors (equal to Kafka's in
the differential tests, tests/kafka_oracle/test_consumer_differential.py) over random rack
rounds with owned partitions, registered, and finding its planted bug in chaos."""

from __future__ import annotations

import base64
import random
from typing import Any

from members.assignors.consumer.model import ConsumerMember
from members.assignors.consumer.sticky import assign_cooperative_sticky, assign_sticky
from members.assignors.consumer.sticky_data import encode_sticky_user_data
from protocol.consumer_codec import Subscription, TopicPartition, encode_subscription
from scenarios.check import rack_contracts
from scenarios.check.protocol_checkers import PROTOCOL_INVARIANTS
from scenarios.check.rack_contracts import (
    RACK_CONTRACT_INVARIANTS,
    STICKY_RACK_UNMATCHED,
    use_rack_aware_assignment,
)
from scenarios.input.schema import INVARIANTS
from tests.scenarios.campaigns.chaos.planted import by_name, detect
from tests.scenarios.check.logs import numbered as _log
from tests.scenarios.check.logs import over_dicts
from tests.scenarios.check.logs import violation_names as _names

Record = dict[str, Any]

# the checker reads typed records: run it on the hand-written ones
check_sticky_rack_matching = over_dicts(rack_contracts.check_sticky_rack_matching)


def _round(
    subscriptions: dict[str, Subscription],
    racks: dict[str, list[list[str | None]]],
    assigned: dict[str, list[str]],
    assignor: str = "cooperative-sticky",
) -> Record:
    """A sticky leader's round: each member's subscription, each partition's replica racks,
    and what it assigned."""
    members = [
        {
            "id": m,
            "instance": None,
            "metadata": base64.b64encode(encode_subscription(s)).decode("ascii"),
        }
        for m, s in subscriptions.items()
    ]
    return {
        "t_ms": 10,
        "kind": "consumer_assignor",
        "member": "c1",
        "generation": 3,
        "assignor": assignor,
        "assigned": assigned,
        "inputs": {"members": members, "topics": racks},
    }


_TWO = {"a": Subscription(("t1",), rack_id="ra"), "b": Subscription(("t1",), rack_id="rb")}
_RACKS: dict[str, list[list[str | None]]] = {"t1": [["rb"], ["rb"], ["ra"], ["ra"]]}


def test_every_name_is_a_schema_invariant_and_registered() -> None:
    assert set(RACK_CONTRACT_INVARIANTS) <= set(INVARIANTS)
    assert set(RACK_CONTRACT_INVARIANTS) <= set(PROTOCOL_INVARIANTS)


def test_partitions_on_their_members_racks_are_clean() -> None:
    kept = {"a": ["t1-2", "t1-3"], "b": ["t1-0", "t1-1"]}
    assert check_sticky_rack_matching(_log(_round(_TWO, _RACKS, kept))) == []


def test_a_member_off_its_rack_while_its_partitions_sit_off_theirs_is_reported() -> None:
    for assignor in ("sticky", "cooperative-sticky"):
        swapped = {"a": ["t1-0", "t1-1"], "b": ["t1-2", "t1-3"]}
        found = check_sticky_rack_matching(_log(_round(_TWO, _RACKS, swapped, assignor)))
        assert _names(found) == [STICKY_RACK_UNMATCHED]
        # one pair is enough: the rest may be withheld (cooperative) or balanced elsewhere
        one = {"a": ["t1-0", "t1-2"], "b": ["t1-1", "t1-3"]}
        assert _names(check_sticky_rack_matching(_log(_round(_TWO, _RACKS, one, assignor)))) == [
            STICKY_RACK_UNMATCHED
        ]


def test_not_judged_without_racks_on_both_sides_or_with_unequal_subscriptions() -> None:
    swapped = {"a": ["t1-0", "t1-1"], "b": ["t1-2", "t1-3"]}
    rackless = {**_TWO, "b": Subscription(("t1",))}  # b keeps owned partitions off any rack
    assert check_sticky_rack_matching(_log(_round(rackless, _RACKS, swapped))) == []
    unequal = {**_TWO, "b": Subscription(("t1", "t2"), rack_id="rb")}
    racks = {**_RACKS, "t2": [["ra"]]}
    assert check_sticky_rack_matching(_log(_round(unequal, racks, swapped))) == []
    assert check_sticky_rack_matching(_log(_round(_TWO, _RACKS, swapped, "range"))) == []


def _random_round(rng: random.Random, cooperative: bool) -> tuple[Record, bool]:
    topics = {f"t{i}": rng.randint(1, 9) for i in range(1, rng.randint(1, 3) + 1)}
    pool = ["ra", "rb", "rc", "rz", None]
    racks = {t: [rng.sample(pool, rng.randint(1, 3)) for _ in range(n)] for t, n in topics.items()}
    every = [TopicPartition(t, p) for t, n in topics.items() for p in range(n)]
    names = [f"m{i}" for i in range(rng.randint(1, 6))]
    previous: dict[str, list[TopicPartition]] = {m: [] for m in names}
    for tp in every:  # a previous owner for most partitions, sometimes two (doubly claimed)
        for m in rng.sample(names, rng.choice((0, 1, 1, 1, 2)) if len(names) > 1 else 1):
            previous[m].append(tp)
    subscriptions: dict[str, Subscription] = {}
    for m in names:
        generation = rng.choice((-1, 1, 2, 3))
        rack = rng.choice(["ra", "rb", "rc", None])
        owned = tuple(previous[m]) if generation > 0 else ()
        if cooperative:
            sub = Subscription(
                tuple(sorted(topics)),
                owned_partitions=owned,
                generation_id=generation,
                rack_id=rack,
            )
        else:
            data = encode_sticky_user_data(owned, generation if owned else None)
            sub = Subscription(tuple(sorted(topics)), user_data=data, rack_id=rack)
        subscriptions[m] = sub
    cluster = {t: tuple(tuple(r) for r in rs) for t, rs in racks.items()}
    members = [ConsumerMember(m, s) for m, s in subscriptions.items()]
    assign = assign_cooperative_sticky if cooperative else assign_sticky
    assignment = assign(members, cluster)
    assigned = {m: [f"{tp.topic}-{tp.partition}" for tp in ps] for m, ps in assignment.items()}
    assignor = "cooperative-sticky" if cooperative else "sticky"
    member_racks = {m: s.rack_id for m, s in subscriptions.items()}
    replica_racks = [frozenset(x for x in rs if x) for per in cluster.values() for rs in per]
    aware = use_rack_aware_assignment(member_racks, replica_racks)
    return _round(subscriptions, racks, assigned, assignor), aware


def test_kip881_sticky_rule_holds_for_every_sticky_assignment() -> None:
    """Soundness on random rounds: members with and without racks, replica racks with a rack
    no member is on and brokers without one, owned partitions of several generations (some
    claimed twice), both sticky assignors. (Of these 600, 539 are rack-aware and in 392 a
    member with a rack holds a partition off it: the rule is exercised.)"""
    rng = random.Random(8811)
    judged = 0
    for i in range(600):
        record, aware = _random_round(rng, cooperative=i % 2 == 0)
        assert check_sticky_rack_matching(_log(record)) == [], record
        judged += aware
    assert judged > 300


def test_the_planted_sticky_assignor_without_rack_preference_is_found_by_the_rule() -> None:
    found = detect(by_name("sticky-assignor-ignores-racks"), 5)
    assert found.found_at == 1 and STICKY_RACK_UNMATCHED in found.new
