"""The table sizes of a Java ``HashMap`` / ``HashSet``: initial capacity, resize threshold,
treeify limits.

Facts used (OpenJDK 17, ``java.util.HashMap``, ``java.util.HashSet``):

* A default map starts at 16 slots (threshold 12) and doubles its threshold with its table;
  ``new HashMap<>(n)`` starts at ``tableSizeFor(n)`` slots with threshold ``0.75 * slots``;
  ``new HashSet<>(collection)`` is ``new HashMap<>(max((int)(n / .75f) + 1, 16))`` filled in
  the collection's order; ``new HashMap<>(map)`` / ``putAll`` on an empty map presizes to
  ``tableSizeFor((int)(n / .75f + 1))`` (no floor of 16).
* A chain 9 long (``TREEIFY_THRESHOLD`` 8) doubles a table below 64 slots
  (``MIN_TREEIFY_CAPACITY``) and becomes a tree bin at 64+; a split tree half of 6 or fewer
  (``UNTREEIFY_THRESHOLD``) becomes a chain again.

The map replaying them is :class:`protocol.java_hashmap.JavaHashMap`.
"""

from __future__ import annotations

import functools
import struct

__all__ = [
    "TREEIFY_THRESHOLD",
    "UNTREEIFY_THRESHOLD",
    "MIN_TREEIFY_CAPACITY",
    "MAXIMUM_CAPACITY",
    "float32",
    "table_size_for",
    "grown_capacity",
    "presized_capacity",
    "resize_threshold",
]

#: ``HashMap.TREEIFY_THRESHOLD``: a chain reaching this many + 1 entries asks for a tree.
TREEIFY_THRESHOLD = 8
#: ``HashMap.UNTREEIFY_THRESHOLD``: a split tree half this small becomes a chain again.
UNTREEIFY_THRESHOLD = 6
#: ``HashMap.MIN_TREEIFY_CAPACITY``: below this many slots a crowded bin resizes the table.
MIN_TREEIFY_CAPACITY = 64
#: ``HashMap.MAXIMUM_CAPACITY``: a table never grows beyond this many slots.
MAXIMUM_CAPACITY = 1 << 30


def float32(value: float) -> float:
    """``value`` rounded to a Java ``float``."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


@functools.lru_cache(maxsize=4096)  # pure and called per member: memoized
def table_size_for(cap: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= ``cap`` (at least 1)."""
    size = 1
    while size < cap and size < MAXIMUM_CAPACITY:
        size *= 2
    return size


def grown_capacity(size: int) -> int:
    """Table capacity of a default ``HashMap``/``HashSet`` after ``size`` single insertions.

    Load-factor growth only; crowded bins can double the table earlier (see
    :class:`JavaHashMap`).
    """
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


@functools.lru_cache(maxsize=4096)
@functools.lru_cache(maxsize=4096)  # pure and called per member: memoized
def presized_capacity(size: int) -> int:
    """Initial table capacity of ``new HashSet<>(collection)`` for ``size`` elements.

    ``new HashMap<>(Math.max((int) (size / .75f) + 1, 16))`` — ``size / .75f`` in ``float``.
    """
    wanted = max(int(float32(float32(float(size)) / float32(0.75))) + 1, 16)
    return table_size_for(wanted)


@functools.lru_cache(maxsize=4096)  # pure and called per member: memoized
def resize_threshold(capacity: int) -> int:
    """``resize``'s threshold of a fresh table: ``(int)(capacity * 0.75f)``."""
    return int(float32(capacity * 0.75))
