"""Priority containers with Kafka's semantics.

* :class:`ConstrainedPrioritySet` — Kafka ``ConstrainedPrioritySet``: clients ordered by
  (weight, ProcessId); ``poll`` pops in that order until one satisfies the constraint;
  rejected clients go back in; ``offer`` of a present client refreshes its weight.
* :class:`JavaPriorityQueue` — ``java.util.PriorityQueue``'s binary heap (siftUp/siftDown
  exactly as OpenJDK), needed where elements compare equal and Java's heap layout decides the
  order (two movements of one task in ``TaskMovement``'s queue).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from .model import ProcessId, TaskId

__all__ = ["ConstrainedPrioritySet", "JavaPriorityQueue"]

T = TypeVar("T")


class ConstrainedPrioritySet:
    """Clients by ``(weight(client), client)``, polled under a (client, task) constraint.

    Args:
        constraint: ``(client, task) -> bool``, the hard constraint of every poll.
        weight: ``client -> float``, evaluated when a client is (re-)inserted.
        candidates: optional ``task -> clients`` holding every client that can satisfy the
            constraint for ``task`` (e.g. the caught-up clients); ``poll`` then scans only
            those instead of popping the whole queue — same result, since a client's entry
            only changes when it is re-offered.
    """

    __slots__ = ("_constraint", "_weight", "_heap", "_current", "_candidates")

    def __init__(
        self,
        constraint: Callable[[ProcessId, TaskId], bool],
        weight: Callable[[ProcessId], float],
        candidates: Callable[[TaskId], Iterable[ProcessId]] | None = None,
    ) -> None:
        self._constraint = constraint
        self._weight = weight
        self._candidates = candidates
        self._heap: list[tuple[float, Any, ProcessId]] = []
        self._current: dict[ProcessId, tuple[float, Any, ProcessId]] = {}

    def offer(self, client: ProcessId) -> None:
        """Insert ``client``, or re-insert it with its current weight."""
        entry = (self._weight(client), client.key, client)
        self._current[client] = entry
        if self._candidates is None:
            heapq.heappush(self._heap, entry)

    def offer_all(self, clients: Iterable[ProcessId]) -> None:
        for c in clients:
            self.offer(c)

    def poll(
        self, task: TaskId, extra: Callable[[ProcessId], bool] | None = None
    ) -> ProcessId | None:
        """Remove and return the lightest client satisfying the constraint (and ``extra``).

        Returns ``None`` (and keeps every client) when none qualifies.
        """
        current = self._current
        if self._candidates is not None:
            best: tuple[float, Any, ProcessId] | None = None
            for client in self._candidates(task):
                entry = current.get(client)
                if entry is None or (best is not None and entry[:2] >= best[:2]):
                    continue
                if self._constraint(client, task) and (extra is None or extra(client)):
                    best = entry
            if best is None:
                return None
            del current[best[2]]  # its heap entry is now stale
            return best[2]
        rejected: list[ProcessId] = []
        found: ProcessId | None = None
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            client = entry[2]
            if current.get(client) is not entry:
                continue  # stale entry of a re-offered client
            del current[client]
            if self._constraint(client, task) and (extra is None or extra(client)):
                found = client
                break
            rejected.append(client)
        for client in rejected:
            self.offer(client)
        return found


class JavaPriorityQueue(Generic[T]):
    """``java.util.PriorityQueue`` with a comparator given as a sort key (equal keys tie)."""

    __slots__ = ("_key", "_queue")

    def __init__(self, key: Callable[[T], Any]) -> None:
        self._key = key
        self._queue: list[tuple[Any, T]] = []

    def __len__(self) -> int:
        return len(self._queue)

    def offer(self, item: T) -> None:
        """``offer``: append and sift up (stop at a parent that is <= the new element)."""
        q = self._queue
        x = (self._key(item), item)
        q.append(x)
        k = len(q) - 1
        while k > 0:
            parent = (k - 1) >> 1
            e = q[parent]
            if not x[0] < e[0]:
                break
            q[k] = e
            k = parent
        q[k] = x

    def poll(self) -> T | None:
        """``poll``: take the root, move the last element down (left child wins ties)."""
        q = self._queue
        if not q:
            return None
        result = q[0]
        x = q.pop()
        n = len(q)
        if n > 0:
            k = 0
            half = n >> 1
            while k < half:
                child = 2 * k + 1
                c = q[child]
                right = child + 1
                if right < n and c[0] > q[right][0]:
                    child = right
                    c = q[child]
                if not x[0] > c[0]:
                    break
                q[k] = c
                k = child
            q[k] = x
        return result[1]
