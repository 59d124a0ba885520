"""Priority containers with Kafka's semantics.

* :class:`ConstrainedPrioritySet` — Kafka ``ConstrainedPrioritySet``: a
  ``java.util.PriorityQueue<ProcessId>`` whose comparator reads each client's *live* weight
  (then ``ProcessId.compareTo``), replayed slot by slot. A client's weight can change while it
  sits in the heap (a task moved to or from it), so the heap is not re-ordered and a later poll
  can return a client that is not the lightest — as in Kafka.
* :class:`JavaPriorityQueue` — ``java.util.PriorityQueue``'s binary heap (siftUp/siftDown
  exactly as OpenJDK), needed where elements compare equal and Java's heap layout decides the
  order (two movements of one task in ``TaskMovement``'s queue).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from protocol.java import hash_order

from .model import ProcessId, TaskId, process_id_java_hash

__all__ = ["ConstrainedPrioritySet", "JavaPriorityQueue"]

T = TypeVar("T")


def _pid_key(pid: ProcessId) -> Any:
    return pid.key


class ConstrainedPrioritySet:
    """Kafka ``ConstrainedPrioritySet``: clients in a JDK heap, polled under a constraint.

    The heap is ``java.util.PriorityQueue`` (OpenJDK 17): ``offer`` = append + siftUp, ``poll``
    = take slot 0, move the last slot down (siftDown), ``remove(client)`` = ``removeAt`` of the
    first equal slot (siftDown, then siftUp if it did not move). Every comparison evaluates
    ``weight`` afresh, as Kafka's ``Comparator.comparing(weight)`` does.

    Args:
        constraint: ``(client, task) -> bool``, the hard constraint of every poll.
        weight: ``client -> float``, the client's current load (read at each comparison).
    """

    __slots__ = ("_constraint", "_weight", "_heap", "_present")

    def __init__(
        self,
        constraint: Callable[[ProcessId, TaskId], bool],
        weight: Callable[[ProcessId], float],
    ) -> None:
        self._constraint = constraint
        self._weight = weight
        self._heap: list[ProcessId] = []
        self._present: set[ProcessId] = set()  # Kafka's uniqueClients

    def __len__(self) -> int:
        return len(self._heap)

    def heap(self) -> list[ProcessId]:
        """The heap array, slot 0 first (for tests and debugging)."""
        return list(self._heap)

    def _cmp(self, a: ProcessId, b: ProcessId) -> int:
        wa, wb = self._weight(a), self._weight(b)
        if wa != wb:
            return -1 if wa < wb else 1
        if a.key == b.key:
            return 0
        return -1 if a < b else 1

    def _sift_up(self, k: int, x: ProcessId) -> None:
        es = self._heap
        while k > 0:
            parent = (k - 1) >> 1
            e = es[parent]
            if self._cmp(x, e) >= 0:
                break
            es[k] = e
            k = parent
        es[k] = x

    def _sift_down(self, k: int, x: ProcessId) -> None:
        es = self._heap
        n = len(es)
        half = n >> 1
        while k < half:
            child = 2 * k + 1
            c = es[child]
            right = child + 1
            if right < n and self._cmp(c, es[right]) > 0:
                child = right
                c = es[child]
            if self._cmp(x, c) <= 0:
                break
            es[k] = c
            k = child
        es[k] = x

    def _remove_at(self, i: int) -> None:
        es = self._heap
        moved = es.pop()
        if i == len(es):
            return
        self._sift_down(i, moved)
        if es[i] is moved:
            self._sift_up(i, moved)

    def _poll_next(self) -> ProcessId:
        es = self._heap
        result = es[0]
        self._remove_at(0)
        self._present.discard(result)
        return result

    def offer(self, client: ProcessId) -> None:
        """Insert ``client``; a present client is removed first, then inserted again."""
        if client in self._present:
            self._remove_at(self._heap.index(client))
        else:
            self._present.add(client)
        self._heap.append(client)
        self._sift_up(len(self._heap) - 1, client)

    def offer_all(self, clients: Iterable[ProcessId]) -> None:
        """``offerAll``: :meth:`offer` each client in the given order."""
        for c in clients:
            self.offer(c)

    def poll(
        self, task: TaskId, extra: Callable[[ProcessId], bool] | None = None
    ) -> ProcessId | None:
        """Poll until a client satisfies the constraint (and ``extra``) for ``task``.

        Clients polled and rejected go back in ``HashSet<ProcessId>`` iteration order, as
        Kafka's ``invalidPolledClients`` does. Returns ``None`` (keeping every client) when
        none qualifies.
        """
        rejected: list[ProcessId] = []
        found: ProcessId | None = None
        while self._heap:
            client = self._poll_next()
            if self._constraint(client, task) and (extra is None or extra(client)):
                found = client
                break
            rejected.append(client)
        if len(rejected) > 1:
            rejected = hash_order(rejected, process_id_java_hash, compare_key=_pid_key)
        self.offer_all(rejected)
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
