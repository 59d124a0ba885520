"""Run metrics from an event log: :func:`summarize` (written to ``summary.json``; the
end-of-run liveness check over it is :func:`scenarios.check.liveness.liveness_violations`).

All times are virtual milliseconds (ints). One pass over the records, O(1) per record except
``config`` records (O(configured tasks)) and ``generation`` records (O(live workers)).

Definitions (record kinds from ``docs/event-log.md``):

- **configured**: the task ids ``"<connector>-<n>"`` (n < task count) and connectors of the
  latest ``config`` record; before the first ``config`` record, ``run_start.connectors``.
- **running**: an instance runs on a member from ``*_started`` until the next ``*_stop`` or
  ``*_stopped`` of it on that member, or until the member's ``member_crash``/``member_stop``.
- **downtime** of an instance: the time it was configured but running nowhere, counted from
  the first time it ran until the end of the run. An instance that is configured at the end
  and never ran counts all the time it was configured (and a task like that is listed in
  ``never_started``); one that never ran and is no longer configured counts nothing.
- **live** workers: after ``member_start``, until ``member_stop``/``member_crash``.
- **owned**: convergence, balance and ``workers_final`` count an instance where a worker
  runs it inside its assignment snapshot (the group's assignment); what a worker runs outside
  it is a KAFKA-13816 *leftover* (:mod:`scenarios.check.snapshots`), listed apart.
- **end**: the ``run_end`` record's time (else the last record's).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import msgspec
from msgspec import UNSET

from scenarios.check.snapshots import SNAPSHOT_TYPES, SnapshotTracker
from scenarios.check.summary_types import (
    ConnectConvergence,
    ConnectSummary,
    PhaseSummary,
    WorkerCounts,
)
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_connect as kc
from scenarios.eventlog.kinds import Fault, Step
from scenarios.eventlog.records import LogRecord, decode_log

__all__ = ["ConnectSummarizer", "summarize", "connect_summary", "step_end_ms", "step_record_end_ms"]

#: The task events, by exact class: whether the task runs after it.
_TASK_TYPES: dict[type, bool] = {kc.TaskStarted: True, kc.TaskStop: False, kc.TaskStopped: False}
_TaskEvent = kc.TaskStarted | kc.TaskStop | kc.TaskStopped
#: The connector events, by exact class: whether the connector runs after it.
_CONNECTOR_TYPES: dict[type, bool] = {
    kc.ConnectorStarted: True,
    kc.ConnectorStop: False,
    kc.ConnectorStopped: False,
}
_ConnectorEvent = kc.ConnectorStarted | kc.ConnectorStop | kc.ConnectorStopped
#: The Structs :meth:`ConnectSummarizer.feed` reads beyond every record's ``t_ms``.
_FED_TYPES = frozenset(
    {
        kc.TaskStarted,
        kc.TaskStop,
        kc.TaskStopped,
        kc.ConnectorStarted,
        kc.ConnectorStop,
        kc.ConnectorStopped,
        k.Generation,
        k.JoinGroupRequest,
        k.SyncGroupRequest,
        k.MemberStart,
        k.MemberStop,
        k.MemberCrash,
        k.Config,
        k.RunStart,
        k.Step,
        k.Phase,
        k.Violation,
        k.RunEnd,
    }
)


def step_end_ms(record: Step | Fault) -> int:
    """When a ``step`` record's action is over (virtual ms): ``t_ms`` plus the longest of its
    ``down_ms`` (a restart: the worker is back), ``duration_ms`` (a partition, loss, latency
    or slow fault heals) and ``stall_ms`` (a stall ends); a ``delay_request`` lasts
    its ``duration_ms`` + ``delay_ms`` (its last held request arrives). "Converged N s after
    the last step" counts from here, so a restart written as one step or as a crash and a
    later start gives the same figure."""
    length = max(
        (v for v in (record.down_ms, record.duration_ms, record.stall_ms) if v is not UNSET),
        default=0,
    )
    if record.delay_ms is not UNSET:
        length = max(length, (record.duration_ms or 0) + record.delay_ms)
    return record.t_ms + length


def step_record_end_ms(record: Mapping[str, Any]) -> int:
    """:func:`step_end_ms` of a ``step`` record dict of the log (decoded into its Struct).

    Raises:
        msgspec.ValidationError: the record is not a valid ``step`` record.
    """
    return step_end_ms(msgspec.convert(record, Step))


class _Inst:
    """One task or connector: configured?, where it runs, its downtime so far."""

    __slots__ = ("configured", "running", "ever_ran", "since", "down_ms", "pre", "last_member")

    def __init__(self) -> None:
        self.configured = False
        self.running: dict[str, None] = {}
        self.ever_ran = False
        self.since = 0  # start of the current down interval
        self.down_ms = 0  # downtime after the first run
        self.pre: list[tuple[int, int]] = []  # down intervals before the first run
        self.last_member: str | None = None

    @property
    def down(self) -> bool:
        return self.configured and not self.running


class _Phase:
    __slots__ = (
        "name",
        "start_ms",
        "protocols",
        "rebalances",
        "downtime",
        "movements",
        "violations",
        "implicit",
    )

    def __init__(self, name: str, start_ms: int, implicit: bool = False) -> None:
        self.name = name
        self.start_ms = start_ms
        self.protocols: list[str] = []
        self.rebalances = 0
        self.downtime = 0
        self.movements = 0
        self.violations: dict[str, int] = {}
        self.implicit = implicit


class ConnectSummarizer:
    """A Connect run's summary built record by record: :meth:`feed` each record of the log in
    order (typed: :data:`scenarios.eventlog.records.LogRecord`), then :meth:`result` (the
    :class:`ConnectSummary`) or :meth:`convergence` (where the run stands so far). Public so
    that a prefix of the log can be judged as it grows (``quiet_periods``)."""

    def __init__(self) -> None:
        self.insts: dict[str, dict[str, _Inst]] = {"task": {}, "connector": {}}
        self.configured: dict[str, int] = {}
        self.seen_config = False
        self.member_running: dict[str, dict[str, dict[str, None]]] = {}
        self.live: dict[str, None] = {}
        # KIP-987: what each live static worker claims (static.connectors + static.tasks).
        self.static_claims: dict[str, set[str]] = {}
        self.member_order: dict[str, None] = {}
        self.t_start: int | None = None
        self.t_last = 0
        self.t_end: int | None = None
        self.scenario: str | None = None
        self.seed: int | None = None
        self.rebalances = 0
        self.join_rounds = 0
        self.sync_rounds = 0
        self.movements = 0
        self.downtime = {"task": 0, "connector": 0}
        self.max_imbalance = 0
        self.violations: dict[str, int] = {}
        self.final_protocol: str | None = None
        self.last_step_ms: int | None = None
        self.last_change_ms: int | None = None
        self.phases: list[_Phase] = []
        self.phase_starts: list[int] = []
        self.saw_step = False
        self.snapshots = SnapshotTracker()

    # ------------------------------------------------------------------ feeding

    def feed(self, r: LogRecord) -> None:
        """Take in the log's next record, typed (:data:`scenarios.eventlog.records.LogRecord`):
        every record's ``t_ms``, and what a record of the kinds the summary reads says."""
        cls = type(r)
        if cls in SNAPSHOT_TYPES:  # (the tracker ignores the others: no call for them)
            self.snapshots.feed(r)
        t = r.t_ms
        self.t_last = t
        if self.t_start is None:
            self.t_start = t
            self.phases.append(_Phase("start", t, implicit=True))
            self.phase_starts.append(t)
        if cls not in _FED_TYPES:
            return  # (most records: one set lookup instead of the cases below)
        if (started := _TASK_TYPES.get(cls)) is not None:  # the most frequent: by exact class
            task_event = cast(_TaskEvent, r)
            self.set_running("task", task_event.task, task_event.member, started, t)
            return
        if (started := _CONNECTOR_TYPES.get(cls)) is not None:
            connector_event = cast(_ConnectorEvent, r)
            self.set_running(
                "connector", connector_event.connector, connector_event.member, started, t
            )
            return
        match r:
            case k.Generation(protocol=protocol):
                self.sample_imbalance()
                if protocol is not None:
                    self.rebalances += 1
                    self.final_protocol = protocol
                    phase = self.phases[-1]
                    phase.rebalances += 1
                    if protocol not in phase.protocols:
                        phase.protocols.append(protocol)
            case k.JoinGroupRequest():
                self.join_rounds += 1
            case k.SyncGroupRequest():
                self.sync_rounds += 1
            case k.MemberStart(member=member, config=config):
                self.member_gone(member, t)  # a fresh process runs nothing yet
                self.live[member] = None
                if config.connect_protocol == "static":
                    self.static_claims[member] = set(config.static_connectors or ()) | set(
                        config.static_tasks or ()
                    )
                else:
                    self.static_claims.pop(member, None)
                self.member_order.setdefault(member, None)
                self.member_running.setdefault(member, {"task": {}, "connector": {}})
            case k.MemberStop(member=member) | k.MemberCrash(member=member):
                self.member_gone(member, t)
                self.live.pop(member, None)
            case k.Config(connectors=connectors):
                self.apply_config(connectors, t)
                self.seen_config = True
            case k.RunStart(scenario=scenario, seed=seed, connectors=connectors):
                self.scenario = scenario
                self.seed = seed
                if not self.seen_config and connectors:
                    self.apply_config(connectors, t)
            case k.Step(action=action) if action != "phase":
                end = step_end_ms(r)
                self.last_step_ms = max(end, self.last_step_ms or end)
                self.saw_step = True
            case k.Phase(name=name):
                current = self.phases[-1]
                if current.implicit and not self.saw_step:
                    current.name = name  # the timeline starts with a phase: it names the first
                    current.implicit = False
                else:
                    self.phases.append(_Phase(name, t))
                    self.phase_starts.append(t)
            case k.Violation():
                # Known upstream behaviour is counted under its own name (e.g. KAFKA-13816).
                invariant = r.known_issue or r.invariant
                self.violations[invariant] = self.violations.get(invariant, 0) + 1
                pv = self.phases[-1].violations
                pv[invariant] = pv.get(invariant, 0) + 1
            case k.RunEnd():
                self.t_end = t

    # ------------------------------------------------------------------ state changes

    def inst(self, what: str, name: str) -> _Inst:
        table = self.insts[what]
        inst = table.get(name)
        if inst is None:
            inst = table[name] = _Inst()
        return inst

    def close_down(self, what: str, inst: _Inst, t: int) -> None:
        """End ``inst``'s current down interval at ``t``."""
        start = inst.since
        if t <= start:
            return
        if inst.ever_ran:
            inst.down_ms += t - start
            self.downtime[what] += t - start
            if what == "task":
                self.attribute(start, t)
        else:
            inst.pre.append((start, t))

    def attribute(self, start: int, end: int) -> None:
        """Add task downtime [start, end) to the phases it overlaps."""
        starts = self.phase_starts
        i = max(bisect_right(starts, start) - 1, 0)
        while i < len(starts) and start < end:
            seg_end = starts[i + 1] if i + 1 < len(starts) else end
            part = min(end, seg_end) - start
            if part > 0:
                self.phases[i].downtime += part
                start += part
            i += 1

    def set_running(self, what: str, name: Any, member: Any, started: bool, t: int) -> None:
        if name is None or member is None:
            return
        inst = self.inst(what, name)
        was_down = inst.down
        per_member = self.member_running.setdefault(member, {"task": {}, "connector": {}})
        if started:
            if member in inst.running:
                return
            inst.running[member] = None
            per_member[what][name] = None
            if was_down:
                self.close_down(what, inst, t)
            if what == "task" and inst.last_member is not None and inst.last_member != member:
                self.movements += 1
                self.phases[-1].movements += 1
            inst.last_member = member
            inst.ever_ran = True
        else:
            if member not in inst.running:
                return
            del inst.running[member]
            per_member[what].pop(name, None)
            if inst.down:
                inst.since = t
        self.last_change_ms = t

    def member_gone(self, member: Any, t: int) -> None:
        per_member = self.member_running.get(member)
        if per_member is None:
            return
        for what in ("task", "connector"):
            running = per_member[what]
            if not running:
                continue
            for name in list(running):
                self.set_running(what, name, member, False, t)

    def apply_config(self, connectors: dict[str, int], t: int) -> None:
        wanted_tasks = {f"{c}-{i}" for c, n in connectors.items() for i in range(int(n))}
        wanted = {"task": wanted_tasks, "connector": set(connectors)}
        for what, names in wanted.items():
            table = self.insts[what]
            for name, inst in table.items():
                if inst.configured and name not in names:
                    if inst.down:
                        self.close_down(what, inst, t)
                    inst.configured = False
            for name in sorted(names):
                inst = self.inst(what, name)
                if not inst.configured:
                    inst.configured = True
                    if inst.down:
                        inst.since = t
        self.configured = dict(connectors)

    def owned(self, member: str, what: str) -> list[str]:
        """The ``what`` instances ``member`` runs inside its assignment snapshot."""
        leftover = self.snapshots.is_leftover
        return [n for n in self.member_running[member][what] if not leftover(member, what, n)]

    def spread(self, what: str) -> int:
        if not self.live:
            return 0
        counts = [len(self.owned(m, what)) for m in self.live]
        return max(counts) - min(counts)

    def balance_spread(self, what: str) -> int:
        """The spread that convergence demands be <= 1.

        Under the static protocol (KIP-987) static jobs sit where their workers name them, so
        balance is required only of the wildcard jobs over the wildcard workers.
        """
        if self.final_protocol != "static":
            return self.spread(what)
        claims: set[str] = set()
        for member in self.live:
            claims |= self.static_claims.get(member, set())
        wildcard = [m for m in self.live if not self.static_claims.get(m)]
        if not wildcard:
            return 0
        counts = [sum(1 for name in self.owned(m, what) if name not in claims) for m in wildcard]
        return max(counts) - min(counts)

    def sample_imbalance(self) -> None:
        self.max_imbalance = max(self.max_imbalance, self.spread("task"))

    # ------------------------------------------------------------------ result

    def result_so_far(self) -> ConnectSummary:
        """:meth:`result` of the records fed so far, leaving the summarizer as it was: what
        :meth:`result` changes to close the open down intervals and take the last imbalance
        sample is put back, so feeding may go on as if it had not been called."""
        t_start, phase_count, max_imbalance = self.t_start, len(self.phases), self.max_imbalance
        downtime = dict(self.downtime)
        phase_downtime = [p.downtime for p in self.phases]
        insts = [
            (i, i.since, i.down_ms, len(i.pre)) for t in self.insts.values() for i in t.values()
        ]
        try:
            return self.result()
        finally:
            self.t_start, self.max_imbalance, self.downtime = t_start, max_imbalance, downtime
            del self.phases[phase_count:], self.phase_starts[phase_count:]
            for phase, down in zip(self.phases, phase_downtime, strict=True):
                phase.downtime = down
            for inst, since, down_ms, pre in insts:
                inst.since, inst.down_ms = since, down_ms
                del inst.pre[pre:]

    def result(self) -> ConnectSummary:
        if self.t_start is None:
            self.t_start = 0
            self.phases.append(_Phase("start", 0, implicit=True))
            self.phase_starts.append(0)
        end = self.t_end if self.t_end is not None else self.t_last
        self.sample_imbalance()

        task_max = 0
        never_started: list[str] = []
        for what in ("task", "connector"):
            for name, inst in self.insts[what].items():
                if inst.down:
                    self.close_down(what, inst, end)
                    inst.since = end
                total = inst.down_ms
                if not inst.ever_ran and inst.configured:
                    pre = sum(b - a for a, b in inst.pre)
                    total += pre
                    self.downtime[what] += pre
                    if what == "task":
                        never_started.append(name)
                        for a, b in inst.pre:
                            self.attribute(a, b)
                if what == "task":
                    task_max = max(task_max, total)

        problems = self.convergence()
        converged = problems.holds()
        time_to_converge = None
        if converged:
            since = self.last_step_ms if self.last_step_ms is not None else self.t_start
            change = self.last_change_ms if self.last_change_ms is not None else since
            time_to_converge = max(0, change - since)

        workers_final = {
            m: WorkerCounts(
                connectors=len(self.owned(m, "connector")),
                tasks=len(self.owned(m, "task")),
            )
            for m in self.member_order
            if m in self.live
        }
        phases = [
            PhaseSummary(
                name=p.name,
                start_ms=p.start_ms,
                end_ms=self.phases[i + 1].start_ms if i + 1 < len(self.phases) else end,
                protocols=list(p.protocols),
                rebalances=p.rebalances,
                task_downtime_ms_total=p.downtime,
                task_movements=p.movements,
                violations=dict(sorted(p.violations.items())),
            )
            for i, p in enumerate(self.phases)
        ]
        configured_tasks = sum(1 for i in self.insts["task"].values() if i.configured)
        return ConnectSummary(
            scenario=self.scenario,
            seed=self.seed,
            start_ms=self.t_start,
            end_ms=end,
            rebalances=self.rebalances,
            join_rounds=self.join_rounds,
            sync_rounds=self.sync_rounds,
            connectors_configured=len(self.configured),
            tasks_configured=configured_tasks,
            task_downtime_ms_total=self.downtime["task"],
            task_downtime_ms_max=task_max,
            connector_downtime_ms_total=self.downtime["connector"],
            never_started=sorted(never_started),
            task_movements=self.movements,
            max_imbalance=self.max_imbalance,
            converged=converged,
            convergence=problems,
            time_to_converge_ms=time_to_converge,
            violations=dict(sorted(self.violations.items())),
            final_protocol=self.final_protocol,
            workers_final=workers_final,
            phases=phases,
        )

    def convergence(self) -> ConnectConvergence:
        """Why the run has (not) converged so far (instance ids per problem, spreads)."""
        tasks = self._problems("task")
        connectors = self._problems("connector")
        return ConnectConvergence(
            not_running_tasks=tasks[0],
            duplicate_tasks=tasks[1],
            unconfigured_running_tasks=tasks[2],
            task_spread=self.balance_spread("task"),
            not_running_connectors=connectors[0],
            duplicate_connectors=connectors[1],
            unconfigured_running_connectors=connectors[2],
            connector_spread=self.balance_spread("connector"),
            leftover_tasks=tasks[3],
            leftover_connectors=connectors[3],
        )

    def _problems(self, what: str) -> tuple[list[str], list[str], list[str], list[str]]:
        """Sorted ids of the ``what`` instances (``task``/``connector``) that are configured
        and not running, configured and running more than once, and running unconfigured —
        counting where workers run them inside their assignment snapshots — and the
        leftovers (``"<id>@<worker>"``: run outside the worker's snapshot)."""
        not_running, duplicated, unconfigured, leftovers = [], [], [], []
        leftover = self.snapshots.is_leftover
        for name, inst in self.insts[what].items():
            n = 0
            for member in inst.running:
                if leftover(member, what, name):
                    leftovers.append(f"{name}@{member}")
                else:
                    n += 1
            if inst.configured:
                if n == 0:
                    not_running.append(name)
                elif n > 1:
                    duplicated.append(name)
            elif n:
                unconfigured.append(name)
        return sorted(not_running), sorted(duplicated), sorted(unconfigured), sorted(leftovers)


