"""The summary and end-of-run checks of a Kafka Streams run, from its event log.

:func:`summarize_streams` extends :func:`scenarios.check.metrics.summarize` with Streams'
task keys; :func:`streams_end_violations` is the end-of-run liveness/balance check (KIP-441);
:func:`streams_expect_failures` evaluates a Streams ``[expect]`` table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET

from members.assignors.streams import TaskId
from scenarios.check.expect import evaluate
from scenarios.check.invariants import STATIC_MEMBER_KEPT
from scenarios.check.metrics import connect_summary, step_end_ms
from scenarios.check.summary_types import (
    AssignmentCost,
    ClientTasks,
    ConnectSummary,
    Restoration,
    StreamsConvergence,
    StreamsDetails,
    StreamsSummary,
    SummaryBase,
    WorkerCounts,
)
from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_streams as ks
from scenarios.eventlog.kinds_streams import StreamsAssignment
from scenarios.eventlog.records import LogRecord
from scenarios.input.streams import ClientAssignment, LoadedStreamsScenario

__all__ = [
    "summarize_streams",
    "streams_summary",
    "streams_end_violations",
    "streams_expect_failures",
    "tag_conflicts",
]


class _StreamsState:
    """What the log says each client holds (names → task → state)."""

    def __init__(self) -> None:
        self.active: dict[str, dict[str, str]] = {}  # client -> task -> restoring|running
        self.standby: dict[str, set[str]] = {}
        self.live: dict[str, None] = {}
        self.capacity: dict[str, int] = {}
        self.pid_name: dict[str, str] = {}
        self.tags: dict[str, dict[str, str]] = {}


def summarize_streams(
    records: Sequence[LogRecord],
    loaded: LoadedStreamsScenario,
    base: ConnectSummary | None = None,
) -> StreamsSummary:
    """:func:`streams_summary` (the name the engine uses: a Streams run's
    ``RunResult.summary``; ``summary.json`` holds its builtins,
    :func:`scenarios.check.summary_types.summary_dict`)."""
    return streams_summary(records, loaded, base)


#: The Structs :func:`streams_summary` reads itself (beyond ``connect_summary``'s pass).
_SUMMARY_TYPES = frozenset(
    {k.MemberStart, k.MemberStop, k.MemberCrash, k.MemberFatal, k.TimerFired, k.Generation}
    | {k.JoinGroupResponse, k.MemberReplaced, k.Step, ks.ProbingRebalanceScheduled}
    | {ks.ActiveTaskStart, ks.ActiveTaskRunning, ks.ActiveTaskStopped, ks.StreamsAssignment}
    | {ks.StandbyTaskStart, ks.StandbyTaskStopped}
)


def streams_summary(
    records: Sequence[LogRecord],
    loaded: LoadedStreamsScenario,
    base: ConnectSummary | None = None,
) -> StreamsSummary:
    """The run summary of a Streams log, typed records in ``seq`` order
    (:data:`scenarios.eventlog.records.LogRecord`;
    :class:`scenarios.check.summary_types.StreamsSummary`):
    :func:`scenarios.check.metrics.connect_summary`'s keys (phases,
    rebalances, rounds, violations, ...) with the task keys recomputed for Streams, plus
    ``streams`` (docs/streams.md):

    - ``task_downtime_ms_total`` / ``_max``: per task, virtual ms in which no client ran it
      as a RUNNING active (restoring does not count as running) after it first ran;
      ``never_started``: tasks that never ran; ``task_movements``: active task starts on a
      client other than the one that last ran it;
    - ``converged``: see :func:`streams_end_violations`; ``convergence``: its details;
    - ``streams.assignment_history``: the leader's distinct successive assignments
      ``{client: {"active": [...], "standby": [...]}}`` (HATA's decision, before cooperative
      withholding); ``streams.final_assignment``; ``streams.probing_rebalances`` (probing
      rebalances that fired), ``streams.probing_scheduled``; ``streams.costs``: rack-aware
      ``{generation, before, after}``; ``streams.warmups``: warmups handed out;
    - ``streams.restoration``: ``restored`` (active tasks that went from restoring to
      running), ``restore_ms_total`` / ``restore_ms_max`` (virtual ms from
      ``active_task_start`` to ``active_task_running``), ``abandoned`` (stopped while still
      restoring), ``restoring_at_end`` (active tasks of live clients still restoring).

    ``base``: :func:`scenarios.check.metrics.connect_summary` of the same ``records`` when the
    caller has it (a run's :class:`scenarios.check.growing_summary.GrowingLogSummary`), else it is
    computed here.
    """
    if base is None:
        base = connect_summary(records)
    topo = loaded.topology
    tasks = [str(t) for t in topo.tasks]
    st = _StreamsState()
    running_on: dict[str, dict[str, None]] = {t: {} for t in tasks}
    last_ran: dict[str, str] = {}
    ever: set[str] = set()
    down_since: dict[str, int] = {}
    down_ms: dict[str, int] = dict.fromkeys(tasks, 0)
    phases = base.phases
    phase_down = [0] * len(phases)
    phase_moves = [0] * len(phases)
    starts = [p.start_ms for p in phases]
    history: list[dict[str, ClientTasks]] = []
    decisions: list[StreamsAssignment] = []  # the leader's, decoded
    costs: list[AssignmentCost] = []
    probing_fired = probing_scheduled = warmups = 0
    restoring_since: dict[tuple[str, str], int] = {}
    restore_ms: list[int] = []
    abandoned = 0
    last_change = 0
    last_step = None
    last_members: list[str] = []
    group_generation = -1  # the latest ``generation`` record's

    def phase_at(t: int) -> int:
        i = 0
        while i + 1 < len(starts) and starts[i + 1] <= t:
            i += 1
        return i

    def add_down(task: str, a: int, b: int) -> None:
        down_ms[task] += b - a
        while a < b:
            i = phase_at(a)
            end = starts[i + 1] if i + 1 < len(starts) else b
            part = min(b, end) - a
            phase_down[i] += part
            a += part

    def set_running(task: str, member: str, on: bool, t: int) -> None:
        nonlocal last_change
        holders = running_on[task]
        if on:
            if member in holders:
                return
            if not holders and task in down_since:
                add_down(task, down_since.pop(task), t)
            holders[member] = None
            ever.add(task)
        else:
            if member not in holders:
                return
            del holders[member]
            if not holders:
                down_since[task] = t
        last_change = t

    holder: dict[str, str] = {}  # member id -> the client it was given to
    for r in records:
        if type(r) not in _SUMMARY_TYPES:
            continue  # (most records: one set lookup instead of the cases below)
        t = r.t_ms
        match r:
            case k.MemberStart(member=m, config=cfg):
                st.live[m] = None
                st.active[m] = {}
                st.standby[m] = set()
                threads = cfg.num_stream_threads
                st.capacity[m] = 1 if threads is UNSET else threads
                st.pid_name[str(None if cfg.process_id is UNSET else cfg.process_id)] = m
                st.tags[m] = dict(cfg.client_tags or {})
            case k.MemberStop(member=m) | k.MemberCrash(member=m) | k.MemberFatal(member=m):
                # member_fatal: the stream thread died (e.g. FENCED_INSTANCE_ID); it runs nothing
                st.live.pop(m, None)
                for key in [key for key in restoring_since if key[0] == m]:
                    del restoring_since[key]
                    abandoned += 1
            case ks.ActiveTaskStart(member=m, task=task):
                st.active.setdefault(m, {})[task] = "restoring"
                restoring_since[(m, task)] = t
                if task in last_ran and last_ran[task] != m:
                    phase_moves[phase_at(t)] += 1
                last_change = t
            case ks.ActiveTaskRunning(member=m, task=task):
                st.active.setdefault(m, {})[task] = "running"
                if (m, task) in restoring_since:
                    restore_ms.append(t - restoring_since.pop((m, task)))
                last_ran[task] = m
                set_running(task, m, True, t)
            case ks.ActiveTaskStopped(member=m, task=task):
                st.active.get(m, {}).pop(task, None)
                abandoned += restoring_since.pop((m, task), None) is not None
                set_running(task, m, False, t)
            case ks.StandbyTaskStart(member=m, task=task):
                st.standby.setdefault(m, set()).add(task)
                last_change = t
            case ks.StandbyTaskStopped(member=m, task=task):
                st.standby.get(m, set()).discard(task)
                last_change = t
            case ks.StreamsAssignment(generation=generation) if generation >= group_generation:
                # (an older generation's is a stale leader's: a member stalled mid-join handled
                # the lost round's JoinGroup answer late, and its SyncGroup is refused)
                table = {
                    st.pid_name.get(pid, pid): ClientTasks(active=c.active, standby=c.standby)
                    for pid, c in r.clients.items()
                }
                table = dict(sorted(table.items()))
                decisions.append(r)
                warmups += sum(len(c.warmups) for c in r.clients.values())
                if not history or history[-1] != table:
                    history.append(table)
                if r.cost is not UNSET:
                    costs.append(
                        AssignmentCost(
                            generation=generation, before=r.cost.before, after=r.cost.after
                        )
                    )
            case ks.ProbingRebalanceScheduled():
                probing_scheduled += 1
            case k.TimerFired(key="probing-rebalance"):
                probing_fired += 1
            case k.Generation(members=members, generation=generation):
                last_members = list(members)
                group_generation = generation
            case k.JoinGroupResponse(error="NONE", member=m, member_id=member_id):
                holder[member_id] = m
            case k.MemberReplaced(member=m, member_id=member_id, old_member_id=old_member_id):
                # KIP-345: another process took over a static member's id (the zombie fault); in
                # Stable without a rebalance, so the old process's decision is now the new one's
                previous = holder.get(old_member_id)
                holder[member_id] = m
                if previous is not None and previous != m:
                    for pid in [p for p, name in st.pid_name.items() if name == previous]:
                        st.pid_name[pid] = m
            case k.Step(action=action) if action != "phase":
                end = step_end_ms(r)  # from the step's end, as Connect's summary
                last_step = end if last_step is None else max(last_step, end)

    end = base.end_ms
    never = sorted(t for t in tasks if t not in ever)
    for task, since in down_since.items():
        if task in ever and end > since:
            add_down(task, since, end)
    for task in never:  # never ran: the whole run counts
        add_down(task, base.start_ms, end)
    movements = sum(phase_moves)
    for i, p in enumerate(phases):
        p.task_downtime_ms_total = phase_down[i]
        p.task_movements = phase_moves[i]

    problems = _end_problems(st, decisions, loaded, running_on)
    converged = not any(msgspec.structs.astuple(problems))
    since = last_step if last_step is not None else base.start_ms
    counts = [len(st.active.get(c, {})) for c in st.live]
    shared = {f: getattr(base, f) for f in SummaryBase.__struct_fields__}
    shared.update(
        tasks_configured=len(tasks),
        task_downtime_ms_total=sum(down_ms.values()),
        task_downtime_ms_max=max(down_ms.values(), default=0),
        never_started=never,
        task_movements=movements,
        max_imbalance=(max(counts) - min(counts)) if counts else 0,
        converged=converged,
        time_to_converge_ms=max(0, last_change - since) if converged else None,
        workers_final={
            c: WorkerCounts(connectors=0, tasks=len(st.active.get(c, {}))) for c in st.live
        },
    )
    return StreamsSummary(
        **shared,
        convergence=problems,
        streams=StreamsDetails(
            assignment_history=history,
            final_assignment=history[-1] if history else {},
            probing_rebalances=probing_fired,
            probing_scheduled=probing_scheduled,
            warmups=warmups,
            restoration=Restoration(
                restored=len(restore_ms),
                restore_ms_total=sum(restore_ms),
                restore_ms_max=max(restore_ms, default=0),
                abandoned=abandoned,
                restoring_at_end=sum(
                    state == "restoring" for c in st.live for state in st.active.get(c, {}).values()
                ),
            ),
            costs=costs,
            final_cost=costs[-1].after
            if costs and decisions and decisions[-1].cost is not msgspec.UNSET
            else None,
            client_tags={c: st.tags.get(c, {}) for c in sorted(st.tags)},
            static_kept=_static_kept(loaded, last_members, st, decisions),
            final_holdings={
                c: ClientTasks(
                    active=sorted(st.active.get(c, {}), key=_task_key),
                    standby=sorted(st.standby.get(c, set()), key=_task_key),
                )
                for c in st.live
            },
        ),
    )


def _task_key(text: str) -> tuple[int, int]:
    t = TaskId.parse(text)
    return (t.subtopology, t.partition)


def _end_problems(
    st: _StreamsState,
    decisions: list[StreamsAssignment],
    loaded: LoadedStreamsScenario,
    running_on: dict[str, dict[str, None]],
) -> StreamsConvergence:
    conv = StreamsConvergence(
        not_running_tasks=[], duplicate_tasks=[], unsettled=[], invalid=[], unbalanced=[]
    )
    if st.live:  # with no client running, nothing can run a task: nothing to judge
        conv.not_running_tasks = sorted(
            (t for t, h in running_on.items() if not any(m in st.live for m in h)), key=_task_key
        )
        conv.duplicate_tasks = sorted(
            (t for t, h in running_on.items() if len([m for m in h if m in st.live]) > 1),
            key=_task_key,
        )
        _judge_last_assignment(st, decisions, loaded, conv)
    return conv


def _judge_last_assignment(
    st: _StreamsState,
    decisions: list[StreamsAssignment],
    loaded: LoadedStreamsScenario,
    out: StreamsConvergence,
) -> None:
    """Add to ``out`` why the last assignment is unsettled, invalid or unbalanced (KIP-441)."""
    topo = loaded.topology
    live = list(st.live)
    if not decisions:
        out.unsettled.append("no assignment was ever made")
        return
    last = decisions[-1]
    if last.probing_rebalance_needed:
        out.unsettled.append("the last assignment still asked for a probing rebalance")
    if last.followup_for_revocation:
        out.unsettled.append("the last assignment withheld tasks pending revocation")
    decided = {st.pid_name.get(pid, pid): c for pid, c in last.clients.items()}
    if sorted(decided) != sorted(live):
        out.unsettled.append(
            f"the last assignment covers {sorted(decided)} but {sorted(live)} are live"
        )
    for c in live:
        d = decided.get(c)
        if d is None:
            continue
        if sorted(st.active.get(c, {})) != sorted(d.active) or sorted(
            st.standby.get(c, set())
        ) != sorted(d.standby):
            out.unsettled.append(f"{c} does not hold what the leader assigned it")
    # KIP-441 validity and balance (Kafka's AssignmentTestUtils).
    leader_cfg = loaded.clients[0].config.assignment
    n_standby = leader_cfg.num_standby_replicas
    stateful = {str(t) for t in topo.stateful}
    for task in (str(t) for t in topo.tasks):
        actives = [c for c in decided if task in decided[c].active]
        if len(actives) != 1:
            out.invalid.append(f"task {task} is active on {len(actives)} clients")
        holders = actives + [c for c in decided if task in decided[c].standby]
        if task in stateful:
            want = min(len(decided), 1 + n_standby)
            if len(holders) != want:
                out.invalid.append(f"task {task} has {len(holders)} copies, expected {want}")
        elif len(holders) != len(actives):
            out.invalid.append(f"stateless task {task} has a standby")
    # Balance is the fixed point KIP-441 converges to, not a property of each step: warm-ups
    # and withheld tasks leave the assignment unbalanced until the rebalances they ask for
    # have run, and Kafka's TaskAssignorConvergenceTest asserts balance only after
    # HighAvailabilityTaskAssignor#assign stopped asking for one (testForConvergence). A
    # group that never gets there (e.g. ``static-member-kept``: a gone static client's frozen
    # subscription never catches a warm-up up nor revokes a task) is a liveness violation.
    if last.probing_rebalance_needed or last.followup_for_revocation:
        return
    cap = {c: st.capacity.get(c, 1) for c in decided}
    # Kafka asserts balance (TaskAssignorConvergenceTest#verifyBalancedAssignment) for
    # clients of one capacity; with num.stream.threads differing, ClientState's load ties
    # and the standby constraints leave assignments Kafka does not call unbalanced.
    if len(set(cap.values())) > 1:
        return
    active_load = [len(decided[c].active) / cap[c] for c in decided]
    if max(active_load) - min(active_load) > 1.0:
        out.unbalanced.append("active task load differs by more than 1 per thread")
    strategy = leader_cfg.rack_aware_assignment_strategy
    # KIP-708: standbys only move between clients with identical tags, so with
    # rack.aware.assignment.tags Kafka does not balance the stateful (standby) load.
    tags_on = bool(leader_cfg.rack_aware_assignment_tags)
    if strategy != "min_traffic" and not tags_on:
        stateful_load = [
            len([t for t in decided[c].active + decided[c].standby if t in stateful]) / cap[c]
            for c in decided
        ]
        if max(stateful_load) - min(stateful_load) > 1.0:
            out.unbalanced.append("stateful task load differs by more than 1 per thread")
    if strategy != "min_traffic":
        threshold = 4 if strategy == "balance_subtopology" else 1
        by_sub: dict[int, list[int]] = {}
        for t in topo.tasks:
            by_sub.setdefault(t.subtopology, [])
        for sub in by_sub:
            per_client = [
                len([t for t in decided[c].active if TaskId.parse(t).subtopology == sub])
                for c in decided
            ]
            if max(per_client) - min(per_client) > threshold:
                out.unbalanced.append(f"subtopology {sub} skew exceeds {threshold}")


def _static_kept(
    loaded: LoadedStreamsScenario,
    members: list[str],
    st: _StreamsState,
    decisions: list[StreamsAssignment],
) -> list[str]:
    """Gone static clients still members of the last generation whose session outlasts the
    group's rebalance timeout (``static-member-kept``: each join completion reschedules their
    session, so rebalances that follow each other keep them in the group) — when exactly
    they are the clients the last assignment covers beyond the live ones; else ``[]``."""
    configs = {c.name: c.config for c in loaded.clients}
    rebalance_ms = max((c.max_poll_interval_ms for c in configs.values()), default=0)
    kept = sorted(
        m
        for m in members
        if m not in st.live
        and m in configs
        and configs[m].group_instance_id is not None
        and configs[m].session_timeout_ms > rebalance_ms
    )
    if not kept or not decisions:
        return []
    decided = {st.pid_name.get(pid, pid) for pid in decisions[-1].clients}
    return kept if sorted(decided - set(st.live)) == kept else []


def streams_end_violations(summary: StreamsSummary) -> list[Violation]:
    """End-of-run liveness/balance for Streams, as ``violation`` record fields: ``liveness``
    when a task is not running exactly once or the group has not settled (probing rebalances
    still requested, tasks withheld, holdings differ from the last assignment, or the last
    assignment is invalid per KIP-441); ``balance`` when it is settled but not balanced."""
    conv = summary.convergence
    end = summary.end_ms
    found: list[Violation] = []
    parts: list[str] = []
    if conv.not_running_tasks:
        parts.append(f"tasks not running: {', '.join(conv.not_running_tasks[:8])}")
    if conv.duplicate_tasks:
        parts.append(f"tasks running twice: {', '.join(conv.duplicate_tasks[:8])}")
    parts.extend(conv.unsettled[:4])
    parts.extend(conv.invalid[:4])
    if parts:
        found.append(
            Violation(
                invariant="liveness",
                detail=f"at {end} ms: " + "; ".join(parts),
                tasks=conv.not_running_tasks + conv.duplicate_tasks,
            )
        )
        kept = summary.streams.static_kept
        if kept and not conv.duplicate_tasks:
            # the group waits for, and assigns tasks to, gone static members (KIP-345)
            found[-1] = found[-1].replace(members=kept, known_issue=STATIC_MEMBER_KEPT)
    if conv.unbalanced:
        found.append(
            Violation(invariant="balance", detail=f"at {end} ms: " + "; ".join(conv.unbalanced))
        )
    return found


def tag_conflicts(
    assignment: dict[str, ClientTasks],
    tags: dict[str, dict[str, str]],
    keys: Sequence[str],
) -> list[str]:
    """Tasks whose active and standby clients repeat a value of one of the tag ``keys``
    (KIP-708's ideal distribution has none), one line each."""
    holders: dict[str, list[str]] = {}
    for client, roles in assignment.items():
        for task in roles.active + roles.standby:
            holders.setdefault(task, []).append(client)
    out: list[str] = []
    for task in sorted(holders, key=_task_key):
        for key in keys:
            values = [tags.get(c, {}).get(key) for c in holders[task]]
            if len(set(values)) != len(values):
                out.append(f"{task}: {key} {values} on {holders[task]}")
    return out


def streams_expect_failures(expect: Any, summary: StreamsSummary) -> list[str]:
    """One line per unmet check of a Streams ``[expect]`` table
    (:class:`scenarios.input.streams.StreamsExpect`) against :func:`summarize_streams`'s
    summary: the shared checks of :func:`scenarios.check.expect.evaluate`, ``no_violations``
    (minus ``expected_violations``), probing rebalances, the rack-aware cost, KIP-708 tag
    distinctness, and the expected assignments (in order) and final assignment."""
    generic = {
        "converged": expect.converged,
        "no_violations": False,
        "max_rebalances": expect.max_rebalances,
        "min_rebalances": expect.min_rebalances,
        "max_task_downtime_ms": expect.max_task_downtime_ms,
        "max_total_downtime_ms": expect.max_total_downtime_ms,
        "max_time_to_converge_ms": expect.max_time_to_converge_ms,
    }
    failures = evaluate(generic, summary)
    if expect.no_violations:
        allowed = set(expect.expected_violations)
        bad = {k: v for k, v in summary.violations.items() if v and k not in allowed}
        if bad:
            listed = ", ".join(f"{n} {k}" for k, n in sorted(bad.items()))
            failures.append(f"no_violations: expected none, got {listed}")
    streams = summary.streams
    if expect.max_probing_rebalances is not None:
        n = streams.probing_rebalances
        if n > expect.max_probing_rebalances:
            failures.append(
                f"max_probing_rebalances: expected <= {expect.max_probing_rebalances}, got {n}"
            )

    def table(t: dict[str, ClientAssignment]) -> dict[str, ClientTasks]:
        return {
            name: ClientTasks(
                active=sorted(e.active, key=_task_key), standby=sorted(e.standby, key=_task_key)
            )
            for name, e in sorted(t.items())
        }

    if expect.max_final_cost is not None:
        cost = streams.final_cost
        if cost is None or cost > expect.max_final_cost:
            failures.append(
                f"max_final_cost: expected <= {expect.max_final_cost}, got "
                f"{'no rack-aware optimisation' if cost is None else cost}"
            )
    if expect.distinct_tags:
        conflicts = tag_conflicts(
            streams.final_assignment, streams.client_tags, expect.distinct_tags
        )
        if conflicts:
            failures.append(
                f"distinct_tags: {len(conflicts)} task(s) share a tag value among their "
                f"copies: {'; '.join(conflicts[:4])}"
            )

    history = streams.assignment_history
    i = 0
    for n, want in enumerate(expect.assignments):
        w = table(want)
        while i < len(history) and history[i] != w:
            i += 1
        if i == len(history):
            failures.append(
                f"assignments[{n}]: expected {_shown(w)} to follow the previous expected "
                "assignment, "
                f"not found in the leader's assignments"
            )
            break
        i += 1
    if expect.final_assignment is not None:
        w = table(expect.final_assignment)
        got = streams.final_assignment
        if got != w:
            failures.append(f"final_assignment: expected {_shown(w)}, got {_shown(got)}")
    return failures


def _shown(assignment: dict[str, ClientTasks]) -> dict[str, dict[str, list[str]]]:
    """``assignment`` as ``{client: {"active": [...], "standby": [...]}}`` (how an
    expectation failure prints it, as ``summary.json`` holds it)."""
    return {c: {"active": t.active, "standby": t.standby} for c, t in assignment.items()}
