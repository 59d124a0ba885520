"""Moving actives and standbys to caught-up clients, with warmups (Kafka ``TaskMovement``).

The HighAvailabilityTaskAssignor first places tasks where balance wants them, ignoring
history; these functions then move every task whose desired owner is not caught up (while a
more caught-up client exists) to a caught-up or the most caught-up client, leaving a *warmup*
(an extra standby) on the desired owner while the ``max.warmup.replicas`` budget lasts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ._load_set import ReportedLoadSet
from ._queues import JavaPriorityQueue
from .model import (
    JAVA_LONG_MAX,
    LATEST_OFFSET,
    ClientState,
    ProcessId,
    StreamsAssignmentError,
    TaskId,
)

# numpy is imported where it is used: a Connect-only run (the flagship ``groupsim run``)
# never pays for it.

__all__ = [
    "WarmupBudget",
    "caught_up_clients",
    "clients_by_lag",
    "is_caught_up",
    "assign_active_task_movements",
    "assign_standby_task_movements",
]


@dataclass
class WarmupBudget:
    """``remainingWarmupReplicas`` (an ``AtomicInteger``): ``take`` is ``getAndDecrement() > 0``;
    the counter keeps going below zero as Kafka's does."""

    remaining: int

    def take(self) -> bool:
        value = self.remaining
        self.remaining -= 1
        return value > 0


def is_caught_up(lag: int, acceptable_recovery_lag: int) -> bool:
    """Kafka ``unboundedRecoveryLag || lag == LATEST_OFFSET || 0 <= lag <= acceptable``."""
    return (
        acceptable_recovery_lag == JAVA_LONG_MAX
        or lag == LATEST_OFFSET
        or 0 <= lag <= acceptable_recovery_lag
    )


class _LagTable:
    """Lags of every client for every stateful task as one matrix (columns in ProcessId order),
    so caught-up sets and by-lag orders are computed per task only when asked for."""

    def __init__(self, clients: Mapping[ProcessId, ClientState], stateful: list[TaskId]) -> None:
        import numpy as np

        self.order = sorted(clients)
        self.row = {t: i for i, t in enumerate(stateful)}
        columns = []
        wanted = set(stateful)
        for pid in self.order:
            lags = clients[pid].lags
            if not lags.keys() >= wanted:
                missing = min(wanted - lags.keys())
                clients[pid].lag_for(missing)  # raises Kafka's "unknown task" error
            columns.append([lags[t] for t in stateful])
        shape = (len(stateful), len(self.order))
        self.lags = np.array(columns, dtype=np.int64).T.reshape(shape)
        # first column of the row minimum = lowest lag, then lowest ProcessId
        self.first: list[int] = self.lags.argmin(axis=1).tolist() if self.lags.size else []


class _CaughtUp(Mapping[TaskId, set[ProcessId]]):
    def __init__(self, table: _LagTable, acceptable_recovery_lag: int) -> None:
        import numpy as np

        self.table = table
        lags = table.lags
        if acceptable_recovery_lag == JAVA_LONG_MAX:
            self.mask = np.ones(lags.shape, dtype=bool)
        else:
            self.mask = (lags == LATEST_OFFSET) | ((lags >= 0) & (lags <= acceptable_recovery_lag))
        self.cache: dict[TaskId, set[ProcessId]] = {}

    def __getitem__(self, task: TaskId) -> set[ProcessId]:
        got = self.cache.get(task)
        if got is None:
            order = self.table.order
            row = self.mask[self.table.row[task]]
            got = {order[j] for j in row.nonzero()[0].tolist()}
            self.cache[task] = got
        return got

    def __iter__(self) -> Iterator[TaskId]:
        return iter(self.table.row)

    def __len__(self) -> int:
        return len(self.table.row)


class _ByLag(Mapping[TaskId, list[ProcessId]]):
    def __init__(self, table: _LagTable) -> None:
        self.table = table
        self.cache: dict[TaskId, list[ProcessId]] = {}

    def __getitem__(self, task: TaskId) -> list[ProcessId]:
        got = self.cache.get(task)
        if got is None:
            order = self.table.order
            row = self.table.lags[self.table.row[task]]
            # stable sort over columns in ProcessId order: ties by ProcessId
            got = [order[j] for j in row.argsort(kind="stable").tolist()]
            self.cache[task] = got
        return got

    def first(self, task: TaskId) -> ProcessId:
        """The most caught-up client (lowest lag, then lowest id) without sorting."""
        got = self.cache.get(task)
        if got is not None:
            return got[0]
        return self.table.order[self.table.first[self.table.row[task]]]

    def __iter__(self) -> Iterator[TaskId]:
        return iter(self.table.row)

    def __len__(self) -> int:
        return len(self.table.row)


