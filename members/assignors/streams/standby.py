"""Standby placement: Kafka ``DefaultStandbyTaskAssignor``, ``ClientTagAwareStandbyTaskAssignor``.

Both place ``num.standby.replicas`` standbys of every stateful task on top of an existing
active assignment and mutate the given :class:`ClientState` objects in place. Ties between
clients are broken by ``(assignedTaskCount / capacity, ProcessId)``; capacity is not a cap.
:func:`create_standby_assignor` is ``StandbyTaskAssignorFactory.create``.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, insort
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from protocol.java_hash_order import hash_order

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


class _LeastLoaded:
    """What Kafka's least-loaded ``ConstrainedPrioritySet`` polls in the standby assignors.

    Kafka (``StandbyTaskAssignmentUtils.createLeastLoadedPrioritySetConstrainedByAssignedTask``)
    keeps the clients in a ``java.util.PriorityQueue`` ordered by ``(assignedTaskLoad,
    ProcessId)``, read live at each comparison; a poll takes clients off the top until one
    does not hold the task (and passes the caller's extra test) and offers the others back.
    Such a heap returns a client that is not the least loaded only after a client's load
    changed while it sat in the heap (docs/fidelity.md). Neither standby assignor does that:
    each assigns a standby only to the client a poll has just taken out, and it re-enters
    (``offer``/``offerAll``) with its new load; ``offer``, ``poll`` and ``removeAt`` keep an
    ordered heap ordered. Keys are distinct (one per ``ProcessId``), so every poll returns the
    least key among the present clients that pass, whatever the heap's layout; and a client
    absent at a poll is one an earlier poll of the same task handed out, which holds the task
    and would be rejected anyway. So a poll is the first passing client of all clients sorted
    by that key: the same client as Kafka's, found without replaying the heap.

    Entries ``(load, ProcessId key, ProcessId, ClientState)`` are kept sorted; keys are
    distinct, so tuple comparison never reaches the last two fields.
    """

    __slots__ = ("_entries", "_entry_of")

    def __init__(self, clients: Mapping[ProcessId, ClientState]) -> None:
        self._entry_of: dict[ProcessId, tuple[float, Any, ProcessId, ClientState]] = {
            pid: (state.assigned_task_load, pid.key, pid, state) for pid, state in clients.items()
        }
        self._entries = sorted(self._entry_of.values())

    def poll(
        self, task: TaskId, excluded: set[ProcessId] | frozenset[ProcessId] = frozenset()
    ) -> ProcessId | None:
        """The least-loaded client not holding ``task`` and not in ``excluded``, or None."""
        for entry in self._entries:
            state = entry[3]
            if task in state.active or task in state.standby or entry[2] in excluded:
                continue
            return entry[2]
        return None

    def assign_standby(self, client: ProcessId, task: TaskId) -> None:
        """``ClientState.assignStandby`` on ``client``, which then moves to its new place."""
        entries = self._entries
        old = self._entry_of[client]
        state = old[3]
        state.assign_standby(task)
        i = bisect_left(entries, old)
        del entries[i]
        new = self._entry_of[client] = (state.assigned_task_load, old[1], client, state)
        insort(entries, new, lo=i)  # loads only grow


def _fill_least_loaded(
    least_loaded: _LeastLoaded,
    task: TaskId,
    remaining: int,
    total: int,
) -> int:
    """``StandbyTaskAssignmentUtils.pollClientAndMaybeAssignAndUpdateRemainingStandbyTasks``:
    give ``task`` up to ``remaining`` standbys on least-loaded clients; returns what is left."""
    while remaining > 0:
        client = least_loaded.poll(task)
        if client is None:
            break
        least_loaded.assign_standby(client, task)
        remaining -= 1
    if remaining > 0:
        log.warning(
            "Unable to assign %d of %d standby tasks for task [%s]; "
            "there is not enough available capacity",
            remaining,
            total,
            task,
        )
    return remaining


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
    ``num.standby.replicas`` times, the least-loaded client not holding it gets a standby
    (what Kafka's load-ordered heap polls here, see :class:`_LeastLoaded`)."""

    def assign(self, clients: Mapping[ProcessId, ClientState], stateful: Sequence[TaskId]) -> None:
        least_loaded = _LeastLoaded(clients)
        for task in stateful:
            _fill_least_loaded(
                least_loaded, task, self.num_standby_replicas, self.num_standby_replicas
            )


class ClientTagAwareStandbyTaskAssignor(StandbyTaskAssignor):
    """Kafka ``ClientTagAwareStandbyTaskAssignor`` (KIP-708).

    For each stateful task (given order) and each client holding it as active (sorted order),
    standbys go to the least-loaded clients whose tag values differ from those of the clients
    used so far, dimension by dimension (a tag key whose distinct values are all used stops
    constraining); what cannot be placed that way is placed least-loaded afterwards, iterating
    the remaining tasks in Java ``HashMap<TaskId, Integer>`` order. "Least-loaded" is what
    Kafka's ``ConstrainedPrioritySet`` polls here (:class:`_LeastLoaded`).

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
        # task -> the clients holding it as active, in the TreeMap's order (actives do not
        # change here, so this is Kafka's scan of every client for every task, done once)
        holders: dict[TaskId, list[ProcessId]] = {}
        for pid in sorted(clients):
            for t in clients[pid].active:
                holders.setdefault(t, []).append(pid)
        least_loaded = _LeastLoaded(clients)
        for task in stateful:
            for pid in holders.get(task, ()):
                self._assign_with_different_tags(
                    clients, least_loaded, task, pid, remaining, values_of_key, clients_of_entry
                )
        if remaining:
            # a HashMap filled by put in task order, entries removed since (removals keep
            # chain order; a tree bin could reorder, see docs/fidelity.md)
            for task in hash_order(stateful, task_id_java_hash):
                if task in remaining:
                    remaining[task] = _fill_least_loaded(
                        least_loaded, task, remaining[task], self.num_standby_replicas
                    )

    def _assign_with_different_tags(
        self,
        clients: Mapping[ProcessId, ClientState],
        least_loaded: _LeastLoaded,
        task: TaskId,
        active_client: ProcessId,
        remaining: dict[TaskId, int],
        values_of_key: Mapping[str, set[str]],
        clients_of_entry: Mapping[tuple[str, str], set[ProcessId]],
    ) -> None:
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
            chosen = least_loaded.poll(task, set().union(*used_entries.values()))
            if chosen is None:
                break
            least_loaded.assign_standby(chosen, task)
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
