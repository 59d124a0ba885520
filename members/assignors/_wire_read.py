"""Reading Connect JoinGroup metadata on a leader's fast path (Kafka's
``IncrementalCooperativeConnectProtocol`` v1 subscription reader), part of :mod:`._wire`:
well-formed metadata is read with per-connector chunks and shared task tuples; anything
unusual is handed to :mod:`protocol.connect_codec`, whose errors and tolerance are Kafka's.
"""

from __future__ import annotations

import struct
from itertools import repeat

__all__ = ["MemberState", "read_member_state", "reread_member_state", "task_ids"]

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_HH = struct.Struct(">hh")


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
