"""Kafka's own Java consumers on a real broker, recorded through ``groupsim record``: the
cooperative protocol (KIP-429), static members (KIP-345) and a non-zero
``group.initial.rebalance.delay.ms`` (``InitialDelayedJoin``), which the kafka-python traces of
``test_real_cluster_consumers`` do not exercise. groupsim must predict every answer of the
broker's group coordinator (``replay --conform``: 0 divergences) and find no violation in the
recorded log.

The run: three consumers join (two static, one dynamic; ``cooperative-sticky``), the static
``sa`` is killed (no LeaveGroup: a static member never sends one) and restarted with its
instance id within ``session.timeout.ms`` (the coordinator replaces its member id, no rebalance
in a Stable group), then the dynamic ``sc`` closes (LeaveGroup; a cooperative rebalance).

The broker is Kafka's own (the version pinned in the harness's pom), single-node KRaft on
loopback, started fresh for this module and stopped by its pid at the end; every JVM is
stopped by its pid, also when the test fails.
"""

from __future__ import annotations

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
from tests.kafka_oracle.cluster import Broker, broker_with_orders  # noqa: E402
from tests.scenarios.serve.clients import JavaConsumer, wait_for  # noqa: E402

pytestmark = pytest.mark.kafka

#: The broker's group settings, given to the replay as they were to the broker.
SETTINGS = {"group.initial.rebalance.delay.ms": 1000, "group.min.session.timeout.ms": 500}
CLIENT_MAIN = "groupsim.oracle.JavaConsumerClient"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    reason = oracle.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with broker_with_orders(tmp_path_factory.mktemp("broker"), SETTINGS) as running:
        yield running


def _owns(consumer: JavaConsumer, n: int) -> bool:
    return consumer.assignment is not None and len(consumer.assignment) == n


def _record(broker: Broker, command: list[str], out: Path) -> dict[str, list[int] | None]:
    """Runs the consumers through a recording proxy; the final assignment of each survivor."""
    started: list[JavaConsumer] = []
    final: dict[str, list[int] | None] = {}

    def consumer(port: int, name: str, instance: str | None) -> JavaConsumer:
        started.append(
            JavaConsumer(
                command,
                port,
                name,
                out / f"{name}-{len(started)}.stderr",
                assignor="cooperative-sticky",
                group_instance_id=instance,
                session_timeout_ms=10_000,
                heartbeat_interval_ms=500,
                life_ms=150_000,
            )
        )
        return started[-1]

    async def main() -> None:
        recording = Recording(out, int(time.time() * 1000), broker.bootstrap, "127.0.0.1", 0)
        try:
            async with trio.open_nursery() as nursery:
                proxy = Proxy(
                    RecordOptions(("127.0.0.1", broker.port)),
                    recording,
                    lambda: time.time() * 1000,
                )
                port = await nursery.start(proxy.run)
                sa = consumer(port, "sa", "instance-a")
                sb = consumer(port, "sb", "instance-b")
                sc = consumer(port, "sc", None)
                group = [sa, sb, sc]
                await wait_for(lambda: all(_owns(c, 2) for c in group), 90, "2 partitions each")
                before = list(sa.assignment or [])
                sa.send("exit-without-leave")
                await trio.to_thread.run_sync(sa.proc.wait, 30)
                sa = consumer(port, "sa", "instance-a")
                await wait_for(lambda: _owns(sa, 2), 60, "the restarted static sa back")
                assert sa.assignment == before
                assert await sc.close() == 0
                await wait_for(lambda: _owns(sa, 3) and _owns(sb, 3), 60, "3 partitions each")
                final.update(sa=sa.assignment, sb=sb.assignment)
                for c in (sa, sb):
                    await c.close()
                nursery.cancel_scope.cancel()
        finally:
            recording.close()
            for c in started:
                c.finish()

    trio.run(main)
    return final


@pytest.fixture(scope="module")
def recorded(
    broker: Broker, kafka_oracle: oracle.KafkaOracle, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """(``kafka_oracle`` builds the harness the consumer JVMs run from.)"""
    out = tmp_path_factory.mktemp("recorded")
    command = oracle.java_command(CLIENT_MAIN, oracle.requested_version())
    final = _record(broker, command, out)
    assert sorted((final["sa"] or []) + (final["sb"] or [])) == list(range(6))
    return out


def test_groupsim_check_finds_no_violation_in_the_real_cluster(recorded: Path) -> None:
    assert check_log(recorded / "events.jsonl") == []


def test_groupsim_predicts_every_answer_to_java_consumers(recorded: Path) -> None:
    config = CoordinatorConfig.from_mapping(SETTINGS)
    verdict = conform_coordinator(read_exchanges(recorded / "trace.jsonl"), config)
    assert verdict.divergences == [], verdict.divergences[:3]
    assert {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"} <= set(verdict.compared)
    assert verdict.equal >= sum(verdict.compared.values()) // 2
