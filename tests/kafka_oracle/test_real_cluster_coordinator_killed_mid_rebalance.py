"""A group coordinator killed mid-rebalance, then the restarted broker taking the group back,
on a real cluster of three brokers recorded through ``groupsim record``: groupsim must predict
every answer of the three coordinators (``replay --conform``: 0 divergences) and find no
violation in the recorded log.

The run: three of Kafka's own Java consumers (``cooperative-sticky``) share topic ``orders``
(6 partitions); the leader is told to pause 8 s before assigning (the harness consumer's
``assign-delay``), and a fourth consumer joins: every member rejoins, the JoinGroup answers go
out, and the group waits in CompletingRebalance for the leader's SyncGroup. Then the
coordinator's broker is killed (SIGKILL). The next coordinator loads the group from its last
*committed* record: the generation before the rebalance, Stable, with its three members (a
group's record is written at the leader's SyncGroup, never at a JoinGroup round's end while it
has members: ``GroupMetadataManager#completeClassicGroupJoin`` / ``#classicGroupSyncToLeader``,
then ``#replay`` and ``#onLoaded``). The members' late SyncGroups and rejoins meet that group.
Once the four share the partitions, the killed broker restarts, catches up, and a preferred
leader election (``ElectLeaders``, after a reassignment that lists it first) gives it
``__consumer_offsets`` back: the second coordinator
unloads the group and the first loads it again; then the fourth consumer closes (LeaveGroup to
it) and the other three rebalance there.

Costly (three brokers, four consumer JVMs, a fencing timeout, a restart): it runs only with
``GROUPSIM_LONG_REAL=1`` (see docs/real-kafka.md). Every process is stopped by its pid, also
when the test fails.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import trio

pytest.importorskip("kio")
pytest.importorskip("kafka")

from coordinator.config import CoordinatorConfig  # noqa: E402
from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.record.conform import conform_coordinator, read_exchanges  # noqa: E402
from scenarios.record.proxy import Proxy, RecordOptions  # noqa: E402
from scenarios.record.trace import Recording  # noqa: E402
from tests.kafka_oracle import oracle  # noqa: E402
from tests.kafka_oracle.cluster import Cluster, kafka_cluster  # noqa: E402
from tests.scenarios.serve.clients import JavaConsumer, wait_for  # noqa: E402

pytestmark = pytest.mark.kafka

SETTINGS = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
CLIENT_MAIN = "groupsim.oracle.JavaConsumerClient"
LONG_ENV = "GROUPSIM_LONG_REAL"
OFFSETS = "__consumer_offsets"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    if os.environ.get(LONG_ENV) != "1":
        pytest.skip(f"a 3-broker coordinator kill and move back takes minutes: set {LONG_ENV}=1")
    reason = oracle.unavailable_reason()
    if reason:
        pytest.skip(reason)
    from kafka.admin import KafkaAdminClient, NewTopic

    settings = {k.replace(".", "_"): v for k, v in SETTINGS.items()}
    with kafka_cluster(tmp_path_factory.mktemp("cluster"), **settings) as running:
        admin = KafkaAdminClient(bootstrap_servers=running.bootstrap, request_timeout_ms=60_000)
        try:
            admin.create_topics([NewTopic("orders", 6, 3)])
        finally:
            admin.close()
        yield running


def _in_sync(cluster: Cluster, node_id: int) -> bool:
    """Whether ``node_id`` is in the ISR of ``__consumer_offsets``' partition 0."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        (topic,) = admin.describe_topics([OFFSETS])
    finally:
        admin.close()
    (partition,) = [p for p in topic["partitions"] if p["partition_index"] == 0]
    return node_id in partition["isr_nodes"]


def _give_back(cluster: Cluster, node_id: int) -> None:
    """Makes ``node_id`` the preferred replica of ``__consumer_offsets``' partition 0 (a
    reassignment to the same replicas, ``node_id`` first: nothing moves) and runs a preferred
    leader election (``ElectLeaders``): the partition's leadership, and so the group's
    coordinator, moves to it."""
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        (topic,) = admin.describe_topics([OFFSETS])
        (partition,) = [p for p in topic["partitions"] if p["partition_index"] == 0]
        replicas = [node_id, *(r for r in partition["replica_nodes"] if r != node_id)]
        admin.alter_partition_reassignments({TopicPartition(OFFSETS, 0): replicas})
        deadline = time.monotonic() + 30
        while admin.list_partition_reassignments({OFFSETS: [0]}) and time.monotonic() < deadline:
            time.sleep(0.5)
        admin.elect_leaders(0, {OFFSETS: [0]}, timeout_ms=30_000, raise_errors=False)
    finally:
        admin.close()


