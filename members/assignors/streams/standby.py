"""Standby placement: Kafka ``DefaultStandbyTaskAssignor``, ``ClientTagAwareStandbyTaskAssignor``.

Both place ``num.standby.replicas`` standbys of every stateful task on top of an existing
active assignment and mutate the given :class:`ClientState` objects in place. Ties between
clients are broken by ``(assignedTaskCount / capacity, ProcessId)``; capacity is not a cap.
:func:`create_standby_assignor` is ``StandbyTaskAssignorFactory.create``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from protocol.java import hash_order

from ._queues import ConstrainedPrioritySet
from .model import AssignmentConfigs, ClientState, ProcessId, TaskId, task_id_java_hash

__all__ = [
    "StandbyTaskAssignor",
    "DefaultStandbyTaskAssignor",
    "ClientTagAwareStandbyTaskAssignor",
    "create_standby_assignor",
]

log = logging.getLogger("groupsim.streams")

TagsOf = Callable[[ClientState], Mapping[str, str]]


def _own_tags(state: ClientState) -> Mapping[str, str]:
    return state.tags


def _rack_tag(state: ClientState) -> Mapping[str, str]:
    return {"rack": state.rack} if state.rack is not None else {}


def _least_loaded(clients: Mapping[ProcessId, ClientState]) -> ConstrainedPrioritySet:
    return ConstrainedPrioritySet(
        lambda c, t: not clients[c].has_assigned_task(t),
        lambda c: clients[c].assigned_task_load,
    )


def _fill_least_loaded(
    clients: Mapping[ProcessId, ClientState],
    load_set: ConstrainedPrioritySet,
    task: TaskId,
    remaining: int,
    total: int,
) -> int:
    """``StandbyTaskAssignmentUtils.pollClientAndMaybeAssignAndUpdateRemainingStandbyTasks``:
    give ``task`` up to ``remaining`` standbys on least-loaded clients; returns what is left."""
    while remaining > 0:
        client = load_set.poll(task)
        if client is None:
            break
        clients[client].assign_standby(task)
        remaining -= 1
        load_set.offer(client)
    if remaining > 0:
        log.warning(
            "Unable to assign %d of %d standby tasks for task [%s]; "
            "there is not enough available capacity",
            remaining,
            total,
            task,
        )
    return remaining


def _outside(used_sets: list[set[ProcessId]]) -> Callable[[ProcessId], bool]:
    return lambda c: not any(c in s for s in used_sets)


class StandbyTaskAssignor:
    """Base: ``assign`` places standbys; the two ``is_allowed_*`` predicates gate movements."""

    def __init__(self, num_standby_replicas: int) -> None:
        self.num_standby_replicas = num_standby_replicas

    def assign(self, clients: Mapping[ProcessId, ClientState], stateful: Sequence[TaskId]) -> None:
        """Place standbys for ``stateful`` (in the given order) on ``clients`` (sorted map)."""
        raise NotImplementedError

    def is_allowed_task_movement(self, source: ClientState, destination: ClientState) -> bool:
        """2-arg predicate of HATA's standby balancing (always true here)."""
        return True

    def is_allowed_task_movement_for_task(
        self,
        source: ClientState,
        destination: ClientState,
        task: TaskId,
        clients: Mapping[ProcessId, ClientState],
    ) -> bool:
        """4-arg predicate of the rack-aware standby optimizer (always true here)."""
        return True


class DefaultStandbyTaskAssignor(StandbyTaskAssignor):
    """Kafka ``DefaultStandbyTaskAssignor``: for each stateful task in the given order, up to
    ``num.standby.replicas`` times, the client Kafka's load-ordered heap polls (the least
    loaded not holding it, unless the heap went stale: see docs/fidelity.md) gets a standby."""

    def assign(self, clients: Mapping[ProcessId, ClientState], stateful: Sequence[TaskId]) -> None:
        load_set = _least_loaded(clients)
        load_set.offer_all(sorted(clients))  # the TreeMap's keySet
        for task in stateful:
            _fill_least_loaded(
                clients, load_set, task, self.num_standby_replicas, self.num_standby_replicas
            )


