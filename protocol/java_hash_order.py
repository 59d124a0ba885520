"""The iteration order of a Java ``HashMap`` / ``HashSet`` filled once by ``put``.

:func:`hash_order` gives it for any keys and ``hashCode`` (:mod:`protocol.java_hashing`):
while no bin ever holds 9 keys only the load factor resizes the table and every bin is a chain
in insertion order, so the order is one stable sort of the keys' buckets
(:func:`chain_order`); a crowded bin hands the keys to the full replay,
:class:`protocol.java_hashmap.JavaHashMap` (OpenJDK 17's ``HashMap``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar, cast

from protocol.java_capacity import TREEIFY_THRESHOLD, resize_threshold, table_size_for
from protocol.java_hashing import string_hash
from protocol.java_hashmap import JavaHashMap

__all__ = ["hash_order", "chain_order"]

T = TypeVar("T", bound=Hashable)

_MASK32 = 0xFFFFFFFF

#: String → its spread ``String.hashCode``, for :func:`hash_order` (bounded as
#: :func:`protocol.java_hashing.string_hash`'s cache).
_spread_cache: dict[str, int] = {}


def _string_spread(text: str) -> int:
    """``HashMap.hash`` of ``text`` (:func:`~protocol.java_hashing.spread` of
    :func:`~protocol.java_hashing.string_hash`), memoized."""
    found = _spread_cache.get(text)
    if found is None:
        u = string_hash(text) & _MASK32
        found = u ^ (u >> 16)
        if len(_spread_cache) < 1_000_000:
            _spread_cache[text] = found
    return found


def hash_order(
    keys: Iterable[T],
    hash_fn: Callable[[T], int],
    capacity: int | None = None,
    compare_key: Callable[[T], Any] | None = None,
) -> list[T]:
    """Order in which a Java ``HashMap``/``HashSet`` filled by ``put`` of ``keys`` iterates them.

    Args:
        keys: the keys in insertion order; later duplicates are ignored (as ``put`` would).
        hash_fn: the key's Java ``hashCode`` (e.g. :func:`string_hash`).
        capacity: the initial capacity, as ``new HashMap<>(capacity)``; by default that of
            ``new HashMap<>()`` (16). Use :func:`presized_capacity` for ``new HashSet<>(list)``.
        compare_key: see :class:`JavaHashMap` (only tree bins use it).

    Returns:
        The distinct keys in Java iteration order. Crowded bins (9+ keys) resize a table below
        64 slots or become tree bins at 64+, exactly as :class:`JavaHashMap` replays.
    """
    unique = list(dict.fromkeys(keys))
    spreads: list[int]
    if hash_fn is string_hash:  # member ids and topic names: spreads looked up in C
        names = cast("list[str]", unique)
        known = list(map(_spread_cache.get, names))
        spreads = list(map(_string_spread, names)) if None in known else cast("list[int]", known)
    else:
        spreads = []
        for k in unique:
            u = hash_fn(k) & _MASK32
            spreads.append(u ^ (u >> 16))
    order = chain_order(spreads, capacity)
    if order is None:  # a crowded bin: replay the whole table
        m = JavaHashMap(hash_fn, capacity if capacity is not None else 16, compare_key)
        for k in unique:
            m.add(k)
        return list(m)
    return [unique[i] for i in order]


def chain_order(spreads: list[int], capacity: int | None = None) -> list[int] | None:
    """Iteration order (as indices) of distinct keys put in order, if no bin ever crowds.

    Args:
        spreads: the distinct keys' spread hashes (:func:`spread`), in insertion order.
        capacity: the initial capacity as in :func:`hash_order`.

    Returns:
        Indices into ``spreads`` in iteration order, or ``None`` if some chain would reach 9
        keys (then only a full replay, :class:`JavaHashMap`, gives the order).
    """
    n = len(spreads)
    cap = 16 if capacity is None else table_size_for(capacity)
    if n >= _VECTOR_KEYS:
        return _chain_order_vector(spreads, cap)
    # While no chain reaches 9 keys, only the load factor resizes and every bin is a chain in
    # insertion order. A table of ``cap`` slots receives the keys up to the put that crosses
    # its threshold (``putVal`` checks the bin before it resizes); a bin of that table reaches
    # 9 keys during those puts exactly when 9 of those keys share it (a crowded bin of a
    # later, finer table is also crowded in every coarser one before it).
    while True:
        threshold = resize_threshold(cap)
        if n > TREEIFY_THRESHOLD:
            put = spreads if n <= threshold else spreads[: threshold + 1]
            if _crowded(put, cap - 1):
                return None
        if n <= threshold:
            break
        cap *= 2
    # sorted() is stable, so keys in one bucket keep their insertion order.
    bins = list(map((cap - 1).__and__, spreads))
    return sorted(range(n), key=bins.__getitem__)


#: From this many keys :func:`chain_order` counts bins and sorts with numpy (fewer: the
#: import and array conversion cost more than they save).
_VECTOR_KEYS = 48


def _chain_order_vector(spreads: list[int], cap: int) -> list[int] | None:
    """:func:`chain_order` from table size ``cap`` on, each table's bins counted by
    ``numpy.bincount`` and the final bins ordered by a stable ``argsort`` (the same steps as
    the ``Counter`` and ``sorted`` of the plain path, in C: a leader's member map of 1,000
    ids is counted in eight tables)."""
    import numpy as np  # imported here: small maps (and a Connect-only run) never need it

    n = len(spreads)
    keys = np.array(spreads, dtype=np.int64)
    while True:
        threshold = resize_threshold(cap)
        put = keys if n <= threshold else keys[: threshold + 1]
        if int(np.bincount(put & (cap - 1)).max()) > TREEIFY_THRESHOLD:
            return None
        if n <= threshold:
            break
        cap *= 2
    order: list[int] = np.argsort(keys & (cap - 1), kind="stable").tolist()
    return order


def _crowded(spreads: list[int], mask: int) -> bool:
    """True when more than ``TREEIFY_THRESHOLD`` of ``spreads`` share a bin of ``mask``."""
    if len(spreads) <= TREEIFY_THRESHOLD:
        return False
    per_bin = Counter(map(mask.__and__, spreads))  # keys per bin, counted in C
    # a bin of 9+ keys leaves 8+ keys sharing an earlier key's bin: fewer, and none crowds
    if len(spreads) - len(per_bin) < TREEIFY_THRESHOLD:
        return False
    return max(per_bin.values()) > TREEIFY_THRESHOLD
