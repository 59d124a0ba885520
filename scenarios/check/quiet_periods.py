"""``quiet_period_balance``: a Connect group converges and is balanced at the end of every
quiet period of a run, not only at its end (a pure function over a whole event log).

A **disturbance** is anything that may legitimately unsettle the group:

- a ``step`` record other than ``phase`` (a fault, a restart, a config write, …), from its
  ``t_ms`` to :func:`scenarios.check.metrics.step_end_ms` (a fault heals, a restarted worker
  is back, a stall ends);
- a ``fault`` record (from ``t_ms`` to its ``until_ms`` / ``t_ms`` + its ``duration_ms``,
  ``stall_ms`` or ``down_ms``), for faults injected without a step;
- a ``config`` record (a config-topic write: the connectors changed, e.g. a connector's new
  task count forwarded some ms after its ``set_tasks`` step);
- a ``member_start``, ``member_stop`` or ``member_crash`` (a process joins or goes away).

A coordinator's ``member_removed`` is not one: a removal is the group reacting to a
disturbance (or to a bug), within the bound.

A **quiet period** starts when every disturbance so far has ended (at ``E``) and lasts until
the next one starts. If it is longer than the liveness bound ``B``
(:func:`scenarios.check.bounds.bound_from_log`: the bound chaos gives a run after its last
fault, computed from the log's worker settings), the group must have converged by ``E + B``:
every configured connector and task runs exactly once, nothing else runs, and the spread of
tasks and connectors over live workers is at most 1 (under ``static``, of wildcard jobs over
wildcard workers) — the end-of-run ``liveness``/``balance`` rules of
:func:`scenarios.check.liveness.liveness_violations`, applied to the log up to ``E + B``. A
quiet period that lasts to the end of the run is left to the end-of-run check. What the
end-of-run check (or chaos's ``known_issue_of``) attributes to a known upstream issue — only
duplicates left by double ownerships a known issue explains — carries that ``known_issue``
here too. KAFKA-13816's leftovers (what a worker runs outside its assignment snapshot,
:mod:`scenarios.check.snapshots`) do not count against convergence at all. Kafka Streams
logs are not judged here (their settling rules are KIP-441's, docs/streams.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from msgspec import UNSET

from scenarios import kinds
from scenarios.check.bounds import BOUND_KINDS, bound_from_log
from scenarios.check.invariants import InvariantChecker
from scenarios.check.liveness import liveness_violations
from scenarios.check.log_rules import reads_all_typed
from scenarios.check.metrics import ConnectSummarizer, connect_summary, step_end_ms
from scenarios.check.summary_types import ConnectSummary
from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k
from scenarios.eventlog.records import RECORD_TYPES, LogRecord, record_to_dict

__all__ = [
    "QUIET_PERIOD_BALANCE",
    "quiet_periods",
    "check_quiet_period_balance",
    "as_quiet_period_violation",
]

QUIET_PERIOD_BALANCE = "quiet_period_balance"

#: The Structs of the records a disturbance is (a ``step``/``fault`` only some of them).
_DISTURBANCE_TYPES = frozenset(
    {k.Step, k.Fault, k.MemberStart, k.MemberStop, k.MemberCrash, k.Config}
)
#: The Structs :func:`scenarios.check.bounds.bound_from_log` reads.
_BOUND_TYPES = frozenset(RECORD_TYPES[kind] for kind in BOUND_KINDS)


def _disturbance(record: LogRecord) -> tuple[int, int] | None:
    """``(start, end)`` of the disturbance ``record`` is (virtual ms), or None."""
    match record:
        case k.Step(action="phase"):
            return None
        case k.Step() as step:
            return step.t_ms, step_end_ms(step)
        case k.Fault(until_ms=int(until)) as fault:
            return fault.t_ms, max(fault.t_ms, until)
        case k.Fault() as fault:
            return fault.t_ms, max(fault.t_ms, step_end_ms(fault))
        case k.MemberStart() | k.MemberStop() | k.MemberCrash() | k.Config():
            return record.t_ms, record.t_ms
    return None


def quiet_periods(records: Sequence[LogRecord], bound_ms: int) -> list[tuple[int, int]]:
    """The quiet periods of ``records`` (typed: :data:`scenarios.eventlog.records.LogRecord`)
    longer than ``bound_ms`` that end before the run does, as ``(start, next disturbance)``
    pairs (virtual ms)."""
    out: list[tuple[int, int]] = []
    settled: int | None = None  # when every disturbance so far has ended
    disturbing = _DISTURBANCE_TYPES
    for record in records:
        if type(record) not in disturbing:
            continue  # (most records: one set lookup)
        span = _disturbance(record)
        if span is None:
            continue
        start, end = span
        if settled is not None and start - settled > bound_ms:
            out.append((settled, start))
        settled = end if settled is None else max(settled, end)
    return out


def _converged_at(records: Sequence[LogRecord], times: Sequence[int]) -> list[bool]:
    """Whether the run had converged (``summarize``'s ``converged``) after every record with
    ``t_ms`` <= each of ``times`` (ascending). One pass."""
    summarizer = ConnectSummarizer()
    out: list[bool] = []
    pending = list(times)

    def judge() -> bool:
        return summarizer.convergence().holds()

    for record in records:
        while pending and record.t_ms > pending[0]:
            out.append(judge())
            pending.pop(0)
        if not pending:
            return out
        summarizer.feed(record)
    out.extend(judge() for _ in pending)
    return out


def _with_safety_violations(records: Sequence[LogRecord]) -> list[LogRecord]:
    """``records`` with the safety checker's ``violation`` records in place (re-derived, so a
    log read back without them attributes known issues the same way). The online checker
    reads record dicts: each record is encoded back (:func:`scenarios.eventlog.records.
    record_to_dict`; only for a quiet period that did not converge)."""
    checker = InvariantChecker()
    out: list[LogRecord] = []
    for record in records:
        if isinstance(record, k.Violation):
            continue
        out.append(record)
        for violation in checker.feed(record_to_dict(record)):
            fields = {"t_ms": record.t_ms, "seq": record.seq, "kind": "violation"}
            out.append(msgspec.convert({**fields, **violation.fields()}, k.Violation))
    return out


def _kind_of(records: Sequence[LogRecord]) -> kinds.GroupKind:
    """:func:`scenarios.kinds.of_log` of a typed log: the ``app`` of a ``run_start`` among its
    first three records."""
    for r in records[:3]:
        if isinstance(r, k.RunStart) and r.app is not UNSET:
            return kinds.get(r.app)
    return kinds.get(kinds.DEFAULT)


def _duplicates_started_by_known_issues(
    records: Sequence[LogRecord], summary: ConnectSummary
) -> str | None:
    """The rule chaos applies to the end of a run (``campaigns.chaos.known_issue_of``): when
    the only problem is instances running twice, each started by a double ownership that a
    known upstream issue explains, and the spread is at most 1 + their number, the label of the
    first one; else None."""
    conv = summary.convergence
    if (
        conv.not_running_tasks
        or conv.not_running_connectors
        or conv.unconfigured_running_tasks
        or conv.unconfigured_running_connectors
    ):
        return None
    issues: dict[tuple[str, str], str] = {}
    for r in records:
        if isinstance(r, k.Violation) and r.known_issue:
            for what, instance in (("task", r.task), ("connector", r.connector)):
                if isinstance(instance, str):
                    issues[(what, instance)] = r.known_issue
    duplicates = [("task", t) for t in conv.duplicate_tasks] + [
        ("connector", c) for c in conv.duplicate_connectors
    ]
    if not duplicates or any(d not in issues for d in duplicates):
        return None
    if max(conv.task_spread, conv.connector_spread) > 1 + len(duplicates):
        return None
    return issues[duplicates[0]]


@reads_all_typed
def check_quiet_period_balance(records: Sequence[LogRecord]) -> list[Violation]:
    """``quiet_period_balance`` violations of a Connect log (typed:
    :data:`scenarios.eventlog.records.LogRecord`; ``[]`` for a log whose kind has no
    such rule, :attr:`scenarios.kinds.GroupKind.quiet_period_balance`: Streams): one per
    quiet period longer than the bound after which the group had not converged, with the
    end-of-run check's fields (``tasks``/``connectors`` or ``task_counts``/
    ``connector_counts``), ``quiet_from_ms``, ``checked_at_ms``, ``bound_ms``, ``known_issue``
    when a known upstream issue explains it, and ``cause_seq`` (the last record at or before
    the checked time)."""
    if not records or not _kind_of(records).quiet_period_balance:
        return []
    live = [r for r in records if not isinstance(r, k.Violation)]
    bound = bound_from_log([r for r in live if type(r) in _BOUND_TYPES])
    periods = quiet_periods(live, bound)
    if not periods:
        return []
    checks = [start + bound for start, _ in periods]
    found: list[Violation] = []
    for (start, _), at, ok in zip(periods, checks, _converged_at(live, checks), strict=True):
        if ok:
            continue
        prefix = [r for r in live if r.t_ms <= at]
        checked = _with_safety_violations(prefix)
        summary = connect_summary(prefix)
        judged = liveness_violations(checked, summary)
        issue = _duplicates_started_by_known_issues(checked, summary)
        for violation in judged:
            if issue is not None and violation.known_issue is UNSET:
                violation = violation.replace(known_issue=issue)
            found.append(as_quiet_period_violation(violation, "converged", start, bound, prefix))
    return found


def as_quiet_period_violation(
    violation: Violation,
    unsettled: str,
    start: int,
    bound: int,
    prefix: Sequence[LogRecord],
) -> Violation:
    """An end-of-run ``liveness``/``balance`` violation judged ``bound`` virtual ms into the
    quiet period from ``start`` (over ``prefix``, the log up to then), as a
    ``quiet_period_balance`` violation: its fields, a detail naming the period (``unsettled``
    words what a ``liveness`` problem means: Connect's "converged", Streams' "settled"),
    ``quiet_from_ms``, ``checked_at_ms``, ``bound_ms`` and ``cause_seq`` (the last record of
    ``prefix``, typed records)."""
    at = start + bound
    what = unsettled if violation.invariant == "liveness" else "balanced"
    detail = violation.detail.split(": ", 1)[-1]
    return violation.replace(
        invariant=QUIET_PERIOD_BALANCE,
        detail=(
            f"not {what} {bound} ms into the quiet period from {start} ms (at {at} ms): {detail}"
        ),
        quiet_from_ms=start,
        checked_at_ms=at,
        bound_ms=bound,
        cause_seq=prefix[-1].seq if prefix else None,
    )
