"""Kafka Streams' consumer-protocol user data: ``SubscriptionInfo`` and ``AssignmentInfo``.

A Streams member puts a *SubscriptionInfo* in the ``userData`` of its consumer subscription
(JoinGroup metadata) and the leader answers each member with an *AssignmentInfo* in the
``userData`` of its consumer assignment (SyncGroup). Versions 1-11 exist
(``StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION = 11``); ``SubscriptionInfo`` and
``AssignmentInfo`` document them. Everything is big-endian.

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
  ``INT32 char count`` + that many UTF-16 code units (``writeChars``); 0 = no named topology.

**Byte order of collections.** Subscriptions are written exactly as Kafka's ``SubscriptionInfo``
constructor writes them when handed a ``HashMap`` holding ``task_offset_sums`` (or, for v1-6,
the -2/-3 map of :meth:`StreamsSubscription.offset_sums`) filled in dict order: v10+ entries in
that map's Java iteration order; v7-9 grouped by subtopology in the order of a
``HashMap<Integer, ...>`` filled by ``computeIfAbsent`` (colliding subtopologies newest first);
v1-6 prev/standby in ``HashSet<TaskId>`` order; client tags in ``HashMap<String, String>``
order (:mod:`protocol.java`). Assignment task lists and maps are written in the order given
(Kafka's order there is the leader's, which the assignor produces); the v5+ topic dictionary is
built as Kafka builds it (indexes by first appearance in the ``HashSet<TopicPartition>`` of
all host partitions, entries in ``HashMap<String, Integer>`` order).

**Decoding** keeps wire order (dicts in first-appearance order, later duplicates win as with
Java ``put``; partition lists keep duplicates) and ignores trailing bytes, as Kafka does. Where
Kafka *accepts* odd input, so does this module: a negative host-map count reads as empty (the
``for`` loop never runs), a negative named-topology char count or a negative nullable-string
length reads as no named topology, non-UTF-8 endpoint / tag / topology bytes become U+FFFD
(``new String(bytes, UTF_8)``). Where Kafka would fail, :class:`DecodeError` names the field and
byte offset: truncation, negative counts of lists Kafka presizes (``new ArrayList<>(-1)``),
malformed modified UTF-8, bad versions. Two deliberate deviations: a topic index missing from
the v5+ dictionary is an error (Kafka builds a ``TopicPartition`` with a null topic), and a
duplicate client-tag key is an error when decoding (Kafka fails later, in ``clientTags()``'s
``Collectors.toMap``). No other exception escapes a decoder, and every length is checked
against the remaining bytes before anything is allocated.

Normalisation: ``decode(encode(x)) == x`` except that fields the chosen version lacks come back
at their defaults, a v1/v2 subscription's ``latest_supported_version`` and a v1/v2 assignment's
``commonly_supported_version`` come back as -1, an empty ``user_endpoint`` comes back ``None``,
an empty named topology comes back ``None`` (Kafka's ``TaskId`` does the same), and collections
come back in the byte order described above. ``encode(decode(b)) == b`` holds for every ``b``
Kafka or this module writes, except a v7-9 subscription whose subtopologies share a
``HashMap`` bin: re-grouping them puts the newest first, and Kafka's own decode-encode
reorders them the same way.
"""

from __future__ import annotations

import enum
import struct
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import NamedTuple, TypeVar

import msgspec

from protocol.consumer_codec import TopicPartition
from protocol.java import JavaHashMap, hash_order, java_utf8, string_hash
from protocol.primitives import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    DecodeError,
    EncodeError,
    Reader,
    Writer,
)

__all__ = [
    "LATEST_SUPPORTED_VERSION",
    "EARLIEST_PROBEABLE_VERSION",
    "MIN_VERSION_OFFSET_SUM_SUBSCRIPTION",
    "MIN_NAMED_TOPOLOGY_VERSION",
    "UNKNOWN",
    "LATEST_OFFSET",
    "UNKNOWN_OFFSET_SUM",
    "NO_NEXT_REBALANCE",
    "AssignorError",
    "StreamsVersionError",
    "StreamsTaskId",
    "TopicPartition",
    "HostInfo",
    "StreamsSubscription",
    "StreamsAssignment",
    "encode_subscription",
    "encode_future_subscription",
    "decode_subscription",
    "encode_assignment",
    "decode_assignment",
    "choose_assignment_version",
    "next_subscription_version",
    "task_offset_sums_from_sets",
    "tasks_from_offset_sums",
    "DecodeError",
    "EncodeError",
]

