"""The shape of a run summary (``summary.json``) as msgspec Structs.

:func:`scenarios.check.metrics.summarize` (Connect) and
:func:`scenarios.check.streams_summary.summarize_streams` (Kafka Streams) return plain dicts;
these Structs are their schema, closed (unknown keys are rejected), so a test can hold every
library run's ``summary.json`` to it. What each key means is in those functions' docstrings
and in ``docs/event-log.md`` ("Summary"). All times are virtual ms.

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
    "ConnectConvergence",
    "ConnectSummary",
    "PhaseSummary",
    "StreamsConvergence",
    "StreamsDetails",
    "StreamsSummary",
    "Summary",
    "SummaryBase",
    "WorkerCounts",
    "base_headline",
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
    tasks / connectors over live workers."""

    not_running_tasks: list[str]
    duplicate_tasks: list[str]
    unconfigured_running_tasks: list[str]
    task_spread: int
    not_running_connectors: list[str]
    duplicate_connectors: list[str]
    unconfigured_running_connectors: list[str]
    connector_spread: int


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

    scenario: str
    seed: int
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


class StreamsSummary(SummaryBase, kw_only=True):
    """:func:`scenarios.check.streams_summary.summarize_streams`'s result."""

    convergence: StreamsConvergence
    streams: StreamsDetails


Summary = ConnectSummary | StreamsSummary


def base_headline(summary: Mapping[str, Any]) -> Headline:
    """The :class:`scenarios.kinds.Headline` of a Connect or Streams summary
    (:class:`SummaryBase`'s ``converged``, ``time_to_converge_ms`` and task downtime keys)."""
    return Headline(
        converged=bool(summary.get("converged")),
        time_to_converge_ms=summary.get("time_to_converge_ms"),
        downtime_total_ms=int(summary.get("task_downtime_ms_total") or 0),
        downtime_max_ms=int(summary.get("task_downtime_ms_max") or 0),
    )


def summary_type(summary: dict[str, Any]) -> type[msgspec.Struct]:
    """The Struct of ``summary``'s kind (summaries carry no tag: :func:`scenarios.kinds.of_summary`
    and :meth:`scenarios.kinds.GroupKind.summary_type`; :class:`StreamsSummary` for Streams,
    else :class:`ConnectSummary`)."""
    return kinds.of_summary(summary).summary_type()


def validate_summary(summary: dict[str, Any]) -> Summary:
    """Check a summary dict (or a decoded ``summary.json``) against its Struct.

    Raises:
        msgspec.ValidationError: a missing or unknown key, or a value of the wrong type
            (the message names it as ``$.key.path``).
    """
    return cast(Summary, msgspec.convert(summary, summary_type(summary)))
