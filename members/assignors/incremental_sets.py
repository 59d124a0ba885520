"""The set algebra of ``IncrementalCooperativeAssignor.performTaskAssignment`` (Kafka, KIP-415)
in the orders Kafka's collections give it: duplicates collapsed and found, deleted and
duplicated items revoked in Java ``HashSet`` order, what a round dealt merged into the
previous assignment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from protocol.java_capacity import presized_capacity

from ._wire import connector_hash_order, task_hash_order
from .incremental_load import Task, WorkerLoad

__all__ = ["distinct", "held_twice", "add_dealt", "revoke_deleted_and_duplicated"]

_T = TypeVar("_T")


def distinct(items: Sequence[_T]) -> list[_T]:
    """``items`` with later duplicates dropped (a new list, order kept)."""
    lst = list(items)
    if len(set(lst)) == len(lst):
        return lst
    return list(dict.fromkeys(lst))


def _without(held: Sequence[_T], removed: Sequence[_T]) -> list[_T]:
    """A new list of ``held`` minus every item of ``removed``, order kept."""
    if not removed:
        return list(held)
    gone = set(removed)
    return [x for x in held if x not in gone]


def held_twice(lists: Iterable[Sequence[_T]]) -> set[_T]:
    """The items found in more than one of ``lists`` (each list's items distinct)."""
    counts = Counter(x for v in lists for x in v)
    return {k for k, n in counts.items() if n > 1}


def _retain_hash_order(
    held: Sequence[Any], keep: set[Any], hashed: Callable[[list[Any], int], list[Any]]
) -> list[Any]:
    """``new HashSet<>(held)`` then ``retainAll(keep)``: survivors in that set's order.

    ``retainAll`` removes through the iterator (``removeNode`` with ``movable`` false), which
    only unlinks nodes: the survivors keep the order the full set had.
    """
    survivors = [x for x in held if x in keep]
    if len(survivors) <= 1:
        return survivors
    return [x for x in hashed(list(held), presized_capacity(len(held))) if x in keep]


def revoke_deleted_and_duplicated(
    order: Sequence[str],
    held_c: Mapping[str, Sequence[str]],
    held_t: Mapping[str, Sequence[Task]],
    deleted_c: set[str],
    deleted_t: set[Task],
    dup_c: set[str],
    dup_t: set[Task],
) -> tuple[dict[str, list[str]], dict[str, list[Task]], list[WorkerLoad]]:
    """Steps 5 and 6 of ``performTaskAssignment``: each worker of ``order`` gives up what it
    holds of the deleted items, then of the duplicated ones (each in the ``HashSet`` order of a
    set presized from what it holds, ``retainAll``), and keeps the rest.

    Returns:
        worker → revoked connectors, worker → revoked tasks (every worker, lists possibly
        empty), and each worker's :class:`WorkerLoad` of what it keeps, in ``order``.
    """
    revoke_c: dict[str, list[str]] = {}
    revoke_t: dict[str, list[Task]] = {}
    loads: list[WorkerLoad] = []
    for w in order:
        c = held_c[w]
        t = held_t[w]
        rc: list[str] = []
        rt: list[Task] = []
        if deleted_c and not deleted_c.isdisjoint(c):
            rc.extend(_retain_hash_order(c, deleted_c, connector_hash_order))
        if deleted_t and not deleted_t.isdisjoint(t):
            rt.extend(_retain_hash_order(t, deleted_t, task_hash_order))
        if dup_c and not dup_c.isdisjoint(c):
            rc.extend(x for x in _retain_hash_order(c, dup_c, connector_hash_order) if x not in rc)
        if dup_t and not dup_t.isdisjoint(t):
            seen = set(rt)
            rt.extend(x for x in _retain_hash_order(t, dup_t, task_hash_order) if x not in seen)
        revoke_c[w] = rc
        revoke_t[w] = rt
        loads.append(WorkerLoad(w, _without(c, rc) if rc else c, _without(t, rt) if rt else t))
    return revoke_c, revoke_t, loads


def add_dealt(into: set[_T], dealt: Sequence[_T], configured: set[_T]) -> None:
    """Add the distinct configured items ``dealt`` this round to ``into``; when they are all
    of ``configured``, merge that set (its hashes are stored) instead of the list."""
    if len(dealt) == len(configured):
        into |= configured
    elif dealt:
        into.update(dealt)
