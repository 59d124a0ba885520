"""confluent-kafka (librdkafka), its admin client, aiokafka and kafkajs against groupsim serve."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import trio

pytest.importorskip("kio")

from scenarios.check.log_check import check_records  # noqa: E402
from scenarios.serve import open_broker  # noqa: E402

from .clients import (
    GROUP,
    TOPIC,
    ThreadClient,
    assert_clean,
    confluent,
    options,
    partition_counts,
    wait_for,
)  # noqa: E402


def _both_have_three(clients: list[ThreadClient]) -> bool:
    return all(c.assignment is not None and len(c.assignment) == 3 for c in clients)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
async def test_confluent_kafka_consumers_split_the_topic(strategy):
    pytest.importorskip("confluent_kafka")
    async with open_broker(options()) as broker:
        clients = [
            confluent(broker.port, f"r{i}", **{"partition.assignment.strategy": strategy}).start()
            for i in range(2)
        ]
        try:
            await wait_for(lambda: _both_have_three(clients), 30, f"two {strategy} consumers")
            snap = broker.snapshot(GROUP)
            assert snap.protocol == strategy
            assert partition_counts(broker) == {"r0": 3, "r1": 3}
            assert sorted(p for c in clients for p in c.assignment) == list(range(6))
        finally:
            for c in clients:
                await c.stop()
    versions = {r["api"]: r["version"] for r in broker.log.records if r["kind"] == "wire_request"}
    assert versions["JoinGroup"] == 5 and versions["SyncGroup"] == 3  # librdkafka 2.x
    assert check_records(broker.log.records) == []
    assert_clean(broker)


@pytest.mark.slow
async def test_confluent_admin_describes_the_group():
    pytest.importorskip("confluent_kafka")
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    async with open_broker(options()) as broker:
        clients = [confluent(broker.port, f"d{i}").start() for i in range(2)]
        try:
            await wait_for(lambda: _both_have_three(clients), 30, "two consumers")

            def describe() -> Any:
                admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.port}"})
                return admin.describe_consumer_groups([GROUP])[GROUP].result(timeout=10)

            described = await trio.to_thread.run_sync(describe)
        finally:
            for c in clients:
                await c.stop()
    assert described.group_id == GROUP
    assert described.state == ConsumerGroupState.STABLE
    assert described.partition_assignor == "range"
    members = {m.client_id: m for m in described.members}
    assert sorted(members) == ["d0", "d1"]
    snap_ids = {m.member_id for m in described.members}
    assert all(mid.startswith(("d0-", "d1-")) for mid in snap_ids)
    assigned = sorted(
        tp.partition for m in described.members for tp in m.assignment.topic_partitions
    )
    assert assigned == list(range(6))
    assert all(m.host == "/127.0.0.1" for m in described.members)


@pytest.mark.slow
async def test_aiokafka_two_members_split_the_topic():
    pytest.importorskip("aiokafka")
    from aiokafka import AIOKafkaConsumer

    async with open_broker(options()) as broker:
        stop = threading.Event()
        seen: dict[str, list[int]] = {}

        def run() -> None:
            async def member(client_id: str) -> None:
                consumer = AIOKafkaConsumer(
                    TOPIC,
                    bootstrap_servers=f"127.0.0.1:{broker.port}",
                    group_id=GROUP,
                    client_id=client_id,
                    session_timeout_ms=3000,
                    heartbeat_interval_ms=200,
                    fetch_max_wait_ms=100,
                )
                await consumer.start()
                try:
                    while not stop.is_set():
                        await consumer.getmany(timeout_ms=50)
                        seen[client_id] = sorted(tp.partition for tp in consumer.assignment())
                finally:
                    await consumer.stop()

            async def both() -> None:
                await asyncio.gather(member("a1"), member("a2"))

            asyncio.run(both())

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            await wait_for(
                lambda: len(seen) == 2 and all(len(v) == 3 for v in seen.values()),
                30,
                "two aiokafka members with 3 partitions each",
            )
            assert partition_counts(broker) == {"a1": 3, "a2": 3}
        finally:
            stop.set()
            await trio.to_thread.run_sync(thread.join, 30)
    assert sorted(seen["a1"] + seen["a2"]) == list(range(6))
    assert check_records(broker.log.records) == []
    assert_clean(broker)


_KAFKAJS = r"""
const { Kafka, logLevel } = require('kafkajs');
const [port, clientId] = process.argv.slice(2);
const kafka = new Kafka({ clientId, brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: 'g', sessionTimeout: 6000, heartbeatInterval: 300,
                                  maxWaitTimeInMs: 100 });
