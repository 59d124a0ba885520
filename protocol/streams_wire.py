"""The byte-level helpers both Kafka Streams user-data codecs share.

:mod:`protocol.streams_subscription` (``SubscriptionInfo`` over the generated
``SubscriptionInfoData``) and :mod:`protocol.streams_assignment` (``AssignmentInfo``, written on
``DataOutputStream``) read and write with these: :class:`StreamsReader` (INT8, UUID, the
generated ``[]TaskId``, UTF-8 BYTES, nullable STRING, ``DataInputStream.readUTF``'s modified
UTF-8 and ``ConsumerProtocolUtils.readTaskIdFrom``'s UTF-16 chars), their writing counterparts,
and the Java ``hashCode``s (``String``, ``TaskId``, ``TopicPartition``) that fix the iteration
order of the ``HashMap``/``HashSet``s Kafka serializes (:mod:`protocol.java_hash_order`).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash
from protocol.java_strings import java_utf8
from protocol.primitives import INT32_MAX, INT32_MIN, DecodeError, EncodeError, Reader
from protocol.streams_types import StreamsTaskId
from protocol.topic_partitions import TopicPartition

__all__ = [
    "StreamsReader",
    "java_string_hash",
    "task_hash",
    "tp_hash",
    "int_hash",
    "java_order",
    "utf16_units",
    "java_utf",
    "utf8",
    "int8_bytes",
    "check_int32",
]

# ----------------------------------------------------------------------------------------------
# Java hashing (iteration order of the HashMaps / HashSets Kafka serializes)

_MASK32 = 0xFFFFFFFF
_K = TypeVar("_K", bound=Hashable)


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x8000_0000 else value


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` (:func:`protocol.java_hashing.string_hash`), also for lone
    surrogates."""
    if text.isascii():
        return string_hash(text)
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for k in range(0, len(units), 2):
        h = (31 * h + ((units[k] << 8) | units[k + 1])) & _MASK32
    return _int32(h)


def task_hash(task: StreamsTaskId) -> int:
    """``TaskId.hashCode()`` = ``Objects.hash(subtopology, partition, topologyName)``."""
    topo = java_string_hash(task.topology) if task.topology else 0
    return _int32(31 * (31 * (31 + task.subtopology) + task.partition) + topo)


def tp_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode()`` = ``31 * (31 + partition) + topic.hashCode()``."""
    return _int32(31 * (31 + tp.partition) + java_string_hash(tp.topic))


def int_hash(value: int) -> int:
    """``Integer.hashCode()``: the value itself."""
    return value


def java_order(keys: Sequence[_K], hash_fn: Callable[[_K], int]) -> list[_K]:
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
#: a v10+ TaskOffsetSum entry up to its topology's length: subtopology, partition, sum, length
_TASK_SUM = struct.Struct(">iiqh")


class StreamsReader(Reader):
    """:class:`protocol.primitives.Reader` with the fields of Streams' user data.

    Every method raises :class:`DecodeError` (field and byte offset) where Kafka's reader
    fails; see :mod:`protocol.streams_subscription` / :mod:`protocol.streams_assignment`.
    """

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

    def offset_sum_entry(self, field: str) -> tuple[StreamsTaskId, int]:
        """One v10+ ``TaskOffsetSum`` entry: INT32 subtopology, INT32 partition, INT64 offset
        sum, nullable STRING named topology (null or empty: none). ``field`` names the entry
        in errors (``.subtopology``, ``.partition``, ``.offset_sum``, ``.topology``)."""
        pos = self._pos
        if self._end - pos >= 18:  # the common entry, without a named topology, at once
            sub, part, offset_sum, size = _TASK_SUM.unpack_from(self._data, pos)
            if size == -1:
                self._pos = pos + 18
                return StreamsTaskId(sub, part), offset_sum
        sub = self.int32(f"{field}.subtopology")
        part = self.int32(f"{field}.partition")
        offset_sum = self.int64(f"{field}.offset_sum")
        topology = self.nullable_string(f"{field}.topology") or None
        return StreamsTaskId(sub, part, topology), offset_sum

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


def utf16_units(text: str) -> bytes:
    """``text`` as Java's UTF-16 code units, big-endian (``writeChars``; lone surrogates kept)."""
    return text.encode("utf-16-be", "surrogatepass")


def java_utf(text: str, field: str) -> bytes:
    """``DataOutputStream.writeUTF``: UINT16 length + modified UTF-8 (max 65535 bytes)."""
    if not isinstance(text, str):
        raise EncodeError(field, f"expected a string, got {type(text).__name__}")
    if text.isascii() and "\x00" not in text:
        raw = text.encode("ascii")
    else:
        out = bytearray()
        units = utf16_units(text)
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


def utf8(text: str, field: str) -> bytes:
    """``text.getBytes(UTF_8)`` for a generated BYTES field.

    Raises:
        EncodeError: not a string, or not encodable as UTF-8 (a lone surrogate).
    """
    if not isinstance(text, str):
        raise EncodeError(field, f"expected a string, got {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(field, f"string is not encodable as UTF-8 ({exc.reason})") from None


def int8_bytes(value: int, field: str) -> bytes:
    """One INT8 (``SubscriptionInfoData.uniqueField``).

    Raises:
        EncodeError: not an int in [-128, 127].
    """
    if type(value) is not int or not -128 <= value <= 127:
        raise EncodeError(field, f"value {value!r} out of range for INT8 [-128, 127]")
    return _I8.pack(value)


def check_int32(value: object, field: str) -> int:
    """``value`` if it is an INT32.

    Raises:
        EncodeError: not an int in [-2**31, 2**31).
    """
    if type(value) is not int or not INT32_MIN <= value <= INT32_MAX:
        raise EncodeError(field, f"value {value!r} out of range for INT32")
    return value
