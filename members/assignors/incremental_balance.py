"""Balancing an incremental cooperative round (Kafka ``IncrementalCooperativeAssignor``,
KIP-415): ``performLoadBalancingRevocations`` (which items to take from the workers above their
fair share) and the "water filling" ``assignConnectors`` / ``assignTasks`` deal new items by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from protocol.java_strings import java_string_key

from .incremental_load import Task, WorkerLoad

__all__ = ["load_balancing_revocations", "water_fill", "worker_sort_key"]

_T = TypeVar("_T")


def worker_sort_key(ids: Iterable[str]) -> Callable[[str], object]:
    """The sort key of worker ids in Java String order (the ids themselves when all ASCII)."""
    if "".join(ids).isascii():
        return lambda w: w
    return java_string_key


def load_balancing_revocations(
    total_connectors: int, total_tasks: int, workers: Sequence[WorkerLoad]
) -> dict[str, tuple[list[str], list[Task]]]:
    """Kafka ``performLoadBalancingRevocations``: worker → (connectors, tasks) to revoke so
    that each worker approaches its share of the configured totals, walking ``workers`` in list
    order and taking the first items of a worker's own lists. Pure: changes nothing."""
    if all(w.is_empty() for w in workers):
        return {}
    if total_connectors == 0 and total_tasks == 0:
        return {}
    conns = _lb_for(total_connectors, [w.connectors for w in workers])
    tasks = _lb_for(total_tasks, [w.tasks for w in workers])
    out: dict[str, tuple[list[str], list[Task]]] = {}
    for i, w in enumerate(workers):
        rc = conns.get(i)
        rt = tasks.get(i)
        if rc or rt:
            out[w.worker] = (rc or [], rt or [])
    return out


def _lb_for(total: int, held: list[list[_T]]) -> dict[int, list[_T]]:
    """One item kind of ``performLoadBalancingRevocations``: index of a worker in ``held`` →
    the first items it gives up (the first ``total % n`` workers above the floor keep
    floor + 1); ``{}`` when already balanced."""
    n = len(held)
    low = total // n
    extra = total % n
    sizes = [len(h) for h in held]
    at_low = sizes.count(low)
    at_extra = sizes.count(low + 1)
    if at_extra == extra and at_low + at_extra == n:
        return {}
    out: dict[int, list[_T]] = {}
    given = 0
    for i, size in enumerate(sizes):
        if size <= low:
            continue
        if given < extra:
            given += 1
            if size == low + 1:
                continue
            target = low + 1
        else:
            target = low
        out[i] = held[i][: size - target]
    return out


def water_fill(lists: list[list[_T]], items: list[_T]) -> None:
    """Kafka's level-by-level fill over ``lists`` already sorted by (len, id)."""
    total = len(items)
    if not total or not lists:
        return
    n = len(lists)
    counts = [len(x) for x in lists]
    pos = 0
    upto = 0
    while pos < total:
        level = counts[0]
        while upto < n and counts[upto] <= level:
            upto += 1
        if upto == n:
            # everyone is level: the rest is dealt round robin in list order
            for i in range(n):
                lists[i].extend(items[pos + i :: n])
            return
        k = min(upto, total - pos)
        for i in range(k):
            lists[i].append(items[pos + i])
            counts[i] += 1
        pos += k
