"""Kafka Streams' assignment user data: ``AssignmentInfo``, versions 1-11.

The leader answers each Streams member with an *AssignmentInfo* in the ``userData`` of its
consumer assignment (SyncGroup); the member's *SubscriptionInfo* is in
:mod:`protocol.streams_subscription`, the values both carry in :mod:`protocol.streams_types`,
the versions (``StreamsAssignmentProtocolVersions``) in :mod:`protocol.streams_versions`.
Everything is big-endian.

**AssignmentInfo** (Kafka: ``AssignmentInfo.java``, hand-written on ``DataOutputStream``: UTF
strings are ``writeUTF`` = UINT16 length + Java *modified* UTF-8; task ids from
``ConsumerProtocolUtils.writeTaskIdTo``):

* v1: ``version INT32, active ARRAY(TaskId), standby ARRAY(TaskId, ARRAY(topic UTF,
  partition INT32))``; v2 adds ``partitions_by_host ARRAY(host UTF, port INT32,
  ARRAY(topic UTF, partition INT32))``; v3 puts ``commonly_supported_version INT32`` right after
  the version; v4 appends ``error_code INT32``.
* v5: the host map is dictionary-encoded: ``ARRAY(index INT32, topic UTF)`` then the hosts with
  ``ARRAY(topic index INT32, partition INT32)``.
* v6: one dictionary shared by ``partitions_by_host`` and ``standby_partitions_by_host``.
* v7-11: v6 + ``next_rebalance_ms INT64`` (Long.MAX_VALUE = none scheduled, 0 = rejoin now).
* TaskId: ``subtopology INT32, partition INT32``, from v10 followed by the named topology as

**Byte order of collections.** Task lists and maps are written in the order given (Kafka's
order there is the leader's, which the assignor produces); the v5+ topic dictionary is built as
Kafka builds it (indexes by first appearance in the ``HashSet<TopicPartition>`` of all host
partitions, entries in ``HashMap<String, Integer>`` order; :mod:`protocol.java_hash_order`).

**Decoding** keeps wire order (dicts in first-appearance order, later duplicates win as with
Java ``put``; partition lists keep duplicates) and ignores trailing bytes, as Kafka does. Where
Kafka *accepts* odd input, so does this module: a negative host-map count reads as empty (the
``for`` loop never runs), a negative named-topology char count reads as no named topology.
Where Kafka would fail, :class:`DecodeError` names the field and byte offset: truncation,
negative counts of lists Kafka presizes (``new ArrayList<>(-1)``), malformed modified UTF-8,
bad versions. One deliberate deviation: a topic index missing from the v5+ dictionary is an
error (Kafka builds a ``TopicPartition`` with a null topic). No other exception escapes the
decoder, and every length is checked against the remaining bytes before anything is allocated.

Normalisation: ``decode(encode(x)) == x`` except that fields the chosen version lacks come back
at their defaults, a v1/v2 assignment's ``commonly_supported_version`` comes back as -1, an
empty named topology comes back ``None`` (Kafka's ``TaskId`` does the same), and collections
come back in the byte order described above. ``encode(decode(b)) == b`` holds for every ``b``
Kafka or this module writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from protocol.primitives import DecodeError, EncodeError, Writer
from protocol.streams_types import (
    NO_NEXT_REBALANCE,
    HostInfo,
    StreamsAssignment,
    StreamsTaskId,
)
from protocol.streams_versions import LATEST_SUPPORTED_VERSION, MIN_NAMED_TOPOLOGY_VERSION, UNKNOWN
from protocol.streams_wire import (
    StreamsReader,
    java_order,
    java_string_hash,
    java_utf,
    tp_hash,
    utf16_units,
)
from protocol.topic_partitions import TopicPartition

__all__ = ["encode_assignment", "decode_assignment"]


def _write_task(w: Writer, task: StreamsTaskId, field: str, version: int) -> None:
    """``ConsumerProtocolUtils.writeTaskIdTo``."""
    w.int32(task.subtopology, f"{field}.subtopology")
    w.int32(task.partition, f"{field}.partition")
    if version >= MIN_NAMED_TOPOLOGY_VERSION:
        if task.topology:
            if not isinstance(task.topology, str):
                raise EncodeError(f"{field}.topology", "expected a string")
            units = utf16_units(task.topology)
            w.int32(len(units) // 2, f"{field}.topology")
            w.raw(units)
        else:
            w.int32(0, f"{field}.topology")
    elif task.topology:
        raise EncodeError(
            field, f"named topology {task.topology!r} needs version >= {MIN_NAMED_TOPOLOGY_VERSION}"
        )


def _write_partitions(w: Writer, parts: Sequence[TopicPartition], field: str) -> None:
    w.int32(len(parts), field)
    for i, tp in enumerate(parts):
        w.raw(java_utf(tp.topic, f"{field}[{i}].topic"))
        w.int32(tp.partition, f"{field}[{i}].partition")


def _write_host(w: Writer, host: HostInfo, field: str) -> None:
    w.raw(java_utf(host.host, f"{field}.host"))
    w.int32(host.port, f"{field}.port")


def _topic_dictionary(
    maps: Sequence[Mapping[HostInfo, Sequence[TopicPartition]]],
) -> tuple[dict[str, int], list[str]]:
    """Kafka's ``encodeTopicDictionaryAndGet``: (topic → index, write order of the entries)."""
    all_tps = [tp for m in maps for parts in m.values() for tp in parts]
    index: dict[str, int] = {}
    for tp in java_order(all_tps, tp_hash):
        if tp.topic not in index:
            index[tp.topic] = len(index)
    return index, java_order(list(index), java_string_hash)


