"""The one typed protocol a member kind implements (docs/kinds.md).

A *member kind* is a kind of group client Kafka has: Kafka Connect workers
(``WorkerCoordinator``, ``protocol_type = "connect"``), Kafka Streams clients
(``StreamsPartitionAssignor`` over ``ConsumerCoordinator``) and plain consumers
(``ConsumerCoordinator``, KIP-429, KIP-345). Everything the runner, the checkers, the chaos
driver, the sweeps, the report/summary views and the CLI need to know *per kind* is a member
of :class:`GroupKind`; they look a kind up in :mod:`scenarios.kinds` and call it, and never
test a kind's name.

This module is the bottom of the layering (tests/test_layering.py): it imports nothing of
``scenarios`` at run time; the types it names are imported for type checking only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from scenarios.campaigns.chaos.generate import ChaosConfig, ChaosSpec
    from scenarios.check.summary_types import Summary
    from scenarios.check.violation import LocatedViolation
    from scenarios.input.steps import LoadedView
    from scenarios.sim.engine import RunKind

__all__ = ["GroupKind", "Headline", "KindWords"]


class KindWords(msgspec.Struct, frozen=True, kw_only=True):
    """The words a kind's output uses (summary, report page, timeline, chaos title).

    Attributes:
        title: the kind in lists and messages (``Connect``, ``Streams``, ``consumer``).
        app: the application's full name (``Kafka Connect``, ``Kafka Streams``).
        member: one member of the group (``worker``, ``client``, ``consumer``).
        task: what the group shares out, as counted in the report (``task``, ``active task``,
            ``partition``).
        downtime_of: what :attr:`Headline.downtime_max_ms` is the worst of (``task``,
            ``partition``): the chaos table's and the report page's downtime rows.
    """

    title: str
    app: str
    member: str
    task: str
    downtime_of: str


class Headline(msgspec.Struct, frozen=True, kw_only=True):
    """The figures of a run every kind has, read from its summary by
    :meth:`GroupKind.headline` (virtual ms): what the chaos driver keeps of a run and the
    report page's downtime and convergence rows.

    Attributes:
        converged: the kind's end-of-run liveness held.
        time_to_converge_ms: from the end of the last step to the last change of who runs
            what (at least 0); ``None`` when not converged.
        downtime_total_ms: the downtime of every :attr:`KindWords.downtime_of`, summed.
        downtime_max_ms: the worst one's downtime.
    """

    converged: bool
    time_to_converge_ms: int | None
    downtime_total_ms: int
    downtime_max_ms: int


class GroupKind(Protocol):
    """One member kind, as registered in :mod:`scenarios.kinds`.

    ``name`` is at once the scenario file's top-level ``kind``, the ``app`` field of the
    event log's ``run_start`` record and the key a run's summary keeps the kind's details
    under (the default kind, Connect, writes neither the ``app`` field nor a key).
    """

    name: str
    words: KindWords
    #: The quiet-period rule (:func:`scenarios.check.quiet_periods.check_quiet_period_balance`,
    #: Connect's KIP-415 convergence after ``scheduled.rebalance.max.delay.ms``) applies.
    quiet_period_balance: bool
    #: Members hold active and standby tasks (report, summary and timeline show both).
    standby_tasks: bool
    #: ``groupsim chaos --protocol/--assignor`` choose among the kind's protocols.
    chaos_protocols: bool

    # ---------------------------------------------------------------- scenario files

    def library_dir(self) -> Path | None:
        """The kind's built-in scenarios (``*.toml``), or None when it has none."""

    def loads(self, text: str, source: str | Path) -> LoadedView:
        """Decode and validate a scenario file of this kind (TOML ``text``; ``source`` names
        it in errors).

        Raises:
            ScenarioError: not TOML, another ``kind``, or a bad key/value.
        """

    def record_kinds(self) -> frozenset[str]:
        """The event-log record kinds only this kind's runs write (the ``kind`` tags of its
        module ``scenarios/eventlog/kinds_<name>.py``, which
        :data:`scenarios.eventlog.records.LogRecord` joins into the log's closed schema)."""

    # ---------------------------------------------------------------- engine glue

    def run_kind(self, loaded: Any) -> RunKind:
        """The engine's side of one run of ``loaded`` (:class:`scenarios.sim.run_kind.RunKind`:
        members, steps, summary, end-of-run checks, ``[expect]``)."""

    # ---------------------------------------------------------------- checkers

    def summary_type(self) -> type[msgspec.Struct]:
        """The Struct a run summary of this kind validates against
        (:mod:`scenarios.check.summary_types`)."""

    def headline(self, summary: Summary) -> Headline:
        """The run's :class:`Headline` figures, from its summary Struct (:meth:`summary_type`;
        a saved ``summary.json`` gives it through
        :func:`scenarios.check.summary_types.summary_struct`)."""

    def log_violations(self, records: Sequence[dict[str, Any]]) -> list[LocatedViolation]:
        """Every violation ``groupsim check`` finds in one group's log of this kind, each
        with ``t_ms`` (virtual ms)."""

    # ---------------------------------------------------------------- views
    # The views read a summary as ``summary.json`` holds it (a saved file, or the builtins of
    # the Struct, :func:`scenarios.check.summary_types.summary_dict`).

    def summary_lines(self, summary: Mapping[str, Any]) -> list[Text | str]:
        """The lines ``groupsim run`` prints under its phase table (after the state line)."""

    def render_summary(self, summary: Mapping[str, Any], console: Console, title: str) -> bool:
        """Print a summary that has no phase table (a consumer group's) to ``console``;
        False when the kind uses the common table (:mod:`scenarios.cli.summary_view`)."""

    def report_members(self, summary: Mapping[str, Any]) -> tuple[str, list[str], list[list[str]]]:
        """The report page's members table: its title, column headers and rows."""

    def report_configured(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The report page's "configured" metric rows."""

    def report_downtime(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The report page's downtime rows after the task downtime rows (Connect's connector
        downtime)."""

    def timeline_series(self, records: Sequence[dict[str, Any]]) -> Any:
        """The timeline plot's per-member series (:mod:`scenarios.cli.plots`)."""

    # ---------------------------------------------------------------- chaos

    def chaos_generate(self, config: ChaosConfig, campaign_seed: int, index: int) -> ChaosSpec:
        """The chaos scenario of run ``index`` of campaign ``campaign_seed`` (deterministic;
        without the run budget, which the chaos driver adds).

        Raises:
            NotImplementedError: the kind has no chaos generator yet.
        """

    def chaos_compact(self, spec: ChaosSpec) -> ChaosSpec | None:
        """The shrinker's renaming of ``spec``'s members to short names in first-use order,
        or None when there is nothing to rename (:mod:`scenarios.campaigns.chaos.shrink`)."""

    def chaos_drop_member(self, spec: ChaosSpec) -> ChaosSpec | None:
        """``spec`` without its last member, or None when a step names it or it is the only
        one (the shrinker's last simplification)."""

    def chaos_option_error(self, option: str) -> str:
        """The message rejecting ``groupsim chaos`` ``option`` (``--protocol``,
        ``--assignor``) for a kind without :attr:`chaos_protocols`."""

    def chaos_render(self, spec: ChaosSpec) -> str:
        """``spec`` as a scenario file whose ``settle_ms`` is the kind's liveness bound after
        the last step ends."""