def caught_up_clients(
    clients: Mapping[ProcessId, ClientState], stateful: list[TaskId], acceptable_recovery_lag: int
) -> Mapping[TaskId, set[ProcessId]]:
    """Stateful task → clients caught up on it (HATA ``tasksToCaughtUpClients``; see
    :func:`is_caught_up`). Computed per task on first access.

    Raises:
        StreamsAssignmentError: a client has no lag for a stateful task (Kafka ``lagFor``).
    """
    return _CaughtUp(_LagTable(clients, stateful), acceptable_recovery_lag)


def clients_by_lag(
    clients: Mapping[ProcessId, ClientState], stateful: list[TaskId]
) -> Mapping[TaskId, list[ProcessId]]:
    """Stateful task → every client in ascending (lag, ProcessId) order (``-3`` sorts first);
    computed per task on first access."""
    return _ByLag(_LagTable(clients, stateful))


def _most_caught_up(by_lag: Mapping[TaskId, list[ProcessId]], task: TaskId) -> ProcessId:
    if isinstance(by_lag, _ByLag):
        return by_lag.first(task)
    return by_lag[task][0]


def _holds_standby(
    clients: Mapping[ProcessId, ClientState], task: TaskId
) -> Callable[[ProcessId], bool]:
    return lambda c: task in clients[c].standby


def _lacks(clients: Mapping[ProcessId, ClientState], task: TaskId) -> Callable[[ProcessId], bool]:
    return lambda c: not clients[c].has_assigned_task(task)


def _needs_movement(
    task: TaskId,
    client: ProcessId,
    clients: Mapping[ProcessId, ClientState],
    caught_up: Mapping[TaskId, set[ProcessId]],
    by_lag: Mapping[TaskId, list[ProcessId]],
) -> bool:
    """Not caught up, and the most caught-up client has a strictly smaller lag."""
    if client in caught_up[task]:
        return False
    most = _most_caught_up(by_lag, task)
    return clients[most].lag_for(task) < clients[client].lag_for(task)