#: ``StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION``.
LATEST_SUPPORTED_VERSION = 11
#: ``StreamsAssignmentProtocolVersions.EARLIEST_PROBEABLE_VERSION``: version probing needs every
#: member at 3 or above (v3 added ``latest_supported_version``).
EARLIEST_PROBEABLE_VERSION = 3
#: ``SubscriptionInfo.MIN_VERSION_OFFSET_SUM_SUBSCRIPTION``: task offset sums replace the
#: prev/standby task sets from this version.
MIN_VERSION_OFFSET_SUM_SUBSCRIPTION = 7
#: ``StreamsAssignmentProtocolVersions.MIN_NAMED_TOPOLOGY_VERSION``.
MIN_NAMED_TOPOLOGY_VERSION = 10
#: ``StreamsAssignmentProtocolVersions.UNKNOWN``: the latest/commonly supported version of a
#: v1/v2 message, which does not carry one.
UNKNOWN = -1
#: ``Task.LATEST_OFFSET``: offset sum of a task the client ran as active (= "prev task").
LATEST_OFFSET = -2
#: ``SubscriptionInfo.UNKNOWN_OFFSET_SUM``: offset sum of a standby reported by a v1-6 client.
UNKNOWN_OFFSET_SUM = -3
#: ``AssignmentInfo``'s default ``nextRebalanceMs`` (``Long.MAX_VALUE``): no follow-up scheduled.
NO_NEXT_REBALANCE = INT64_MAX


class AssignorError(enum.IntEnum):
    """Kafka ``AssignorError``: the ``error_code`` of assignments (v4+) and subscriptions (v9+)."""

    NONE = 0
    INCOMPLETE_SOURCE_TOPIC_METADATA = 1
    VERSION_PROBING = 2  # no longer sent by Kafka; kept for rolling upgrades from old versions
    ASSIGNMENT_ERROR = 3
    SHUTDOWN_REQUESTED = 4


class StreamsVersionError(ValueError):
    """Versions Kafka refuses to work with (its ``TaskAssignmentException`` /
    ``IllegalStateException`` in ``StreamsPartitionAssignor``), e.g. a future subscription next
    to a pre-v3 one, or an assignment of a higher version than the member subscribed with.
    """


# ----------------------------------------------------------------------------------------------
# Value types


class StreamsTaskId(NamedTuple):
    """Kafka ``TaskId``: ``(subtopology, partition, topology)``; written ``"0_1"``.

    ``topology`` is the named topology (wire v10+ only) or ``None``; an empty name means none,
    as in Kafka's ``TaskId`` constructor. groupsim itself uses no named topologies.
    """

    subtopology: int
    partition: int
    topology: str | None = None

    def __str__(self) -> str:
        base = f"{self.subtopology}_{self.partition}"
        return f"{self.topology}_{base}" if self.topology else base

    @classmethod
    def parse(cls, text: str) -> StreamsTaskId:
        """``"<subtopology>_<partition>"`` or ``"<topology>_<subtopology>_<partition>"``.

        Raises:
            ValueError: any other shape (``TaskId.parse`` throws ``TaskIdFormatException``).
        """
        parts = text.split("_")
        try:
            if len(parts) == 2:
                return cls(int(parts[0]), int(parts[1]))
            if len(parts) == 3 and parts[0]:
                return cls(int(parts[1]), int(parts[2]), parts[0])
        except ValueError:
            pass
        raise ValueError(f"task id {text!r} is not '<subtopology>_<partition>'")


class HostInfo(NamedTuple):
    """Kafka ``HostInfo``: a member's ``application.server`` endpoint."""

    host: str
    port: int


