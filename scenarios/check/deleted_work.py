"""``deleted-not-revoked``: deleted work a Connect leader with no view of the previous
assignment neither revokes nor leaves out of its owner's load (Kafka's design, not a JIRA).

What Kafka does (``IncrementalCooperativeAssignor#performTaskAssignment`` at the reference
commit):

- the *deleted* set is ``previousAssignment − configured``: only deleted connectors and tasks
  are revoked from the workers that report them, and only they are left out of each worker's
  load when new work is spread;
- ``previousAssignment`` is the leader's own last computed assignment. It is cleared when
  ``previousGenerationId`` differs from the coordinator's ``lastCompletedGenerationId``
  (KAFKA-9848: the leader did not lead the last completed generation, or its SyncGroup
  failed), and it is empty in a worker that has not led since it started;
- a worker's assignment snapshot (``WorkerCoordinator#onJoinComplete``) keeps every item
  until an assignment revokes it, also a task whose config went away and that its herder
  stopped (``DistributedHerder#stopReconfiguredTasks``) or never started (config offset
  mismatch), and the next JoinGroup reports it as owned.

So a leader whose view is cleared counts such a *ghost* as its owner's load: its own count is
balanced while the running count is not, until a later rebalance whose leader knew the ghost.

A ghost the herder did not stop — a deleted connector and its tasks: ``onConnectorConfigRemove``
only requests a rebalance — keeps running meanwhile.

**Predicate** (:func:`deleted_not_revoked`): a ``balance`` or ``liveness`` problem at time
``T`` belongs to this behaviour when (1) every configured connector and task runs exactly once
and whatever removed work runs is a ghost, (2) counting each live worker's ghosts (owned per
its assignment snapshot, no longer configured) as its load — or leaving them out: balancing
moves configured work — makes the spread of tasks and of connectors at most 1, and (3) no
assignor run could have revoked any ghost: every one after the config write that removed it,
with a config offset at or past that write, had a cleared view, or its leader's previous
generation did not include the ghost's owner, or the owner never applied that generation's
assignment (its SyncGroup failed: the revocation never reached it). Under the ``static``
protocol with a worker that names static jobs, balance counts only wildcard jobs over wildcard
workers: there (2) is that balance holding as it is (only ghosts may be wrong).
"""

from __future__ import annotations

from collections.abc import Sequence

from scenarios.check.invariants import DELETED_NOT_REVOKED
from scenarios.check.summary_types import ConnectSummary, WorkerCounts
from scenarios.eventlog import kinds as k
from scenarios.eventlog.records import LogRecord

__all__ = ["DELETED_NOT_REVOKED", "deleted_not_revoked"]

_EAGER_PROTOCOL = "default"


class _Process:
    """One worker process's assignor bookkeeping and assignment snapshot."""

    __slots__ = ("last_led", "last_completed", "applied", "connectors", "tasks")

    def __init__(self) -> None:
        self.last_led = -1  # IncrementalCooperativeAssignor.previousGenerationId
        self.last_completed = -1  # WorkerCoordinator.lastCompletedGenerationId
        self.applied: set[int] = set()  # generations whose assignment this process applied
        self.connectors: set[str] = set()
        self.tasks: set[str] = set()


def _configured(connectors: dict[str, int]) -> tuple[set[str], set[str]]:
    tasks = {f"{c}-{i}" for c, n in connectors.items() for i in range(int(n))}
    return set(connectors), tasks


def _items(items: list[str] | object) -> set[str]:
    """An optional list field's items (none when absent: a Streams ``assignment``)."""
    return set(items) if isinstance(items, list) else set()


