"""Kafka Streams' subscription user data: ``SubscriptionInfo``, versions 1-11 and future.

A Streams member puts a *SubscriptionInfo* in the ``userData`` of its consumer subscription
(JoinGroup metadata); the leader's answer, *AssignmentInfo*, is in
:mod:`protocol.streams_assignment`, the values both carry in :mod:`protocol.streams_types`, the
versions (``StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION = 11``) in
:mod:`protocol.streams_versions`. Everything is big-endian.

**SubscriptionInfo** (Kafka: ``SubscriptionInfo.java`` over the generated
``SubscriptionInfoData``, ``SubscriptionInfoData.json``: validVersions 1-11, *not* flexible, so
``bytes`` = INT32 length + bytes, ``string`` = INT16 length + UTF-8, arrays = INT32 count, no
tagged fields). Fields in wire order, each with the versions that carry it:

====================  ========  ================================================================
version               1+        INT32
latest_supported      3+        INT32 (decoded as -1 = UNKNOWN for v1/v2)
process_id            1+        ``uuid``: INT64 most-significant bits, INT64 least-significant
prev_tasks            1-6       ARRAY of (subtopology INT32, partition INT32)
standby_tasks         1-6       same
user_endpoint         2+        BYTES (UTF-8 ``host:port``; empty = none)
task_offset_sums      7-9       ARRAY of (subtopology INT32, ARRAY of (partition INT32,
                                offset_sum INT64)) — nested by subtopology
task_offset_sums      10+       ARRAY of (subtopology INT32, partition INT32, offset_sum INT64,
                                named_topology nullable STRING) — flat
unique_field          8+        INT8
error_code            9+        INT32
client_tags           11+       ARRAY of (key BYTES, value BYTES), UTF-8
====================  ========  ================================================================

A header above 11 is a *future* subscription (version probing): only ``version`` and
``latest_supported_version`` are read, as ``SubscriptionInfo.decode`` does, and the process id
reads as the all-zero UUID (the generated default; the leader maps such a member to its own
``FUTURE_ID``). Every decoded subscription passes Kafka's ``validateVersions``: v1/v2 need no
latest version, any other version needs ``1 <= version <= latest_supported_version``.

**Byte order of collections.** Subscriptions are written exactly as Kafka's ``SubscriptionInfo``
constructor writes them when handed a ``HashMap`` holding ``task_offset_sums`` (or, for v1-6,
the -2/-3 map of :meth:`StreamsSubscription.offset_sums`) filled in dict order: v10+ entries in
that map's Java iteration order; v7-9 grouped by subtopology in the order of a
``HashMap<Integer, ...>`` filled by ``computeIfAbsent`` (colliding subtopologies newest first);
v1-6 prev/standby in ``HashSet<TaskId>`` order; client tags in ``HashMap<String, String>``
order (:mod:`protocol.java_hash_order`, :mod:`protocol.java_hashmap`).

**Decoding** keeps wire order (dicts in first-appearance order, later duplicates win as with
Java ``put``) and ignores trailing bytes, as Kafka does. Where Kafka *accepts* odd input, so
does this module: a negative nullable-string length reads as no named topology, non-UTF-8
endpoint / tag / topology bytes become U+FFFD (``new String(bytes, UTF_8)``). Where Kafka would
fail, :class:`DecodeError` names the field and byte offset: truncation, negative counts of lists
Kafka presizes (``new ArrayList<>(-1)``), bad versions. One deliberate deviation: a duplicate
client-tag key is an error when decoding (Kafka fails later, in ``clientTags()``'s
``Collectors.toMap``). No other exception escapes the decoder, and every length is checked
against the remaining bytes before anything is allocated.

Normalisation: ``decode(encode(x)) == x`` except that fields the chosen version lacks come back
at their defaults, a v1/v2 subscription's ``latest_supported_version`` comes back as -1, an
empty ``user_endpoint`` comes back ``None``, an empty named topology comes back ``None``
(Kafka's ``TaskId`` does the same), and collections come back in the byte order described
above. ``encode(decode(b)) == b`` holds for every ``b`` Kafka or this module writes, except a
v7-9 subscription whose subtopologies share a ``HashMap`` bin: re-grouping them puts the newest
first, and Kafka's own decode-encode reorders them the same way.
"""

