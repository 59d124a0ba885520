"""What a chaos run's violations mean: known upstream issues (KAFKA-13816, KAFKA-9184,
KAFKA-16056) under their names, and the failure signature of the first one that is not."""

from __future__ import annotations

from typing import Any

from scenarios.check.invariants import KNOWN_ISSUES
from scenarios.check.summary_types import ConnectSummary, StreamsSummary
from scenarios.sim.runner import RunResult

__all__ = ["KNOWN_ISSUES", "known_issue_of", "classify", "failure_signature"]


def known_issue_of(record: dict[str, Any], result: RunResult) -> str | None:
    """The known upstream issue a ``violation`` record belongs to, or ``None``.

    A record with ``known_issue`` belongs to it. So does an end-of-run ``liveness`` violation
    whose only problem is instances running twice that a known-issue ``double_ownership``
    started, and a ``balance`` violation in such a run whose spread those duplicates explain
    (at most 1 + their number). (KAFKA-13816's leftovers — what an old owner runs outside
    its assignment snapshot, until that worker stops — are named by the end-of-run check
    itself.)
    """
    if record.get("known_issue"):
        return str(record["known_issue"])
    invariant = record.get("invariant")
    if invariant not in ("liveness", "balance"):
        return None
    issues: dict[str, str] = {}
    for r in result.records:
        if r.get("kind") == "violation" and r.get("known_issue"):
            for what in ("task", "connector"):
                if r.get(what) is not None:
                    issues[f"{what}:{r[what]}"] = str(r["known_issue"])
    if not issues:
        return None
    spread = 0
    match result.summary:
        case ConnectSummary(convergence=conv):
            duplicates = [f"task:{t}" for t in conv.duplicate_tasks] + [
                f"connector:{c}" for c in conv.duplicate_connectors
            ]
            others = bool(
                conv.not_running_tasks
                or conv.not_running_connectors
                or conv.unconfigured_running_tasks
                or conv.unconfigured_running_connectors
            )
            spread = max(conv.task_spread, conv.connector_spread)
        case StreamsSummary(convergence=streams):
            duplicates = [f"task:{t}" for t in streams.duplicate_tasks]
            # the group has not settled, or holds an invalid assignment
            others = bool(streams.not_running_tasks or streams.unsettled or streams.invalid)
        case _:
            return None
    if not duplicates or others or any(d not in issues for d in duplicates):
        return None
    if invariant == "balance" and spread > 1 + len(duplicates):
        return None
    return issues[duplicates[0]]


def classify(result: RunResult) -> tuple[dict[str, int], tuple[str, str] | None]:
    """The run's violations by name (known upstream issues, including what
    :func:`known_issue_of` attributes to them, under their names) and ``(invariant, detail)``
    of its first violation that is not a known issue (or ``None``)."""
    counts: dict[str, int] = {}
    first: tuple[str, str] | None = None
    for record in result.records:
        if record.get("kind") != "violation":
            continue
        known = known_issue_of(record, result)
        name = known or str(record.get("invariant"))
        counts[name] = counts.get(name, 0) + 1
        if known is None and first is None:
            first = (str(record.get("invariant")), str(record.get("detail", "")))
    return dict(sorted(counts.items())), first


def failure_signature(result: RunResult) -> tuple[str, str] | None:
    """``(invariant, detail)`` of the run's first violation that is not a known upstream
    issue (:func:`known_issue_of`), or ``None``."""
    return classify(result)[1]