def deleted_not_revoked(records: Sequence[LogRecord], summary: ConnectSummary) -> str | None:
    """:data:`DELETED_NOT_REVOKED` when what is wrong with the end state of ``records`` (a
    Connect log, already summarized as ``summary``) is only ghosts no leader could revoke —
    still running, or stopped but counted as their owner's load — per the module's
    predicate; else None. One pass over ``records``."""
    conv = summary.convergence
    if (
        conv.not_running_tasks
        or conv.not_running_connectors
        or conv.duplicate_tasks
        or conv.duplicate_connectors
    ):
        return None
    procs: dict[str, _Process] = {}
    members_of: dict[int, set[str]] = {}
    configured: tuple[set[str], set[str]] = (set(), set())
    removed_at: dict[str, int] = {}  # instance -> config offset of the write that removed it
    # assignor runs: (generation, config offset, members its leader's view covered, or None
    # when the view was cleared)
    runs: list[tuple[int, int, set[str] | None]] = []
    claims: set[str] = set()  # workers that ever named static jobs (KIP-987)
    for r in records:
        match r:
            case k.Config(connectors=connectors, offset=offset):
                now = _configured(connectors)
                for old, new in zip(configured, now, strict=True):
                    for gone in old - new:
                        removed_at[gone] = offset
                configured = now
            case k.Generation(generation=generation, members=members):
                members_of[generation] = set(members)
            case k.MemberStart(member=member, config=config) if member:
                procs[member] = _Process()
                if config.static_connectors or config.static_tasks:
                    claims.add(member)
            case k.MemberCrash(member=member) | k.MemberStop(member=member) if member:
                procs[member] = _Process()
            case k.Assignor(member=member, generation=generation) if member:
                proc = procs.setdefault(member, _Process())
                valid = proc.last_led != -1 and proc.last_led == proc.last_completed
                runs.append(
                    (
                        generation,
                        r.config_offset,
                        members_of.get(proc.last_led) if valid else None,
                    )
                )
                proc.last_led = generation
            case k.Assignment(member=member) if member:
                proc = procs.setdefault(member, _Process())
                if r.protocol == _EAGER_PROTOCOL:
                    proc.connectors, proc.tasks = set(), set()
                proc.connectors -= _items(r.revoked_connectors)
                proc.tasks -= _items(r.revoked_tasks)
                proc.connectors |= _items(r.connectors)
                proc.tasks |= _items(r.tasks)
                proc.last_completed = r.generation
                proc.applied.add(proc.last_completed)
            case k.Revoke(member=member, reason="coordinator_lost") if member:
                # the snapshot is dropped: the next JoinGroup reports nothing owned
                proc = procs.setdefault(member, _Process())
                proc.connectors, proc.tasks = set(), set()
    final = summary.workers_final
    # under static with a worker that names static jobs, balance counts only wildcard jobs
    # over wildcard workers: that balance must hold as it is, only ghosts may run
    wildcard_only = summary.final_protocol == "static" and bool(claims & set(final))
    if wildcard_only and max(conv.task_spread, conv.connector_spread) > 1:
        return None
    ghosts: dict[str, tuple[set[str], set[str]]] = {}
    for worker in final:
        owner = procs.get(worker)
        if owner is not None:
            ghosts[worker] = (owner.connectors - configured[0], owner.tasks - configured[1])
    if not any(c or t for c, t in ghosts.values()):
        return None
    running = (
        set(conv.unconfigured_running_connectors),
        set(conv.unconfigured_running_tasks),
    )
    owned = (
        set().union(*(c for c, _ in ghosts.values())),
        set().union(*(t for _, t in ghosts.values())),
    )
    if not (running[0] <= owned[0] and running[1] <= owned[1]):
        return None  # removed work runs that no live worker's snapshot holds
    for worker, (conns, tasks) in ghosts.items():
        applied = procs[worker].applied
        for ghost in conns | tasks:
            removal = removed_at.get(ghost)
            if removal is None:
                return None
            for generation, config_offset, view in runs:
                if (
                    config_offset >= removal
                    and view is not None
                    and worker in view
                    and generation in applied
                ):
                    return None  # a leader that knew the ghost revoked it, and it arrived
    if wildcard_only or _balanced(final, ghosts, running):
        return DELETED_NOT_REVOKED
    return None


def _balanced(
    final: dict[str, WorkerCounts],
    ghosts: dict[str, tuple[set[str], set[str]]],
    running: tuple[set[str], set[str]],
) -> bool:
    """Spreads of at most 1 either with each worker's ghosts counted as its load (the leader's
    view) or with them left out (configured work only: balancing moves configured work)."""
    none: tuple[set[str], set[str]] = (set(), set())
    for with_ghosts in (True, False):
        ok = True
        for i in (0, 1):  # connectors, tasks
            counts = []
            for worker, c in final.items():
                mine = ghosts.get(worker, none)[i]
                # running counts already hold the ghosts that still run
                n = (c.connectors, c.tasks)[i] - len(mine & running[i])
                counts.append(n + len(mine) if with_ghosts else n)
            if counts and max(counts) - min(counts) > 1:
                ok = False
        if ok:
            return True
    return False
