"""The shape of a run summary (``summary.json``) as msgspec Structs.

:func:`scenarios.check.metrics.connect_summary` (Connect),
:func:`scenarios.check.streams_summary.streams_summary` (Kafka Streams) and
:func:`scenarios.check.consumer_summary.consumer_summary` (plain consumers) build these
Structs; the engine carries them as they are (``RunResult.summary``,
:meth:`scenarios.sim.run_kind.RunKind.summarize`), and ``summary.json`` holds their builtins
(:func:`summary_dict`; :func:`summary_struct` reads them back). They are closed (unknown
keys are rejected), so a test can hold every library run's ``summary.json`` to them. What
each key means is in those functions' docstrings and in ``docs/event-log.md`` ("Summary").
All times are virtual ms.

``summary.json`` is the summary plus ``expectation_failures`` (one line per unmet
``[expect]``), written with sorted keys by ``scenarios.cli.outputs.write_outputs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import msgspec
from msgspec import UNSET, UnsetType

from scenarios import kinds
from scenarios.kinds.protocol import Headline

__all__ = [
    "AssignmentCost",
    "ClientTasks",
    "ConnectConvergence",
    "ConnectSummary",
    "ConsumerDetails",
    "ConsumerSummary",
    "Restoration",
    "PhaseSummary",
    "StreamsConvergence",
    "StreamsDetails",
    "StreamsSummary",
    "Summary",
    "SummaryBase",
    "WorkerCounts",
    "base_headline",
    "summary_dict",
    "summary_struct",
    "summary_type",
    "validate_summary",
]


class _Closed(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A summary object: unknown keys are an error."""


class WorkerCounts(_Closed, kw_only=True):
    """Running connectors and tasks of one live worker (client) at the end of the run."""

    connectors: int
    tasks: int


class PhaseSummary(_Closed, kw_only=True):
    """One phase of the run; phases partition it, so their counts add up to the totals."""

    name: str
    start_ms: int
    end_ms: int
    protocols: list[str]
    rebalances: int
    task_downtime_ms_total: int
    task_movements: int
    violations: dict[str, int]


class ConnectConvergence(_Closed, kw_only=True):
    """Why a Connect run did (not) converge: instance ids per problem, and max − min running
    tasks / connectors over live workers — all judged on the group's assignment: an instance
    counts where a worker runs it inside its assignment snapshot. ``leftover_tasks`` /
    ``leftover_connectors`` are the instances some worker runs outside its snapshot
    (KAFKA-13816's leftovers, :mod:`scenarios.check.snapshots`), as ``"<id>@<worker>"``,
    sorted; they do not count against convergence (the known issue names them)."""

    not_running_tasks: list[str]
    duplicate_tasks: list[str]
    unconfigured_running_tasks: list[str]
    task_spread: int
    not_running_connectors: list[str]
    duplicate_connectors: list[str]
    unconfigured_running_connectors: list[str]
    connector_spread: int
    leftover_tasks: list[str] = []
    leftover_connectors: list[str] = []

    def holds(self) -> bool:
        """Converged: every configured instance runs once, nothing unconfigured runs, and
        both spreads are at most 1 (on the group's assignment: leftovers aside)."""
        return (
            not self.not_running_tasks
            and not self.duplicate_tasks
            and not self.unconfigured_running_tasks
            and not self.not_running_connectors
            and not self.duplicate_connectors
            and not self.unconfigured_running_connectors
            and self.task_spread <= 1
            and self.connector_spread <= 1
        )


class StreamsConvergence(_Closed, kw_only=True):
    """Why a Streams run did (not) converge: task ids, then one line per problem."""

    not_running_tasks: list[str]
    duplicate_tasks: list[str]
    unsettled: list[str]
    invalid: list[str]
    unbalanced: list[str]


class ClientTasks(_Closed, kw_only=True):
    """Active and standby task ids of one Streams client."""

    active: list[str]
    standby: list[str]


class AssignmentCost(_Closed, kw_only=True):
    """A rack-aware assignment's cost before and after optimisation, by generation."""

    generation: int
    before: int
    after: int | None


class Restoration(_Closed, kw_only=True):
    """Active tasks restoring their state: how many finished, virtual ms from
    ``active_task_start`` to ``active_task_running`` (total and worst), how many were stopped
    while restoring, and how many were still restoring at the end."""

    restored: int
    restore_ms_total: int
    restore_ms_max: int
    abandoned: int
    restoring_at_end: int


class StreamsDetails(_Closed, kw_only=True):
    """``summary["streams"]`` (docs/streams.md)."""

    assignment_history: list[dict[str, ClientTasks]]
    final_assignment: dict[str, ClientTasks]
    probing_rebalances: int
    probing_scheduled: int
    warmups: int
    restoration: Restoration
    costs: list[AssignmentCost]
    final_cost: int | None
    client_tags: dict[str, dict[str, str]]
    #: gone KIP-345 static clients the last generation still holds (``static-member-kept``)
    static_kept: list[str]
    final_holdings: dict[str, ClientTasks]


