"""``ConstrainedPrioritySet`` keyed by one integer per client, for callers that report loads.

TaskMovement changes the load of two clients per movement and reports both
(:meth:`ReportedLoadSet.load_changed`) before its next call. Each client's sort key can then be
kept in its heap entry and updated at the report, instead of checked for staleness at every
comparison, and a key can be one ``int`` instead of a ``(weight, ProcessId)`` tuple. The heap,
the polls and the ``HashSet`` order of re-offered clients are Kafka's exactly as in
:class:`~._queues.ConstrainedPrioritySet` (a client changed while it sits in the heap is
compared by its new key, as Kafka's comparator reads the live load); only the cost differs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import le
from typing import Any

from protocol.java_hash_order import chain_order, hash_order

from ._queues import ConstrainedPrioritySet, _pid_key
from .model import ProcessId, TaskId, process_id_java_hash

__all__ = ["ReportedLoadSet"]


class ReportedLoadSet(ConstrainedPrioritySet):
    """Kafka ``ConstrainedPrioritySet`` whose caller reports every load change.

    Args:
        constraint: ``(client, task) -> bool``, the hard constraint of every poll.
        sort_key: ``client -> int``, ordering clients exactly as Kafka's comparator does
            (``assignedTaskLoad``, then ``ProcessId``) at the client's current load; read when
            a client enters the heap and when :meth:`load_changed` names it.
        candidates: ``task -> clients`` holding every client that can satisfy the constraint
            for ``task`` (a speed-up only, as in :class:`ConstrainedPrioritySet`).
    """

    # _full: the bucket order of every known client's entry and the slices where buckets
    # collide (sorted by key at use), valid while no new client arrives; None: not computed
    __slots__ = ("_full",)

    def __init__(
        self,
        constraint: Callable[[ProcessId, TaskId], bool],
        sort_key: Callable[[ProcessId], int],
        candidates: Callable[[TaskId], Iterable[ProcessId]],
    ) -> None:
        super().__init__(constraint, sort_key, candidates, cache_weights=True)
        # entries are kept for good: [sort key, in the heap?, client]
        self._full: tuple[list[list[Any]], list[tuple[int, int]]] | None = None

    def _key(self, e: list[Any]) -> Any:
        return e[0]  # always current: set on offer and at each load_changed

    def load_changed(self, *clients: ProcessId) -> None:
        """Report that these clients' loads changed; their keys are read again now."""
        present = self._present
        for c in clients:
            entry = present.get(c.key)
            if entry is not None and entry[1]:
                entry[0] = self._weight(c)

    def _offer(self, client: ProcessId) -> None:
        entry = self._present.get(client.key)
        if entry is None:
            entry = self._present[client.key] = [0, False, client]
            self._full = None
        elif entry[1]:
            self._remove_at(self._heap.index(entry))
        entry[0] = self._weight(client)
        entry[1] = True
        self._push_all((entry,), clear=False)

    def _push_all(self, entries: Iterable[list[Any]], clear: bool) -> None:
        """``PriorityQueue.offer`` (append + siftUp) of each entry in order, none in the heap."""
        es = self._heap
        if clear:
            es.clear()
        append = es.append
        size = len(es)
        for entry in entries:
            kx = entry[0]
            k = size
            size += 1
            append(entry)
            while k > 0:
                parent = (k - 1) >> 1
                e = es[parent]
                if kx >= e[0]:
                    break
                es[k] = e
                k = parent
            es[k] = entry

    def _rejected_order_if_in_order(self) -> list[list[Any]] | None:
        es = self._heap
        keys = [e[0] for e in es]
        # in order: every slot i <= its children 2i+1 and 2i+2 (zip-like maps stop short)
        if not (all(map(le, keys, keys[1::2])) and all(map(le, keys, keys[2::2]))):
            return None
        if len(es) <= 1:
            return list(es)
        if len(es) == len(self._present):  # every known client: the cached bucket order
            full = self._full or self._full_order()
            if full is not None:
                order = list(full[0])
                for a, b in full[1]:
                    order[a:b] = sorted(order[a:b], key=_entry_key)
                return order
        mask = self._bucket_mask([e[2].java_spread for e in es])
        if mask is not None:  # poll order stably sorted by bucket, in one sort (keys differ)
            decorated = [((e[2].java_spread & mask), e[0], e) for e in es]
            decorated.sort()  # keys are distinct: the entries themselves are never compared
            return [d[2] for d in decorated]
        return self._hash_set_order(sorted(es, key=_entry_key))

    def _full_order(self) -> tuple[list[list[Any]], list[tuple[int, int]]] | None:
        entries = list(self._present.values())
        mask = self._bucket_mask([e[2].java_spread for e in entries])
        if mask is None:
            return None
        buckets = [e[2].java_spread & mask for e in entries]
        order = sorted(range(len(entries)), key=buckets.__getitem__)
        collisions = []
        a = 0
        for b in range(1, len(order) + 1):
            if b == len(order) or buckets[order[b]] != buckets[order[a]]:
                if b - a > 1:
                    collisions.append((a, b))
                a = b
        self._full = ([entries[i] for i in order], collisions)
        return self._full

    def poll(
        self, task: TaskId, extra: Callable[[ProcessId], bool] | None = None
    ) -> ProcessId | None:
        """As :meth:`ConstrainedPrioritySet.poll`."""
        present = self._present
        constraint = self._constraint
        # the present clients that qualify, as their entries' ids: loads do not change during
        # a poll, so the constraint is asked once per candidate instead of once per pop
        wanted: set[int] = set()
        for client in self._candidates(task):  # type: ignore[misc]
            entry = present.get(client.key)
            if (
                entry is not None
                and entry[1]
                and constraint(client, task)
                and (extra is None or extra(client))
            ):
                wanted.add(id(entry))
        if not wanted:
            entries = self._rejected_order_if_in_order()
            if entries is not None:
                # every client polled in key order, rejected, and re-offered from the HashSet
                self._push_all(entries, clear=True)
                return None
        es = self._heap
        rejected: list[list[Any]] = []
        found: ProcessId | None = None
        while es:
            first = es[0]
            client = first[2]
            # removeAt(0) with the siftDown inlined
            x = es.pop()
            n = len(es)
            if n:
                kx = x[0]
                k = 0
                half = n >> 1
                while k < half:
                    child = 2 * k + 1
                    c = es[child]
                    kc = c[0]
                    right = child + 1
                    if right < n:
                        r = es[right]
                        if kc > r[0]:
                            child = right
                            c = r
                            kc = r[0]
                    if kx <= kc:
                        break
                    es[k] = c
                    k = child
                es[k] = x
            if id(first) in wanted:
                first[1] = False
                found = client
                break
            rejected.append(first)
        if len(rejected) > 1:
            spreads = [e[2].java_spread for e in rejected]
            mask = self._bucket_mask(spreads)
            order: list[int] | None
            if mask is not None:
                order = sorted(range(len(rejected)), key=[s & mask for s in spreads].__getitem__)
            else:
                order = chain_order(spreads)
            if order is None:
                by_key = {e[2].key: e for e in rejected}
                clients = hash_order([e[2] for e in rejected], process_id_java_hash, None, _pid_key)
                rejected = [by_key[c.key] for c in clients]
            else:
                rejected = [rejected[i] for i in order]
        # weights have not changed: the rejected entries keep their keys and go back
        self._push_all(rejected, clear=False)
        return found


def _entry_key(e: list[Any]) -> Any:
    return e[0]
