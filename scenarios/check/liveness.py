"""The end-of-run liveness and balance check of a Connect run (:func:`liveness_violations`),
over :func:`scenarios.check.metrics.summarize`'s convergence fields, and which known
upstream behaviour explains what it finds."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UNSET

from scenarios.check.deleted_work import deleted_not_revoked
from scenarios.check.invariants import KAFKA_13816
from scenarios.check.summary_types import ConnectConvergence, ConnectSummary
from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_connect as kc
from scenarios.eventlog.records import LogRecord

__all__ = ["liveness_violations"]


def liveness_violations(records: Sequence[LogRecord], summary: ConnectSummary) -> list[Violation]:
    """End-of-run liveness and balance (docs/event-log.md), as violations.

    The runtime calls it before emitting ``run_end`` (then the end is the last record's time).
    Returns ``[]`` when converged with no leftover; otherwise a ``liveness`` violation when
    some configured instance is not running exactly once (or a removed one still runs),
    and/or a ``balance`` violation when max − min running tasks or connectors over live
    workers exceeds 1 — all judged on the group's assignment (what workers run inside their
    assignment snapshots) — and a ``liveness`` violation with ``known_issue`` KAFKA-13816
    naming the instances workers still run outside their snapshots (its leftovers,
    :mod:`scenarios.check.snapshots`).

    Args:
        records: the log so far, decoded (:func:`scenarios.eventlog.records.decode_log`).
        summary: :func:`scenarios.check.metrics.summarize` of the same log.
    """
    conv = summary.convergence
    leftovers = _leftover_violations(summary)
    if summary.converged:
        return leftovers
    issue = _duplicates_issue(records, conv) or _replay_refusal_issue(records, summary)
    end = summary.end_ms
    found: list[Violation] = []
    parts: list[str] = []
    for what in ("task", "connector"):
        for key, text in (
            (f"not_running_{what}s", "configured {what}s not running"),
            (f"duplicate_{what}s", "{what}s running more than once"),
            (f"unconfigured_running_{what}s", "removed {what}s still running"),
        ):
            items: list[str] = getattr(conv, key)
            if items:
                shown = ", ".join(items[:5]) + (", …" if len(items) > 5 else "")
                parts.append(f"{len(items)} {text.format(what=what)} ({shown})")
    if parts:
        found.append(
            Violation(
                invariant="liveness",
                detail=f"at {end} ms: " + "; ".join(parts),
                tasks=conv.not_running_tasks + conv.duplicate_tasks,
                connectors=conv.not_running_connectors + conv.duplicate_connectors,
            )
        )
    if conv.task_spread > 1 or conv.connector_spread > 1:
        counts = summary.workers_final
        found.append(
            Violation(
                invariant="balance",
                detail=(
                    f"at {end} ms: running tasks per live worker differ by "
                    f"{conv.task_spread} and connectors by {conv.connector_spread} "
                    "(max - min must be <= 1)"
                ),
                task_counts={m: c.tasks for m, c in counts.items()},
                connector_counts={m: c.connectors for m, c in counts.items()},
            )
        )
    if issue is None and found:
        # A leader with no view of the previous assignment neither revokes deleted work a
        # worker still owns nor leaves it out of its load (scenarios.check.deleted_work).
        ghosts = deleted_not_revoked(records, summary)
        if ghosts is not None:
            return [violation.replace(known_issue=ghosts) for violation in found] + leftovers
    if issue is not None:
        # What is left is a known upstream issue's duplicate (e.g. KAFKA-13816's in the
        # eager round that made it, before its old owner applied that round's assignment).
        extra = len(conv.duplicate_tasks) + len(conv.unconfigured_running_tasks)
        found = [
            v.replace(known_issue=issue)
            if v.invariant == "liveness" or conv.task_spread <= 1 + extra
            else v
            for v in found
        ]
    return found + leftovers


def _leftover_violations(summary: ConnectSummary) -> list[Violation]:
    """A ``liveness`` violation named KAFKA-13816 for the instances workers run outside their
    assignment snapshots (``[]`` when there are none): the first eager round after a
    cooperative one gave them to others, and no eager join stops them
    (``WorkerCoordinator#onJoinPrepare`` revokes the snapshot only); they run until their
    worker stops or is assigned them again."""
    conv = summary.convergence
    if not conv.leftover_tasks and not conv.leftover_connectors:
        return []
    parts = []
    for what, items in (("task", conv.leftover_tasks), ("connector", conv.leftover_connectors)):
        if items:
            shown = ", ".join(items[:5]) + (", …" if len(items) > 5 else "")
            parts.append(f"{len(items)} {what} instances ({shown})")
    return [
        Violation(
            invariant="liveness",
            detail=(
                f"at {summary.end_ms} ms: "
                + "; ".join(parts)
                + " still run outside their worker's assignment (leftovers of an eager round)"
            ),
            tasks=[item.partition("@")[0] for item in conv.leftover_tasks],
            connectors=[item.partition("@")[0] for item in conv.leftover_connectors],
            known_issue=KAFKA_13816,
        )
    ]


def _replay_refusal_issue(records: Sequence[LogRecord], summary: ConnectSummary) -> str | None:
    """``failover-protocol-replay`` when no worker is left because, after a coordinator
    failover, workers were refused with INCONSISTENT_GROUP_PROTOCOL and their herders exited
    (the loaded group knows only each member's elected protocol, as Kafka's replay does)."""
    if summary.workers_final:
        return None
    loaded = False
    for r in records:
        match r:
            case k.GroupLoaded():
                loaded = True
            case k.MemberFatal(error="INCONSISTENT_GROUP_PROTOCOL") if loaded:
                return "failover-protocol-replay"
    return None


def _kept_across_downgrade(records: Sequence[LogRecord]) -> set[tuple[str, str]]:
    """Instances a cooperative worker was running when the group went eager and still runs,
    not having revoked everything on an eager rejoin since (KAFKA-13816: its first eager
    join keeps its work, and the eager leader never revokes)."""
    running: dict[str, set[tuple[str, str]]] = {}
    kept: dict[str, set[tuple[str, str]]] = {}
    protocol: str | None = None
    for r in records:
        match r:
            case kc.TaskStart(task=task, member=member):
                running.setdefault(member, set()).add(("task", task))
            case kc.ConnectorStart(connector=connector, member=member):
                running.setdefault(member, set()).add(("connector", connector))
            case kc.TaskStopped(task=task, member=member):
                running.get(member, set()).discard(("task", task))
            case kc.ConnectorStopped(connector=connector, member=member):
                running.get(member, set()).discard(("connector", connector))
            case k.MemberStart(member=member) | k.MemberStop(member=member):
                running.pop(member, None)
                kept.pop(member, None)
            case k.MemberCrash(member=member):
                running.pop(member, None)
                kept.pop(member, None)
            case k.Generation(protocol=new):
                if new == "default" and protocol not in (None, "default"):
                    kept = {m: set(owned) for m, owned in running.items()}
                if new is not None:
                    protocol = new
            case k.Revoke(reason="eager_rejoin", member=member):
                kept.pop(member, None)
    return {inst for m, owned in kept.items() for inst in owned & running.get(m, set())}


def _duplicates_issue(records: Sequence[LogRecord], conv: ConnectConvergence) -> str | None:
    """The known issue behind the end-of-run state, when its only fault is instances running
    twice that a known-issue ``double_ownership`` started, and removed instances a worker kept
    across a downgrade to eager (KAFKA-13816); else None."""
    if conv.not_running_tasks or conv.not_running_connectors:
        return None
    removed = [("task", t) for t in conv.unconfigured_running_tasks] + [
        ("connector", c) for c in conv.unconfigured_running_connectors
    ]
    if removed and not set(removed) <= _kept_across_downgrade(records):
        return None
    duplicates = [("task", t) for t in conv.duplicate_tasks] + [
        ("connector", c) for c in conv.duplicate_connectors
    ]
    if not duplicates:
        return KAFKA_13816 if removed else None
    issues: dict[tuple[str, str], str] = {}
    for r in records:
        if isinstance(r, k.Violation) and r.known_issue:
            for what, instance in (("task", r.task), ("connector", r.connector)):
                if instance is not UNSET:
                    issues[(what, instance)] = r.known_issue
    named = {issues.get(d) for d in duplicates}
    if None in named or len(named) != 1:
        return None
    return named.pop()