class SummaryBase(_Closed, kw_only=True):
    """The keys both apps' summaries have (``connectors_configured`` and the connector keys
    are 0 for Streams; ``workers_final`` is per client there)."""

    #: ``run_start``'s (``None`` for a log without one)
    scenario: str | None
    seed: int | None
    start_ms: int
    end_ms: int
    rebalances: int
    join_rounds: int
    sync_rounds: int
    connectors_configured: int
    tasks_configured: int
    task_downtime_ms_total: int
    task_downtime_ms_max: int
    connector_downtime_ms_total: int
    never_started: list[str]
    task_movements: int
    max_imbalance: int
    converged: bool
    time_to_converge_ms: int | None
    violations: dict[str, int]
    final_protocol: str | None
    workers_final: dict[str, WorkerCounts]
    phases: list[PhaseSummary]
    #: only in ``summary.json``
    expectation_failures: list[str] | UnsetType = UNSET


class ConnectSummary(SummaryBase, kw_only=True):
    """:func:`scenarios.check.metrics.summarize`'s result."""

    convergence: ConnectConvergence

    @property
    def unsettled(self) -> bool:
        """Whether the run did not converge, or workers still run KAFKA-13816 leftovers
        (tasks or connectors outside their assignment snapshots): only then can
        :func:`scenarios.check.liveness.liveness_violations` find anything."""
        conv = self.convergence
        return not self.converged or bool(conv.leftover_tasks or conv.leftover_connectors)


class StreamsSummary(SummaryBase, kw_only=True):
    """:func:`scenarios.check.streams_summary.summarize_streams`'s result."""

    convergence: StreamsConvergence
    streams: StreamsDetails


class ConsumerDetails(_Closed, kw_only=True):
    """``summary["consumer"]`` (:func:`scenarios.check.consumer_summary.consumer_summary`;
    docs/event-log.md, "Consumer groups")."""

    generations: int
    #: the last generation's assignor, and ``EAGER``/``COOPERATIVE`` (None before one)
    final_protocol: str | None
    final_rebalance_protocol: str | None
    #: running consumer → its partitions at the end, in assignment order
    owned: dict[str, list[str]]
    #: consumers that died of a fatal error, in order of death
    fatal: list[str]
    violations: int
    #: violation name (its ``known_issue``, else its ``invariant``) → count
    violation_names: dict[str, int]
    partition_downtime_ms_total: int
    #: the worst partition's downtime
    partition_downtime_ms_max: int
    time_to_converge_ms: int | None


class ConsumerSummary(_Closed, kw_only=True):
    """A plain consumer group's run summary: whether every partition is owned once at the end
    (``converged``), and the group's details."""

    converged: bool
    consumer: ConsumerDetails
    #: only in ``summary.json`` (``scenarios.cli.outputs.write_outputs`` adds them)
    scenario: str | UnsetType = UNSET
    seed: int | UnsetType = UNSET
    expectation_failures: list[str] | UnsetType = UNSET


Summary = ConnectSummary | StreamsSummary | ConsumerSummary


def base_headline(summary: SummaryBase) -> Headline:
    """The :class:`scenarios.kinds.Headline` of a Connect or Streams summary
    (:class:`SummaryBase`'s ``converged``, ``time_to_converge_ms`` and task downtime keys)."""
    return Headline(
        converged=summary.converged,
        time_to_converge_ms=summary.time_to_converge_ms,
        downtime_total_ms=summary.task_downtime_ms_total,
        downtime_max_ms=summary.task_downtime_ms_max,
    )


def summary_dict(summary: msgspec.Struct) -> dict[str, Any]:
    """``summary`` as the JSON-able dict the engine carries and ``summary.json`` holds (keys
    in field order; fields left UNSET are not written)."""
    return cast(dict[str, Any], msgspec.to_builtins(summary))


def summary_type(summary: dict[str, Any]) -> type[msgspec.Struct]:
    """The Struct of ``summary``'s kind (summaries carry no tag: :func:`scenarios.kinds.of_summary`
    and :meth:`scenarios.kinds.GroupKind.summary_type`; :class:`StreamsSummary` for Streams,
    else :class:`ConnectSummary`)."""
    return kinds.of_summary(summary).summary_type()


def summary_struct(summary: Mapping[str, Any]) -> Summary:
    """The Struct of a summary read back from ``summary.json`` (its kind's
    :func:`summary_type`); keys that Struct does not have, such as ``groupsim serve``'s
    ``host`` or ``groups``, are left out.

    Raises:
        msgspec.ValidationError: a missing key or a value of the wrong type.
    """
    cls = summary_type(dict(summary))
    fields = cls.__struct_fields__
    return cast(Summary, msgspec.convert({k: v for k, v in summary.items() if k in fields}, cls))


def validate_summary(summary: dict[str, Any]) -> Summary:
    """Check a summary dict (or a decoded ``summary.json``) against its Struct.

    Raises:
        msgspec.ValidationError: a missing or unknown key, or a value of the wrong type
            (the message names it as ``$.key.path``).
    """
    return cast(Summary, msgspec.convert(summary, summary_type(summary)))