from __future__ import annotations

import struct
import uuid

from protocol.java_hashmap import JavaHashMap
from protocol.primitives import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    DecodeError,
    EncodeError,
    Writer,
)
from protocol.streams_types import (
    LATEST_OFFSET,
    StreamsSubscription,
    StreamsTaskId,
    task_offset_sums_from_sets,
    to_uuid,
)
from protocol.streams_versions import (
    LATEST_SUPPORTED_VERSION,
    MIN_NAMED_TOPOLOGY_VERSION,
    MIN_VERSION_OFFSET_SUM_SUBSCRIPTION,
    UNKNOWN,
)
from protocol.streams_wire import (
    StreamsReader,
    check_int32,
    int8_bytes,
    int_hash,
    java_order,
    java_string_hash,
    task_hash,
    utf8,
)

__all__ = ["encode_subscription", "encode_future_subscription", "decode_subscription"]

_Q = struct.Struct(">Q")
#: a v10+ TaskOffsetSum entry: subtopology, partition, offset sum, topology length (-1: null)
_TASK_SUM_NULL_TOPOLOGY = struct.Struct(">iiqh")


def _validate_versions(version: int, latest: int) -> str | None:
    """Kafka ``SubscriptionInfo.validateVersions``; the complaint, or ``None`` when fine."""
    if latest == UNKNOWN and not 1 <= version <= 2:
        return (
            f"only versions 1 and 2 may leave the latest supported version UNKNOWN, got {version}"
        )
    if latest != UNKNOWN and not 1 <= version <= latest:
        return f"version must be between 1 and latest supported {latest}, was {version}"
    return None


def _source_offset_sums(s: StreamsSubscription) -> dict[StreamsTaskId, int]:
    if s.version >= MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
        if s.prev_tasks or s.standby_tasks:
            raise EncodeError(
                "prev_tasks",
                f"a v{s.version} subscription reports task_offset_sums; prev_tasks and "
                "standby_tasks exist in v1-6 only",
            )
        return s.task_offset_sums
    if s.task_offset_sums:
        raise EncodeError(
            "task_offset_sums",
            f"a v{s.version} subscription reports prev_tasks/standby_tasks; "
            "task_offset_sums exist from v7",
        )
    return task_offset_sums_from_sets(s.prev_tasks, s.standby_tasks)


def _write_plain_task(w: Writer, task: StreamsTaskId, field: str) -> None:
    if task.topology:
        raise EncodeError(
            field, f"named topology {task.topology!r} needs version >= {MIN_NAMED_TOPOLOGY_VERSION}"
        )
    w.int32(task.subtopology, f"{field}.subtopology")
    w.int32(task.partition, f"{field}.partition")


