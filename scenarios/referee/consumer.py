"""The consumer referee: every plain-consumer leader assignment replayed through Kafka's assignors.

Each ``consumer_assignor`` record carries the leader's ``inputs``
(``scenarios/eventlog/kinds_consumer.py``: ``ConsumerAssignorInputs``): the JoinGroup members
in JoinGroup order with their ``group.instance.id`` and subscription bytes, and the replica
racks of every subscribed topic's partitions. They go to the oracle harness's
``consumer.replay`` (``GroupsimConsumerDriver``: ``ConsumerProtocol.deserializeSubscription``
of each member's bytes into a ``HashMap`` in JoinGroup order, as
``ConsumerCoordinator.onLeaderElected`` does, then ``assign(Cluster, GroupSubscription)`` of
Kafka's ``RangeAssignor``, ``RoundRobinAssignor``, ``StickyAssignor`` or
``CooperativeStickyAssignor``). Kafka's answer must equal the record's ``assigned``: per member
its partitions, in the order the assignor listed them; and every member's ``Assignment``
user data must be null, as groupsim's leader sends it. The sticky assignors carry their state
in the *subscription* user data, which is input here; its bytes are judged too: Kafka reads
each member's user data (``memberData``: previous partitions and generation) and writes it
again (``onAssignment`` + ``subscriptionUserData`` of a fresh assignor), and the bytes must be
the member's.

**Assignor state.** ``ConsumerCoordinator`` builds its assignors once per consumer and the
sticky ones keep ``maxGeneration`` (``AbstractStickyAssignor``) across rebalances; so does
groupsim's :class:`members.consumer.ConsumerClient`. The replay keeps one instance per
consumer *incarnation* (:func:`.verdict.leader_rounds`) and assignor name.

Not judged (counted in :attr:`RefereeVerdict.skipped`): records without ``inputs``
(``no_inputs``: logs written before they existed) and assignor names Kafka has none of
(under the name).
"""

from __future__ import annotations

import base64
from itertools import count
from typing import Any

from protocol.consumer_codec import decode_subscription
from scenarios.referee.harness import KafkaOracle, OracleError
from scenarios.referee.verdict import RefereeVerdict, Round, leader_rounds, replay

__all__ = ["JUDGED", "judge_consumer"]

#: The assignors Kafka's consumer has (``ConsumerPartitionAssignor.name()``).
JUDGED = ("range", "roundrobin", "sticky", "cooperative-sticky")

#: Kafka's class per assignor name (in a disagreement's detail).
_CLASSES = {
    "range": "RangeAssignor",
    "roundrobin": "RoundRobinAssignor",
    "sticky": "StickyAssignor",
    "cooperative-sticky": "CooperativeStickyAssignor",
}

_sessions = count(1)


def _user_data(metadata: str) -> str | None:
    """The base64 user data of a member's base64 subscription bytes."""
    data = decode_subscription(base64.b64decode(metadata)).user_data
    return None if data is None else base64.b64encode(data).decode("ascii")


def _differences(rec: dict[str, Any], fields: dict[str, Any], answer: Any) -> list[str]:
    """How Kafka's answer (member id → ``{partitions, user_data}``) differs from the record."""
    if isinstance(answer, OracleError):
        return [f"Kafka raised {answer.java_class}: {answer.message}"]
    ours: dict[str, list[str]] = rec.get("assigned", {})
    metadata = {m["id"]: m["metadata"] for m in fields["members"]}
    out: list[str] = []
    for member_id in [m["id"] for m in fields["members"]]:
        theirs = answer.get(member_id)
        if theirs is None:
            out.append(f"{member_id}: Kafka assigned it nothing at all (no entry)")
            continue
        kafka = [f"{t}-{p}" for t, p in theirs["partitions"]]
        mine = list(ours.get(member_id, []))
        if mine != kafka:
            out.append(f"{member_id} partitions: groupsim {mine}, Kafka {kafka}")
        if theirs.get("user_data") is not None:
            out.append(f"{member_id} user data: groupsim null, Kafka {theirs['user_data']}")
        again = theirs.get("user_data_again")
        if again is not None:
            sent = _user_data(metadata[member_id])
            if sent != again:
                out.append(
                    f"{member_id} subscription user data: groupsim {sent}, Kafka writes {again}"
                )
    extra = set(ours) - {m["id"] for m in fields["members"]}
    if extra:
        out.append(f"groupsim assigned to non-members {sorted(extra)}")
    return out


def judge_consumer(oracle: KafkaOracle, records: list[dict[str, Any]]) -> RefereeVerdict:
    """Replays every judged ``consumer_assignor`` record of ``records`` through Kafka (one
    batch, then the session's reset) and returns the verdict.

    Raises:
        scenarios.referee.harness.OracleUnavailable: the JVM died.
    """
    verdict = RefereeVerdict(kafka=oracle.version)
    session = f"consumer-referee-{next(_sessions)}"
    rounds: list[Round] = []
    for rec, key in leader_rounds(records, "consumer_assignor"):
        name = str(rec.get("assignor"))
        if name not in JUDGED:
            verdict.skipped[name] += 1
            continue
        inputs = rec.get("inputs")
        if not inputs:
            verdict.skipped["no_inputs"] += 1
            continue
        fields = {
            "session": session,
            "assignor_key": key,
            "assignor": name,
            "members": inputs["members"],
            "topics": inputs["topics"],
        }
        rounds.append((rec, ("consumer.replay", fields)))
    return replay(
        oracle,
        verdict,
        rounds,
        _differences,
        lambda rec: _CLASSES[str(rec["assignor"])],
        after=[("consumer.reset", {"session": session})],
    )