def _write_dictionary(w: Writer, index: dict[str, int], order: list[str]) -> None:
    w.int32(len(order), "topic_dictionary")
    for topic in order:
        w.int32(index[topic], "topic_dictionary.index")
        w.raw(java_utf(topic, f"topic_dictionary[{topic!r}]"))


def _write_host_map_dict(
    w: Writer,
    m: Mapping[HostInfo, Sequence[TopicPartition]],
    index: dict[str, int],
    field: str,
) -> None:
    w.int32(len(m), field)
    for i, (host, parts) in enumerate(m.items()):
        _write_host(w, host, f"{field}[{i}]")
        w.int32(len(parts), f"{field}[{i}].partitions")
        for k, tp in enumerate(parts):
            w.int32(index[tp.topic], f"{field}[{i}].partitions[{k}].topic")
            w.int32(tp.partition, f"{field}[{i}].partitions[{k}].partition")


def encode_assignment(a: StreamsAssignment, version: int | None = None) -> bytes:
    """Serialize Streams assignment user data (``AssignmentInfo.encode``).

    Args:
        a: the assignment.
        version: 1-11 (default ``a.version``). Fields the version lacks are dropped, as Kafka
            drops them: v1 the host maps, v1-5 ``standby_partitions_by_host``, v1/v2
            ``commonly_supported_version``, v1-3 ``error_code``, v1-6 ``next_rebalance_ms``.

    Raises:
        EncodeError: version outside 1-11, a named topology below v10, ints out of range,
            strings over ``writeUTF``'s 65535 bytes.
    """
    v = a.version if version is None else version
    if type(v) is not int or not 1 <= v <= LATEST_SUPPORTED_VERSION:
        raise EncodeError("version", f"cannot encode version {v!r} (1..{LATEST_SUPPORTED_VERSION})")
    w = Writer()
    w.int32(v, "version")
    if v >= 3:
        w.int32(a.commonly_supported_version, "commonly_supported_version")
    w.int32(len(a.active_tasks), "active_tasks")
    for i, task in enumerate(a.active_tasks):
        _write_task(w, task, f"active_tasks[{i}]", v)
    w.int32(len(a.standby_tasks), "standby_tasks")
    for i, (task, parts) in enumerate(a.standby_tasks.items()):
        _write_task(w, task, f"standby_tasks[{i}]", v)
        _write_partitions(w, parts, f"standby_tasks[{i}].partitions")
    if 2 <= v <= 4:
        w.int32(len(a.partitions_by_host), "partitions_by_host")
        for i, (host, parts) in enumerate(a.partitions_by_host.items()):
            _write_host(w, host, f"partitions_by_host[{i}]")
            _write_partitions(w, parts, f"partitions_by_host[{i}].partitions")
    elif v == 5:
        index, order = _topic_dictionary([a.partitions_by_host])
        _write_dictionary(w, index, order)
        _write_host_map_dict(w, a.partitions_by_host, index, "partitions_by_host")
    elif v >= 6:
        index, order = _topic_dictionary([a.partitions_by_host, a.standby_partitions_by_host])
        _write_dictionary(w, index, order)
        _write_host_map_dict(w, a.partitions_by_host, index, "partitions_by_host")
        _write_host_map_dict(w, a.standby_partitions_by_host, index, "standby_partitions_by_host")
    if v >= 4:
        w.int32(a.error_code, "error_code")
    if v >= 7:
        w.int64(a.next_rebalance_ms, "next_rebalance_ms")
    return w.getvalue()


def _read_task(r: StreamsReader, field: str, version: int) -> StreamsTaskId:
    sub = r.int32(f"{field}.subtopology")
    part = r.int32(f"{field}.partition")
    if version >= MIN_NAMED_TOPOLOGY_VERSION:
        return StreamsTaskId(sub, part, r.java_chars(f"{field}.topology"))
    return StreamsTaskId(sub, part)