def encode_subscription(s: StreamsSubscription, version: int | None = None) -> bytes:
    """Serialize Streams subscription user data (``SubscriptionInfo.encode``).

    Args:
        s: the subscription. Its own version decides which task fields it carries
            (:attr:`~StreamsSubscription.prev_tasks`/``standby_tasks`` below 7,
            :attr:`~StreamsSubscription.task_offset_sums` from 7).
        version: the version to write, 1-11 (default ``s.version``). Writing another version
            converts through :meth:`StreamsSubscription.offset_sums` as Kafka's constructor
            does: below 7, tasks with sum -2 become prev tasks and all others standby tasks.

    Returns:
        The bytes Kafka's ``SubscriptionInfo`` writes for the same values (module doc).

    Raises:
        EncodeError: version outside 1-11 or not allowed by ``latest_supported_version``
            (Kafka's ``validateVersions``); task fields that ``s.version`` lacks; a named
            topology below v10; ints out of range (INT32 ids, INT64 sums, INT8 unique field);
            strings that are not UTF-8 encodable or longer than 32767 bytes (named topology).
    """
    v = s.version if version is None else version
    if type(v) is not int or not 1 <= v <= LATEST_SUPPORTED_VERSION:
        raise EncodeError("version", f"cannot encode version {v!r} (1..{LATEST_SUPPORTED_VERSION})")
    latest = s.latest_supported_version
    if v >= 3:
        check_int32(latest, "latest_supported_version")
    problem = _validate_versions(v, latest)
    if problem is not None:
        raise EncodeError("latest_supported_version", problem)
    sums = _source_offset_sums(s)
    order = java_order(list(sums), task_hash)

    w = Writer()
    w.int32(v, "version")
    if v >= 3:
        w.int32(latest, "latest_supported_version")
    pid = to_uuid(s.process_id).int
    w.raw(_Q.pack(pid >> 64) + _Q.pack(pid & ((1 << 64) - 1)))

    if v < MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
        prev = [t for t in order if sums[t] == LATEST_OFFSET]
        standby = [t for t in order if sums[t] != LATEST_OFFSET]
        for name, tasks in (("prev_tasks", prev), ("standby_tasks", standby)):
            tasks = java_order(tasks, task_hash)
            w.int32(len(tasks), name)
            for i, task in enumerate(tasks):
                _write_plain_task(w, task, f"{name}[{i}]")
    if v >= 2:
        endpoint = b"" if s.user_endpoint is None else utf8(s.user_endpoint, "user_endpoint")
        w.nullable_bytes(endpoint, "user_endpoint")
    if v >= MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
        if v < MIN_NAMED_TOPOLOGY_VERSION:
            groups: dict[int, list[StreamsTaskId]] = {}
            for task in order:
                if task.topology:
                    raise EncodeError(
                        f"task_offset_sums[{task}]",
                        f"named topology {task.topology!r} needs version "
                        f">= {MIN_NAMED_TOPOLOGY_VERSION}",
                    )
                check_int32(task.subtopology, f"task_offset_sums[{task}].subtopology")
                groups.setdefault(task.subtopology, []).append(task)
            # SubscriptionInfo groups with HashMap.computeIfAbsent: colliding subtopologies
            # iterate newest first (JavaHashMap.compute_if_absent)
            by_sub: JavaHashMap[int] = JavaHashMap(int_hash)
            for task in order:  # one call per task, as Kafka makes them
                by_sub.compute_if_absent(task.subtopology)
            keys = list(by_sub)
            w.int32(len(keys), "task_offset_sums")
            for sub in keys:
                w.int32(sub, "task_offset_sums.subtopology")
                w.int32(len(groups[sub]), "task_offset_sums.partitions")
                for task in groups[sub]:
                    w.int32(task.partition, f"task_offset_sums[{task}].partition")
                    w.int64(sums[task], f"task_offset_sums[{task}]")
        else:
            w.int32(len(order), "task_offset_sums")
            for task in order:
                sub, part, topology = task
                offset_sum = sums[task]
                if (
                    not topology
                    and type(sub) is int
                    and type(part) is int
                    and type(offset_sum) is int
                    and INT32_MIN <= sub <= INT32_MAX
                    and INT32_MIN <= part <= INT32_MAX
                    and INT64_MIN <= offset_sum <= INT64_MAX
                ):  # the common entry at once: the same bytes as the checked writes below
                    w.raw(_TASK_SUM_NULL_TOPOLOGY.pack(sub, part, offset_sum, -1))
                    continue
                w.int32(task.subtopology, f"task_offset_sums[{task}].subtopology")
                w.int32(task.partition, f"task_offset_sums[{task}].partition")
                w.int64(sums[task], f"task_offset_sums[{task}]")
                if task.topology:
                    w.string(task.topology, f"task_offset_sums[{task}].topology")
                else:
                    w.int16(-1, "task_offset_sums.topology")
    if v >= 8:
        w.raw(int8_bytes(s.unique_field, "unique_field"))
    if v >= 9:
        w.int32(s.error_code, "error_code")
    if v >= 11:
        tags = s.client_tags
        keys_in_order = java_order(list(tags), java_string_hash)
        w.int32(len(keys_in_order), "client_tags")
        for key in keys_in_order:
            w.nullable_bytes(utf8(key, f"client_tags[{key!r}].key"), "client_tags.key")
            w.nullable_bytes(utf8(tags[key], f"client_tags[{key!r}]"), "client_tags.value")
    return w.getvalue()