def summarize(records: Sequence[Mapping[str, Any]]) -> ConnectSummary:
    """:func:`connect_summary` of a log of record dicts (the name the checkers use: a Connect
    run's ``RunResult.summary``; ``summary.json`` holds its builtins,
    :func:`scenarios.check.summary_types.summary_dict`), decoded
    (:func:`scenarios.eventlog.records.decode_log`).

    Raises:
        msgspec.ValidationError: a record does not match its kind's Struct.
    """
    return connect_summary(decode_log(records))


def connect_summary(records: Iterable[LogRecord]) -> ConnectSummary:
    """Summarize a run from its event log (typed records in ``seq`` order:
    :data:`scenarios.eventlog.records.LogRecord`).

    Returns its :class:`scenarios.check.summary_types.ConnectSummary` (times in virtual ms):

    - ``scenario``, ``seed`` (from ``run_start``), ``start_ms``, ``end_ms``;
    - ``rebalances``: ``generation`` records with a non-null protocol; ``join_rounds`` /
      ``sync_rounds``: JoinGroup / SyncGroup requests sent;
    - ``connectors_configured``, ``tasks_configured`` (at the end);
    - ``task_downtime_ms_total``, ``task_downtime_ms_max`` (over tasks),
      ``connector_downtime_ms_total``, ``never_started`` (task ids, sorted);
    - ``task_movements``: task starts on a member other than the one it last ran on;
    - ``max_imbalance``: max over samples (just before each ``generation`` record and at the
      end) of max − min running tasks over live workers (0 with no live worker);
    - ``converged``: at the end every configured connector and task runs exactly once, no
      instance that is not configured runs, and max − min ≤ 1 for connectors and for tasks
      over live workers — counting instances where workers run them inside their assignment
      snapshots (the group's assignment); ``convergence`` gives the details
      (``not_running_tasks``, ``duplicate_tasks``, ``unconfigured_running_tasks``, the same
      for connectors, ``task_spread``, ``connector_spread``, and ``leftover_tasks`` /
      ``leftover_connectors``: what workers run outside their snapshots, KAFKA-13816);
    - ``time_to_converge_ms``: from the end of the last ``step`` that is not a phase (the
      latest :func:`step_end_ms`: a ``restart`` ends when its worker is back, a fault when it
      heals; else the run start) to the last change of the running set, at least 0; ``None``
      if not converged;
    - ``violations``: ``{invariant: count}`` of ``violation`` records;
    - ``final_protocol``: protocol of the last ``generation`` record with one (or ``None``);
    - ``workers_final``: ``{worker: {"connectors": n, "tasks": m}}`` (owned: leftovers aside)
      for live workers, in order
      of their first start;
    - ``phases``: ``[{name, start_ms, end_ms, protocols, rebalances, task_downtime_ms_total,
      task_movements, violations}]``, one per ``phase`` record; the run begins in an implicit
      phase ``"start"``, unless a ``phase`` record comes before any (non-phase) ``step``
      record: then that phase is the first one and starts at the run start. Phases partition
      the run, so their rebalances, downtime and movements add up to the totals.
    """
    summarizer = ConnectSummarizer()
    for record in records:
        summarizer.feed(record)
    return summarizer.result()
