"""Kafka's wire primitives (``org.apache.kafka.common.protocol.types``) for groupsim's codecs.

Everything is big-endian. The types used by the Connect group protocol:

========================  =============================================================
INT16 / INT32 / INT64     2 / 4 / 8 bytes, signed
STRING                    INT16 byte length, then UTF-8; not nullable (a negative length
                          is an error on read, ``None`` is an error on write), <= 32767 bytes
NULLABLE_BYTES            INT32 length, then the bytes; length -1 is null
ARRAY(T)                  INT32 count, then the elements; only a *nullable* array accepts
                          -1 (null), a normal array rejects any negative count
========================  =============================================================

:class:`Reader` never raises anything but :class:`DecodeError` on malformed input (no
``IndexError``, ``struct.error`` or ``UnicodeDecodeError``), and it checks every length and count
against the bytes that remain *before* allocating anything, so hostile input cannot make it
hang or exhaust memory. :class:`Writer` raises :class:`EncodeError` for values the wire cannot
carry. Field names in errors are dotted paths (``assignment.revoked[0].connector``) and offsets
are byte offsets, into the outermost buffer, where the offending field starts.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from protocol.errors import InputError

__all__ = [
    "DecodeError",
    "EncodeError",
    "Reader",
    "Writer",
    "encoded_string",
    "INT16_MIN",
    "INT16_MAX",
    "INT32_MIN",
    "INT32_MAX",
    "INT64_MIN",
    "INT64_MAX",
    "STRING_MAX_BYTES",
]

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
#: Largest byte length a STRING can carry (its length prefix is an INT16).
STRING_MAX_BYTES = INT16_MAX

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def _join_field(prefix: str, field: str) -> str:
    if not field:
        return prefix
    if not prefix:
        return field
    if field.startswith("["):
        return prefix + field
    return f"{prefix}.{field}"


class DecodeError(InputError):
    """Bytes that do not parse (Kafka's ``SchemaException``).

    Attributes:
        field: dotted path of the field being read, e.g. ``assignment.revoked[0].connector``.
        offset: byte offset (in the outermost buffer) where that field starts.
        detail: what is wrong, without the field and offset.
    """

    def __init__(self, field: str, offset: int, detail: str) -> None:
        self.field = field
        self.offset = offset
        self.detail = detail
        super().__init__(f"{field}: {detail} at offset {offset}")

    def within(self, prefix: str) -> DecodeError:
        """The same error with ``prefix`` put in front of its field path."""
        return DecodeError(_join_field(prefix, self.field), self.offset, self.detail)

    # pickling support for multiprocessing
    def __reduce__(self) -> tuple[type[DecodeError], tuple[str, int, str]]:  # pragma: no cover
        return (DecodeError, (self.field, self.offset, self.detail))


class EncodeError(InputError):
    """A value the wire format cannot carry (string too long or null, int out of range, ...).

    Attributes:
        field: dotted path of the offending field, e.g. ``subscription.allocation.leader``.
        detail: what is wrong.
    """

    def __init__(self, field: str, detail: str) -> None:
        self.field = field
        self.detail = detail
        super().__init__(f"{field}: {detail}")

    def within(self, prefix: str) -> EncodeError:
        """The same error with ``prefix`` put in front of its field path."""
        return EncodeError(_join_field(prefix, self.field), self.detail)

    def __reduce__(self) -> tuple[type[EncodeError], tuple[str, str]]:  # pragma: no cover
        return (EncodeError, (self.field, self.detail))


class Reader:
    """A cursor over ``data[start:end]`` reading Kafka primitives.

    Offsets (``position`` and those in errors) are absolute indexes into ``data``, so a nested
    reader over an embedded NULLABLE_BYTES value reports positions in the outer message.
    Every method takes the ``field`` name used in a :class:`DecodeError`.
    """

    __slots__ = ("_data", "_pos", "_end")

    def __init__(
        self, data: bytes | bytearray | memoryview, start: int = 0, end: int | None = None
    ) -> None:
        if not isinstance(data, bytes):
            data = bytes(data)
        self._data = data
        self._end = len(data) if end is None else end
        if not 0 <= start <= self._end <= len(data):
            raise ValueError(f"bad reader bounds {start}..{end} for {len(data)} bytes")
        self._pos = start

    @property
    def position(self) -> int:
        """Absolute offset of the next byte to read."""
        return self._pos

    @property
    def remaining(self) -> int:
        """Bytes left before the end of this reader's window."""
        return self._end - self._pos

    def _need(self, field: str, size: int, what: str) -> int:
        pos = self._pos
        if self._end - pos < size:
            raise DecodeError(
                field, pos, f"{what} needs {size} bytes but only {self._end - pos} remain"
            )
        self._pos = pos + size
        return pos

    # The fixed-size reads check the bounds inline (they run per field of every message);
    # :meth:`_need` raises the error when the bytes are short.
    def int16(self, field: str) -> int:
        """Read an INT16."""
        pos = self._pos
        if self._end - pos < 2:
            self._need(field, 2, "INT16")
        self._pos = pos + 2
        value: int = _I16.unpack_from(self._data, pos)[0]
        return value

    def int32(self, field: str) -> int:
        """Read an INT32."""
        pos = self._pos
        if self._end - pos < 4:
            self._need(field, 4, "INT32")
        self._pos = pos + 4
        value: int = _I32.unpack_from(self._data, pos)[0]
        return value

    def int64(self, field: str) -> int:
        """Read an INT64."""
        pos = self._pos
        if self._end - pos < 8:
            self._need(field, 8, "INT64")
        self._pos = pos + 8
        value: int = _I64.unpack_from(self._data, pos)[0]
        return value

    def string(self, field: str) -> str:
        """Read a (non-nullable) STRING: INT16 length then UTF-8 bytes.

        Raises:
            DecodeError: truncated, negative length, length beyond the data, invalid UTF-8.
        """
        start = self._pos
        size = _I16.unpack_from(self._data, self._need(field, 2, "STRING length"))[0]
        if size < 0:
            self._pos = start
            raise DecodeError(
                field, start, f"negative string length {size} (STRING is not nullable)"
            )
        pos = self._pos
        if size > self._end - pos:
            self._pos = start
            raise DecodeError(
                field, start, f"string length {size} exceeds remaining {self._end - pos} bytes"
            )
        self._pos = pos + size
        try:
            return self._data[pos : pos + size].decode("utf-8")
        except UnicodeDecodeError as exc:
            self._pos = start
            raise DecodeError(field, start, f"invalid UTF-8 in string ({exc.reason})") from None

    def nullable_bytes_span(self, field: str) -> tuple[int, int] | None:
        """Read NULLABLE_BYTES and return its ``(start, end)`` offsets, or ``None`` for null.

        Raises:
            DecodeError: truncated, length < -1, or length beyond the data.
        """
        start = self._pos
        size = _I32.unpack_from(self._data, self._need(field, 4, "BYTES length"))[0]
        if size == -1:
            return None
        if size < 0:
            self._pos = start
            raise DecodeError(field, start, f"negative bytes length {size}")
        pos = self._pos
        if size > self._end - pos:
            self._pos = start
            raise DecodeError(
                field, start, f"bytes length {size} exceeds remaining {self._end - pos} bytes"
            )
        self._pos = pos + size
        return pos, pos + size

    def nullable_bytes(self, field: str) -> bytes | None:
        """Read NULLABLE_BYTES (INT32 length, -1 = ``None``)."""
        span = self.nullable_bytes_span(field)
        return None if span is None else self._data[span[0] : span[1]]

    def sub_reader(self, span: tuple[int, int]) -> Reader:
        """A reader over ``data[span[0]:span[1]]`` of the same buffer (absolute offsets)."""
        return Reader(self._data, span[0], span[1])

    def array_count(self, field: str, min_element_size: int, nullable: bool = False) -> int | None:
        """Read an ARRAY's INT32 count; ``None`` for a null array (only when ``nullable``).

        ``min_element_size`` is the fewest bytes one element can take; a count whose elements
        could not fit in the remaining bytes is rejected here, before anything is allocated.

        Raises:
            DecodeError: truncated, negative count (or < -1 when nullable), count too large.
        """
        start = self._pos
        count: int = _I32.unpack_from(self._data, self._need(field, 4, "ARRAY count"))[0]
        if count < 0:
            if nullable and count == -1:
                return None
            self._pos = start
            kind = "nullable array" if nullable else "array (not nullable)"
            raise DecodeError(field, start, f"negative count {count} for {kind}")
        left = self._end - self._pos
        if count * min_element_size > left:
            self._pos = start
            raise DecodeError(
                field,
                start,
                f"array count {count} exceeds remaining {left} bytes "
                f"(elements take at least {min_element_size} bytes each)",
            )
        return count

    def int32_array(self, field: str) -> tuple[int, ...]:
        """Read a non-nullable ARRAY(INT32) in one step."""
        count = self.array_count(field, 4)
        assert count is not None
        pos = self._pos
        self._pos = pos + 4 * count
        return struct.unpack_from(f">{count}i", self._data, pos) if count else ()

    def string_array(self, field: str) -> list[str]:
        """Read a non-nullable ARRAY(STRING)."""
        count = self.array_count(field, 2)
        assert count is not None
        out = []
        for i in range(count):
            try:
                out.append(self.string(""))
            except DecodeError as exc:
                raise exc.within(f"{field}[{i}]") from None
        return out


# STRING encodings (length prefix + UTF-8) are cached: connector names, member ids and URLs
# repeat in every message a simulation writes.
_string_cache: dict[str, bytes] = {}
_STRING_CACHE_LIMIT = 100_000


def encoded_string(value: str, field: str) -> bytes:
    """The STRING encoding of ``value`` (INT16 byte length + UTF-8 bytes).

    Raises:
        EncodeError: ``value`` is not a ``str`` (e.g. ``None``: STRING is not nullable), is
            longer than 32767 UTF-8 bytes, or holds lone surrogates (not encodable as UTF-8).
    """
    cached = _string_cache.get(value) if isinstance(value, str) else None
    if cached is not None:
        return cached
    if not isinstance(value, str):
        raise EncodeError(
            field, f"expected a string, got {type(value).__name__} (STRING is not nullable)"
        )
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(field, f"string is not encodable as UTF-8 ({exc.reason})") from None
    if len(raw) > STRING_MAX_BYTES:
        raise EncodeError(
            field, f"string of {len(raw)} UTF-8 bytes exceeds the STRING maximum {STRING_MAX_BYTES}"
        )
    out = _I16.pack(len(raw)) + raw
    if len(_string_cache) >= _STRING_CACHE_LIMIT:
        _string_cache.clear()
    _string_cache[value] = out
    return out


def _check_int(value: int, low: int, high: int, kind: str, field: str) -> int:
    if type(value) is not int:
        if isinstance(value, int) and not isinstance(value, bool):
            value = int(value)
        else:
            raise EncodeError(field, f"expected an integer for {kind}, got {type(value).__name__}")
    if not low <= value <= high:
        raise EncodeError(field, f"value {value} out of range for {kind} [{low}, {high}]")
    return value


class Writer:
    """Accumulates Kafka primitives; :meth:`getvalue` returns the bytes.

    Every method takes the ``field`` name used in an :class:`EncodeError`.
    """

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def getvalue(self) -> bytes:
        """The bytes written so far."""
        return b"".join(self._parts)

    def raw(self, data: bytes) -> None:
        """Append already-encoded bytes."""
        self._parts.append(data)

    # The fixed-size writes take a plain in-range int straight to ``struct`` (they run per
    # field of every message); anything else goes through :func:`_check_int`.
    def int16(self, value: int, field: str) -> None:
        """Write an INT16."""
        if type(value) is not int or not INT16_MIN <= value <= INT16_MAX:
            value = _check_int(value, INT16_MIN, INT16_MAX, "INT16", field)
        self._parts.append(_I16.pack(value))

    def int32(self, value: int, field: str) -> None:
        """Write an INT32."""
        if type(value) is not int or not INT32_MIN <= value <= INT32_MAX:
            value = _check_int(value, INT32_MIN, INT32_MAX, "INT32", field)
        self._parts.append(_I32.pack(value))

    def int64(self, value: int, field: str) -> None:
        """Write an INT64."""
        if type(value) is not int or not INT64_MIN <= value <= INT64_MAX:
            value = _check_int(value, INT64_MIN, INT64_MAX, "INT64", field)
        self._parts.append(_I64.pack(value))

    def string(self, value: str, field: str) -> None:
        """Write a STRING (see :func:`encoded_string`)."""
        self._parts.append(encoded_string(value, field))

    def nullable_bytes(self, value: bytes | None, field: str) -> None:
        """Write NULLABLE_BYTES (``None`` = length -1)."""
        if value is None:
            self._parts.append(_I32.pack(-1))
            return
        if len(value) > INT32_MAX:  # pragma: no cover - needs 2 GiB
            raise EncodeError(field, f"{len(value)} bytes exceed the NULLABLE_BYTES maximum")
        self._parts.append(_I32.pack(len(value)))
        self._parts.append(bytes(value))

    def array_count(self, count: int, field: str) -> None:
        """Write an ARRAY's INT32 count (the caller then writes the elements)."""
        self.int32(count, field)

    def int32_array(self, values: Iterable[int], field: str) -> None:
        """Write an ARRAY(INT32): count then the values."""
        items = values if isinstance(values, (list, tuple)) else list(values)
        try:
            self._parts.append(struct.pack(f">i{len(items)}i", len(items), *items))
        except struct.error:
            for i, value in enumerate(items):
                _check_int(value, INT32_MIN, INT32_MAX, "INT32", f"{field}[{i}]")
            raise  # pragma: no cover - every struct.error is a bad value found above

    def string_array(self, values: Iterable[str], field: str) -> None:
        """Write an ARRAY(STRING): count then each string."""
        items = values if isinstance(values, (list, tuple)) else list(values)
        self.int32(len(items), field)
        self._parts.extend(encoded_string(v, f"{field}[{i}]") for i, v in enumerate(items))
