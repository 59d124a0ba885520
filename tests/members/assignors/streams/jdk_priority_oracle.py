"""Test oracle: Kafka ``ConstrainedPrioritySet`` replayed the straightforward way.

A ``java.util.PriorityQueue<ProcessId>`` (OpenJDK 17 ``offer``/``poll``/``removeAt`` with
``siftUp``/``siftDown``) whose comparator calls ``weight`` on every comparison, and a poll
that re-offers rejected clients in ``HashSet`` iteration order
(:func:`protocol.java_hash_order.hash_order`).
No caches and no shortcuts: :class:`members.assignors.streams._queues.ConstrainedPrioritySet`
must leave the same heap array, slot by slot, after every operation.
"""

from __future__ import annotations

from collections.abc import Callable

from members.assignors.streams import ProcessId, TaskId
from members.assignors.streams.model import process_id_java_hash
from protocol.java_hash_order import hash_order


class OracleConstrainedPrioritySet:
    def __init__(
        self,
        constraint: Callable[[ProcessId, TaskId], bool],
        weight: Callable[[ProcessId], float],
    ) -> None:
        self.constraint = constraint
        self.weight = weight
        self.queue: list[ProcessId] = []

    def _less(self, a: ProcessId, b: ProcessId) -> bool:
        # Comparator.comparing(weight).thenComparing(ProcessId::compareTo), read live
        return (self.weight(a), a.key) < (self.weight(b), b.key)

    def _sift_up(self, k: int, x: ProcessId) -> None:
        q = self.queue
        while k > 0:
            parent = (k - 1) >> 1
            if not self._less(x, q[parent]):
                break
            q[k] = q[parent]
            k = parent
        q[k] = x

    def _sift_down(self, k: int, x: ProcessId) -> None:
        q = self.queue
        n = len(q)
        while k < n >> 1:
            child = 2 * k + 1
            right = child + 1
            if right < n and self._less(q[right], q[child]):
                child = right
            if not self._less(q[child], x):
                break
            q[k] = q[child]
            k = child
        q[k] = x

    def _remove_at(self, i: int) -> None:
        q = self.queue
        moved = q.pop()
        if i < len(q):
            self._sift_down(i, moved)
            if q[i] is moved:
                self._sift_up(i, moved)

    def offer(self, client: ProcessId) -> None:
        if client in self.queue:  # uniqueClients: remove, then add again
            self._remove_at(self.queue.index(client))
        self.queue.append(client)
        self._sift_up(len(self.queue) - 1, client)

    def poll(
        self, task: TaskId, extra: Callable[[ProcessId], bool] | None = None
    ) -> ProcessId | None:
        rejected: list[ProcessId] = []
        found = None
        while self.queue:
            client = self.queue[0]
            self._remove_at(0)
            if self.constraint(client, task) and (extra is None or extra(client)):
                found = client
                break
            rejected.append(client)
        for client in hash_order(rejected, process_id_java_hash, None, lambda p: p.key):
            self.offer(client)
        return found