def _to_uuid(value: uuid.UUID | int) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if type(value) is not int or not 0 <= value < 1 << 128:
        raise EncodeError(
            "process_id", f"expected a uuid.UUID or an int in [0, 2^128), got {value!r}"
        )
    return uuid.UUID(int=value)


class StreamsSubscription(msgspec.Struct, frozen=True):
    """A Streams member's subscription user data (Kafka ``SubscriptionInfo``).

    Attributes:
        version: the header, the version this message is encoded with (1-11; above 11 only
            from :func:`decode_subscription`, a future subscription).
        latest_supported_version: the newest version the member understands; -1 (UNKNOWN) for
            v1/v2, which do not carry it.
        process_id: the ``KafkaStreams`` instance id; an ``int`` is turned into the
            ``uuid.UUID`` with that 128-bit value.
        prev_tasks / standby_tasks: v1-6 only: tasks the client ran as active / kept state
            for (Kafka sets; here tuples in wire order).
        user_endpoint: ``application.server`` (``host:port``), v2+, or ``None``.
        task_offset_sums: v7+ only: task → sum of its changelog offsets the client holds
            (-2 = ran it as active); v7-9 carry no named topologies. Do not mutate.
        unique_field: v8+, an int8 the member bumps on every subscription.
        error_code: v9+, an :class:`AssignorError` code (4 = shutdown requested).
        client_tags: v11+, ``client.tag.*`` key → value (KIP-708). Do not mutate.

    :meth:`offset_sums`, :meth:`prev_active_tasks` and :meth:`prev_standby_tasks` give the
    version-independent view Kafka's ``taskOffsetSums()`` / ``prevTasks()`` /
    ``standbyTasks()`` give.

    Raises:
        EncodeError: (on construction) an ``int`` process id outside ``[0, 2**128)``.
    """

    version: int
    latest_supported_version: int
    process_id: uuid.UUID | int
    prev_tasks: tuple[StreamsTaskId, ...] = ()
    standby_tasks: tuple[StreamsTaskId, ...] = ()
    user_endpoint: str | None = None
    task_offset_sums: dict[StreamsTaskId, int] = {}
    unique_field: int = 0
    error_code: int = 0
    client_tags: dict[str, str] = {}

    def __post_init__(self) -> None:
        if not isinstance(self.process_id, uuid.UUID):
            msgspec.structs.force_setattr(self, "process_id", _to_uuid(self.process_id))

    @property
    def is_future(self) -> bool:
        """True for a version this codec cannot read beyond its first 8 bytes (> 11)."""
        return self.version > LATEST_SUPPORTED_VERSION

    def offset_sums(self) -> dict[StreamsTaskId, int]:
        """Kafka ``SubscriptionInfo.taskOffsetSums()``: task → offset sum for any version.

        v7+: :attr:`task_offset_sums`. v1-6: every prev task -2 (``LATEST_OFFSET``), then every
        standby task -3 (``UNKNOWN_OFFSET_SUM``) — a task in both reads -3, as in Kafka.
        """
        if self.version >= MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
            return dict(self.task_offset_sums)
        return task_offset_sums_from_sets(self.prev_tasks, self.standby_tasks)

    def prev_active_tasks(self) -> frozenset[StreamsTaskId]:
        """Kafka ``prevTasks()``: tasks whose offset sum is -2 (v1-6: :attr:`prev_tasks`)."""
        if self.version >= MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
            return tasks_from_offset_sums(self.task_offset_sums)[0]
        return frozenset(self.prev_tasks)

    def prev_standby_tasks(self) -> frozenset[StreamsTaskId]:
        """Kafka ``standbyTasks()``: tasks with any other sum (v1-6: :attr:`standby_tasks`)."""
        if self.version >= MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
            return tasks_from_offset_sums(self.task_offset_sums)[1]
        return frozenset(self.standby_tasks)


