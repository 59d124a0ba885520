"""Kafka Connect workers as a member kind (``kind = "connect"``, the default; docs/kinds.md).

The package holds the kind's object (here) and its Connect-only parts outside the engine:
:mod:`.views` (the summary lines) and :mod:`.chaos` (a chaos spec as a scenario file, the
shrinker's worker edits). Elsewhere, by layer: the scenario format
:mod:`scenarios.input.schema` / :mod:`scenarios.input.loader`, the engine glue
:mod:`scenarios.sim.connect` (``WorkerCoordinator``/``DistributedHerder``), the summary
:mod:`scenarios.check.metrics`, the liveness bound :mod:`scenarios.campaigns.chaos.bound`, the
chaos generator :func:`scenarios.campaigns.chaos.generate.generate_connect`, the record kinds
:mod:`scenarios.eventlog.kinds_connect`. View and chaos parts are imported when called, so
looking the kind up costs only its scenario and engine modules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scenarios import kinds
from scenarios.check.summary_types import ConnectSummary
from scenarios.eventlog import kinds_connect
from scenarios.input.library import library_dir
from scenarios.input.loader import LoadedScenario, loads_scenario
from scenarios.kinds.base import KindBase
from scenarios.kinds.protocol import KindWords
from scenarios.sim.connect import ConnectKind

if TYPE_CHECKING:
    from rich.text import Text

    from scenarios.campaigns.chaos.generate import ChaosSpec

__all__ = ["CONNECT", "Connect"]


class Connect(KindBase):
    """The Connect kind (:class:`scenarios.kinds.GroupKind`)."""

    name = "connect"
    words = KindWords(
        title="Connect", app="Kafka Connect", member="worker", task="task", downtime_of="task"
    )
    quiet_period_balance = True
    standby_tasks = False
    record_module = kinds_connect
    summary_struct = ConnectSummary
    chaos_module = "scenarios.kinds.connect.chaos"
    chaos_protocols = True

    def library_dir(self) -> Path | None:
        return library_dir()

    def loads(self, text: str, source: str | Path) -> LoadedScenario:
        return loads_scenario(text, source)

    def run_kind(self, loaded: Any) -> ConnectKind:
        return ConnectKind(loaded)

    def summary_lines(self, summary: Mapping[str, Any]) -> list[Text | str]:
        from scenarios.kinds.connect.views import connect_lines

        return connect_lines(summary)

    def report_members(self, summary: Mapping[str, Any]) -> tuple[str, list[str], list[list[str]]]:
        from scenarios.cli.report import num

        workers = summary.get("workers_final") or {}
        rows = [[w, num(c.get("connectors")), num(c.get("tasks"))] for w, c in workers.items()]
        return "Workers at the end", ["worker", "connectors", "tasks"], rows

    def report_configured(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        from scenarios.cli.report import num

        configured = (
            f"{num(summary.get('connectors_configured'))} / {num(summary.get('tasks_configured'))}"
        )
        return [("connectors / tasks configured", configured)]

    def report_downtime(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        from scenarios.cli.report import seconds

        total = summary.get("connector_downtime_ms_total")
        return [("connector downtime, total (s)", seconds(total))]

    def timeline_series(self, records: Sequence[dict[str, Any]]) -> Any:
        from scenarios.cli.timeline_series import connect_series

        return connect_series(records)

    def chaos_option_error(self, option: str) -> str:
        return f"{option}: not for {self.words.app}"  # never raised: Connect takes them

    def chaos_compact(self, spec: ChaosSpec) -> ChaosSpec | None:
        from scenarios.kinds.connect.chaos import compact

        return compact(spec)


CONNECT = kinds.register(Connect())
