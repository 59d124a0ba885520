"""Java ordering rules that leak into Kafka's observable behaviour.

Kafka's Connect code keeps members and connectors in ``java.util.HashMap`` / ``HashSet``
collections, so the order in which it walks them — and therefore which worker keeps an extra
task, or the byte order of connector entries in an assignment — follows Java's hashing.
groupsim reproduces that order here, once, so every caller agrees.

Facts used (OpenJDK 17, ``java.lang.String``, ``java.util.HashMap``):

* ``String.hashCode`` is ``h = 31*h + c`` over UTF-16 code units, in wrapping int32.
* ``HashMap.hash`` spreads it: ``h ^ (h >>> 16)``; the bucket is ``hash & (capacity - 1)``.
* Iteration goes bucket by bucket; inside one bucket, entries keep insertion order (resizes
  split buckets without reordering). Treeified buckets (8+ colliding keys in a table of 64+)
  are not modelled: they need pathological key sets.
* A map grown by ``put`` starts at capacity 16 and doubles whenever its size exceeds
  ``0.75 * capacity``. ``new HashSet<>(collection)`` sizes its table up front:
  ``tableSizeFor(max((int)(n / 0.75f) + 1, 16))``.
* ``String.compareTo`` compares UTF-16 code units, which equals comparing the UTF-16-BE bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

__all__ = [
    "string_hash",
    "task_id_hash",
    "spread",
    "grown_capacity",
    "presized_capacity",
    "hash_order",
    "java_string_key",
    "java_sorted_strings",
]

T = TypeVar("T", bound=Hashable)

_MASK32 = 0xFFFFFFFF


def _to_int32(value: int) -> int:
    value &= _MASK32
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


_hash_cache: dict[str, int] = {}


def string_hash(text: str) -> int:
    """Java ``String.hashCode()`` of ``text`` as a signed int32.

    Follows ``java.lang.String#hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code
    units (a character outside the BMP counts as its two surrogates).
    """
    cached = _hash_cache.get(text)
    if cached is not None:
        return cached
    h = 0
    if text.isascii():
        for ch in text:
            h = (31 * h + ord(ch)) & _MASK32
    else:
        units = text.encode("utf-16-be")
        for i in range(0, len(units), 2):
            h = (31 * h + ((units[i] << 8) | units[i + 1])) & _MASK32
    result = _to_int32(h)
    if len(_hash_cache) < 1_000_000:
        _hash_cache[text] = result
    return result


def task_id_hash(connector: str, task: int) -> int:
    """Java ``ConnectorTaskId.hashCode()``: ``31 * connector.hashCode() + task`` (int32)."""
    return _to_int32(31 * string_hash(connector) + task)


def spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` on the unsigned 32-bit pattern of ``h``."""
    u = h & _MASK32
    return u ^ (u >> 16)


def grown_capacity(size: int) -> int:
    """Table capacity of a default ``HashMap``/``HashSet`` after ``size`` single insertions."""
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def presized_capacity(size: int) -> int:
    """Table capacity of ``new HashSet<>(collection)`` for a collection of ``size`` elements."""
    wanted = max(int(size / 0.75) + 1, 16)
    capacity = 1
    while capacity < wanted:
        capacity *= 2
    return capacity


def hash_order(
    keys: Iterable[T],
    hash_fn: Callable[[T], int],
    capacity: int | None = None,
) -> list[T]:
    """Order in which a Java ``HashMap``/``HashSet`` holding ``keys`` iterates them.

    Args:
        keys: the keys in insertion order; later duplicates are ignored (as ``put`` would).
        hash_fn: the key's Java ``hashCode`` (e.g. :func:`string_hash`).
        capacity: the table capacity; by default that of a map grown one ``put`` at a time
            (:func:`grown_capacity`). Use :func:`presized_capacity` for ``new HashSet<>(list)``.

    Returns:
        The distinct keys in Java iteration order (by bucket, then insertion order).
    """
    unique = list(dict.fromkeys(keys))
    if capacity is None:
        capacity = grown_capacity(len(unique))
    mask = capacity - 1
    # sorted() is stable, so keys in one bucket keep their insertion order.
    return sorted(unique, key=lambda k: spread(hash_fn(k)) & mask)


def java_string_key(text: str) -> bytes:
    """Sort key giving Java ``String.compareTo`` order (UTF-16 code units)."""
    return text.encode("utf-16-be")


def java_sorted_strings(strings: Iterable[str]) -> list[str]:
    """``strings`` sorted as Java's ``Collections.sort`` / ``TreeSet`` would sort them."""
    items = list(strings)
    if all(s.isascii() for s in items):
        return sorted(items)
    return sorted(items, key=java_string_key)
