"""Plain Kafka consumers as a member kind (``kind = "consumer"``; docs/consumer.md,
docs/kinds.md): ``ConsumerCoordinator`` with the eager and cooperative rebalance protocols
(KIP-429) and static membership (KIP-345).

Its parts: the scenario format :mod:`scenarios.input.consumer`, the engine glue and summary
:mod:`scenarios.sim.consumer`, the ownership rules :mod:`scenarios.check.consumer_ownership`.
The kind has no library directory and no chaos generator yet; its report page and timeline
are drawn as Connect's (the words below are Connect's for those two views, so that their
output stays what it was).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from scenarios import kinds
from scenarios.check.log_check import check_consumer_log
from scenarios.check.summary_types import ConnectSummary
from scenarios.eventlog import kinds_consumer
from scenarios.input.consumer import LoadedConsumerScenario, loads_consumer_scenario
from scenarios.kinds.connect import CONNECT
from scenarios.sim.consumer import ConsumerKind

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from scenarios.campaigns.chaos.generate import ChaosConfig, ChaosSpec

__all__ = ["CONSUMER", "Consumer"]


class Consumer:
    """The plain-consumer kind (:class:`scenarios.kinds.GroupKind`)."""

    name = "consumer"
    words = CONNECT.words  # report page and timeline as Connect's (see the module docstring)
    quiet_period_balance = True  # the rule finds no Connect jobs in a consumer log
    standby_tasks = False
    chaos_protocols = False

    def library_dir(self) -> Path | None:
        return None

    def loads(self, text: str, source: str | Path) -> LoadedConsumerScenario:
        return loads_consumer_scenario(text, source)

    def record_kinds(self) -> frozenset[str]:
        return kinds.record_tags(kinds_consumer)

    def run_kind(self, loaded: Any) -> ConsumerKind:
        return ConsumerKind(loaded)

    def summary_type(self) -> type[msgspec.Struct]:
        return ConnectSummary

    def log_violations(self, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return check_consumer_log(records)

    def summary_lines(self, summary: Mapping[str, Any]) -> list[Text | str]:
        return []

    def render_summary(self, summary: Mapping[str, Any], console: Console, title: str) -> bool:
        from scenarios.cli.summary_view import render_consumer

        render_consumer(summary[self.name], console, title)
        return True

    def report_members(self, summary: Mapping[str, Any]) -> tuple[str, list[str], list[list[str]]]:
        return CONNECT.report_members(summary)

    def report_configured(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        return CONNECT.report_configured(summary)

    def report_downtime(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        return CONNECT.report_downtime(summary)

    def timeline_series(self, records: Sequence[dict[str, Any]]) -> Any:
        return CONNECT.timeline_series(records)

    def chaos_generate(self, config: ChaosConfig, campaign_seed: int, index: int) -> ChaosSpec:
        raise NotImplementedError("no consumer chaos generator yet")

    def chaos_option_error(self, option: str) -> str:
        return f"{option}: Connect only"

    def chaos_compact(self, spec: ChaosSpec) -> ChaosSpec | None:
        raise NotImplementedError("no consumer chaos generator yet")

    def chaos_drop_member(self, spec: ChaosSpec) -> ChaosSpec | None:
        raise NotImplementedError("no consumer chaos generator yet")

    def chaos_render(self, spec: ChaosSpec) -> str:
        raise NotImplementedError("no consumer chaos generator yet")


CONSUMER = kinds.register(Consumer())