def _load_key(clients: Mapping[ProcessId, ClientState]) -> Callable[[ProcessId], int]:
    """Kafka's load-set order (``assignedTaskLoad``, then ``ProcessId``) as one int.

    ``count / capacity`` is written ``count * (L / capacity)`` over ``L``, the capacities'
    least common multiple, so loads compare exactly; the client's rank in ProcessId order
    breaks ties. Two different loads of clients with realistic capacities differ far beyond a
    double's resolution, so Java's ``double`` comparison orders them the same way.
    """
    order = sorted(clients)
    n = len(order)
    lcm = math.lcm(*(clients[p].capacity for p in order)) if order else 1
    info = {p: (clients[p], lcm // clients[p].capacity * n, rank) for rank, p in enumerate(order)}

    def key(client: ProcessId) -> int:
        state, scale, rank = info[client]
        return (len(state.active) + len(state.standby)) * scale + rank

    return key


def _movement_queue(
    caught_up: Mapping[TaskId, set[ProcessId]],
) -> JavaPriorityQueue[tuple[TaskId, ProcessId]]:
    # TaskMovement.compareTo: number of caught-up clients, then task (equal for one task).
    return JavaPriorityQueue(lambda m: (len(caught_up[m[0]]), m[0]))


def _swap(task: TaskId, new_active: ClientState, old_active: ClientState) -> None:
    new_active.unassign_standby(task)
    new_active.assign_active(task)
    old_active.unassign_active(task)
    old_active.assign_standby(task)


def _move_active_and_try_warmup(
    task: TaskId,
    source: ClientState,
    destination: ClientState,
    budget: WarmupBudget,
    warmups: dict[ProcessId, set[TaskId]],
) -> None:
    source.assign_active(task)
    destination.unassign_active(task)
    if budget.take():
        destination.assign_standby(task)
        warmups.setdefault(destination.process_id, set()).add(task)


def assign_active_task_movements(
    caught_up: Mapping[TaskId, set[ProcessId]],
    by_lag: Mapping[TaskId, list[ProcessId]],
    clients: Mapping[ProcessId, ClientState],
    warmups: dict[ProcessId, set[TaskId]],
    budget: WarmupBudget,
) -> int:
    """Kafka ``TaskMovement.assignActiveTaskMovements``; returns the movements needed.

    Args:
        caught_up: stateful task → caught-up clients (:func:`caught_up_clients`).
        by_lag: stateful task → clients by (lag, id) (:func:`clients_by_lag`).
        clients: every client, iterated in sorted ProcessId order; mutated in place.
        warmups: filled with destination → tasks that got a warmup standby.
        budget: ``max.warmup.replicas`` left for this assignment (shared with standbys).

    Raises:
        StreamsAssignmentError: a movement finds no client (Kafka's IllegalStateException);
            cannot happen with consistent lags.
    """
    order = sorted(clients)
    load_set = ReportedLoadSet(
        lambda c, t: c in caught_up[t],
        _load_key(clients),  # every load change below is reported by load_changed
        caught_up.__getitem__,
    )
    queue = _movement_queue(caught_up)
    for pid in order:
        for task in clients[pid].sorted_active():
            if task in caught_up and _needs_movement(task, pid, clients, caught_up, by_lag):
                queue.offer((task, pid))
        load_set.offer(pid)
    needed = len(queue)
    while (movement := queue.poll()) is not None:
        task, dest = movement
        dest_state = clients[dest]
        # 1. swap with a caught-up client holding a standby (no warmup budget used)
        source = load_set.poll(task, _holds_standby(clients, task))
        if source is not None:
            _swap(task, clients[source], dest_state)
        else:
            # 2. move to the least-loaded caught-up client, warm up the destination
            source = load_set.poll(task)
            if source is not None:
                _move_active_and_try_warmup(task, clients[source], dest_state, budget, warmups)
            else:
                # 3. move to the most caught-up client (unless that is the destination)
                most = _most_caught_up(by_lag, task)
                if most == dest:
                    raise StreamsAssignmentError(
                        f"no client to move active task {task} to from {dest}"
                    )
                source = most
                if task in clients[source].standby:
                    _swap(task, clients[source], dest_state)
                else:
                    _move_active_and_try_warmup(task, clients[source], dest_state, budget, warmups)
        # Kafka: offerAll(asList(source, destination))
        load_set.load_changed(source, dest)
        load_set.offer(source)
        load_set.offer(dest)
    return needed


def assign_standby_task_movements(
    caught_up: Mapping[TaskId, set[ProcessId]],
    by_lag: Mapping[TaskId, list[ProcessId]],
    clients: Mapping[ProcessId, ClientState],
    warmups: Mapping[ProcessId, set[TaskId]],
    budget: WarmupBudget,
) -> int:
    """Kafka ``TaskMovement.assignStandbyTaskMovements``; returns the movements made.

    Standbys that are warmups created by :func:`assign_active_task_movements` in this round are
    left alone. A movement without any eligible source client is dropped and not counted.
    """
    order = sorted(clients)
    load_set = ReportedLoadSet(
        lambda c, t: c in caught_up[t],
        _load_key(clients),  # every load change below is reported by load_changed
        caught_up.__getitem__,
    )
    queue = _movement_queue(caught_up)
    for pid in order:
        own_warmups = warmups.get(pid, set())
        for task in clients[pid].sorted_standby():
            if task in own_warmups:
                continue
            if task in caught_up and _needs_movement(task, pid, clients, caught_up, by_lag):
                queue.offer((task, pid))
        load_set.offer(pid)
    moved = 0
    while (movement := queue.poll()) is not None:
        task, dest = movement
        source = load_set.poll(task, _lacks(clients, task))
        if source is None:
            for candidate in by_lag[task]:
                if candidate == dest:
                    break
                if not clients[candidate].has_assigned_task(task):
                    source = candidate
                    break
        if source is None:
            continue
        clients[source].assign_standby(task)
        if not budget.take():
            clients[dest].unassign_standby(task)
        load_set.load_changed(source, dest)
        load_set.offer(source)
        load_set.offer(dest)
        moved += 1
    return moved