def _count(r: StreamsReader, field: str, min_size: int) -> int:
    count = r.array_count(field, min_size)
    assert count is not None
    return count


def _host_count(r: StreamsReader, field: str, min_size: int) -> int:
    """Host-map counts: Kafka's ``for`` loop treats a negative count as zero entries."""
    start = r.position
    count = r.int32(field)
    if count <= 0:
        return 0
    if count * min_size > r.remaining:
        raise DecodeError(field, start, f"count {count} exceeds remaining {r.remaining} bytes")
    return count


def _read_partitions(r: StreamsReader, field: str) -> tuple[TopicPartition, ...]:
    out = []
    for i in range(_count(r, field, 6)):
        topic = r.java_utf(f"{field}[{i}].topic")
        out.append(TopicPartition(topic, r.int32(f"{field}[{i}].partition")))
    return tuple(out)


def _read_host(r: StreamsReader, field: str) -> HostInfo:
    host = r.java_utf(f"{field}.host")
    return HostInfo(host, r.int32(f"{field}.port"))


def _read_host_map_dict(
    r: StreamsReader, index: dict[int, str], field: str
) -> dict[HostInfo, tuple[TopicPartition, ...]]:
    out: dict[HostInfo, tuple[TopicPartition, ...]] = {}
    for i in range(_host_count(r, field, 10)):
        host = _read_host(r, f"{field}[{i}]")
        pfield = f"{field}[{i}].partitions"
        parts = []
        for k in range(_count(r, pfield, 8)):
            start = r.position
            idx = r.int32(f"{pfield}[{k}].topic")
            topic = index.get(idx)
            if topic is None:
                raise DecodeError(
                    f"{pfield}[{k}].topic", start, f"topic index {idx} not in dictionary"
                )
            parts.append(TopicPartition(topic, r.int32(f"{pfield}[{k}].partition")))
        out[host] = tuple(parts)
    return out


def decode_assignment(data: bytes | bytearray | memoryview) -> StreamsAssignment:
    """Parse Streams assignment user data (``AssignmentInfo.decode``), versions 1-11.

    Raises:
        DecodeError: truncated data, a version outside 1-11 (Kafka's "Unable to decode
            assignment data"), negative task / partition / dictionary counts, malformed
            modified UTF-8, a topic index missing from the dictionary (module doc).
    """
    r = StreamsReader(data)
    version = r.int32("version")
    if not 1 <= version <= LATEST_SUPPORTED_VERSION:
        raise DecodeError(
            "version",
            0,
            f"unable to decode assignment version {version} "
            f"(latest supported {LATEST_SUPPORTED_VERSION})",
        )
    commonly = r.int32("commonly_supported_version") if version >= 3 else UNKNOWN
    task_size = 12 if version >= MIN_NAMED_TOPOLOGY_VERSION else 8
    active = tuple(
        _read_task(r, f"active_tasks[{i}]", version)
        for i in range(_count(r, "active_tasks", task_size))
    )
    standby: dict[StreamsTaskId, tuple[TopicPartition, ...]] = {}
    for i in range(_count(r, "standby_tasks", task_size + 4)):
        task = _read_task(r, f"standby_tasks[{i}]", version)
        standby[task] = _read_partitions(r, f"standby_tasks[{i}].partitions")
    by_host: dict[HostInfo, tuple[TopicPartition, ...]] = {}
    standby_by_host: dict[HostInfo, tuple[TopicPartition, ...]] = {}
    if 2 <= version <= 4:
        for i in range(_host_count(r, "partitions_by_host", 10)):
            host = _read_host(r, f"partitions_by_host[{i}]")
            by_host[host] = _read_partitions(r, f"partitions_by_host[{i}].partitions")
    elif version >= 5:
        index: dict[int, str] = {}
        for i in range(_count(r, "topic_dictionary", 6)):
            idx = r.int32(f"topic_dictionary[{i}].index")
            index[idx] = r.java_utf(f"topic_dictionary[{i}].topic")
        by_host = _read_host_map_dict(r, index, "partitions_by_host")
        if version >= 6:
            standby_by_host = _read_host_map_dict(r, index, "standby_partitions_by_host")
    error_code = r.int32("error_code") if version >= 4 else 0
    next_ms = r.int64("next_rebalance_ms") if version >= 7 else NO_NEXT_REBALANCE
    return StreamsAssignment(
        version=version,
        commonly_supported_version=commonly,
        active_tasks=active,
        standby_tasks=standby,
        partitions_by_host=by_host,
        standby_partitions_by_host=standby_by_host,
        error_code=error_code,
        next_rebalance_ms=next_ms,
    )
