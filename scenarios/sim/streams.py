"""A Kafka Streams group in the engine: clients, their state directories, upgrades.

A client's state directory (task → :class:`members.streams_state.StoreState`) outlives its
process: every incarnation of a client gets the same directory, unless a ``restart`` step
wipes it. A ``restart`` with ``latest_supported_version`` plays an upgrade (or downgrade) of
the client's Streams release (version probing, docs/streams.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from members.assignors.streams import TaskId
from members.group_client import GroupClient
from members.streams_client import StreamsClient
from members.streams_state import StoreState
from protocol.effects import Effect
from scenarios.check.growing_summary import GrowingLogSummary
from scenarios.check.protocol_checkers import protocol_violations
from scenarios.check.streams_quiet import streams_quiet_period_violations
from scenarios.check.streams_summary import (
    streams_end_violations,
    streams_expect_failures,
    summarize_streams,
)
from scenarios.check.summary_types import StreamsSummary
from scenarios.check.violation import Violation
from scenarios.eventlog.records import DecodedLog
from scenarios.input.steps import Planned
from scenarios.input.streams import ClientSpec, LoadedStreamsScenario, RestartStep
from scenarios.sim.engine import Engine

__all__ = ["StreamsKind", "STREAMS_GROUP_ID"]

STREAMS_GROUP_ID = "streams-app"


class StreamsKind:
    """The Streams side of a run (:class:`scenarios.sim.run_kind.RunKind`).

    Args:
        loaded: the scenario, from :func:`scenarios.input.streams.load_streams_scenario`.

    Attributes:
        specs: each client's spec (a version-changing restart replaces it).
        state_dirs: each client's state directory, shared by its incarnations.
    """

    group_id = STREAMS_GROUP_ID

    def __init__(self, loaded: LoadedStreamsScenario) -> None:
        self.loaded = loaded
        self.topology = loaded.topology
        self.specs: dict[str, ClientSpec] = {c.name: c for c in loaded.clients}
        self.state_dirs: dict[str, dict[TaskId, StoreState]] = {}
        #: the run's log decoded once for the summaries and the end-of-run checks
        self._decoded = DecodedLog()
        self._base_summaries = GrowingLogSummary(self._decoded)

    def run_start_fields(self) -> dict[str, Any]:
        topo = self.topology
        return {
            "app": "streams",
            "workers": [c.name for c in self.loaded.clients],
            "connectors": {},
            "tasks": {
                "stateful": [str(t) for t in topo.stateful],
                "stateless": [str(t) for t in topo.stateless],
            },
        }

    def plan(self, engine: Engine) -> list[tuple[int, str, Any]]:
        topo = self.topology
        starts = []
        for spec in self.loaded.clients:
            self.state_dirs[spec.name] = {
                task: StoreState(max(0, topo.end_offset(task, spec.start_ms) - lag), spec.start_ms)
                for task, lag in sorted(spec.state.items())
            }
            if spec.autostart:
                starts.append((spec.start_ms, spec.name, None))
        return starts

    def new_member(self, engine: Engine, name: str, address: str, config: Any) -> GroupClient:
        return StreamsClient(
            name,
            self.specs[name].config,
            self.topology,
            group_id=STREAMS_GROUP_ID,
            stores=self.state_dirs.setdefault(name, {}),
            address=address,
            log_heartbeats=engine.log_heartbeats,
        )

    def start_config(self, engine: Engine, planned: Planned) -> None:
        return None  # a client always starts with its spec's config

    def restart_config(self, engine: Engine, planned: Planned) -> None:
        step = planned.step
        assert isinstance(step, RestartStep)
        name = step.client
        if step.wipe_state:
            self.state_dirs[name] = {}
        if step.latest_supported_version is not None:  # an upgrade (or downgrade)
            spec = self.specs[name]
            config = replace(spec.config, latest_supported_version=step.latest_supported_version)
            self.specs[name] = replace(spec, config=config)
        return None

    def shutdown(self, member: GroupClient, planned: Planned, now_ms: int) -> list[Effect]:
        assert isinstance(member, StreamsClient)
        leave_group = bool(getattr(planned.step, "leave_group", False))
        return member.shutdown(now_ms, leave_group=leave_group)

    def deliver(self, engine: Engine, dest: str, source: str, message: Any) -> bool:
        return False

    def summarize(self, records: list[dict[str, Any]]) -> StreamsSummary:
        """:func:`scenarios.check.streams_summary.summarize_streams`; its Connect part read
        once per run (the log is summarized before the end-of-run checks and again at its
        end: :class:`scenarios.check.growing_summary.GrowingLogSummary`)."""
        base = self._base_summaries.summary(records)  # (decodes the records new since)
        summary = summarize_streams(self._decoded.of(records), self.loaded, base)
        self._decoded.release_at_end(records)
        return summary

    def end_violations(
        self, records: list[dict[str, Any]], summary_of: Callable[[], StreamsSummary]
    ) -> list[Violation]:
        """The end-of-run liveness and KIP-441 balance check, the same at the end of every
        long quiet period (:mod:`scenarios.check.streams_quiet`), then the protocol checkers
        over the whole log (:mod:`scenarios.check.protocol_checkers`; the log decoded once for
        them and the summary, :class:`scenarios.eventlog.records.DecodedLog`). ``summary_of()``:
        the run's summary so far (:meth:`summarize`)."""
        summary = summary_of()
        typed = self._decoded.of(records)
        return (
            streams_end_violations(summary)
            + streams_quiet_period_violations(typed, self.loaded)
            + protocol_violations(records, typed)
        )

    def expect_failures(self, summary: StreamsSummary) -> list[str]:
        """The scenario's unmet ``[expect]`` lines."""
        return streams_expect_failures(self.loaded.expect, summary)

    def apply_step(self, engine: Engine, planned: Planned) -> None:
        raise AssertionError(f"no Streams step {planned.action!r}")  # the schema has none
