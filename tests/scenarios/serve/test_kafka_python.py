"""kafka-python 3.x consumers against ``groupsim serve`` (issue 12)."""

from __future__ import annotations

import signal

import pytest
import trio

pytest.importorskip("kio")
pytest.importorskip("kafka")

from scenarios.check.log_check import check_records  # noqa: E402
from scenarios.serve import open_broker  # noqa: E402
from scenarios.serve.config import Heal, Partition  # noqa: E402

from .clients import (
    GROUP,
    assert_clean,  # noqa: E402
    kafka_python,
    killable_kafka_python,
    options,
    partition_counts,
    wait_for,
)


def _generations(broker) -> list[int]:
    return [r["generation"] for r in broker.log.records if r["kind"] == "generation"]


@pytest.mark.slow
async def test_three_consumers_share_six_partitions_and_a_closed_one_hands_its_partitions_over():
    async with open_broker(options()) as broker:
        clients = {f"c{i}": kafka_python(broker.port, f"c{i}").start() for i in range(3)}
        try:
            await wait_for(
                lambda: all(
                    c.assignment is not None and len(c.assignment) == 2 for c in clients.values()
                ),
                30,
                "three consumers with 2 partitions each",
            )
            assert partition_counts(broker) == {"c0": 2, "c1": 2, "c2": 2}
            owned = {p for c in clients.values() for p in c.assignment}
            assert owned == set(range(6))
            generation = broker.snapshot(GROUP).generation
            leaving = clients.pop("c2")
            moved = set(leaving.assignment)
            await leaving.stop()  # KafkaConsumer.close(): LeaveGroup
            await wait_for(
                lambda: all(
                    c.assignment is not None and len(c.assignment) == 3 for c in clients.values()
                ),
                30,
                "the two remaining consumers with 3 partitions each",
            )
            assert broker.snapshot(GROUP).generation > generation
            assert moved <= {p for c in clients.values() for p in c.assignment}
            removed = [r for r in broker.log.records if r["kind"] == "member_removed"]
            assert [r["reason"] for r in removed] == ["leave"]
            assert not any(c.state["error"] for c in clients.values())
        finally:
            for c in clients.values():
                await c.stop()
        assert check_records(broker.log.records) == []
        assert_clean(broker)
    assert_clean(broker)


@pytest.mark.slow
async def test_a_killed_consumer_is_removed_after_its_session_timeout():
    async with open_broker(options()) as broker:
        survivor = kafka_python(broker.port, "alive").start()
        victim = killable_kafka_python(broker.port, "victim", session_timeout_ms=1500)
        try:
            await wait_for(
                lambda: (
                    partition_counts(broker) == {"alive": 3, "victim": 3}
                    and survivor.assignment is not None
                    and len(survivor.assignment) == 3
                ),
                30,
                "a Stable group of two with 3 partitions each",
            )
            killed_at = broker.now_ms()
            victim.send_signal(signal.SIGKILL)
            await wait_for(
                lambda: survivor.assignment is not None and len(survivor.assignment) == 6,
                30,
                "the survivor owning all six partitions",
            )
            removed = [r for r in broker.log.records if r["kind"] == "member_removed"]
            assert [(r["reason"], r["member"].split("#")[0]) for r in removed] == [
                ("session_timeout", "victim")
            ]
            # Not before the session timeout (1500 ms from the last heartbeat before the kill).
            assert removed[0]["t_ms"] >= killed_at + 1500 - 250
        finally:
            victim.kill()
            victim.wait()
            await survivor.stop()
    assert check_records(broker.log.records) == []
    assert_clean(broker)


