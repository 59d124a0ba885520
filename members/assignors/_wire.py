"""Fast paths for the bytes a Connect leader reads and writes, plus Java orderings.

The leader decodes every member's JoinGroup metadata and encodes one SyncGroup assignment per
member on every round. At 1,000 workers × 100,000 tasks the general codec
(:mod:`protocol.connect_codec`) would create one object per task; these helpers read and write
the same bytes with per-connector chunks instead. They are an optimisation only: the tests check
them byte for byte against the codec, and anything unusual (truncated buffers, null arrays,
negative lengths) falls back to the codec so errors and tolerance rules stay Kafka's.

Layouts (Kafka ``ConnectProtocol``, ``IncrementalCooperativeConnectProtocol``): STRING = INT16
length + UTF-8; subscription v1/v2 = version, url, configOffset INT64, allocation
NULLABLE_BYTES (a whole v1/v2 assignment); assignment v0 = version, error, leader, leaderUrl,
configOffset, ARRAY(entry); v1+ adds nullable ARRAY revoked and INT32 delay. An entry =
connector STRING + ARRAY(INT32) where -1 marks the connector itself.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import repeat
from operator import itemgetter

from protocol.java_capacity import presized_capacity
from protocol.java_hash_order import chain_order, hash_order
from protocol.java_hashing import spread, string_hash, task_id_hash
from protocol.java_strings import java_string_key

__all__ = [
    "MemberState",
    "read_member_state",
    "reread_member_state",
    "string_chunk",
    "encode_assignment_fast",
    "encode_assigned",
    "no_revocations_tail",
    "connector_entries",
    "sorted_connectors",
    "sorted_tasks",
    "task_hash_order",
    "task_ids",
    "connector_hash_order",
]

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_HH = struct.Struct(">hh")
_IHEAD = struct.Struct(">i")

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


# --------------------------------------------------------------------------------------------
# Java orderings
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Reading member metadata (Kafka's IncrementalCooperativeConnectProtocol v1 reader)
# --------------------------------------------------------------------------------------------


class MemberState:
    """What a leader needs from one member's metadata: url, config offset, held items.

    ``connectors``/``tasks`` are the embedded allocation's assigned lists in wire order
    (duplicates kept, tasks as ``(connector, n)`` tuples); both are empty when the allocation is
    null or missing. ``allocation_version`` is the embedded assignment's header, or None.
    ``assigned_end`` is the offset in the metadata just after the embedded assigned array
    (0 when there is none, or when the general codec read the bytes): everything in this
    object was read from the bytes before it and the metadata's length.
    """

    __slots__ = (
        "version",
        "url",
        "config_offset",
        "connectors",
        "tasks",
        "allocation_version",
        "assigned_end",
    )

    def __init__(
        self,
        version: int,
        url: str,
        config_offset: int,
        connectors: list[str],
        tasks: list[tuple[str, int]],
        allocation_version: int | None,
        assigned_end: int = 0,
    ) -> None:
        self.version = version
        self.url = url
        self.config_offset = config_offset
        self.connectors = connectors
        self.tasks = tasks
        self.allocation_version = allocation_version
        self.assigned_end = assigned_end


class _Fallback(Exception):
    pass


def _read_string(data: bytes, pos: int) -> tuple[str, int]:
    if pos + 2 > len(data):
        raise _Fallback
    (n,) = _H.unpack_from(data, pos)
    pos += 2
    if n < 0 or pos + n > len(data):
        raise _Fallback
    return data[pos : pos + n].decode("utf-8"), pos + n


#: Shared task tuples: ``_task_ids[name][n] is (name, n)``. The decoder hands out these
#: objects and :class:`~.base.SnapshotTables` builds its configured tasks from them, so the
#: leader's 100,000-task set differences meet the same objects on both sides (an identity
#: check instead of comparing tuples and names). Identity is only a speed-up: a tuple made
#: elsewhere is equal all the same.
_task_ids: dict[str, list[tuple[str, int]]] = {}
_task_ids_size = 0
#: Tuples kept before the table starts afresh (bounded memory in long campaigns).
_TASK_IDS_KEPT = 2_000_000
#: The decoder extends a name's tuples up to this task number only (wire values are
#: untrusted); larger numbers get a tuple of their own.
_TASK_IDS_DECODED = 4096


def task_ids(name: str, count: int) -> list[tuple[str, int]]:
    """The shared tuples ``(name, 0)`` … of ``name``, at least ``count`` of them (the list
    may be longer and is shared: do not change it)."""
    global _task_ids_size
    ids = _task_ids.get(name)
    if ids is None:
        if _task_ids_size >= _TASK_IDS_KEPT:
            _task_ids.clear()
            _name_cache.clear()
            _task_ids_size = 0
        ids = _task_ids[name] = []
    have = len(ids)
    if have < count:
        ids.extend(zip(repeat(name), range(have, count)))
        _task_ids_size += count - have
    return ids


#: Decoded names by their UTF-8 bytes, with their shared task tuples (:func:`task_ids`).
_name_cache: dict[bytes, tuple[str, list[tuple[str, int]]]] = {}
_II = struct.Struct(">ii")


def _read_entries(
    data: bytes, pos: int, end: int, connectors: list[str], tasks: list[tuple[str, int]]
) -> int:
    """Parse ARRAY(ConnectorAssignment) at ``pos``; bounds are checked once at the end."""
    unpack_h = _H.unpack_from
    unpack_ii = _II.unpack_from
    names = _name_cache
    t_append = tasks.append
    (count,) = _I.unpack_from(data, pos)
    pos += 4
    if count < 0:
        raise _Fallback
    for _ in range(count):
        (n,) = unpack_h(data, pos)
        if n < 0:
            raise _Fallback
        pos += 2
        raw = data[pos : pos + n]
        pos += n
        known = names.get(raw)
        if known is None:
            name = raw.decode("utf-8")
            ids = task_ids(name, 0)
            if len(names) < 1_000_000:
                names[raw] = (name, ids)
        else:
            name, ids = known
        k, v = unpack_ii(data, pos)
        if k == 1:
            pos += 8
            if v == -1:
                connectors.append(name)
            elif 0 <= v < len(ids):
                t_append(ids[v])
            elif 0 <= v < _TASK_IDS_DECODED:
                t_append(task_ids(name, v + 1)[v])
            else:
                t_append((name, v))
            continue
        pos += 4
        if k < 0:
            raise _Fallback
        values = struct.unpack_from(f">{k}i", data, pos)
        pos += 4 * k
        if -1 in values:
            for v in values:
                if v == -1:
                    connectors.append(name)
                else:
                    t_append((name, v))
        elif k and min(values) >= 0 and max(values) < _TASK_IDS_DECODED:
            ids = task_ids(name, max(values) + 1)
            tasks.extend(map(ids.__getitem__, values))
        else:
            tasks.extend(zip(repeat(name, k), values, strict=True))
    if pos > end:
        raise _Fallback
    return pos


def _read_fast(data: bytes) -> MemberState:
    end = len(data)
    if end < 2:
        raise _Fallback
    (version,) = _H.unpack_from(data, 0)
    if version < 0:
        raise _Fallback
    url, pos = _read_string(data, 2)
    if pos + 8 > end:
        raise _Fallback
    (offset,) = _Q.unpack_from(data, pos)
    pos += 8
    connectors: list[str] = []
    tasks: list[tuple[str, int]] = []
    alloc_version: int | None = None
    assigned_end = 0
    if pos < end:
        if pos + 4 > end:
            raise _Fallback
        (alen,) = _I.unpack_from(data, pos)
        pos += 4
        if alen >= 0:
            aend = pos + alen
            if aend > end:
                raise _Fallback
            # embedded assignment: version, error, leader, leaderUrl, offset, assignment[, ...]
            if pos + 4 > aend:
                raise _Fallback
            alloc_version, _error = _HH.unpack_from(data, pos)
            if alloc_version < 0:
                raise _Fallback
            p = pos + 4
            _leader, p = _read_string(data, p)
            _lurl, p = _read_string(data, p)
            if p + 8 > aend:
                raise _Fallback
            p += 8
            if p + 4 > aend:
                raise _Fallback
            (count,) = _I.unpack_from(data, p)
            if count >= 0:
                assigned_end = _read_entries(data, p, aend, connectors, tasks)
            else:
                raise _Fallback
        elif alen != -1:
            raise _Fallback
    return MemberState(version, url, offset, connectors, tasks, alloc_version, assigned_end)


_small_states: dict[bytes, MemberState] = {}
_SMALL_METADATA = 512
_SMALL_STATES_KEPT = 16_384


def read_member_state(data: bytes) -> MemberState:
    """Decode JoinGroup metadata as Kafka's v1 subscription reader does.

    Well-formed v0/v1/v2(/v3) metadata is read directly; anything else (null arrays,
    truncation, negative lengths) is handed to ``protocol.connect_codec.decode_subscription_v1``,
    which raises the codec's error for malformed bytes. Small well-formed blobs (≤ 512 bytes:
    a worker holding little or nothing) are remembered by content, so the same bytes give the
    same :class:`MemberState` object: callers must treat it as read-only.
    """
    if type(data) is not bytes:
        data = bytes(data)
    small = len(data) <= _SMALL_METADATA
    if small:
        known = _small_states.get(data)
        if known is not None:
            return known
    try:
        state = _read_fast(data)
    except (_Fallback, struct.error, UnicodeDecodeError):
        pass
    else:
        if small:
            if len(_small_states) >= _SMALL_STATES_KEPT:
                _small_states.clear()
            _small_states[data] = state
        return state
    from protocol.connect_codec import decode_subscription_v1

    sub = decode_subscription_v1(data)
    alloc = sub.allocation
    if alloc is None:
        return MemberState(sub.version, sub.url, sub.config_offset, [], [], None)
    return MemberState(
        sub.version,
        sub.url,
        sub.config_offset,
        list(alloc.connectors),
        [(t[0], t[1]) for t in alloc.tasks],
        alloc.version,
    )


def reread_member_state(data: bytes, previous: bytes, state: MemberState) -> MemberState:
    """:func:`read_member_state` of ``data``, given ``state`` read from ``previous`` bytes.

    When ``data`` has ``previous``'s length and the same bytes up to the end of the embedded
    assigned array (``state.assigned_end``), ``state`` itself is returned: the two differ at
    most in what follows (the echoed revoked array and delay, which the leader does not read
    from here), and the reader's result and checks depend only on those first bytes and the
    length. A worker's next metadata after a round that only set a delay (Kafka
    ``IncrementalCooperativeAssignor``'s scheduled rebalance) is such a case. Otherwise the
    bytes are read afresh. Callers must treat the result as read-only.
    """
    end = state.assigned_end
    if end and len(data) == len(previous) and data[:end] == previous[:end]:
        return state
    return read_member_state(data)


# --------------------------------------------------------------------------------------------
# Writing assignments
# --------------------------------------------------------------------------------------------


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
    return _IHEAD.pack(len(entries)) + body


_EMPTY_ARRAY = _IHEAD.pack(0)

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
        return _IHEAD.pack(len(names)) + body, _items_view(names, [])
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
        return _IHEAD.pack(len(order) + len(tasks)) + body, partial(_view_of, order, tasks)
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
    return _IHEAD.pack(len(order) + len(rest)) + b"".join(parts), _items_view(order, grouped)


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
