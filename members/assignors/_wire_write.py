"""Writing Connect SyncGroup assignments on a leader's fast path (Kafka ``ConnectProtocol`` /
``IncrementalCooperativeConnectProtocol`` assignment layouts), part of :mod:`._wire`: the
ARRAY(ConnectorAssignment) entries in Kafka's ``asMap()`` orders, built from cached
per-connector and per-task chunks, with views of what a member decodes from them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import repeat
from operator import itemgetter

from protocol.java_capacity import presized_capacity

from ._wire_order import connector_hash_order

__all__ = [
    "View",
    "assignment_header",
    "connector_entries",
    "connector_entry",
    "encode_assigned",
    "encode_assignment_fast",
    "encode_entries",
    "entries_view",
    "int4_table",
    "no_revocations_tail",
    "revoked_entries",
    "string_chunk",
    "task_entry",
]

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_HH = struct.Struct(">hh")

_chunk_cache: dict[str, bytes] = {}
_connector_of = itemgetter(0)


def string_chunk(text: str) -> bytes:
    """Kafka STRING bytes (INT16 length + UTF-8) of ``text``, cached per name."""
    chunk = _chunk_cache.get(text)
    if chunk is None:
        raw = text.encode("utf-8")
        if len(raw) > 32767:
            raise ValueError(f"string too long for a Kafka STRING ({len(raw)} bytes)")
        chunk = _H.pack(len(raw)) + raw
        if len(_chunk_cache) < 1_000_000:
            _chunk_cache[text] = chunk
    return chunk


def connector_entries(
    connectors: Sequence[str], tasks: Iterable[tuple[str, int]]
) -> dict[str, list[int]]:
    """Kafka ``Assignment.asMap()``: connectors in ``new HashSet<>(list)`` order get ``[-1]``,
    then each task is appended to its connector's entry (a new entry at the end if needed)."""
    entries: dict[str, list[int]] = {}
    if connectors:
        for c in connector_hash_order(connectors, presized_capacity(len(connectors))):
            entries[c] = [-1]
    _append_tasks(entries, tasks)
    return entries


def revoked_entries(
    connectors: Sequence[str], tasks: Iterable[tuple[str, int]]
) -> dict[str, list[int]]:
    """Kafka ``ExtendedAssignment.revokedAsMap()``: distinct connectors in order, then tasks."""
    entries: dict[str, list[int]] = {}
    for c in connectors:
        if c not in entries:
            entries[c] = [-1]
    _append_tasks(entries, tasks)
    return entries


def _append_tasks(entries: dict[str, list[int]], tasks: Iterable[tuple[str, int]]) -> None:
    """Append each task number to its connector's entry (a new entry at the end if needed)."""
    for c, t in tasks:
        lst = entries.get(c)
        if lst is None:
            entries[c] = [t]
        else:
            lst.append(t)


_ONE = _I.pack(1)
_INT4: list[bytes] = []


def int4_table(n: int) -> list[bytes]:
    """Big-endian INT32 bytes of 0..n-1 (a shared, growing cache)."""
    if len(_INT4) < n:
        _INT4.extend(_I.pack(i) for i in range(len(_INT4), n))
    return _INT4


def _value_bytes(values: list[int]) -> bytes:
    n = len(values)
    if n == 1:
        v = values[0]
        if 0 <= v < 4096:
            return _ONE + int4_table(4096)[v]
    return struct.pack(f">i{n}i", n, *values)


def encode_entries(entries: dict[str, list[int]]) -> bytes:
    """ARRAY(ConnectorAssignment) bytes of ``entries`` (connector → numbers, -1 = itself)."""
    chunk = string_chunk
    body = b"".join([chunk(c) + _value_bytes(values) for c, values in entries.items()])
    return _I.pack(len(entries)) + body


_EMPTY_ARRAY = _I.pack(0)

View = Callable[[], tuple[list[str], list[tuple[str, int]]]]


def assignment_header(
    version: int, error: int, leader: str, leader_url: str, config_offset: int
) -> bytes:
    """The fixed prefix of an assignment: version, error, leader, leaderUrl, configOffset."""
    return (
        _HH.pack(version, error)
        + string_chunk(leader)
        + string_chunk(leader_url)
        + _Q.pack(config_offset)
    )


def _no_items() -> tuple[list[str], list[tuple[str, int]]]:
    return [], []


_task_entry_cache: dict[tuple[str, int], bytes] = {}
#: Entries remembered before the caches start afresh (bounded memory in long campaigns).
_TASK_ENTRIES_KEPT = 250_000


def task_entry(task: tuple[str, int]) -> bytes:
    """The ConnectorAssignment bytes of a lone task: connector STRING, ARRAY [n] (cached)."""
    entry = _task_entry_cache.get(task)
    if entry is None:
        c, t = task
        entry = string_chunk(c) + _value_bytes([t])
        if len(_task_entry_cache) >= _TASK_ENTRIES_KEPT:
            _task_entry_cache.clear()
        _task_entry_cache[task] = entry
    return entry


_connector_entry_cache: dict[str, bytes] = {}
_CONNECTOR_ONLY = _ONE + _I.pack(-1)


def connector_entry(connector: str) -> bytes:
    """The ConnectorAssignment bytes of a connector without tasks: STRING, ARRAY [-1]."""
    entry = _connector_entry_cache.get(connector)
    if entry is None:
        entry = string_chunk(connector) + _CONNECTOR_ONLY
        if len(_connector_entry_cache) >= _TASK_ENTRIES_KEPT:
            _connector_entry_cache.clear()
        _connector_entry_cache[connector] = entry
    return entry


