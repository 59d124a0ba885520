"""Plain Kafka consumers as a member kind (``kind = "consumer"``; docs/consumer.md,
docs/kinds.md): ``ConsumerCoordinator`` with the eager and cooperative rebalance protocols
(KIP-429) and static membership (KIP-345).

Its parts: the scenario format :mod:`scenarios.input.consumer`, the engine glue and summary
:mod:`scenarios.sim.consumer`, the ownership rules :mod:`scenarios.check.consumer_ownership`.
Its library is ``scenarios/library/consumer/``
(:func:`scenarios.input.library.consumer_library_dir`); its chaos generator
:mod:`scenarios.campaigns.chaos.generate_consumer` (on the fault timeline it shares with
Streams, :mod:`scenarios.campaigns.chaos.timeline`), its chaos scenario file and shrinker
edits :mod:`.chaos`, its end-of-run liveness :mod:`scenarios.check.consumer_liveness` and
known behaviours :mod:`scenarios.check.consumer_known`; ``groupsim compat --kind consumer``
is :mod:`scenarios.campaigns.compat_consumer`. Its summary, partition downtime and time to
converge are :mod:`scenarios.check.consumer_summary` (:meth:`Consumer.headline` gives them to
the chaos driver and the report page, in the consumer words of :attr:`Consumer.words`); its
report page's member table and timeline are drawn as Connect's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scenarios import kinds
from scenarios.check.log_check import check_consumer_log
from scenarios.check.summary_types import ConsumerSummary, Summary
from scenarios.eventlog import kinds_consumer
from scenarios.input.consumer import LoadedConsumerScenario, loads_consumer_scenario
from scenarios.input.library import consumer_library_dir
from scenarios.kinds.base import KindBase
from scenarios.kinds.connect import CONNECT
from scenarios.kinds.protocol import Headline, KindWords
from scenarios.sim.consumer import ConsumerKind

if TYPE_CHECKING:
    from rich.console import Console

    from scenarios.check.violation import LocatedViolation

__all__ = ["CONSUMER", "Consumer"]


class Consumer(KindBase):
    """The plain-consumer kind (:class:`scenarios.kinds.GroupKind`)."""

    name = "consumer"
    words = KindWords(
        title="consumer",
        app="consumer groups",
        member="consumer",
        task="partition",
        downtime_of="partition",
    )
    quiet_period_balance = True  # the rule finds no Connect jobs in a consumer log
    standby_tasks = False
    record_module = kinds_consumer
    summary_struct = ConsumerSummary
    chaos_module = "scenarios.kinds.consumer.chaos"
    chaos_protocols = False

    def library_dir(self) -> Path | None:
        return consumer_library_dir()

    def loads(self, text: str, source: str | Path) -> LoadedConsumerScenario:
        return loads_consumer_scenario(text, source)

    def run_kind(self, loaded: Any) -> ConsumerKind:
        return ConsumerKind(loaded)

    def headline(self, summary: Summary) -> Headline:
        """Partition downtime and convergence (:mod:`scenarios.check.consumer_summary`)."""
        assert isinstance(summary, ConsumerSummary)
        details = summary.consumer
        return Headline(
            converged=summary.converged,
            time_to_converge_ms=details.time_to_converge_ms,
            downtime_total_ms=details.partition_downtime_ms_total,
            downtime_max_ms=details.partition_downtime_ms_max,
        )

    def log_violations(self, records: Sequence[dict[str, Any]]) -> list[LocatedViolation]:
        return check_consumer_log(records)

    def render_summary(self, summary: Mapping[str, Any], console: Console, title: str) -> bool:
        from scenarios.cli.summary_view import render_consumer

        render_consumer(summary[self.name], console, title)
        return True

    def report_members(self, summary: Mapping[str, Any]) -> tuple[str, list[str], list[list[str]]]:
        owned = summary[self.name]["owned"]
        rows = [[c, ", ".join(parts) or "-"] for c, parts in owned.items()]
        return "Consumers at the end", ["consumer", "partitions owned"], rows

    def report_configured(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        details = summary[self.name]
        protocol = details["final_protocol"] or "-"
        return [
            (
                "final assignor (rebalance protocol)",
                f"{protocol} ({details['final_rebalance_protocol'] or '-'})",
            )
        ]

    def timeline_series(self, records: Sequence[dict[str, Any]]) -> Any:
        return CONNECT.timeline_series(records)

    def chaos_option_error(self, option: str) -> str:
        return (
            f"{option}: Connect only; a consumer campaign (--kind consumer) draws its "
            "consumers' partition.assignment.strategy"
        )


CONSUMER = kinds.register(Consumer())