def _shares(group: list[JavaConsumer]) -> bool:
    owned = [c.assignment for c in group]
    if any(o is None for o in owned):
        return False
    flat = [p for o in owned for p in o or []]
    return sorted(flat) == list(range(6)) and max(map(len, owned)) - min(map(len, owned)) <= 1  # type: ignore[arg-type]


def record_kill_mid_rebalance(cluster: Cluster, command: list[str], out: Path) -> dict[str, object]:
    """Runs the consumers through a recording proxy in front of node 1; what happened:
    ``first``, ``second``, ``back`` (the coordinator's node id each time) and ``assigning``
    (whether the leader was inside its paused assignment when its broker died)."""
    started: list[JavaConsumer] = []
    seen: dict[str, object] = {}
    first = cluster.nodes[1]

    def consumer(port: int, name: str) -> JavaConsumer:
        started.append(
            JavaConsumer(
                command,
                port,
                name,
                out / f"{name}.stderr",
                assignor="cooperative-sticky",
                session_timeout_ms=10_000,
                heartbeat_interval_ms=500,
                max_poll_interval_ms=30_000,
                life_ms=300_000,
            )
        )
        return started[-1]

    async def main() -> None:
        recording = Recording(out, int(time.time() * 1000), first.address, "127.0.0.1", 0)
        try:
            async with trio.open_nursery() as nursery:
                proxy = Proxy(
                    RecordOptions(("127.0.0.1", first.port)), recording, lambda: time.time() * 1000
                )
                port = await nursery.start(proxy.run)
                group = [consumer(port, name) for name in ("sa", "sb", "sc")]
                await wait_for(lambda: _shares(group), 120, "2 partitions each")
                for c in group:
                    c.send("assign-delay 8000")
                await trio.sleep(2)
                before = await trio.to_thread.run_sync(cluster.coordinator, "g")
                seen["first"] = before.node_id
                group.append(consumer(port, "sd"))
                await wait_for(
                    lambda: any(e["event"] == "assigning" for c in group for e in c.events),
                    60,
                    "the leader pausing in its assignor",
                )
                await trio.sleep(1)  # the followers' SyncGroups are parked by now
                await trio.to_thread.run_sync(cluster.stop, before.node_id)
                for c in group:
                    c.send("assign-delay 0")
                after = await trio.to_thread.run_sync(cluster.coordinator, "g", 90.0)
                seen["second"] = after.node_id
                await wait_for(lambda: _shares(group), 120, "four members sharing 6")
                await trio.sleep(3)
                await trio.to_thread.run_sync(cluster.start, before.node_id)
                await wait_for(
                    lambda: _in_sync(cluster, before.node_id), 120, "the restarted node in sync"
                )
                await trio.to_thread.run_sync(_give_back, cluster, before.node_id)
                for _ in range(120):  # FindCoordinator may name the old leader for a while
                    back = await trio.to_thread.run_sync(cluster.coordinator, "g", 60.0)
                    if back.node_id == before.node_id:
                        break
                    await trio.sleep(0.5)
                seen["back"] = back.node_id
                await trio.sleep(5)
                sd = group.pop()
                assert await sd.close() == 0
                await wait_for(lambda: _shares(group), 90, "three members sharing 6 again")
                for c in group:
                    await c.close()
                nursery.cancel_scope.cancel()
        finally:
            recording.close()
            for c in started:
                c.finish()

    trio.run(main)
    return seen


@pytest.fixture(scope="module")
def recorded(
    cluster: Cluster, kafka_oracle: oracle.KafkaOracle, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, object]]:
    """(``kafka_oracle`` builds the harness the consumer JVMs run from.)"""
    keep = os.environ.get("GROUPSIM_KEEP_TRACE")  # a directory to keep the trace in
    out = Path(keep) if keep else tmp_path_factory.mktemp("recorded")
    out.mkdir(parents=True, exist_ok=True)
    command = oracle.java_command(CLIENT_MAIN, oracle.requested_version())
    return out, record_kill_mid_rebalance(cluster, command, out)


def test_the_coordinator_moved_and_came_back(recorded: tuple[Path, dict[str, object]]) -> None:
    _, seen = recorded
    assert seen["first"] != seen["second"]
    assert seen["back"] == seen["first"], seen


def test_groupsim_check_finds_no_violation(recorded: tuple[Path, dict[str, object]]) -> None:
    out, _ = recorded
    assert check_log(out / "events.jsonl") == []


def test_groupsim_predicts_every_coordinator(recorded: tuple[Path, dict[str, object]]) -> None:
    out, _ = recorded
    config = CoordinatorConfig.from_mapping(SETTINGS)
    verdict = conform_coordinator(read_exchanges(out / "trace.jsonl"), config)
    assert verdict.divergences == [], verdict.divergences[:3]
    assert len(verdict.coordinator_moves) >= 2, verdict.coordinator_moves