class StreamsAssignment(msgspec.Struct, frozen=True):
    """The leader's answer to one Streams consumer (Kafka ``AssignmentInfo``).

    Attributes:
        version: the header (1-11): the lowest version any member subscribed with.
        commonly_supported_version: v3+: the lowest ``latest_supported_version`` of the group;
            -1 (UNKNOWN) when decoded from v1/v2.
        active_tasks: one entry per assigned partition, in the order of the sorted partition
            list of the consumer assignment (a task with two partitions appears twice).
        standby_tasks: standby task → its partitions (wire order, duplicates kept).
        partitions_by_host: v2+: every member's endpoint → its active partitions (empty when
            members set no ``application.server``, as in groupsim).
        standby_partitions_by_host: v6+: the same for standby partitions.
        error_code: v4+: :class:`AssignorError` code; non-zero means "no assignment, act on
            the error".
        next_rebalance_ms: v7+: wall-clock ms of the requested follow-up (probing) rebalance,
            0 = rejoin at once, ``NO_NEXT_REBALANCE`` (Long.MAX_VALUE) = none.
    """

    version: int
    commonly_supported_version: int
    active_tasks: tuple[StreamsTaskId, ...] = ()
    standby_tasks: dict[StreamsTaskId, tuple[TopicPartition, ...]] = {}
    partitions_by_host: dict[HostInfo, tuple[TopicPartition, ...]] = {}
    standby_partitions_by_host: dict[HostInfo, tuple[TopicPartition, ...]] = {}
    error_code: int = 0
    next_rebalance_ms: int = NO_NEXT_REBALANCE


def task_offset_sums_from_sets(
    prev_tasks: Iterable[StreamsTaskId], standby_tasks: Iterable[StreamsTaskId]
) -> dict[StreamsTaskId, int]:
    """Kafka's view of a v1-6 subscription: prev tasks → -2, then standby tasks → -3."""
    out = dict.fromkeys(prev_tasks, LATEST_OFFSET)
    out.update(dict.fromkeys(standby_tasks, UNKNOWN_OFFSET_SUM))
    return out


def tasks_from_offset_sums(
    offset_sums: Mapping[StreamsTaskId, int],
) -> tuple[frozenset[StreamsTaskId], frozenset[StreamsTaskId]]:
    """``(active, standby)``: tasks whose sum is -2, and all others
    (``SubscriptionInfo.getActiveTasksFromTaskOffsetSumMap`` / ``getStandby...``)."""
    active = frozenset(t for t, s in offset_sums.items() if s == LATEST_OFFSET)
    return active, frozenset(t for t in offset_sums if t not in active)


# ----------------------------------------------------------------------------------------------
# Java hashing (iteration order of the HashMaps / HashSets Kafka serializes)

_MASK32 = 0xFFFFFFFF
_K = TypeVar("_K", bound=Hashable)


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x8000_0000 else value


def _string_hash(text: str) -> int:
    """``String.hashCode()`` (:func:`protocol.java.string_hash`), also for lone surrogates."""
    if text.isascii():
        return string_hash(text)
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for k in range(0, len(units), 2):
        h = (31 * h + ((units[k] << 8) | units[k + 1])) & _MASK32
    return _int32(h)


def _task_hash(task: StreamsTaskId) -> int:
    """``TaskId.hashCode()`` = ``Objects.hash(subtopology, partition, topologyName)``."""
    topo = _string_hash(task.topology) if task.topology else 0
    return _int32(31 * (31 * (31 + task.subtopology) + task.partition) + topo)