class ClientTagAwareStandbyTaskAssignor(StandbyTaskAssignor):
    """Kafka ``ClientTagAwareStandbyTaskAssignor`` (KIP-708).

    For each stateful task (given order) and each client holding it as active (sorted order),
    standbys go to the least-loaded clients whose tag values differ from those of the clients
    used so far, dimension by dimension (a tag key whose distinct values are all used stops
    constraining); what cannot be placed that way is placed least-loaded afterwards, iterating
    the remaining tasks in Java ``HashMap<TaskId, Integer>`` order.

    Args:
        num_standby_replicas: standbys per stateful task.
        tag_keys: ``rack.aware.assignment.tags``; other tag keys are ignored for placement.
        tags_of: where a client's tags come from (its client tags; the rack-id variant uses
            ``{"rack": client.rack}``).
    """

    def __init__(
        self,
        num_standby_replicas: int,
        tag_keys: Sequence[str],
        tags_of: TagsOf = _own_tags,
    ) -> None:
        super().__init__(num_standby_replicas)
        self.tag_keys = tuple(tag_keys)
        self.tags_of = tags_of

    def assign(self, clients: Mapping[ProcessId, ClientState], stateful: Sequence[TaskId]) -> None:
        n = self.num_standby_replicas
        remaining: dict[TaskId, int] = dict.fromkeys(stateful, n)
        values_of_key: dict[str, set[str]] = {}
        clients_of_entry: dict[tuple[str, str], set[ProcessId]] = {}
        for pid, state in clients.items():
            for k, v in self.tags_of(state).items():
                values_of_key.setdefault(k, set()).add(v)
                clients_of_entry.setdefault((k, v), set()).add(pid)
        load_set = _least_loaded(clients)
        order = sorted(clients)
        for task in stateful:
            for pid in order:
                if task in clients[pid].active:
                    self._assign_with_different_tags(
                        clients, load_set, task, pid, remaining, values_of_key, clients_of_entry
                    )
        if remaining:
            load_set.offer_all(sorted(clients))  # the TreeMap's keySet
            # a HashMap filled by put in task order, entries removed since (removals keep
            # chain order; a tree bin could reorder, see docs/fidelity.md)
            for task in hash_order(stateful, task_id_java_hash):
                if task in remaining:
                    remaining[task] = _fill_least_loaded(
                        clients, load_set, task, remaining[task], self.num_standby_replicas
                    )

    def _assign_with_different_tags(
        self,
        clients: Mapping[ProcessId, ClientState],
        load_set: ConstrainedPrioritySet,
        task: TaskId,
        active_client: ProcessId,
        remaining: dict[TaskId, int],
        values_of_key: Mapping[str, set[str]],
        clients_of_entry: Mapping[tuple[str, str], set[ProcessId]],
    ) -> None:
        load_set.offer_all(sorted(clients))  # the TreeMap's keySet
        used_count = 1
        left = remaining[task]
        used_entries: dict[tuple[str, str], set[ProcessId]] = {}
        last = active_client
        while True:
            for k, v in self.tags_of(clients[last]).items():
                if k not in self.tag_keys:
                    continue
                if len(values_of_key[k]) <= used_count:
                    for entry in [e for e in used_entries if e[0] == k]:
                        del used_entries[entry]
                else:
                    used_entries[(k, v)] = clients_of_entry[(k, v)]
            chosen = load_set.poll(task, _outside(list(used_entries.values())))
            if chosen is None:
                break
            clients[chosen].assign_standby(task)
            used_count += 1
            left -= 1
            last = chosen
            if left <= 0:
                break
        if left > 0:
            remaining[task] = left
        else:
            remaining.pop(task, None)

    def is_allowed_task_movement(self, source: ClientState, destination: ClientState) -> bool:
        """Every tag of ``source`` has the same value on ``destination``."""
        dest_tags = self.tags_of(destination)
        return all(dest_tags.get(k) == v for k, v in self.tags_of(source).items())

    def is_allowed_task_movement_for_task(
        self,
        source: ClientState,
        destination: ClientState,
        task: TaskId,
        clients: Mapping[ProcessId, ClientState],
    ) -> bool:
        """Moving ``task``'s standby from ``source`` to ``destination`` keeps at least as many
        distinct (key, value) tag entries among the task's holders."""
        others: set[tuple[str, str]] = set()
        for pid, state in clients.items():
            if pid != source.process_id and state.has_assigned_task(task):
                others.update(self.tags_of(state).items())
        with_source = others | set(self.tags_of(source).items())
        with_dest = others | set(self.tags_of(destination).items())
        return len(with_dest) >= len(with_source)


def create_standby_assignor(
    configs: AssignmentConfigs, use_rack_as_tag: bool = False
) -> StandbyTaskAssignor:
    """``StandbyTaskAssignorFactory.create``: client-tag aware when ``rack.aware.assignment.tags``
    is non-empty; else, with ``use_rack_as_tag`` (Kafka: a RackAwareTaskAssignor with valid
    client racks was passed — HATA never passes one), tag-aware on ``{"rack": client.rack}``;
    else the default (least-loaded) assignor."""
    n = configs.num_standby_replicas
    if configs.rack_aware_assignment_tags:
        return ClientTagAwareStandbyTaskAssignor(n, configs.rack_aware_assignment_tags)
    if use_rack_as_tag:
        return ClientTagAwareStandbyTaskAssignor(n, ("rack",), _rack_tag)
    return DefaultStandbyTaskAssignor(n)
