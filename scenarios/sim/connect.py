"""A Kafka Connect group in the engine: workers, the config topic, connector changes.

Kafka Connect workers share configuration through a compacted Kafka topic
(``KafkaConfigBackingStore``). groupsim models it as the address ``"config"``: every write is
a ``config`` record in the log, delivered to every live worker after that worker's read lag
(``groupsim.config.read.lag.ms``), and a read-to-end request (``configBackingStore.refresh``)
is answered with the latest snapshot. A worker's REST address ``worker:<name>`` reaches
whichever incarnation of it runs now.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from members.assignors.base import ConfigSnapshot
from members.config import WorkerConfig
from members.group_client import GroupClient
from members.messages import (
    CONFIG_ADDRESS,
    ConfigUpdate,
    ReadConfigToEnd,
    ReconfigureTasks,
    SessionKey,
    WriteSessionKey,
    WriteTaskConfigs,
)
from members.worker import ConnectWorker
from protocol.effects import Effect
from scenarios.check.expect import evaluate
from scenarios.check.growing_summary import GrowingLogSummary
from scenarios.check.liveness import liveness_violations
from scenarios.check.protocol_checkers import protocol_violations
from scenarios.check.summary_types import ConnectSummary
from scenarios.check.violation import Violation
from scenarios.eventlog.records import DecodedLog
from scenarios.input import schema
from scenarios.input.loader import LoadedScenario
from scenarios.input.steps import Planned
from scenarios.sim.engine import Engine
from scenarios.sim.events import Deliver

__all__ = ["ConnectKind", "GROUP_ID"]

GROUP_ID = "connect-cluster"


class ConnectKind:
    """The Connect side of a run (:class:`scenarios.sim.run_kind.RunKind`).

    Args:
        loaded: the scenario, from :func:`scenarios.input.loader.load_scenario`.

    Attributes:
        config_offset / connectors / session_key: the config topic as written so far.
        worker_configs: each worker's latest config (a ``restart`` may change it).
    """

    group_id = GROUP_ID

    def __init__(self, loaded: LoadedScenario) -> None:
        self.loaded = loaded
        self.config_offset = 0
        self.connectors: dict[str, int] = {}
        self.session_key: SessionKey | None = None
        self.worker_configs: dict[str, WorkerConfig] = {}
        self._engine: Engine | None = None
        #: the run's log decoded once for the summaries and the end-of-run checks
        self._decoded = DecodedLog()
        self._summaries = GrowingLogSummary(self._decoded)

    def run_start_fields(self) -> dict[str, Any]:
        return {
            "workers": [w.name for w in self.loaded.workers],
            "connectors": dict(self.loaded.connectors),
        }

    def plan(self, engine: Engine) -> list[tuple[int, str, Any]]:
        self._engine = engine
        loaded = self.loaded
        if loaded.connectors:
            self._write_config(dict(loaded.connectors), records=len(loaded.connectors))
        starts = []
        for spec in loaded.workers:
            self.worker_configs[spec.name] = spec.config
            starts.append((spec.start_ms, spec.name, spec.config))
        return starts

    def new_member(self, engine: Engine, name: str, address: str, config: Any) -> GroupClient:
        self.worker_configs[name] = config
        return ConnectWorker(
            name,
            config,
            group_id=GROUP_ID,
            config_view=ConfigSnapshot(offset=self.config_offset, connectors=dict(self.connectors)),
            address=address,
            log_heartbeats=engine.log_heartbeats,
            session_key=self.session_key,
        )

    def start_config(self, engine: Engine, planned: Planned) -> WorkerConfig:
        name = planned.member or ""
        return planned.config or self.worker_configs.get(name) or WorkerConfig()

    def restart_config(self, engine: Engine, planned: Planned) -> WorkerConfig:
        return planned.config or self.worker_configs[planned.member or ""]

    def shutdown(self, member: GroupClient, planned: Planned, now_ms: int) -> list[Effect]:
        assert isinstance(member, ConnectWorker)
        return member.shutdown(now_ms)

    def deliver(self, engine: Engine, dest: str, source: str, message: Any) -> bool:
        if dest == CONFIG_ADDRESS:
            if isinstance(message, ReadConfigToEnd):
                engine.send(CONFIG_ADDRESS, source, self._config_update())
            elif isinstance(message, WriteSessionKey):
                self.session_key = message.key
                self._write_config(self.connectors)
            elif isinstance(message, WriteTaskConfigs) and message.connector in self.connectors:
                self._write_config({**self.connectors, message.connector: message.tasks})
            return True
        if dest.startswith("worker:"):  # REST: whichever incarnation runs there now
            address = engine.addresses.get(dest[len("worker:") :], "")
            worker = engine.members.get(address)
            if worker is not None:
                engine.apply(address, worker.handle(message, engine.now_ms))
            return True
        return False

    def apply_step(self, engine: Engine, planned: Planned) -> None:
        step = planned.step
        match step:
            case schema.SetTasks(connector=connector, tasks=tasks) if (
                owner := self._connector_owner(engine, connector)
            ):
                # The connector's worker generates the new task configs and has them written
                # (forwarding them to the leader, signed, when it is not the leader: KIP-507).
                engine.push(
                    engine.now_ms, Deliver(owner, "operator", ReconfigureTasks(connector, tasks))
                )
            case (
                schema.AddConnector(connector=connector, tasks=tasks)
                | schema.SetTasks(connector=connector, tasks=tasks)
            ):
                self._write_config({**self.connectors, connector: tasks})
            case schema.RemoveConnector(connector=connector):
                connectors = dict(self.connectors)
                connectors.pop(connector, None)
                self._write_config(connectors)

    # ------------------------------------------------------------------ the run's outcome

    def summarize(self, records: list[dict[str, Any]]) -> ConnectSummary:
        """:func:`scenarios.check.metrics.summarize`: the run's log is summarized before the
        end-of-run checks and again at its end, so only its new records are read the second
        time (:class:`scenarios.check.growing_summary.GrowingLogSummary`)."""
        summary = self._summaries.summary(records)
        self._decoded.release_at_end(records)
        return summary

    def end_violations(
        self, records: list[dict[str, Any]], summary_of: Callable[[], ConnectSummary]
    ) -> list[Violation]:
        """The end-of-run liveness and balance check (docs/event-log.md), then the protocol
        checkers over the whole log (:mod:`scenarios.check.protocol_checkers`). The log is
        decoded once for the summary and both checks (:class:`scenarios.eventlog.records.
        DecodedLog`). ``summary_of()``: the run's summary so far (:meth:`summarize`)."""
        summary = summary_of()
        typed = self._decoded.of(records)
        if not summary.unsettled:
            return protocol_violations(records, typed)
        return liveness_violations(typed, summary) + protocol_violations(records, typed)

    def expect_failures(self, summary: ConnectSummary) -> list[str]:
        """The scenario's unmet ``[expect]`` lines."""
        return evaluate(self.loaded.scenario.expect, summary)

    # ------------------------------------------------------------------ the config topic

    def _connector_owner(self, engine: Engine, connector: str) -> str | None:
        """Address of the worker running ``connector``, if any."""
        for address, worker in engine.members.items():
            assert isinstance(worker, ConnectWorker)
            if worker.running_connectors.get(connector) == "running":
                return address
        return None

    def _write_config(self, connectors: dict[str, int], records: int = 1) -> None:
        engine = self._engine
        assert engine is not None
        self.config_offset += records
        self.connectors = connectors
        fields: dict[str, Any] = {"offset": self.config_offset, "connectors": dict(connectors)}
        if self.session_key is not None:
            fields["session_key_id"] = self.session_key.key_id
        engine.log.emit(engine.now_ms, "config", **fields)
        update = self._config_update()
        for address, worker in engine.members.items():
            assert isinstance(worker, ConnectWorker)
            at = engine.now_ms + worker.config.config_read_lag_ms
            engine.push(at, Deliver(address, CONFIG_ADDRESS, update))

    def _config_update(self) -> ConfigUpdate:
        return ConfigUpdate(
            offset=self.config_offset,
            connectors=dict(self.connectors),
            session_key=self.session_key,
        )