def _tp_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode()`` = ``31 * (31 + partition) + topic.hashCode()``."""
    return _int32(31 * (31 + tp.partition) + _string_hash(tp.topic))


def _int_hash(value: int) -> int:
    return value


def _java_order(keys: Sequence[_K], hash_fn: Callable[[_K], int]) -> list[_K]:
    """Iteration order of a ``HashMap``/``HashSet`` grown by ``put`` in ``keys`` order."""
    if len(keys) <= 1:
        return list(keys)
    return hash_order(keys, hash_fn)


# ----------------------------------------------------------------------------------------------
# Reader / writer extensions: INT8, UINT16, Java modified UTF-8, UTF-16 chars, UTF-8 bytes

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_Q = struct.Struct(">Q")


class _Reader(Reader):
    __slots__ = ()

    def int8(self, field: str) -> int:
        value: int = _I8.unpack_from(self._data, self._need(field, 1, "INT8"))[0]
        return value

    def uuid(self, field: str) -> uuid.UUID:
        pos = self._need(field, 16, "UUID")
        return uuid.UUID(bytes=self._data[pos : pos + 16])

    def plain_tasks(self, field: str) -> tuple[StreamsTaskId, ...]:
        """Generated ``[]TaskId`` (v1-6): INT32 count, then (INT32, INT32) pairs."""
        count = self.array_count(field, 8)
        assert count is not None
        pos = self._pos
        self._pos = pos + 8 * count
        values = struct.unpack_from(f">{2 * count}i", self._data, pos) if count else ()
        return tuple(StreamsTaskId(values[k], values[k + 1]) for k in range(0, 2 * count, 2))

    def utf8_bytes(self, field: str) -> str:
        """Non-nullable BYTES decoded as Java's ``new String(bytes, UTF_8)`` (U+FFFD)."""
        span = self.nullable_bytes_span(field)
        if span is None:
            raise DecodeError(field, self._pos - 4, "null bytes (the field is not nullable)")
        return java_utf8(self._data[span[0] : span[1]])

    def nullable_string(self, field: str) -> str | None:
        """Generated-code nullable STRING: any negative INT16 length is null."""
        start = self._pos
        size = _I16.unpack_from(self._data, self._need(field, 2, "STRING length"))[0]
        if size < 0:
            return None
        if size > self._end - self._pos:
            self._pos = start
            raise DecodeError(
                field,
                start,
                f"string length {size} exceeds remaining {self._end - start - 2} bytes",
            )
        pos = self._pos
        self._pos = pos + size
        return java_utf8(self._data[pos : pos + size])

    def java_utf(self, field: str) -> str:
        """``DataInputStream.readUTF``: UINT16 length, then Java modified UTF-8."""
        start = self._pos
        size = _U16.unpack_from(self._data, self._need(field, 2, "UTF length"))[0]
        if size > self._end - self._pos:
            self._pos = start
            raise DecodeError(
                field, start, f"UTF length {size} exceeds remaining {self._end - start - 2} bytes"
            )
        pos = self._pos
        raw = self._data[pos : pos + size]
        self._pos = pos + size
        if raw.isascii():
            return raw.decode("ascii")
        try:
            return _decode_modified_utf8(raw)
        except ValueError as exc:
            self._pos = start
            raise DecodeError(field, start, f"malformed modified UTF-8 ({exc})") from None

    def java_chars(self, field: str) -> str | None:
        """``ConsumerProtocolUtils.readTaskIdFrom``'s named topology: INT32 n, n UTF-16 units;
        n <= 0 or an empty name is ``None``."""
        start = self._pos
        count = _I32.unpack_from(self._data, self._need(field, 4, "char count"))[0]
        if count <= 0:
            return None
        if 2 * count > self._end - self._pos:
            self._pos = start
            raise DecodeError(
                field,
                start,
                f"{count} chars exceed remaining {self._end - start - 4} bytes",
            )
        pos = self._pos
        self._pos = pos + 2 * count
        return self._data[pos : pos + 2 * count].decode("utf-16-be", "surrogatepass")


def _decode_modified_utf8(raw: bytes) -> str:
    """Java ``DataInputStream.readUTF``'s decoding (accepts what it accepts, nothing more)."""
    units = bytearray()
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        kind = c >> 4
        if kind <= 7:
            ch = c
            i += 1
        elif kind in (12, 13):
            if i + 2 > n:
                raise ValueError("partial character at end")
            c2 = raw[i + 1]
            if c2 & 0xC0 != 0x80:
                raise ValueError(f"malformed input around byte {i + 1}")
            ch = ((c & 0x1F) << 6) | (c2 & 0x3F)
            i += 2
        elif kind == 14:
            if i + 3 > n:
                raise ValueError("partial character at end")
            c2, c3 = raw[i + 1], raw[i + 2]
            if c2 & 0xC0 != 0x80 or c3 & 0xC0 != 0x80:
                raise ValueError(f"malformed input around byte {i + 2}")
            ch = ((c & 0x0F) << 12) | ((c2 & 0x3F) << 6) | (c3 & 0x3F)
            i += 3
        else:
            raise ValueError(f"malformed input around byte {i}")
        units += _U16.pack(ch)
    return bytes(units).decode("utf-16-be", "surrogatepass")


