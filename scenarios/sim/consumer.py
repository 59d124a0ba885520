"""A plain consumer group in the engine: ``KafkaConsumer`` members (:mod:`members.consumer`).

Every consumer subscribes to every topic of the scenario; an ``add_partitions`` step grows a
topic during the run (every running consumer's metadata sees it at once; a consumer started
later starts with it). A ``restart`` step with a new ``partition.assignment.strategy`` is a
bounce of a rolling upgrade (docs/consumer.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from members.consumer import ConsumerClient, MetadataUpdate
from members.consumer import Subscribe as SubscribeMessage
from members.group_client import GroupClient
from protocol.effects import Effect
from scenarios.check.consumer_ownership import consumer_log_violations
from scenarios.check.consumer_summary import summarize_consumers
from scenarios.check.summary_types import ConsumerSummary
from scenarios.check.violation import Violation
from scenarios.eventlog.records import DecodedLog
from scenarios.input.consumer import (
    AddPartitions,
    LoadedConsumerScenario,
    Subscribe,
    grown_topic,
)
from scenarios.input.steps import Planned
from scenarios.sim.engine import Engine
from scenarios.sim.events import Deliver

__all__ = ["ConsumerKind", "CONSUMER_GROUP_ID", "summarize_consumers"]

CONSUMER_GROUP_ID = "consumer-group"


class ConsumerKind:
    """The consumer side of a run (:class:`scenarios.sim.run_kind.RunKind`).

    Args:
        loaded: the scenario, from :func:`scenarios.input.consumer.loads_consumer_scenario`.
    """

    group_id = CONSUMER_GROUP_ID

    def __init__(self, loaded: LoadedConsumerScenario) -> None:
        self.loaded = loaded
        self.configs = {c.name: c.config for c in loaded.consumers}
        #: the cluster's topics now (replaced, never changed in place: consumers keep the
        #: version they last saw)
        self.cluster = dict(loaded.cluster)
        #: the run's log decoded once for the end-of-run checks and the summary after them
        self._decoded = DecodedLog()

    def run_start_fields(self) -> dict[str, Any]:
        return {
            "app": "consumer",
            "topics": {t: len(parts) for t, parts in self.loaded.cluster.items()},
            "workers": [c.name for c in self.loaded.consumers],
            "connectors": {},
        }

    def plan(self, engine: Engine) -> list[tuple[int, str, Any]]:
        return [(c.start_ms, c.name, c.config) for c in self.loaded.consumers if c.autostart]

    def new_member(self, engine: Engine, name: str, address: str, config: Any) -> GroupClient:
        if config is not None:
            self.configs[name] = config
        return ConsumerClient(
            name,
            self.configs[name],
            self.cluster,
            group_id=CONSUMER_GROUP_ID,
            address=address,
            log_heartbeats=engine.log_heartbeats,
        )

    def start_config(self, engine: Engine, planned: Planned) -> Any:
        return planned.config

    def restart_config(self, engine: Engine, planned: Planned) -> Any:
        return planned.config

    def shutdown(self, member: GroupClient, planned: Planned, now_ms: int) -> list[Effect]:
        assert isinstance(member, ConsumerClient)
        return member.shutdown(now_ms)

    def deliver(self, engine: Engine, dest: str, source: str, message: Any) -> bool:
        return False

    def summarize(self, records: list[dict[str, Any]]) -> ConsumerSummary:
        """:func:`summarize_consumers` over the log decoded once for the end-of-run checks and
        the summary (:class:`scenarios.eventlog.records.DecodedLog`: only the records added
        since are decoded the second time)."""
        summary = summarize_consumers(records, self._decoded.of(records))
        self._decoded.release_at_end(records)
        return summary

    def end_violations(
        self, records: list[dict[str, Any]], summary_of: Callable[[], ConsumerSummary]
    ) -> list[Violation]:
        """The ownership rules (:mod:`scenarios.check.consumer_ownership`) and the protocol
        checkers over the whole log (the summary is not read: ``summary_of`` is not called),
        decoded once (:class:`scenarios.eventlog.records.DecodedLog`)."""
        return consumer_log_violations(records, self._decoded.of(records))

    def expect_failures(self, summary: ConsumerSummary) -> list[str]:
        """The scenario's unmet ``[expect]`` lines."""
        expect = self.loaded.scenario.expect
        s = summary.consumer
        out = []
        expected = set(expect.expected_violations)
        unexpected = sum(n for name, n in s.violation_names.items() if name not in expected)
        if expect.no_violations and unexpected:
            out.append(f"no_violations: {unexpected} violation(s)")
        if expect.final_protocol is not None and s.final_protocol != expect.final_protocol:
            out.append(f"final_protocol: expected {expect.final_protocol}, got {s.final_protocol}")
        generations = s.generations
        if expect.min_rebalances is not None and generations < expect.min_rebalances:
            out.append(f"min_rebalances: expected >= {expect.min_rebalances}, got {generations}")
        if expect.max_rebalances is not None and generations > expect.max_rebalances:
            out.append(f"max_rebalances: expected <= {expect.max_rebalances}, got {generations}")
        if expect.fatal_members is not None and s.fatal != expect.fatal_members:
            out.append(f"fatal_members: expected {expect.fatal_members}, got {s.fatal}")
        return out

    def apply_step(self, engine: Engine, planned: Planned) -> None:
        """``subscribe``: the consumer's application calls ``subscribe`` with the step's
        topics (:class:`members.consumer.Subscribe`, delivered like a fault).
        ``add_partitions``: the topic grows (a ``partitions_added`` record) and every running
        consumer's metadata refresh sees it (:class:`members.consumer.MetadataUpdate`)."""
        step = planned.step
        if isinstance(step, AddPartitions):
            self.cluster = {**self.cluster, step.topic: grown_topic(self.cluster, step)}
            engine.log.emit(
                engine.now_ms, "partitions_added", topic=step.topic, partitions=step.count
            )
            update = MetadataUpdate(self.cluster)
            for running in sorted(engine.addresses.values()):
                engine.push(engine.now_ms, Deliver(running, "fault", update))
            return
        if not isinstance(step, Subscribe):
            raise AssertionError(f"no consumer step {planned.action!r}")
        address = engine.addresses.get(step.member)
        if address is not None:
            engine.push(
                engine.now_ms, Deliver(address, "fault", SubscribeMessage(tuple(step.topics)))
            )
