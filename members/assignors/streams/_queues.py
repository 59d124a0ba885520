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
from itertools import repeat
from operator import is_
from typing import Any, Generic, TypeVar

from protocol.java_capacity import TREEIFY_THRESHOLD, resize_threshold
from protocol.java_hash_order import chain_order, hash_order

from .model import ProcessId, TaskId, process_id_java_hash

__all__ = ["ConstrainedPrioritySet", "JavaPriorityQueue"]

T = TypeVar("T")


def _pid_key(pid: ProcessId) -> Any:
    return pid.key


def _entry_sort_key(entry: list[Any]) -> Any:
    return entry[0]


class ConstrainedPrioritySet:
    """Kafka ``ConstrainedPrioritySet``: clients in a JDK heap, polled under a constraint.

    The heap is ``java.util.PriorityQueue`` (OpenJDK 17): ``offer`` = append + siftUp, ``poll``
    = take slot 0, move the last slot down (siftDown), ``remove(client)`` = ``removeAt`` of the
    client's slot (siftDown, then siftUp if it did not move). Every comparison uses the
    client's *current* weight, as Kafka's ``Comparator.comparing(weight)`` does; since weights
    only change between calls, each call reads a client's weight at most once.

    Args:
        constraint: ``(client, task) -> bool``, the hard constraint of every poll.
        weight: ``client -> float``, the client's current load.
        candidates: optional ``task -> clients`` holding every client that can satisfy the
            constraint for ``task`` (e.g. its caught-up clients). Only a speed-up, never a
            change of result: a poll that no present candidate satisfies empties the heap and
            re-offers everyone, which is computed without replaying each removal when the heap
            is in order (see :meth:`poll`).
        cache_weights: if true, a client's weight is read once when it enters the heap and
            again only after :meth:`load_changed` names it; the caller must report every
            change of a present client's weight. Same results, far fewer weight reads.
    """

    __slots__ = (
        "_constraint",
        "_weight",
        "_candidates",
        "_heap",
        "_present",
        "_op",
        "_masks",
        "_step",
    )

    def __init__(
        self,
        constraint: Callable[[ProcessId, TaskId], bool],
        weight: Callable[[ProcessId], float],
        candidates: Callable[[TaskId], Iterable[ProcessId]] | None = None,
        cache_weights: bool = False,
    ) -> None:
        self._constraint = constraint
        self._weight = weight
        self._candidates = candidates
        # heap slots: [sort key (weight, ProcessId key), call stamp of that key, client]
        self._heap: list[list[Any]] = []
        # Kafka's uniqueClients: ProcessId key -> the client's heap slot entry
        self._present: dict[Any, list[Any]] = {}
        self._op = 0
        # how much each call advances the stamp: 0 keeps every cached weight valid
        self._step = 0 if cache_weights else 1
        # sorted spreads of a client set -> its HashSet's final bucket mask, or None if some
        # bin could crowd (see _bucket_mask)
        self._masks: dict[tuple[int, ...], int | None] = {}

    def __len__(self) -> int:
        return len(self._heap)

    def heap(self) -> list[ProcessId]:
        """The heap array, slot 0 first (for tests and debugging)."""
        return [e[2] for e in self._heap]

    def _key(self, e: list[Any]) -> Any:
        if e[1] != self._op:
            e[0] = (self._weight(e[2]), e[2].key)
            e[1] = self._op
        return e[0]

    def _sift_up(self, k: int, x: list[Any]) -> None:
        es = self._heap
        kx = self._key(x)
        while k > 0:
            parent = (k - 1) >> 1
            e = es[parent]
            if not kx < self._key(e):
                break
            es[k] = e
            k = parent
        es[k] = x

    def _sift_down(self, k: int, x: list[Any]) -> None:
        es = self._heap
        key = self._key
        n = len(es)
        half = n >> 1
        kx = key(x)
        while k < half:
            child = 2 * k + 1
            c = es[child]
            kc = key(c)
            right = child + 1
            if right < n:
                kr = key(es[right])
                if kc > kr:
                    child = right
                    c = es[child]
                    kc = kr
            if not kx > kc:
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

    def _offer(self, client: ProcessId) -> None:
        es = self._heap
        entry = self._present.get(client.key)
        if entry is not None:
            # PriorityQueue.remove: indexOf, the slot holding this client (found by identity:
            # list.index would compare the other slots' entries element by element)
            self._remove_at(list(map(is_, es, repeat(entry))).index(True))
        else:
            entry = self._present[client.key] = [None, -1, client]
        # append + siftUp, inlined
        op = self._op
        if entry[1] != op:
            entry[0] = (self._weight(client), client.key)
            entry[1] = op
        kx = entry[0]
        k = len(es)
        es.append(entry)
        while k > 0:
            parent = (k - 1) >> 1
            e = es[parent]
            if e[1] != op:
                e[0] = (self._weight(e[2]), e[2].key)
                e[1] = op
            if not kx < e[0]:
                break
            es[k] = e
            k = parent
        es[k] = entry

    def load_changed(self, *clients: ProcessId) -> None:
        """Report that these clients' weights changed (needed only with ``cache_weights``)."""
        present = self._present
        for c in clients:
            entry = present.get(c.key)
            if entry is not None:
                entry[1] = -1

    def offer(self, client: ProcessId) -> None:
        """Insert ``client``; a present client is removed first, then inserted again."""
        self._op += self._step
        self._offer(client)

    def offer_all(self, clients: Iterable[ProcessId]) -> None:
        """``offerAll``: :meth:`offer` each client in the given order.

        No weight changes between these offers, so each client's weight is read at most once
        for the whole call (one stamp), not once per offer: the same comparisons' results.
        """
        self._op += self._step
        offer = self._offer
        for c in clients:
            offer(c)

    def _any_qualifies(self, task: TaskId, extra: Callable[[ProcessId], bool] | None) -> bool:
        assert self._candidates is not None
        present = self._present
        for client in self._candidates(task):
            if (
                client.key in present
                and self._constraint(client, task)
                and (extra is None or extra(client))
            ):
                return True
        return False

    def _bucket_mask(self, spreads: list[int]) -> int | None:
        """The final bucket mask of a ``HashSet`` of these distinct clients, if no bin crowds.

        A bin of a prefix of the insertion order never holds more keys than that bin of the
        whole set at the same capacity, so when the whole set has no bin above
        ``TREEIFY_THRESHOLD`` at any capacity the table passes through, the iteration order
        is the insertion order stably sorted by ``spread & mask``, whatever the insertion
        order (:func:`protocol.java_hash_order.chain_order`). Cached by the set. ``None``: replay.
        """
        n = len(spreads)
        key = tuple(sorted(spreads))
        try:
            return self._masks[key]
        except KeyError:
            pass
        cap = 16
        result: int | None = None
        while True:
            if n > TREEIFY_THRESHOLD:
                counts: dict[int, int] = {}
                mask = cap - 1
                for h in spreads:
                    counts[h & mask] = counts.get(h & mask, 0) + 1
                if max(counts.values()) > TREEIFY_THRESHOLD:
                    break
            if n <= resize_threshold(cap):
                result = cap - 1
                break
            cap *= 2
        self._masks[key] = result
        return result

    def _hash_set_order(self, entries: list[list[Any]]) -> list[list[Any]]:
        """Entries of distinct clients in the order a ``HashSet`` filled with them iterates."""
        if len(entries) <= 1:
            return entries
        spreads = [e[2].java_spread for e in entries]
        mask = self._bucket_mask(spreads)
        if mask is not None:
            m = mask
            return [entries[i] for i in sorted(range(len(entries)), key=lambda i: spreads[i] & m)]
        order = chain_order(spreads)
        if order is None:
            by_key = {e[2].key: e for e in entries}
            clients = hash_order([e[2] for e in entries], process_id_java_hash, None, _pid_key)
            return [by_key[c.key] for c in clients]
        return [entries[i] for i in order]

    def _rejected_order_if_in_order(self) -> list[list[Any]] | None:
        """The heap entries in ``HashSet`` order of their poll order, if the heap is in order.

        ``None`` unless every slot is <= its children; then successive polls return the
        clients in ascending (weight, id) order, whatever the heap's layout, and the
        entries come back in the order a ``HashSet`` filled in that order iterates.
        """
        es = self._heap
        op = self._op
        weight = self._weight
        for e in es:
            if e[1] != op:
                e[0] = (weight(e[2]), e[2].key)
                e[1] = op
        for i in range(1, len(es)):
            if es[(i - 1) >> 1][0] > es[i][0]:
                return None
        mask = self._bucket_mask([e[2].java_spread for e in es]) if len(es) > 1 else None
        if mask is not None:  # poll order stably sorted by bucket, in one sort (keys differ)
            m = mask
            return sorted(es, key=lambda e: (e[2].java_spread & m, e[0]))
        return self._hash_set_order(sorted(es, key=_entry_sort_key))

    def poll(
        self, task: TaskId, extra: Callable[[ProcessId], bool] | None = None
    ) -> ProcessId | None:
        """Poll until a client satisfies the constraint (and ``extra``) for ``task``.

        Clients polled and rejected go back in ``HashSet<ProcessId>`` iteration order, as
        Kafka's ``invalidPolledClients`` does. Returns ``None`` (keeping every client) when
        none qualifies.
        """
        self._op += self._step
        if self._candidates is not None and not self._any_qualifies(task, extra):
            entries = self._rejected_order_if_in_order()
            if entries is not None:
                # Every client is polled (in key order, the heap being in order), rejected,
                # and re-offered from the HashSet: the same as offering them to an empty heap.
                es = self._heap
                es.clear()
                for entry in entries:  # offer = append + siftUp; keys are this call's
                    kx = entry[0]
                    k = len(es)
                    es.append(entry)
                    while k > 0:
                        parent = (k - 1) >> 1
                        e = es[parent]
                        if not kx < e[0]:
                            break
                        es[k] = e
                        k = parent
                    es[k] = entry
                return None
        op = self._op
        weight = self._weight
        constraint = self._constraint
        present = self._present
        es = self._heap
        rejected: list[ProcessId] = []
        found: ProcessId | None = None
        while es:
            client = es[0][2]
            # removeAt(0) with the siftDown inlined (this loop dominates the assignors' time)
            x = es.pop()
            n = len(es)
            if n:
                if x[1] != op:
                    x[0] = (weight(x[2]), x[2].key)
                    x[1] = op
                kx = x[0]
                k = 0
                half = n >> 1
                while k < half:
                    child = 2 * k + 1
                    c = es[child]
                    if c[1] != op:
                        c[0] = (weight(c[2]), c[2].key)
                        c[1] = op
                    kc = c[0]
                    right = child + 1
                    if right < n:
                        r = es[right]
                        if r[1] != op:
                            r[0] = (weight(r[2]), r[2].key)
                            r[1] = op
                        if kc > r[0]:
                            child = right
                            c = r
                            kc = r[0]
                    if not kx > kc:
                        break
                    es[k] = c
                    k = child
                es[k] = x
            del present[client.key]
            if constraint(client, task) and (extra is None or extra(client)):
                found = client
                break
            rejected.append(client)
        if len(rejected) > 1:
            spreads = [c.java_spread for c in rejected]
            mask = self._bucket_mask(spreads)
            order: list[int] | None
            if mask is not None:
                m = mask
                order = sorted(range(len(rejected)), key=lambda i: spreads[i] & m)
            else:
                order = chain_order(spreads)
            if order is None:
                rejected = hash_order(rejected, process_id_java_hash, None, _pid_key)
            else:
                rejected = [rejected[i] for i in order]
        for client in rejected:  # weights have not changed: one call for all these offers
            self._offer(client)
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
