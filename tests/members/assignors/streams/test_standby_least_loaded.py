"""The standby assignors against Kafka's algorithm replayed on a JDK heap.

``DefaultStandbyTaskAssignor`` and ``ClientTagAwareStandbyTaskAssignor`` find the least-loaded
client in a sorted list instead of replaying Kafka's ``ConstrainedPrioritySet`` (see
``members.assignors.streams.standby._LeastLoaded`` for why the two agree). Here each
assignor's steps are written out as Kafka's classes take them, on
:class:`OracleConstrainedPrioritySet` (every ``offerAll``, ``remove``, ``poll`` and ``HashSet``
re-offer of the JDK's heap, loads read live), and both must leave every client with the same
actives and standbys, over random clients (capacities 1-3, tags, actives placed at random,
some tasks without an active, standbys already placed) and 1-3 replicas.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st
from jdk_priority_oracle import OracleConstrainedPrioritySet

from members.assignors.streams import (
    ClientState,
    ClientTagAwareStandbyTaskAssignor,
    DefaultStandbyTaskAssignor,
    ProcessId,
    TaskId,
)
from members.assignors.streams.model import task_id_java_hash
from protocol.java_hash_order import hash_order


def _least_loaded(clients: Mapping[ProcessId, ClientState]) -> OracleConstrainedPrioritySet:
    return OracleConstrainedPrioritySet(
        lambda c, t: not clients[c].has_assigned_task(t),
        lambda c: clients[c].assigned_task_load,
    )


def _poll_and_assign(
    clients: Mapping[ProcessId, ClientState],
    queue: OracleConstrainedPrioritySet,
    task: TaskId,
    remaining: dict[TaskId, int],
) -> None:
    # StandbyTaskAssignmentUtils.pollClientAndMaybeAssignAndUpdateRemainingStandbyTasks
    left = remaining[task]
    while left > 0:
        client = queue.poll(task)
        if client is None:
            break
        clients[client].assign_standby(task)
        left -= 1
        queue.offer(client)
        remaining[task] = left


def kafka_default(
    clients: Mapping[ProcessId, ClientState], stateful: Sequence[TaskId], n: int
) -> None:
    queue = _least_loaded(clients)
    for c in sorted(clients):  # offerAll(clients.keySet()) of a TreeMap
        queue.offer(c)
    remaining = dict.fromkeys(stateful, n)
    for task in stateful:
        _poll_and_assign(clients, queue, task, remaining)


def _outside(used: list[set[ProcessId]]) -> Callable[[ProcessId], bool]:
    return lambda c: not any(c in s for s in used)


def kafka_client_tag(
    clients: Mapping[ProcessId, ClientState],
    stateful: Sequence[TaskId],
    n: int,
    tag_keys: Sequence[str],
) -> None:
    remaining = dict.fromkeys(stateful, n)
    values_of_key: dict[str, set[str]] = {}
    clients_of_entry: dict[tuple[str, str], set[ProcessId]] = {}
    for pid, state in clients.items():
        for k, v in state.tags.items():
            values_of_key.setdefault(k, set()).add(v)
            clients_of_entry.setdefault((k, v), set()).add(pid)
    queue = _least_loaded(clients)
    for task in stateful:
        for pid in sorted(clients):
            if task not in clients[pid].active:
                continue
            for c in sorted(clients):
                queue.offer(c)
            used = 1
            left = remaining[task]
            used_entries: dict[tuple[str, str], set[ProcessId]] = {}
            last = pid
            while True:
                for k, v in clients[last].tags.items():
                    if k not in tag_keys:
                        continue
                    if len(values_of_key[k]) <= used:
                        for value in values_of_key[k]:
                            used_entries.pop((k, value), None)
                    else:
                        used_entries[(k, v)] = clients_of_entry[(k, v)]
                chosen = queue.poll(task, _outside(list(used_entries.values())))
                if chosen is None:
                    break
                used += 1
                left -= 1
                clients[chosen].assign_standby(task)
                last = chosen
                if left <= 0:
                    break
            if left > 0:
                remaining[task] = left
            else:
                del remaining[task]
    if remaining:
        for c in sorted(clients):
            queue.offer(c)
        for task in hash_order(stateful, task_id_java_hash):
            if task in remaining:
                _poll_and_assign(clients, queue, task, remaining)


def _clients(seed: int, n_clients: int, n_tasks: int) -> tuple[dict, list[TaskId]]:
    rng = random.Random(seed)
    tasks = [TaskId(s, p) for s in range(3) for p in range(n_tasks)]
    rng.shuffle(tasks)  # the stateful order is the caller's
    pids = [ProcessId.of(f"PID_{rng.randrange(10**6)}_{i}") for i in range(n_clients)]
    if rng.random() < 0.5:
        pids = [ProcessId.of(f"PID_{i * rng.randint(1, 9)}") for i in range(n_clients)]
    clients = {}
    for p in pids:
        tags = {"zone": rng.choice("abc"), "cluster": rng.choice("xy")}
        if rng.random() < 0.3:
            tags["other"] = rng.choice("pq")
        if rng.random() < 0.1:
            del tags["zone"]
        clients[p] = ClientState(p, rng.randint(1, 3), tags=tags)
    for t in tasks:
        if rng.random() < 0.9:
            clients[rng.choice(pids)].assign_active(t)
        elif rng.random() < 0.5:
            free = [p for p in pids if not clients[p].has_assigned_task(t)]
            if free:
                clients[rng.choice(free)].assign_standby(t)
    return clients, tasks


def _state(clients: Mapping[ProcessId, ClientState]) -> dict:
    return {p.label: (sorted(c.active), sorted(c.standby)) for p, c in clients.items()}


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 10**9),
    n_clients=st.integers(1, 12),
    n_tasks=st.integers(1, 12),
    replicas=st.integers(1, 3),
    tag_keys=st.sampled_from([("zone",), ("zone", "cluster"), ("cluster", "other")]),
)
def test_client_tag_standbys_equal_kafkas_heap(
    seed: int, n_clients: int, n_tasks: int, replicas: int, tag_keys: tuple[str, ...]
) -> None:
    ours, tasks = _clients(seed, n_clients, n_tasks)
    theirs, _ = _clients(seed, n_clients, n_tasks)
    ClientTagAwareStandbyTaskAssignor(replicas, tag_keys).assign(ours, tasks)
    kafka_client_tag(theirs, tasks, replicas, tag_keys)
    assert _state(ours) == _state(theirs)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 10**9),
    n_clients=st.integers(1, 12),
    n_tasks=st.integers(1, 12),
    replicas=st.integers(1, 3),
)
def test_default_standbys_equal_kafkas_heap(
    seed: int, n_clients: int, n_tasks: int, replicas: int
) -> None:
    ours, tasks = _clients(seed, n_clients, n_tasks)
    theirs, _ = _clients(seed, n_clients, n_tasks)
    DefaultStandbyTaskAssignor(replicas).assign(ours, tasks)
    kafka_default(theirs, tasks, replicas)
    assert _state(ours) == _state(theirs)
