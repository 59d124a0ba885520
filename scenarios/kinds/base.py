"""What most member kinds answer alike (docs/kinds.md): a kind's class derives from
:class:`KindBase` and overrides only what is its own.

A module of the kinds' top layer (tests/test_layering.py): only the kinds' own packages
import it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, cast

import msgspec

from scenarios import kinds
from scenarios.check.log_check import check_group_log
from scenarios.check.summary_types import Summary, SummaryBase, base_headline
from scenarios.kinds.protocol import Headline

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from scenarios.campaigns.chaos.generate import ChaosConfig, ChaosSpec
    from scenarios.check.violation import LocatedViolation

__all__ = ["KindBase", "KindChaos"]


class KindChaos(Protocol):
    """A kind's chaos module (``scenarios/kinds/<name>/chaos.py``): the functions behind
    :meth:`scenarios.kinds.GroupKind.chaos_generate`, ``chaos_render`` and
    ``chaos_drop_member``, under these names."""

    def generate(self, config: ChaosConfig, campaign_seed: int, index: int) -> ChaosSpec: ...

    def render(self, spec: ChaosSpec) -> str: ...

    def drop_member(self, spec: ChaosSpec) -> ChaosSpec | None: ...


class KindBase:
    """The defaults of :class:`scenarios.kinds.GroupKind`'s members that Connect and Streams
    share (and the record kinds and summary type every kind declares as data): the common
    summary table with no lines of the kind's own under it, no downtime
    rows besides the task downtime, a summary with the keys of
    :class:`scenarios.check.summary_types.SummaryBase` (its :class:`Headline`), the
    invariant, liveness and protocol checkers of
    :func:`scenarios.check.log_check.check_group_log`, and members that keep their names
    when the chaos shrinker simplifies a run; and the chaos hooks, answered by the kind's
    chaos module (:class:`KindChaos`, named by :attr:`chaos_module` and imported on first use,
    so looking a kind up to load or run a scenario does not load the chaos machinery)."""

    #: the kind's record Structs, ``scenarios/eventlog/kinds_<name>.py`` (:meth:`record_kinds`)
    record_module: ModuleType
    #: the Struct its summaries validate against (:meth:`summary_type`)
    summary_struct: type[msgspec.Struct]
    #: the kind's :class:`KindChaos` module, e.g. ``"scenarios.kinds.streams.chaos"``
    chaos_module: str

    def record_kinds(self) -> frozenset[str]:
        return kinds.record_tags(self.record_module)

    def summary_type(self) -> type[msgspec.Struct]:
        return self.summary_struct

    def headline(self, summary: Summary) -> Headline:
        assert isinstance(summary, SummaryBase)  # Connect's and Streams' summaries
        return base_headline(summary)

    def log_violations(self, records: Sequence[dict[str, Any]]) -> list[LocatedViolation]:
        return check_group_log(records)

    def summary_lines(self, summary: Mapping[str, Any]) -> list[Text | str]:
        return []

    def render_summary(self, summary: Mapping[str, Any], console: Console, title: str) -> bool:
        return False

    def report_downtime(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        return []

    def chaos_compact(self, spec: ChaosSpec) -> ChaosSpec | None:
        return None

    def chaos_generate(self, config: ChaosConfig, campaign_seed: int, index: int) -> ChaosSpec:
        return self._chaos().generate(config, campaign_seed, index)

    def chaos_render(self, spec: ChaosSpec) -> str:
        return self._chaos().render(spec)

    def chaos_drop_member(self, spec: ChaosSpec) -> ChaosSpec | None:
        return self._chaos().drop_member(spec)

    def _chaos(self) -> KindChaos:
        return cast(KindChaos, importlib.import_module(self.chaos_module))
