"""Kafka Streams' default task assignor (KIP-441): Kafka ``HighAvailabilityTaskAssignor``.

:func:`assign_high_availability` runs, in Kafka's order:

1. stateful actives dealt round robin over clients (both sorted), ignoring history;
2. ``balanceTasksOverThreads`` on actives (moves by ``assignedTaskLoad`` skew);
3. rack-aware optimisation of the stateful actives (if enabled);
4. standbys (if ``num.standby.replicas`` > 0): the standby assignor (client-tag aware if
   ``rack.aware.assignment.tags`` is set, else default), ``balanceTasksOverThreads`` on
   standbys with its movement predicate, rack-aware standby optimisation (if enabled);
5. caught-up clients and clients-by-lag per stateful task;
6. active task movements (``TaskMovement``) with the ``max.warmup.replicas`` budget;
7. standby task movements with what is left of the budget;
8. stateless actives to the client with the lowest active load (then rack optimisation with
   traffic 1 / non-overlap 0, if enabled);
9. probing rebalance needed iff any movement was needed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .model import AssignmentConfigs, ClientState, ProcessId, TaskId
from .rack_aware import (
    DEFAULT_NON_OVERLAP_COST,
    DEFAULT_TRAFFIC_COST,
    STATELESS_NON_OVERLAP_COST,
    STATELESS_TRAFFIC_COST,
    RackAwareTaskAssignor,
)
from .standby import create_standby_assignor
from .task_movement import (
    WarmupBudget,
    _ByLag,
    _CaughtUp,
    _LagTable,
    assign_active_task_movements,
    assign_standby_task_movements,
)

__all__ = ["HighAvailabilityResult", "assign_high_availability", "balance_tasks_over_threads"]


@dataclass
class HighAvailabilityResult:
    """What one HATA run decided besides the mutated client states.

    Attributes:
        probing_rebalance_needed: Kafka's return value (movements were needed).
        active_movements / standby_movements: the two TaskMovement counts.
        warmups: client → tasks given a warmup standby in this round.
        cost_before / cost_after: summed over the rack-aware optimiser calls that ran (stateful
            actives, standbys, stateless actives): the cost of the placement each started from
            and the minimum it returned; ``None`` when rack awareness did not run.
        notes: why rack awareness was disabled, if it was.
    """

    probing_rebalance_needed: bool
    active_movements: int = 0
    standby_movements: int = 0
    warmups: dict[ProcessId, set[TaskId]] = field(default_factory=dict)
    cost_before: int | None = None
    cost_after: int | None = None
    notes: list[str] = field(default_factory=list)


def _should_move(source: ClientState, dest: ClientState) -> bool:
    """Kafka ``HighAvailabilityTaskAssignor.shouldMoveATask``: the same IEEE double operations
    as ``assignedTaskLoad``/``assignedTaskCount``, read from the task sets directly (this runs
    for every client pair of every balancing pass)."""
    source_count = len(source.active) + len(source.standby)
    dest_count = len(dest.active) + len(dest.standby)
    source_capacity = source.capacity
    dest_capacity = dest.capacity
    skew = source_count / source_capacity - dest_count / dest_capacity
    if skew <= 0:
        return False
    proposed = (source_count - 1) / source_capacity - (dest_count + 1) / dest_capacity
    if proposed < 0:
        return False
    return proposed < skew


def balance_tasks_over_threads(
    clients: Mapping[ProcessId, ClientState],
    standby: bool,
    allowed: Callable[[ClientState, ClientState], bool] | None = None,
) -> None:
    """Kafka ``HighAvailabilityTaskAssignor.balanceTasksOverThreads`` on actives or standbys.

    Repeats full passes over ordered (source, destination) pairs (sorted ids) until nothing
    moves; each pair moves the source's tasks (sorted snapshot) while the load skew shrinks.
    """
    states = [clients[p] for p in sorted(clients)]
    # each client's assignedTaskLoad, kept current as tasks move: a pair whose source is not
    # more loaded than its destination has skew <= 0 (for finite doubles x - y <= 0 exactly
    # when x <= y), so shouldMoveATask is false without being called
    loads = [(len(c.active) + len(c.standby)) / c.capacity for c in states]
    keep = True
    while keep:
        keep = False
        for si, source in enumerate(states):
            for di, dest in enumerate(states):
                if loads[si] <= loads[di] or source is dest:
                    continue
                # both tests are pure: the cheap one first
                if not _should_move(source, dest):
                    continue
                if allowed is not None and not allowed(source, dest):
                    continue
                held = source.standby if standby else source.active
                for task in sorted(held):
                    if not _should_move(source, dest):
                        break
                    if not dest.has_assigned_task(task):
                        if standby:
                            source.unassign_standby(task)
                            dest.assign_standby(task)
                        else:
                            source.unassign_active(task)
                            dest.assign_active(task)
                        keep = True
                loads[si] = (len(source.active) + len(source.standby)) / source.capacity
                loads[di] = (len(dest.active) + len(dest.standby)) / dest.capacity


def assign_high_availability(
    clients: Mapping[ProcessId, ClientState],
    stateful: Iterable[TaskId],
    stateless: Iterable[TaskId],
    configs: AssignmentConfigs,
    rack_aware: RackAwareTaskAssignor | None = None,
) -> HighAvailabilityResult:
    """Run Kafka's HighAvailabilityTaskAssignor, mutating ``clients`` in place.

    Args:
        clients: every client with capacity, lags (one per stateful task: ``-2``, ``-3`` or
            ``>= 0``) and tags; their ``active``/``standby`` sets must be empty.
        stateful / stateless: the task ids (disjoint).
        configs: acceptable.recovery.lag, max.warmup.replicas, num.standby.replicas,
            rack-aware strategy/tags/costs (``None`` costs: 10 and 1).
        rack_aware: the rack-aware optimiser over the same ``clients``; used only if its
            :meth:`~RackAwareTaskAssignor.can_enable` holds.

    Returns:
        :class:`HighAvailabilityResult` (probing flag, movement counts, warmups, costs).

    Raises:
        StreamsAssignmentError: a client lacks a lag for a stateful task, or holds a task
            already.
    """
    stateful_list = sorted(set(stateful))
    stateless_list = sorted(set(stateless))
    order = sorted(clients)
    result = HighAvailabilityResult(False)
    traffic = configs.traffic_cost if configs.traffic_cost is not None else DEFAULT_TRAFFIC_COST
    non_overlap = (
        configs.non_overlap_cost
        if configs.non_overlap_cost is not None
        else DEFAULT_NON_OVERLAP_COST
    )
    rack_on = bool(
        rack_aware is not None
        and order
        and rack_aware.can_enable([*stateful_list, *stateless_list], stateful_list)
    )
    if rack_aware is not None:
        result.notes = rack_aware.notes

    def optimized(before: int, after: int) -> None:
        result.cost_before = (result.cost_before or 0) + before
        result.cost_after = (result.cost_after or 0) + after

    # 1-3. desired stateful actives
    if order:
        for i, task in enumerate(stateful_list):
            clients[order[i % len(order)]].assign_active(task)
    balance_tasks_over_threads(clients, standby=False)
    if rack_on and stateful_list:
        assert rack_aware is not None
        before = rack_aware.assignment_cost(stateful_list, traffic, non_overlap)
        optimized(before, rack_aware.optimize_active_tasks(stateful_list, traffic, non_overlap))

    # 4. standbys
    if configs.num_standby_replicas > 0:
        standby_assignor = create_standby_assignor(configs)
        standby_assignor.assign(clients, stateful_list)
        balance_tasks_over_threads(
            clients, standby=True, allowed=standby_assignor.is_allowed_task_movement
        )
        if rack_on:
            assert rack_aware is not None
            before = rack_aware.assignment_cost(stateful_list, traffic, 0, standby=True)
            after = rack_aware.optimize_standby_tasks(
                traffic, non_overlap, standby_assignor.is_allowed_task_movement_for_task
            )
            optimized(before, after)

    # 5-7. movements towards caught-up clients
    table = _LagTable(clients, stateful_list)
    caught_up = _CaughtUp(table, configs.acceptable_recovery_lag)
    by_lag = _ByLag(table)
    budget = WarmupBudget(configs.max_warmup_replicas)
    result.active_movements = assign_active_task_movements(
        caught_up, by_lag, clients, result.warmups, budget
    )
    result.standby_movements = assign_standby_task_movements(
        caught_up, by_lag, clients, result.warmups, budget
    )

    # 8. stateless actives by active load
    if order and stateless_list:
        heap = [(clients[p].active_task_load, p.key, p) for p in order]
        heapq.heapify(heap)
        for task in stateless_list:
            _, _, pid = heapq.heappop(heap)
            state = clients[pid]
            state.assign_active(task)
            heapq.heappush(heap, (state.active_task_load, pid.key, pid))
        if rack_on:
            assert rack_aware is not None
            before = rack_aware.assignment_cost(
                stateless_list, STATELESS_TRAFFIC_COST, STATELESS_NON_OVERLAP_COST
            )
            after = rack_aware.optimize_active_tasks(
                stateless_list, STATELESS_TRAFFIC_COST, STATELESS_NON_OVERLAP_COST
            )
            optimized(before, after)

    result.probing_rebalance_needed = result.active_movements + result.standby_movements > 0
    return result
