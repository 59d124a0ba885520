"""Kafka's own Java consumers changing their subscription on a real broker, recorded through
``groupsim record``, once with ``range`` (eager) and once with ``cooperative-sticky``
(KIP-429): traces of the kind a reviewer's plain consumers make, which the Connect and Streams
traces do not (two topics, members with different subscriptions, a rejoin for a subscription
change).

Per assignor, in a group of its own (``sub-range``, ``sub-cooperative-sticky``): ``c1`` and
``c2`` subscribe to ``orders`` (6 partitions); ``c2`` subscribes to ``orders,payments``
(``KafkaConsumer#subscribe``: it rejoins with the new subscription, and the leader assigns
``payments``' 3 partitions to the only member that wants them); ``c3`` joins on both topics;
``c1`` closes (LeaveGroup). groupsim must give every answer the broker gave and make every
leader's assignment (``replay --conform``, coordinator and leaders: 0 divergences) and find
no violation in the recorded log (``groupsim check``).

Cost: one broker for the module and three consumer JVMs per assignor, about 1.5 minutes on a
loaded 2-core machine. Every process is stopped by its pid, also when the test fails.
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
from scenarios.record.consumer_leaders import read_metadata  # noqa: E402
from scenarios.record.leaders import conform_leaders  # noqa: E402
from scenarios.record.proxy import Proxy, RecordOptions  # noqa: E402
from scenarios.record.trace import Recording  # noqa: E402
from tests.kafka_oracle import oracle  # noqa: E402
from tests.kafka_oracle.cluster import Broker, broker_with_orders  # noqa: E402
from tests.scenarios.serve.clients import JavaConsumer, wait_for  # noqa: E402

pytestmark = pytest.mark.kafka

SETTINGS = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
CLIENT_MAIN = "groupsim.oracle.JavaConsumerClient"
ASSIGNORS = ("range", "cooperative-sticky")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    reason = oracle.unavailable_reason()
    if reason:
        pytest.skip(reason)
    from kafka.admin import KafkaAdminClient, NewTopic

    with broker_with_orders(tmp_path_factory.mktemp("broker"), SETTINGS) as running:
        admin = KafkaAdminClient(bootstrap_servers=running.bootstrap, request_timeout_ms=60_000)
        try:
            admin.create_topics([NewTopic("payments", 3, 1)])
        finally:
            admin.close()
        yield running


def _record(broker: Broker, assignor: str, out: Path) -> dict[str, set[str]]:
    """Runs the story through a recording proxy; what the two survivors own at the end."""
    command = oracle.java_command(CLIENT_MAIN, oracle.requested_version())
    group = f"sub-{assignor}"
    started: list[JavaConsumer] = []
    final: dict[str, set[str]] = {}

    def consumer(port: int, name: str, topics: str) -> JavaConsumer:
        started.append(
            JavaConsumer(
                command,
                port,
                name,
                out / f"{name}.stderr",
                assignor=assignor,
                session_timeout_ms=10_000,
                heartbeat_interval_ms=500,
                life_ms=150_000,
                topics=topics,
                group=group,
            )
        )
        return started[-1]

    def total(cs: list[JavaConsumer]) -> int:
        return sum(len(c.owned) for c in cs)

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
                c1 = consumer(port, "c1", "orders")
                c2 = consumer(port, "c2", "orders")
                await wait_for(
                    lambda: len(c1.owned) == len(c2.owned) == 3, 90, "3 orders partitions each"
                )
                c2.send("subscribe orders,payments")
                await wait_for(
                    lambda: (
                        {f"payments-{p}" for p in range(3)} <= c2.owned and total([c1, c2]) == 9
                    ),
                    60,
                    "payments on c2 after its subscription change",
                )
                c3 = consumer(port, "c3", "orders,payments")
                await wait_for(
                    lambda: total([c1, c2, c3]) == 9 and all(c.owned for c in (c1, c2, c3)),
                    60,
                    "c3 in the group",
                )
                assert await c1.close() == 0
                await wait_for(
                    lambda: total([c2, c3]) == 9 and not c1.owned, 60, "c1's partitions moved"
                )
                final.update(c2=c2.owned, c3=c3.owned)
                for c in (c2, c3):
                    await c.close()
                nursery.cancel_scope.cancel()
        finally:
            recording.close()
            for c in started:
                c.finish()

    trio.run(main)
    return final


@pytest.fixture(scope="module", params=ASSIGNORS)
def recorded(
    request: pytest.FixtureRequest,
    broker: Broker,
    kafka_oracle: oracle.KafkaOracle,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """(``kafka_oracle`` builds the harness the consumer JVMs run from.)"""
    out = tmp_path_factory.mktemp(f"recorded-{request.param}")
    final = _record(broker, request.param, out)
    assert set().union(*final.values()) == {f"orders-{p}" for p in range(6)} | {
        f"payments-{p}" for p in range(3)
    }
    return out


def test_groupsim_check_finds_no_violation(recorded: Path) -> None:
    assert check_log(recorded / "events.jsonl") == []


def test_groupsim_predicts_every_answer_across_a_subscription_change(recorded: Path) -> None:
    verdict = conform_coordinator(
        read_exchanges(recorded / "trace.jsonl"), CoordinatorConfig.from_mapping(SETTINGS)
    )
    assert verdict.divergences == [], verdict.divergences[:3]
    assert {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"} <= set(verdict.compared)


def test_groupsim_assignor_gives_every_member_the_real_leaders_partitions(
    recorded: Path,
) -> None:
    """Every completed round: groupsim's ``range`` / ``cooperative-sticky`` assignor, given
    the subscriptions of the leader's JoinGroup answer and the topics of its Metadata answers,
    hands every member the partitions the real leader did (members with different
    subscriptions: ``payments`` only to those that want it)."""
    trace = recorded / "trace.jsonl"
    verdict = conform_leaders(read_exchanges(trace), None, metadata=read_metadata(trace))
    assert verdict.divergences == [], verdict.divergences[:3]
    assert verdict.compared >= 4  # start, subscription change, c3 joins, c1 leaves
    assert verdict.equal == verdict.compared
