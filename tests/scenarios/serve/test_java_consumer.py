"""Kafka's own Java ``KafkaConsumer`` (classic group protocol) against ``groupsim serve``.

The client is the Kafka oracle harness's ``groupsim.oracle.JavaConsumerClient`` (built by
Maven with the pinned ``kafka-clients``, or ``GROUPSIM_KAFKA_VERSION``), one JVM per consumer,
each stopped by its pid when the test ends, also when it fails. Every test ends with
``groupsim check`` (:func:`scenarios.check.log_check.check_log`) on the ``events.jsonl`` the
broker wrote: no violation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kio")

from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.serve import open_broker  # noqa: E402
from tests.kafka_oracle import oracle  # noqa: E402

from .clients import (  # noqa: E402
    GROUP,
    JavaConsumer,
    assert_clean,
    confluent,
    kafka_python,
    options,
    partition_counts,
    wait_for,
)

pytestmark = pytest.mark.kafka

CLIENT_MAIN = "groupsim.oracle.JavaConsumerClient"


@pytest.fixture(scope="session")
def java_command(kafka_oracle: oracle.KafkaOracle) -> list[str]:
    """The JVM command of the Java consumer client (the harness the oracle fixture built; the
    fixture also skips, in one line, where Java or Maven is missing)."""
    return oracle.java_command(CLIENT_MAIN, oracle.requested_version())


@pytest.fixture
async def java(
    java_command: list[str], tmp_path: Path
) -> AsyncIterator[Callable[..., JavaConsumer]]:
    """``java(port, client_id, **options)`` starts a :class:`JavaConsumer`; every JVM started
    is killed by its pid at the end of the test."""
    started: list[JavaConsumer] = []

    def start(port: int, client_id: str, **kwargs: Any) -> JavaConsumer:
        consumer = JavaConsumer(
            java_command, port, client_id, tmp_path / f"{client_id}.stderr", **kwargs
        )
        started.append(consumer)
        return consumer

    try:
        yield start
    finally:
        for consumer in started:
            consumer.finish()


def _records(out: Path) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


def _owns(consumer: Any, n: int) -> bool:
    return consumer.assignment is not None and len(consumer.assignment) == n


def _wire(records: list[dict[str, Any]], kind: str, api: str) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == kind and r["api"] == api]


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
async def test_two_java_consumers_share_the_topic(assignor, java, tmp_path):
    """A second Java consumer joins a one-member group. ``range`` is eager: the first member
    revokes all six partitions, then each gets three. ``cooperative-sticky`` (KIP-429) takes
    two rounds: the first member only revokes the three that move and keeps the rest, and a
    follow-up rebalance hands the revoked three to the newcomer."""
    out = tmp_path / "serve"
    async with open_broker(options(), out=out) as broker:
        a = java(broker.port, "ja", assignor=assignor)
        await wait_for(lambda: _owns(a, 6), 60, "the first Java consumer owning all six")
        b = java(broker.port, "jb", assignor=assignor)
        await wait_for(
            lambda: _owns(a, 3) and _owns(b, 3) and partition_counts(broker) == {"ja": 3, "jb": 3},
            60,
            "two Java consumers with three partitions each",
        )
        snap = broker.snapshot(GROUP)
        assert snap.protocol == assignor
        owned = {p: [c.client_id for c in (a, b) if p in c.assignment] for p in range(6)}
        assert all(len(v) == 1 for v in owned.values()), owned  # each partition exactly once
        stored = sorted(int(p.rsplit("-", 1)[1]) for ps in snap.assignments.values() for p in ps)
        assert stored == list(range(6))
        assert await b.close() == 0
        assert await a.close() == 0
    a_calls = [(e["event"], len(e["partitions"]), e["generation"]) for e in a.callbacks()]
    b_calls = [(e["event"], len(e["partitions"]), e["generation"]) for e in b.callbacks()]
    first = a_calls[0][2]
    if assignor == "range":
        # Eager: everything is revoked before the rejoin, the new generation assigns three.
        assert a_calls[:3] == [
            ("assigned", 6, first),
            ("revoked", 6, first),
            ("assigned", 3, first + 1),
        ]
        assert b_calls[0] == ("assigned", 3, first + 1)
    else:
        # KIP-429: round 1 (generation first+1) revokes only the three that move (assigned
        # callback with nothing new); round 2 (first+2) assigns them to the newcomer.
        assert a_calls[:3] == [
            ("assigned", 6, first),
            ("revoked", 3, first + 1),
            ("assigned", 0, first + 1),
        ]
        # The newcomer's SyncGroup of round 1 can lose the race with the first member's
        # rejoin (REBALANCE_IN_PROGRESS, as Kafka answers it): then its empty assignment of
        # round 1 is never delivered, and its first callback is round 2's.
        gained_at = b_calls.index(("assigned", 3, first + 2))
        assert b_calls[:gained_at] in ([], [("assigned", 0, first + 1)]), b_calls
        revoked = set(a.callbacks()[1]["partitions"])
        gained = set(next(e for e in b.callbacks() if e["partitions"])["partitions"])
        assert revoked == gained
    records = _records(out)
    assert {r["version"] for r in _wire(records, "wire_request", "JoinGroup")} == {9}
    assert check_log(out / "events.jsonl") == []
    assert_clean(broker)


@pytest.mark.parametrize(
    ("python_client", "assignor"),
    [("kafka-python", "range"), ("confluent-kafka", "cooperative-sticky")],
)
async def test_a_java_and_a_python_consumer_in_one_group(python_client, assignor, java, tmp_path):
    """A Java consumer and a Python one (kafka-python with ``range``, librdkafka with
    ``cooperative-sticky``) split the topic in one group: either may lead and assign."""
    if python_client == "kafka-python":
        pytest.importorskip("kafka")
        start_python = lambda port: kafka_python(port, "py")  # noqa: E731
    else:
        pytest.importorskip("confluent_kafka")
        start_python = lambda port: confluent(  # noqa: E731
            port, "py", **{"partition.assignment.strategy": assignor}
        )
    out = tmp_path / "serve"
    async with open_broker(options(), out=out) as broker:
        j = java(broker.port, "jv", assignor=assignor)
        py = start_python(broker.port).start()
        try:
            await wait_for(
                lambda: (
                    _owns(j, 3) and _owns(py, 3) and partition_counts(broker) == {"jv": 3, "py": 3}
                ),
                60,
                "a Java and a Python consumer with three partitions each",
            )
            assert sorted(j.assignment + py.assignment) == list(range(6))
            assert broker.snapshot(GROUP).protocol == assignor
            assert py.state["error"] is None
        finally:
            await py.stop()
        assert await j.close() == 0
    assert check_log(out / "events.jsonl") == []
    assert_clean(broker)


async def _static_pair(broker: Any, java: Callable[..., JavaConsumer]) -> dict[str, JavaConsumer]:
    static = {"session_timeout_ms": 20_000, "heartbeat_interval_ms": 300}
    consumers = {
        "sa": java(broker.port, "sa", group_instance_id="instance-a", **static),
        "sb": java(broker.port, "sb", group_instance_id="instance-b", **static),
    }
    await wait_for(
        lambda: (
            all(_owns(c, 3) for c in consumers.values())
            and partition_counts(broker) == {"sa": 3, "sb": 3}
        ),
        60,
        "a Stable group of two static Java consumers",
    )
    return consumers


@pytest.mark.parametrize("restarted", ["follower", "leader"])
async def test_a_restarted_static_java_consumer_gets_its_partitions_back(restarted, java, tmp_path):
    """KIP-345: a static member closed (a static member sends no LeaveGroup) and restarted
    within ``session.timeout.ms`` rejoins with an unknown member id and its instance id; in a
    Stable group whose protocol does not change, the coordinator replaces its member id and
    answers at once, no rebalance (Kafka ``GroupMetadataManager
    #updateStaticMemberThenRebalanceOrCompleteJoin``). A follower gets no member list; a
    restarted *leader* on JoinGroup v9+ gets the member list with ``skip_assignment=true``
    (KIP-814), so ``ConsumerCoordinator#onLeaderElected`` runs no assignor and syncs with an
    empty assignment, and the coordinator answers its SyncGroup with the stored assignment."""
    out = tmp_path / "serve"
    async with open_broker(options(), out=out) as broker:
        consumers = await _static_pair(broker, java)
        snap = broker.snapshot(GROUP)
        leader_client = snap.clients[snap.leader_id]
        name = leader_client if restarted == "leader" else ({"sa", "sb"} - {leader_client}).pop()
        other = ({"sa", "sb"} - {name}).pop()
        old = consumers[name]
        before, generation = list(old.assignment), snap.generation
        other_calls = len(consumers[other].callbacks())
        restart_seq = broker.log.records[-1]["seq"]
        assert await old.close() == 0
        instance = "instance-a" if name == "sa" else "instance-b"
        new = java(
            broker.port,
            name,
            group_instance_id=instance,
            session_timeout_ms=20_000,
            heartbeat_interval_ms=300,
        )
        await wait_for(lambda: _owns(new, 3), 60, f"the restarted {restarted} back")
        assert new.assignment == before
        assert new.callbacks()[-1]["generation"] == generation
        after = broker.snapshot(GROUP)
        assert after.generation == generation and after.state == "Stable"
        assert len(consumers[other].callbacks()) == other_calls  # no rebalance reached it
        await consumers[other].close()
        await new.close()
    records = _records(out)
    assert not [r for r in records if r["kind"] == "member_removed"]
    later = [r for r in records if r["seq"] > restart_seq]
    assert not [r for r in later if r["kind"] in ("generation", "group_state")]  # no rebalance
    records = later
    replaced = [r for r in records if r["kind"] == "member_replaced"]
    assert [r["member"].split("#")[0] for r in replaced] == [name]
    rejoin = [
        r
        for r in _wire(records, "wire_response", "JoinGroup")
        if r["member_id"] == replaced[0]["member_id"] and r["error"] == "NONE"
    ]
    assert len(rejoin) == 1
    assert rejoin[0]["generation"] == generation
    assert rejoin[0]["skip_assignment"] is (restarted == "leader")
    if restarted == "leader":
        assert rejoin[0]["leader_id"] == replaced[0]["member_id"]  # leadership followed
    requests = _wire(records, "wire_request", "JoinGroup")
    assert {r["version"] for r in requests} == {9}  # KafkaConsumer 4.x: JoinGroup v9
    # The restarted JVM joins with no member id, only its instance id (no MEMBER_ID_REQUIRED
    # round for a static member).
    assert [(r["member_id"], r["group_instance_id"]) for r in requests] == [("", instance)]
    sync = [
        r
        for r in _wire(records, "wire_response", "SyncGroup")
        if r["member_id"] == replaced[0]["member_id"]
    ]
    assert [(r["error"], r["generation"]) for r in sync] == [("NONE", generation)]
    assert sorted(int(p.rsplit("-", 1)[1]) for p in sync[0]["partitions"]) == before
    assert check_log(out / "events.jsonl") == []
    assert_clean(broker)


async def test_a_crashed_java_consumer_is_removed_after_its_session_timeout(java, tmp_path):
    """``exit-without-leave`` halts the JVM (no LeaveGroup): the coordinator removes the
    member when its session times out, not before, and the survivor gets all six."""
    out = tmp_path / "serve"
    async with open_broker(options(), out=out) as broker:
        a = java(broker.port, "ja", session_timeout_ms=3000)
        b = java(broker.port, "jb", session_timeout_ms=3000)
        await wait_for(
            lambda: partition_counts(broker) == {"ja": 3, "jb": 3} and _owns(a, 3) and _owns(b, 3),
            60,
            "two Java consumers with three partitions each",
        )
        crashed_at = broker.now_ms()
        b.send("exit-without-leave")
        await wait_for(lambda: partition_counts(broker) == {"ja": 6} and _owns(a, 6), 60, "a alone")
        assert await a.close() == 0
    assert b.proc.wait(10) == 0  # halted, not killed
    records = _records(out)
    removed = [r for r in records if r["kind"] == "member_removed"]
    assert [(r["reason"], r["member"].split("#")[0]) for r in removed[:1]] == [
        ("session_timeout", "jb")
    ]
    assert removed[0]["t_ms"] >= crashed_at + 3000 - 400  # its last heartbeat (300 ms apart)
    assert not [r for r in _wire(records, "wire_request", "LeaveGroup") if r["client_id"] == "jb"]
    assert check_log(out / "events.jsonl") == []
    assert_clean(broker)


async def test_a_java_consumer_stalled_past_max_poll_interval_leaves_and_rejoins(java, tmp_path):
    """``stall`` longer than ``max.poll.interval.ms``: the consumer's heartbeat thread sends
    LeaveGroup when the poll timer expires (``AbstractCoordinator`` heartbeat thread, "consumer
    poll timeout has expired"), the group rebalances without it; when it polls again it has
    lost its member id, reports its partitions ``lost`` and rejoins as a new member."""
    out = tmp_path / "serve"
    async with open_broker(options(), out=out) as broker:
        a = java(broker.port, "ja")
        b = java(broker.port, "jb", max_poll_interval_ms=2000)
        await wait_for(
            lambda: partition_counts(broker) == {"ja": 3, "jb": 3} and _owns(a, 3) and _owns(b, 3),
            60,
            "two Java consumers with three partitions each",
        )
        first_member = b.callbacks()[-1]["member_id"]
        b.send("stall 5000")
        await wait_for(lambda: partition_counts(broker) == {"ja": 6}, 60, "a alone while b stalls")
        await wait_for(
            lambda: (
                any(e["event"] == "stalled" for e in b.events)
                and partition_counts(broker) == {"ja": 3, "jb": 3}
                and _owns(a, 3)
                and _owns(b, 3)
            ),
            60,
            "b back after its stall",
        )
        assert await b.close() == 0
        assert await a.close() == 0
    kinds = [e["event"] for e in b.callbacks()]
    assert "lost" in kinds, b.callbacks()
    assert b.callbacks()[-1]["member_id"] != first_member
    records = _records(out)
    removed = [r for r in records if r["kind"] == "member_removed"]
    assert removed[0]["reason"] == "leave" and removed[0]["member"].startswith("jb#")
    assert check_log(out / "events.jsonl") == []
    assert_clean(broker)


async def test_a_rolling_assignor_upgrade_of_static_members_rebalances_once(java, tmp_path):
    """The first bounce of KIP-429's upgrade, with static members: each is restarted with
    ``cooperative-sticky,range``. After the first restart ``range`` is still the only protocol
    every member supports, so the static rejoin keeps the group Stable (same generation).
    After the second, every member prefers ``cooperative-sticky``: the protocol the group
    would select changes, so the static rejoin triggers a rebalance (``GroupMetadataManager
    #updateStaticMemberThenRebalanceOrCompleteJoin``, Stable with a changed
    ``selectProtocol()``), and the next generation uses ``cooperative-sticky``."""
    out = tmp_path / "serve"
    static = {"session_timeout_ms": 20_000, "heartbeat_interval_ms": 300}
    both = "cooperative-sticky,range"
    async with open_broker(options(), out=out) as broker:
        consumers = await _static_pair(broker, java)
        generation = broker.snapshot(GROUP).generation
        assert broker.snapshot(GROUP).protocol == "range"
        assert await consumers["sa"].close() == 0
        consumers["sa"] = java(
            broker.port, "sa", group_instance_id="instance-a", assignor=both, **static
        )
        await wait_for(lambda: _owns(consumers["sa"], 3), 60, "sa back after its upgrade")
        snap = broker.snapshot(GROUP)
        assert (snap.generation, snap.protocol, snap.state) == (generation, "range", "Stable")
        second_bounce = broker.log.records[-1]["seq"]
        assert await consumers["sb"].close() == 0
        consumers["sb"] = java(
            broker.port, "sb", group_instance_id="instance-b", assignor=both, **static
        )
        await wait_for(
            lambda: (
                broker.snapshot(GROUP).protocol == "cooperative-sticky"
                and partition_counts(broker) == {"sa": 3, "sb": 3}
                and all(_owns(c, 3) for c in consumers.values())
            ),
            60,
            "a Stable cooperative-sticky group after the second upgrade",
        )
        assert sorted(p for c in consumers.values() for p in c.assignment or []) == list(range(6))
        for c in consumers.values():
            await c.close()
    records = _records(out)
    later = [r for r in records if r["seq"] > second_bounce]
    assert [r["generation"] for r in later if r["kind"] == "generation"] == [generation + 1]
    states = [r["to"] for r in later if r["kind"] == "group_state"]
    assert states[:3] == ["PreparingRebalance", "CompletingRebalance", "Stable"], states
    assert not [r for r in records if r["kind"] == "member_removed"]
    assert check_log(out / "events.jsonl") == []
    assert_clean(broker)
