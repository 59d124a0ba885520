"""Kafka Streams clients as a member kind (``kind = "streams"``; docs/streams.md, docs/kinds.md).

The package holds the kind's object (here) and its Streams-only parts outside the engine:
:mod:`.views` (the summary lines) and :mod:`.chaos` (a chaos spec as a scenario file, the
shrinker's client drop). Elsewhere, by layer: the scenario format :mod:`scenarios.input.streams`,
the engine glue :mod:`scenarios.sim.streams` (``StreamThread`` over ``ConsumerCoordinator``
with ``StreamsPartitionAssignor``), the summary :mod:`scenarios.check.streams_summary`, the
liveness bound :mod:`scenarios.check.streams_bounds`, the chaos generator
:mod:`scenarios.campaigns.chaos.generate_streams`, the record kinds
:mod:`scenarios.eventlog.kinds_streams`. Streams words (client, active/standby task) appear
only in what this kind renders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scenarios import kinds
from scenarios.check.summary_types import StreamsSummary
from scenarios.eventlog import kinds_streams
from scenarios.input.library import streams_library_dir
from scenarios.input.streams import LoadedStreamsScenario, loads_streams_scenario
from scenarios.kinds.base import KindBase
from scenarios.kinds.protocol import KindWords
from scenarios.sim.streams import StreamsKind

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["STREAMS", "Streams"]


class Streams(KindBase):
    """The Kafka Streams kind (:class:`scenarios.kinds.GroupKind`)."""

    name = "streams"
    words = KindWords(
        title="Streams",
        app="Kafka Streams",
        member="client",
        task="active task",
        downtime_of="task",
    )
    quiet_period_balance = False
    standby_tasks = True
    record_module = kinds_streams
    summary_struct = StreamsSummary
    chaos_module = "scenarios.kinds.streams.chaos"
    chaos_protocols = False

    def library_dir(self) -> Path | None:
        return streams_library_dir()

    def loads(self, text: str, source: str | Path) -> LoadedStreamsScenario:
        return loads_streams_scenario(text, source)

    def run_kind(self, loaded: Any) -> StreamsKind:
        return StreamsKind(loaded)

    def summary_lines(self, summary: Mapping[str, Any]) -> list[Text | str]:
        from scenarios.kinds.streams.views import streams_lines

        return streams_lines(summary, summary[self.name])

    def report_members(self, summary: Mapping[str, Any]) -> tuple[str, list[str], list[list[str]]]:
        from scenarios.cli.report import num

        holdings = summary[self.name].get("final_holdings") or {}
        rows = [
            [c, num(len(h.get("active", ()))), num(len(h.get("standby", ())))]
            for c, h in holdings.items()
        ]
        return "Clients at the end", ["client", "active tasks", "standby tasks"], rows

    def report_configured(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        from scenarios.cli.report import num

        return [("tasks configured", num(summary.get("tasks_configured")))]

    def timeline_series(self, records: Sequence[dict[str, Any]]) -> Any:
        from scenarios.cli.timeline_series import streams_series

        return streams_series(records)

    def chaos_option_error(self, option: str) -> str:
        return (
            f"{option}: Connect only; a Streams campaign (--kind streams) runs Kafka "
            "Streams' high-availability assignor"
        )


STREAMS = kinds.register(Streams())