def _utf16_units(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _java_utf(text: str, field: str) -> bytes:
    """``DataOutputStream.writeUTF``: UINT16 length + modified UTF-8 (max 65535 bytes)."""
    if not isinstance(text, str):
        raise EncodeError(field, f"expected a string, got {type(text).__name__}")
    if text.isascii() and "\x00" not in text:
        raw = text.encode("ascii")
    else:
        out = bytearray()
        units = _utf16_units(text)
        for k in range(0, len(units), 2):
            ch = (units[k] << 8) | units[k + 1]
            if 0x0001 <= ch <= 0x007F:
                out.append(ch)
            elif ch <= 0x07FF:
                out += bytes((0xC0 | (ch >> 6), 0x80 | (ch & 0x3F)))
            else:
                out += bytes((0xE0 | (ch >> 12), 0x80 | ((ch >> 6) & 0x3F), 0x80 | (ch & 0x3F)))
        raw = bytes(out)
    if len(raw) > 0xFFFF:
        raise EncodeError(field, f"{len(raw)} modified UTF-8 bytes exceed writeUTF's 65535")
    return _U16.pack(len(raw)) + raw


def _utf8(text: str, field: str) -> bytes:
    if not isinstance(text, str):
        raise EncodeError(field, f"expected a string, got {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(field, f"string is not encodable as UTF-8 ({exc.reason})") from None


def _int8(value: int, field: str) -> bytes:
    if type(value) is not int or not -128 <= value <= 127:
        raise EncodeError(field, f"value {value!r} out of range for INT8 [-128, 127]")
    return _I8.pack(value)


def _check_int32(value: object, field: str) -> int:
    if type(value) is not int or not INT32_MIN <= value <= INT32_MAX:
        raise EncodeError(field, f"value {value!r} out of range for INT32")
    return value


# ----------------------------------------------------------------------------------------------
# SubscriptionInfo


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
        _check_int32(latest, "latest_supported_version")
    problem = _validate_versions(v, latest)
    if problem is not None:
        raise EncodeError("latest_supported_version", problem)
    sums = _source_offset_sums(s)
    order = _java_order(list(sums), _task_hash)

    w = Writer()
    w.int32(v, "version")
    if v >= 3:
        w.int32(latest, "latest_supported_version")
    pid = _to_uuid(s.process_id).int
    w.raw(_Q.pack(pid >> 64) + _Q.pack(pid & ((1 << 64) - 1)))

    if v < MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
        prev = [t for t in order if sums[t] == LATEST_OFFSET]
        standby = [t for t in order if sums[t] != LATEST_OFFSET]
        for name, tasks in (("prev_tasks", prev), ("standby_tasks", standby)):
            tasks = _java_order(tasks, _task_hash)
            w.int32(len(tasks), name)
            for i, task in enumerate(tasks):
                _write_plain_task(w, task, f"{name}[{i}]")
    if v >= 2:
        endpoint = b"" if s.user_endpoint is None else _utf8(s.user_endpoint, "user_endpoint")
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
                _check_int32(task.subtopology, f"task_offset_sums[{task}].subtopology")
                groups.setdefault(task.subtopology, []).append(task)
            # SubscriptionInfo groups with HashMap.computeIfAbsent: colliding subtopologies
            # iterate newest first (JavaHashMap.compute_if_absent)
            by_sub: JavaHashMap[int] = JavaHashMap(_int_hash)
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
                w.int32(task.subtopology, f"task_offset_sums[{task}].subtopology")
                w.int32(task.partition, f"task_offset_sums[{task}].partition")
                w.int64(sums[task], f"task_offset_sums[{task}]")
                if task.topology:
                    w.string(task.topology, f"task_offset_sums[{task}].topology")
                else:
                    w.int16(-1, "task_offset_sums.topology")
    if v >= 8:
        w.raw(_int8(s.unique_field, "unique_field"))
    if v >= 9:
        w.int32(s.error_code, "error_code")
    if v >= 11:
        tags = s.client_tags
        keys_in_order = _java_order(list(tags), _string_hash)
        w.int32(len(keys_in_order), "client_tags")
        for key in keys_in_order:
            w.nullable_bytes(_utf8(key, f"client_tags[{key!r}].key"), "client_tags.key")
            w.nullable_bytes(_utf8(tags[key], f"client_tags[{key!r}]"), "client_tags.value")
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
    r = _Reader(data)
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
                field = f"task_offset_sums[{i}]"
                sub = r.int32(f"{field}.subtopology")
                part = r.int32(f"{field}.partition")
                offset_sum = r.int64(f"{field}.offset_sum")
                topology = r.nullable_string(f"{field}.topology") or None
                sums[StreamsTaskId(sub, part, topology)] = offset_sum
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


# ----------------------------------------------------------------------------------------------
# AssignmentInfo


def _write_task(w: Writer, task: StreamsTaskId, field: str, version: int) -> None:
    """``ConsumerProtocolUtils.writeTaskIdTo``."""
    w.int32(task.subtopology, f"{field}.subtopology")
    w.int32(task.partition, f"{field}.partition")
    if version >= MIN_NAMED_TOPOLOGY_VERSION:
        if task.topology:
            if not isinstance(task.topology, str):
                raise EncodeError(f"{field}.topology", "expected a string")
            units = _utf16_units(task.topology)
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
        w.raw(_java_utf(tp.topic, f"{field}[{i}].topic"))
        w.int32(tp.partition, f"{field}[{i}].partition")


def _write_host(w: Writer, host: HostInfo, field: str) -> None:
    w.raw(_java_utf(host.host, f"{field}.host"))
    w.int32(host.port, f"{field}.port")


def _topic_dictionary(
    maps: Sequence[Mapping[HostInfo, Sequence[TopicPartition]]],
) -> tuple[dict[str, int], list[str]]:
    """Kafka's ``encodeTopicDictionaryAndGet``: (topic → index, write order of the entries)."""
    all_tps = [tp for m in maps for parts in m.values() for tp in parts]
    index: dict[str, int] = {}
    for tp in _java_order(all_tps, _tp_hash):
        if tp.topic not in index:
            index[tp.topic] = len(index)
    return index, _java_order(list(index), _string_hash)


def _write_dictionary(w: Writer, index: dict[str, int], order: list[str]) -> None:
    w.int32(len(order), "topic_dictionary")
    for topic in order:
        w.int32(index[topic], "topic_dictionary.index")
        w.raw(_java_utf(topic, f"topic_dictionary[{topic!r}]"))


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


def _read_task(r: _Reader, field: str, version: int) -> StreamsTaskId:
    sub = r.int32(f"{field}.subtopology")
    part = r.int32(f"{field}.partition")
    if version >= MIN_NAMED_TOPOLOGY_VERSION:
        return StreamsTaskId(sub, part, r.java_chars(f"{field}.topology"))
    return StreamsTaskId(sub, part)


def _count(r: _Reader, field: str, min_size: int) -> int:
    count = r.array_count(field, min_size)
    assert count is not None
    return count


def _host_count(r: _Reader, field: str, min_size: int) -> int:
    """Host-map counts: Kafka's ``for`` loop treats a negative count as zero entries."""
    start = r.position
    count = r.int32(field)
    if count <= 0:
        return 0
    if count * min_size > r.remaining:
        raise DecodeError(field, start, f"count {count} exceeds remaining {r.remaining} bytes")
    return count


def _read_partitions(r: _Reader, field: str) -> tuple[TopicPartition, ...]:
    out = []
    for i in range(_count(r, field, 6)):
        topic = r.java_utf(f"{field}[{i}].topic")
        out.append(TopicPartition(topic, r.int32(f"{field}[{i}].partition")))
    return tuple(out)


def _read_host(r: _Reader, field: str) -> HostInfo:
    host = r.java_utf(f"{field}.host")
    return HostInfo(host, r.int32(f"{field}.port"))


def _read_host_map_dict(
    r: _Reader, index: dict[int, str], field: str
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
    r = _Reader(data)
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


# ----------------------------------------------------------------------------------------------
# Version probing


def choose_assignment_version(
    subscription_versions: Iterable[int],
    latest_supported_versions: Iterable[int],
    latest: int = LATEST_SUPPORTED_VERSION,
) -> tuple[int, int, bool]:
    """The leader's version choice (``StreamsPartitionAssignor.assign`` +
    ``checkMetadataVersions``).

    Args:
        subscription_versions: every member's subscription header (``version``).
        latest_supported_versions: every member's ``latest_supported_version`` (-1 for v1/v2).
        latest: the leader's own ``LATEST_SUPPORTED_VERSION`` (11 for this release; lower to
            emulate a leader of an older Streams release: a subscription above it is "future").

    Returns:
        ``(used_version, commonly_supported_version, is_version_probing)``:
        ``used_version`` = min(latest, every subscription version) — the version of every
        assignment; ``commonly_supported_version`` = min(latest, every latest supported
        version); ``is_version_probing`` = some member sent a future (> latest)
        subscription. A probing rebalance forces a follow-up rebalance
        (``rebalanceRequired``); the future member gets an assignment it decodes at
        ``used_version`` and then resubscribes lower.

    Raises:
        StreamsVersionError: a future subscription together with one below
            ``EARLIEST_PROBEABLE_VERSION`` (3) — Kafka's "incompatible pre Kafka 2.0
            subscription", which newer releases turn into an ``ASSIGNMENT_ERROR`` assignment.
    """
    min_received = latest
    future = UNKNOWN
    for v in subscription_versions:
        min_received = min(min_received, v)
        if v > latest:
            future = v
    min_supported = min([latest, *latest_supported_versions])
    if future == UNKNOWN:
        return min_received, min_supported, False
    if min_received >= EARLIEST_PROBEABLE_VERSION:
        return min_received, min_supported, True
    raise StreamsVersionError(
        f"received a future (version probing) subscription (version {future}) and an "
        f"incompatible pre Kafka 2.0 subscription (version {min_received}) in the same group"
    )


def next_subscription_version(
    used_version: int,
    assignment_version: int,
    commonly_supported_version: int,
    latest_supported_version: int = LATEST_SUPPORTED_VERSION,
) -> tuple[int, bool]:
    """A member's reaction to its assignment's versions (``StreamsPartitionAssignor
    .validateMetadataVersions`` + ``maybeUpdateSubscriptionVersion``).

    Applies only to an assignment with ``error_code == 0`` (Kafka returns before looking at
    versions otherwise).

    Args:
        used_version: the version the member subscribed with.
        assignment_version / commonly_supported_version: from the received assignment.
        latest_supported_version: the member's own latest version (11 for this release).

    Returns:
        ``(version to subscribe with next, rejoin at once)``. From an assignment of version
        >= 3: a higher commonly supported version upgrades to it (end of a rolling upgrade); an
        assignment version below ``used_version`` downgrades to the commonly supported version
        (successful probe). Either asks for an immediate rebalance. Otherwise no change.

    Raises:
        StreamsVersionError: the assignment version exceeds ``used_version``, or the commonly
            supported version exceeds ``latest_supported_version``.
    """
    if assignment_version > used_version:
        raise StreamsVersionError(
            f"sent a version {used_version} subscription but got an assignment with higher "
            f"version {assignment_version}"
        )
    if commonly_supported_version > latest_supported_version:
        raise StreamsVersionError(
            f"commonly supported version {commonly_supported_version} is above this member's "
            f"latest supported version {latest_supported_version}"
        )
    if assignment_version >= EARLIEST_PROBEABLE_VERSION:
        if commonly_supported_version > used_version:
            return commonly_supported_version, True
        if assignment_version < used_version:
            return commonly_supported_version, True
    return used_version, False