def encode_future_subscription(version: int, latest_supported_version: int) -> bytes:
    """groupsim's stand-in for a subscription from a newer Streams release (version > 11).

    Writes only ``version INT32, latest_supported_version INT32`` — all an 11-aware leader reads
    of it (``SubscriptionInfo.decode``). Used to emulate the newer member of a version-probing
    rolling upgrade.

    Raises:
        EncodeError: ``version <= 11`` or not ``version <= latest_supported_version``.
    """
    if type(version) is not int or version <= LATEST_SUPPORTED_VERSION:
        raise EncodeError("version", f"a future version is above {LATEST_SUPPORTED_VERSION}")
    problem = _validate_versions(version, latest_supported_version)
    if problem is not None:
        raise EncodeError("latest_supported_version", problem)
    w = Writer()
    w.int32(version, "version")
    w.int32(latest_supported_version, "latest_supported_version")
    return w.getvalue()


def decode_subscription(data: bytes | bytearray | memoryview) -> StreamsSubscription:
    """Parse Streams subscription user data (``SubscriptionInfo.decode``), any version.

    Returns:
        The subscription; for a header above 11 only ``version`` and
        ``latest_supported_version`` (see :attr:`StreamsSubscription.is_future`).

    Raises:
        DecodeError: truncated data, a header below 1, versions Kafka's ``validateVersions``
            rejects, negative array / bytes lengths, duplicate client-tag keys (module doc).
    """
    r = StreamsReader(data)
    version = r.int32("version")
    if version > LATEST_SUPPORTED_VERSION:
        latest = r.int32("latest_supported_version")
        problem = _validate_versions(version, latest)
        if problem is not None:
            raise DecodeError("latest_supported_version", 4, problem)
        return StreamsSubscription(version, latest, uuid.UUID(int=0))
    if version < 1:
        raise DecodeError("version", 0, f"unknown subscription version {version}")
    latest = UNKNOWN
    if version >= 3:
        latest = r.int32("latest_supported_version")
        problem = _validate_versions(version, latest)
        if problem is not None:
            raise DecodeError("latest_supported_version", 4, problem)
    process_id = r.uuid("process_id")
    prev: tuple[StreamsTaskId, ...] = ()
    standby: tuple[StreamsTaskId, ...] = ()
    if version < MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
        prev = r.plain_tasks("prev_tasks")
        standby = r.plain_tasks("standby_tasks")
    endpoint = r.utf8_bytes("user_endpoint") if version >= 2 else ""
    sums: dict[StreamsTaskId, int] = {}
    if version >= MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
        if version < MIN_NAMED_TOPOLOGY_VERSION:
            groups = r.array_count("task_offset_sums", 8)
            assert groups is not None
            for g in range(groups):
                sub = r.int32(f"task_offset_sums[{g}].subtopology")
                field = f"task_offset_sums[{g}].partitions"
                count = r.array_count(field, 12)
                assert count is not None
                for p in range(count):
                    part = r.int32(f"{field}[{p}].partition")
                    sums[StreamsTaskId(sub, part)] = r.int64(f"{field}[{p}].offset_sum")
        else:
            count = r.array_count("task_offset_sums", 18)
            assert count is not None
            for i in range(count):
                task, offset_sum = r.offset_sum_entry(f"task_offset_sums[{i}]")
                sums[task] = offset_sum
    unique_field = r.int8("unique_field") if version >= 8 else 0
    error_code = r.int32("error_code") if version >= 9 else 0
    tags: dict[str, str] = {}
    if version >= 11:
        count = r.array_count("client_tags", 8)
        assert count is not None
        for i in range(count):
            start = r.position
            key = r.utf8_bytes(f"client_tags[{i}].key")
            value = r.utf8_bytes(f"client_tags[{i}].value")
            if key in tags:
                raise DecodeError(f"client_tags[{i}].key", start, f"duplicate tag key {key!r}")
            tags[key] = value
    return StreamsSubscription(
        version=version,
        latest_supported_version=latest,
        process_id=process_id,
        prev_tasks=prev,
        standby_tasks=standby,
        user_endpoint=endpoint or None,
        task_offset_sums=sums,
        unique_field=unique_field,
        error_code=error_code,
        client_tags=tags,
    )