@pytest.mark.slow
async def test_a_partitioned_consumer_loses_and_regains_its_partitions():
    async with open_broker(options()) as broker:
        a = kafka_python(broker.port, "a", session_timeout_ms=1500).start()
        b = kafka_python(broker.port, "b", session_timeout_ms=1500).start()
        try:
            await wait_for(
                lambda: (
                    partition_counts(broker) == {"a": 3, "b": 3}
                    and b.assignment is not None
                    and len(b.assignment) == 3
                ),
                30,
                "a Stable group of two",
            )
            broker.inject(Partition(at_ms=0, member="b"))
            await wait_for(
                lambda: partition_counts(broker) == {"a": 6},
                30,
                "b's session to expire behind the partition and a to own all six partitions",
            )
            broker.inject(Heal(at_ms=0, member="b"))
            await wait_for(
                lambda: (
                    partition_counts(broker) == {"a": 3, "b": 3}
                    and b.assignment is not None
                    and len(b.assignment) == 3
                ),
                40,
                "b to rejoin and get 3 partitions back",
            )
        finally:
            await a.stop()
            await b.stop()
    records = broker.log.records
    faults = [(r["fault"], r.get("member")) for r in records if r["kind"] == "fault"]
    assert faults == [("partition", "b"), ("heal", "b")]
    removed = [r for r in records if r["kind"] == "member_removed"]
    assert removed[0]["reason"] == "session_timeout" and removed[0]["member"].startswith("b#")
    assert check_records(records) == []
    assert_clean(broker)


@pytest.mark.slow
async def test_a_coordinator_failover_answers_not_coordinator_then_reloads_the_group():
    async with open_broker(options()) as broker:
        a = kafka_python(broker.port, "a").start()
        b = kafka_python(broker.port, "b").start()
        try:
            await wait_for(
                lambda: partition_counts(broker) == {"a": 3, "b": 3}, 30, "a Stable group of two"
            )
            generation = broker.snapshot(GROUP).generation
            from scenarios.serve.config import CoordinatorFailover

            broker.inject(CoordinatorFailover(at_ms=0, down_ms=500))
            assert broker.down
            await wait_for(lambda: not broker.down, 5, "the coordinator to come back")
            await trio.sleep(1.0)  # heartbeats flow again
            await wait_for(
                lambda: partition_counts(broker) == {"a": 3, "b": 3}, 30, "a Stable group again"
            )
            loaded = [r for r in broker.log.records if r["kind"] == "group_loaded"]
            assert loaded and loaded[0]["generation"] == generation
            assert loaded[0]["state"] == "Stable"
        finally:
            await a.stop()
            await b.stop()
    assert check_records(broker.log.records) == []
    assert_clean(broker)


@pytest.mark.slow
async def test_a_static_member_restarted_within_its_session_timeout_gets_its_partitions_back():
    """KIP-345: a static member (``group.instance.id``) that restarts within
    ``session.timeout.ms`` rejoins under its instance id and gets its old partitions with no
    rebalance (Kafka ``GroupMetadataManager#updateStaticMemberThenRebalanceOrCompleteJoin``:
    in a Stable group the new member id replaces the old one and the member gets the
    current assignment)."""
    async with open_broker(options()) as broker:
        static = {"session_timeout_ms": 6000}
        a = kafka_python(broker.port, "sa", group_instance_id="instance-a", **static).start()
        b = kafka_python(broker.port, "sb", group_instance_id="instance-b", **static).start()
        try:
            await wait_for(
                lambda: (
                    partition_counts(broker) == {"sa": 3, "sb": 3}
                    and b.assignment is not None
                    and len(b.assignment) == 3
                ),
                30,
                "a Stable group of two static members",
            )
            requests = [r for r in broker.log.records if r["kind"] == "wire_request"]
            assert {r["group_instance_id"] for r in requests if r["api"] == "JoinGroup"} == {
                "instance-a",
                "instance-b",
            }
            before = list(b.assignment)
            generation = broker.snapshot(GROUP).generation
            await b.stop()  # a static member does not send LeaveGroup on close
            b = kafka_python(broker.port, "sb", group_instance_id="instance-b", **static).start()
            await wait_for(
                lambda: b.assignment is not None and len(b.assignment) == 3, 30, "b back"
            )
            assert b.assignment == before
            assert broker.snapshot(GROUP).generation == generation
            assert not [r for r in broker.log.records if r["kind"] == "member_removed"]
        finally:
            await a.stop()
            await b.stop()
