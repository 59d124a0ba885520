"""Java orderings of Connect names and task ids a Connect leader's bytes depend on: ``TreeSet``
orders (connectors by UTF-16 code units, ``ConnectorTaskId.compareTo``) and the iteration
orders of a Java ``HashSet<String>`` / ``HashSet<ConnectorTaskId>`` (``String.hashCode``,
``ConnectorTaskId.hashCode``, ``HashMap.hash``'s spread), part of the fast paths of
:mod:`._wire`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter

from protocol.java_hash_order import chain_order, hash_order
from protocol.java_hashing import spread, string_hash, task_id_hash
from protocol.java_strings import java_string_key

__all__ = [
    "cached_string_hash",
    "connector_hash_order",
    "sorted_connectors",
    "sorted_tasks",
    "task_hash_order",
]

_connector_of = itemgetter(0)


def _task_java_key(t: tuple[str, int]) -> tuple[bytes, int]:
    return (java_string_key(t[0]), t[1])


def sorted_connectors(names: Iterable[str]) -> list[str]:
    """Connector names in Java ``TreeSet<String>`` order (UTF-16 code units)."""
    items = list(names)
    if "".join(items).isascii():
        items.sort()
    else:
        items.sort(key=java_string_key)
    return items


def sorted_tasks(tasks: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """Task ids in Java ``ConnectorTaskId.compareTo`` order: connector (UTF-16), then number."""
    items = list(tasks)
    if "".join(set(map(_connector_of, items))).isascii():
        items.sort()
    else:
        items.sort(key=_task_java_key)
    return items


class _StringHashes(dict[str, int]):
    """Java ``String.hashCode`` by name; ``__getitem__`` stays a C call for known names."""

    def __missing__(self, text: str) -> int:
        value = string_hash(text)
        if len(self) < 1_000_000:
            self[text] = value
        return value


_string_hashes = _StringHashes()
#: Java ``String.hashCode`` of a name, remembered (a C-level dict lookup once known).
cached_string_hash: Callable[[str], int] = _string_hashes.__getitem__


class _StringSpreads(dict[str, int]):
    """``HashMap.hash`` (the spread ``h ^ h >>> 16``, unsigned) of a name's Java hash."""

    def __missing__(self, text: str) -> int:
        value = spread(string_hash(text))
        if len(self) < 1_000_000:
            self[text] = value
        return value


_string_spread = _StringSpreads().__getitem__


def connector_hash_order(names: Sequence[str], capacity: int) -> list[str]:
    """Iteration order of a Java ``HashSet<String>`` of ``names`` with table ``capacity``."""
    if len(names) <= 1:
        return list(names)
    unique = list(dict.fromkeys(names))
    order = chain_order(list(map(_string_spread, unique)), capacity)
    if order is None:  # a crowded bin: the full table replay
        return hash_order(unique, cached_string_hash, capacity)
    return list(map(unique.__getitem__, order))


def task_hash_order(tasks: Sequence[tuple[str, int]], capacity: int) -> list[tuple[str, int]]:
    """Iteration order of a Java ``HashSet<ConnectorTaskId>`` of ``tasks`` (table ``capacity``)."""
    if len(tasks) <= 1:
        return list(tasks)
    return hash_order(tasks, lambda t: task_id_hash(t[0], t[1]), capacity, _task_java_key)
