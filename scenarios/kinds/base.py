"""What most member kinds answer alike (docs/kinds.md): a kind's class derives from
:class:`KindBase` and overrides only what is its own.

A module of the kinds' top layer (tests/test_layering.py): only the kinds' own packages
import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scenarios.check.log_check import check_group_log
from scenarios.check.summary_types import base_headline
from scenarios.kinds.protocol import Headline

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from scenarios.campaigns.chaos.generate import ChaosSpec

__all__ = ["KindBase"]


class KindBase:
    """The defaults of :class:`scenarios.kinds.GroupKind`'s members that Connect and Streams
    share: the common summary table with no lines of the kind's own under it, no downtime
    rows besides the task downtime, a summary with the keys of
    :class:`scenarios.check.summary_types.SummaryBase` (its :class:`Headline`), the
    invariant, liveness and protocol checkers of
    :func:`scenarios.check.log_check.check_group_log`, and members that keep their names
    when the chaos shrinker simplifies a run."""

    def headline(self, summary: Mapping[str, Any]) -> Headline:
        return base_headline(summary)

    def log_violations(self, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return check_group_log(records)

    def summary_lines(self, summary: Mapping[str, Any]) -> list[Text | str]:
        return []

    def render_summary(self, summary: Mapping[str, Any], console: Console, title: str) -> bool:
        return False

    def report_downtime(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        return []

    def chaos_compact(self, spec: ChaosSpec) -> ChaosSpec | None:
        return None
