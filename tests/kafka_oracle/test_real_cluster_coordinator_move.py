"""A group coordinator that moves, on a real cluster of three brokers, recorded through
``groupsim record``: groupsim must predict every answer of the old and the new coordinator
(``replay --conform``: 0 divergences) and find no violation in the recorded log.

The run: three of Kafka's own Java consumers (``cooperative-sticky``) join group ``g`` on topic
``orders`` (6 partitions, replicated to every broker); the broker that coordinates ``g`` (the
leader of ``__consumer_offsets``' one partition) is killed with SIGKILL; the controller fences
it, another replica becomes the partition's leader and loads the group from its last record
(``GroupMetadataManager#replay``, then ``#onLoaded`` arms every member's session timeout); the
consumers find the new coordinator (``NOT_COORDINATOR`` or a broken connection, then
``FindCoordinator`` through another broker) and keep their generation; then ``sc`` closes
(LeaveGroup to the new coordinator: a cooperative rebalance there).

Costly (three brokers, three consumer JVMs, a fencing timeout): it runs only with
``GROUPSIM_LONG_REAL=1`` (see docs/real-kafka.md). Every process is stopped by its pid, also
when the test fails.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import trio
from typer.testing import CliRunner

pytest.importorskip("kio")
pytest.importorskip("kafka")

from coordinator.config import CoordinatorConfig  # noqa: E402
from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.cli.main import app  # noqa: E402
from scenarios.record.conform import conform_coordinator, read_exchanges  # noqa: E402
from scenarios.record.proxy import Proxy, RecordOptions  # noqa: E402
from scenarios.record.trace import Recording  # noqa: E402
from tests.kafka_oracle import oracle  # noqa: E402
from tests.kafka_oracle.cluster import Cluster, kafka_cluster  # noqa: E402
from tests.scenarios.record.test_conform_coordinator_move import (  # noqa: E402
    plant_forgotten_session,
)
from tests.scenarios.serve.clients import JavaConsumer, wait_for  # noqa: E402

pytestmark = pytest.mark.kafka

#: The brokers' group settings, given to the replay as they were to the brokers.
SETTINGS = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
CLIENT_MAIN = "groupsim.oracle.JavaConsumerClient"
LONG_ENV = "GROUPSIM_LONG_REAL"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    if os.environ.get(LONG_ENV) != "1":
        pytest.skip(f"a 3-broker coordinator move takes minutes: set {LONG_ENV}=1 to run it")
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


def _owns(consumer: JavaConsumer, n: int) -> bool:
    return consumer.assignment is not None and len(consumer.assignment) == n


def record_coordinator_move(
    cluster: Cluster, command: list[str], out: Path, clean: bool = False
) -> dict[str, int]:
    """Runs the consumers through a recording proxy in front of node 1 and stops the group's
    coordinator mid-run (SIGKILL; SIGTERM, a controlled shutdown, with ``clean``);
    ``{"before": node id, "after": node id}`` of the coordinator."""
    started: list[JavaConsumer] = []
    moved: dict[str, int] = {}
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
                life_ms=240_000,
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
                await wait_for(lambda: all(_owns(c, 2) for c in group), 120, "2 partitions each")
                await trio.sleep(3)  # a few heartbeats to the first coordinator
                before = await trio.to_thread.run_sync(cluster.coordinator, "g")
                moved["before"] = before.node_id
                owned = {c.client_id: c.assignment for c in group}
                await trio.to_thread.run_sync(cluster.stop, before.node_id, clean)
                after = await trio.to_thread.run_sync(cluster.coordinator, "g", 90.0)
                moved["after"] = after.node_id
                # Let every member heartbeat to the new coordinator for a while.
                await trio.sleep(5)
                assert {c.client_id: c.assignment for c in group} == owned
                sa, sb, sc = group
                assert await sc.close() == 0
                await wait_for(lambda: _owns(sa, 3) and _owns(sb, 3), 90, "3 partitions each")
                for c in (sa, sb):
                    await c.close()
                nursery.cancel_scope.cancel()
        finally:
            recording.close()
            for c in started:
                c.finish()

    trio.run(main)
    return moved


@pytest.fixture(scope="module")
def recorded(
    cluster: Cluster, kafka_oracle: oracle.KafkaOracle, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, int]]:
    """(``kafka_oracle`` builds the harness the consumer JVMs run from.)"""
    out = tmp_path_factory.mktemp("recorded")
    command = oracle.java_command(CLIENT_MAIN, oracle.requested_version())
    return out, record_coordinator_move(cluster, command, out)


def test_the_coordinator_moved(recorded: tuple[Path, dict[str, int]]) -> None:
    _, moved = recorded
    assert moved["before"] != moved["after"]


def test_groupsim_check_finds_no_violation(recorded: tuple[Path, dict[str, int]]) -> None:
    out, _ = recorded
    assert check_log(out / "events.jsonl") == []


def test_groupsim_predicts_both_coordinators(recorded: tuple[Path, dict[str, int]]) -> None:
    out, _ = recorded
    config = CoordinatorConfig.from_mapping(SETTINGS)
    verdict = conform_coordinator(read_exchanges(out / "trace.jsonl"), config)
    assert verdict.divergences == [], verdict.divergences[:3]
    assert verdict.coordinator_moves, "the replay saw no coordinator move"
    assert {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"} <= set(verdict.compared)


def test_a_load_that_forgets_a_session_deadline_diverges(
    recorded: tuple[Path, dict[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted: the new coordinator forgets its first member's session deadline when it loads
    the group (due at the load instead of ``session.timeout.ms`` later, unlike
    ``GroupMetadataManager#onLoaded``): groupsim expires that member and rebalances where the
    real coordinator kept the group Stable, so conform exits 1 naming the field."""
    out, _ = recorded
    plant_forgotten_session(monkeypatch)
    config = CoordinatorConfig.from_mapping(SETTINGS)
    verdict = conform_coordinator(read_exchanges(out / "trace.jsonl"), config)
    assert verdict.divergences
    first = verdict.divergences[0]
    assert (first.field, first.recorded) == ("error_code", "none"), first
    done = CliRunner().invoke(
        app, ["replay", "--conform", str(out), "--set", "group.initial.rebalance.delay.ms=0"]
    )
    assert done.exit_code == 1, done.output
    assert "error_code" in done.output