consumer.on(consumer.events.GROUP_JOIN, e => {
  const parts = (e.payload.memberAssignment.orders || []).slice().sort((a, b) => a - b);
  console.log(JSON.stringify({ joined: parts }));
});
(async () => {
  await consumer.connect();
  await consumer.subscribe({ topics: ['orders'] });
  await consumer.run({ eachMessage: async () => {} });
  process.stdin.on('data', async () => { await consumer.disconnect(); process.exit(0); });
})().catch(e => { console.error(e); process.exit(1); });
"""


@pytest.fixture(scope="session")
def kafkajs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with kafkajs installed by npm (skips when node/npm or the package is missing)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the kafkajs test")
    where = tmp_path_factory.mktemp("kafkajs")
    try:
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent", "kafkajs@2"],
            cwd=where,
            check=True,
            capture_output=True,
            timeout=120,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"cannot install kafkajs with npm: {exc}")
    (where / "consumer.js").write_text(_KAFKAJS)
    return where


@pytest.mark.slow
async def test_kafkajs_consumers_split_the_topic(kafkajs_dir: Path):
    async with open_broker(options()) as broker:
        procs = [
            await trio.lowlevel.open_process(
                ["node", "consumer.js", str(broker.port), f"js{i}"],
                cwd=kafkajs_dir,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            for i in range(2)
        ]
        try:
            await wait_for(
                lambda: partition_counts(broker) == {"js0": 3, "js1": 3},
                40,
                "two kafkajs consumers with 3 partitions each",
            )
        finally:
            for proc in procs:
                assert proc.stdin is not None
                await proc.stdin.send_all(b"stop\n")
            with trio.move_on_after(15):
                for proc in procs:
                    await proc.wait()
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
        outputs = []
        for proc in procs:
            assert proc.stdout is not None
            data = b""
            with trio.move_on_after(2):
                while chunk := await proc.stdout.receive_some():
                    data += chunk
            outputs.append([json.loads(line) for line in data.decode().splitlines() if line])
    last = [out[-1]["joined"] for out in outputs]
    assert sorted(last[0] + last[1]) == list(range(6))
    assert check_records(broker.log.records) == []
    assert_clean(broker)


@pytest.mark.slow
async def test_cooperative_sticky_moves_partitions_in_two_rounds_when_a_member_joins():
    """KIP-429 through groupsim's coordinator: when a third librdkafka consumer joins, the
    old members first keep a subset of what they owned (the moved partitions are revoked,
    nothing is added), and a follow-up rebalance hands the revoked partitions to the new one."""
    pytest.importorskip("confluent_kafka")
    strategy = {"partition.assignment.strategy": "cooperative-sticky"}
    async with open_broker(options()) as broker:
        clients = [confluent(broker.port, f"k{i}", **strategy).start() for i in range(2)]
        try:
            await wait_for(lambda: _both_have_three(clients), 30, "two cooperative consumers")
            before = {f"k{i}": set(c.assignment) for i, c in enumerate(clients)}
            generation = broker.snapshot(GROUP).generation
            clients.append(confluent(broker.port, "k2", **strategy).start())
            await wait_for(
                lambda: (
                    partition_counts(broker) == {"k0": 2, "k1": 2, "k2": 2}
                    and all(c.assignment is not None and len(c.assignment) == 2 for c in clients)
                ),
                30,
                "three consumers with 2 partitions each",
            )
        finally:
            for c in clients:
                await c.stop()
    syncs = [
        r
        for r in broker.log.records
        if r["kind"] == "wire_response" and r["api"] == "SyncGroup" and r["generation"] > generation
    ]
    seen = [(r["generation"], r["member"], r["partitions"]) for r in syncs]
    first = min(r["generation"] for r in syncs)
    revoking = {
        r["member"].split("#")[0]: r["partitions"] for r in syncs if r["generation"] == first
    }
    assert sorted(revoking) == ["k0", "k1", "k2"], seen
    for client, owned in before.items():
        kept = {int(p.rsplit("-", 1)[1]) for p in revoking[client]}
        assert kept < owned, seen  # revoked one partition, gained none
    assert revoking["k2"] == [], seen
    # The revoked partitions reach k2 in a later generation (librdkafka may need more than
    # one more round, e.g. when its metadata changes meanwhile).
    gained = [g for g, member, parts in seen if member.startswith("k2#") and parts]
    assert gained and min(gained) > first, seen
    assert check_records(broker.log.records) == []
    assert_clean(broker)