def _task_entries(tasks: Sequence[tuple[str, int]]) -> bytes:
    """The concatenated :func:`task_entry` bytes of ``tasks``, in order."""
    try:
        return b"".join(map(_task_entry_cache.__getitem__, tasks))
    except KeyError:
        return b"".join(map(task_entry, tasks))


def _connector_order(connectors: Sequence[str]) -> list[str]:
    """``new HashSet<>(connectors)`` iteration order (Kafka ``Assignment.asMap()``)."""
    if len(connectors) <= 1:
        return list(connectors)
    return connector_hash_order(connectors, presized_capacity(len(connectors)))


def _view_of(
    order: Sequence[str], tasks: Sequence[tuple[str, int]]
) -> tuple[list[str], list[tuple[str, int]]]:
    return list(order), list(tasks)


def _items_view(order: Sequence[str], tasks: Sequence[tuple[str, int]]) -> View:
    return partial(_view_of, order, tasks)


def encode_assigned(
    connectors: Sequence[str], tasks: Sequence[tuple[str, int]]
) -> tuple[bytes, View]:
    """The assigned ARRAY(ConnectorAssignment) bytes of ``connectors``/``tasks`` (Kafka
    ``Assignment.asMap()`` order) and a view of the decoded (connectors, tasks).

    The lists are read again when the view is called: do not change them afterwards.
    """
    if not tasks:
        if not connectors:
            return _EMPTY_ARRAY, _no_items
        names = _connector_order(connectors)
        body = b"".join(map(connector_entry, names))
        return _I.pack(len(names)) + body, _items_view(names, [])
    order: Sequence[str] = connectors if len(connectors) <= 1 else _connector_order(connectors)
    task_conns = set(map(_connector_of, tasks))
    if not order or task_conns.isdisjoint(order):
        if len(task_conns) != len(tasks):
            return _encode_entries_of(connectors, tasks)
        # no task of a held connector, one task per connector: the shape after water filling
        try:
            if order:
                body = b"".join(
                    [
                        *map(_connector_entry_cache.__getitem__, order),
                        *map(_task_entry_cache.__getitem__, tasks),
                    ]
                )
            else:
                body = b"".join(map(_task_entry_cache.__getitem__, tasks))
        except KeyError:
            body = b"".join(map(connector_entry, order)) + b"".join(map(task_entry, tasks))
        return _I.pack(len(order) + len(tasks)) + body, partial(_view_of, order, tasks)
    own = task_conns.intersection(order)
    rest = [x for x in tasks if x[0] not in own]
    if len(task_conns) != len(tasks) and len({c for c, _ in rest}) != len(rest):
        return _encode_entries_of(connectors, tasks)
    # tasks of held connectors join those entries; every other task has an entry of its own
    numbers: dict[str, list[int]] = {}
    for oc, t in tasks:
        if oc in own:
            got = numbers.get(oc)
            if got is None:
                numbers[oc] = [-1, t]
            else:
                got.append(t)
    chunk = string_chunk
    parts: list[bytes] = []
    grouped: list[tuple[str, int]] = []
    for c in order:
        values = numbers.get(c)
        if values is None:
            parts.append(connector_entry(c))
        else:
            parts.append(chunk(c) + _value_bytes(values))
            grouped.extend(zip(repeat(c), values[1:]))
    parts.append(_task_entries(rest))
    grouped.extend(rest)
    return _I.pack(len(order) + len(rest)) + b"".join(parts), _items_view(order, grouped)


def _encode_entries_of(
    connectors: Sequence[str], tasks: Sequence[tuple[str, int]]
) -> tuple[bytes, View]:
    entries = connector_entries(connectors, tasks)
    return encode_entries(entries), lambda: entries_view(entries)


def encode_assignment_fast(
    header: bytes,
    version: int,
    connectors: Sequence[str],
    tasks: Sequence[tuple[str, int]],
    revoked_connectors: Sequence[str] = (),
    revoked_tasks: Sequence[tuple[str, int]] = (),
    delay_ms: int = 0,
) -> tuple[bytes, View, View]:
    """Assignment bytes for ``header`` (see :func:`assignment_header`) and the item lists.

    Returns ``(bytes, assigned view, revoked view)``; each view returns the decoded
    ``(connectors, tasks)`` in wire order. Version 0 has no revoked array and no delay.
    """
    body, assigned = encode_assigned(connectors, tasks)
    if version == 0:
        return header + body, assigned, _no_items
    if revoked_connectors or revoked_tasks:
        revoked = revoked_entries(revoked_connectors, revoked_tasks)
        rbody = encode_entries(revoked)
        rview: View = lambda: entries_view(revoked)  # noqa: E731
    else:
        rbody = _EMPTY_ARRAY
        rview = _no_items
    return header + body + rbody + _I.pack(delay_ms), assigned, rview


def no_revocations_tail(version: int, delay_ms: int) -> bytes:
    """What follows the assigned array when nothing is revoked: an empty revoked array and
    the delay (v1+), nothing (v0)."""
    return _EMPTY_ARRAY + _I.pack(delay_ms) if version else b""


def entries_view(entries: dict[str, list[int]]) -> tuple[list[str], list[tuple[str, int]]]:
    """Decoded (connectors, tasks) of ``entries`` in wire order, as Kafka's reader yields them."""
    conns: list[str] = []
    tasks: list[tuple[str, int]] = []
    for c, values in entries.items():
        for v in values:
            if v == -1:
                conns.append(c)
            else:
                tasks.append((c, v))
    return conns, tasks
