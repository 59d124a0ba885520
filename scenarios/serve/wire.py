"""Kafka's wire framing and message (de)serialisation, through the ``kio`` library.

Every request and response body is read and written by ``kio`` (generated from Kafka's
``clients/src/main/resources/common/message/*.json`` schemas); this module only adds the
framing of ``org.apache.kafka.common.network.NetworkReceive`` (a 4-byte big-endian size, then
the message) and picks the header versions as Kafka's ``RequestHeader``/``ResponseHeader``
do: request header v1 (v2 for flexible versions), response header v0 (v1 for flexible
versions) — except that an ApiVersions response always has header v0
(``ApiVersionsResponse.json``: "the client does not know the broker's versions yet").

Errors: :class:`WireError` (one line) for a frame groupsim cannot serve; the server closes the
connection then, as a Kafka broker does with an unknown API key or version.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import types
import typing
from functools import cache
from typing import Any

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_unsigned_varint
from kio.static.constants import EntityType

from protocol import consumer_codec

__all__ = [
    "API_VERSIONS",
    "API_NAMES",
    "APIVERSIONS_KEY",
    "WireError",
    "Request",
    "decode_request",
    "encode_response",
    "build",
    "module",
    "ms",
    "td",
    "kio_error",
    "decode_consumer_assignment",
    "MAX_FRAME_BYTES",
]

#: API key -> (min, max) version groupsim serves and advertises in ApiVersions. The ranges
#: cover what kafka-python 3.x, librdkafka 2.x, aiokafka and kafkajs send (librdkafka asks
#: for the newest: Metadata v13, JoinGroup v5, Fetch v16, ...).
API_VERSIONS: dict[int, tuple[int, int]] = {
    1: (4, 16),  # Fetch
    2: (1, 9),  # ListOffsets
    3: (0, 13),  # Metadata
    8: (2, 9),  # OffsetCommit
    9: (1, 9),  # OffsetFetch
    10: (0, 6),  # FindCoordinator
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 5),  # DescribeGroups
    16: (0, 5),  # ListGroups
    18: (0, 4),  # ApiVersions
}

API_NAMES: dict[int, str] = {
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    18: "ApiVersions",
}

APIVERSIONS_KEY = 18
#: Frames above this size are refused (Kafka's ``socket.request.max.bytes`` default, 100 MiB).
MAX_FRAME_BYTES = 104_857_600

_HEAD = struct.Struct(">hhi")


class WireError(Exception):
    """A frame groupsim cannot serve (unknown API key or version, undecodable body)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """One decoded request.

    Attributes:
        api_key / api_version: from the request header.
        correlation_id: echoed in the response header.
        client_id: the header's ``client_id`` (``""`` when null).
        body: the kio request dataclass, or ``None`` for an ApiVersions request of a version
            groupsim does not know (answered with UNSUPPORTED_VERSION, as Kafka does).
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    body: Any


@cache
def module(api_key: int, version: int, response: bool) -> types.ModuleType:
    """The kio schema module of one API's request or response at ``version``."""
    if response:
        return load_payload_module(api_key, version, EntityType.response)
    return load_payload_module(api_key, version, EntityType.request)


def _payload_class(api_key: int, version: int, response: bool) -> type:
    mod = module(api_key, version, response)
    suffix = "Response" if response else "Request"
    for value in vars(mod).values():
        if (
            isinstance(value, type)
            and value.__module__ == mod.__name__
            and getattr(value, "__type__", None)
            is (EntityType.response if response else EntityType.request)
        ):
            return value
    raise WireError(f"kio has no {suffix} class for API {api_key} v{version}")


@cache
def _request_reader(api_key: int, version: int) -> tuple[bool, Any, type]:
    """(whether the request header is v2, the body reader, the body class)."""
    cls = _payload_class(api_key, version, False)
    flexible = bool(cls.__header_schema__.__flexible__)  # type: ignore[attr-defined]
    return flexible, entity_reader(cls), cls


@cache
def _response_writer(api_key: int, version: int) -> tuple[Any, Any, Any, type]:
    cls = _payload_class(api_key, version, True)
    header = cls.__header_schema__  # type: ignore[attr-defined]
    return entity_writer(header), header, entity_writer(cls), cls


def decode_request(frame: bytes) -> Request:
    """Decode one request frame (without its 4-byte size prefix).

    Raises:
        WireError: a frame shorter than a header, an API key or version groupsim does not serve
            (ApiVersions excepted), or a body kio cannot decode.
    """
    if len(frame) < _HEAD.size:
        raise WireError(f"request of {len(frame)} bytes is shorter than a request header")
    api_key, version, correlation_id = _HEAD.unpack_from(frame)
    served = API_VERSIONS.get(api_key)
    if served is None:
        raise WireError(f"unsupported API key {api_key} (correlation id {correlation_id})")
    low, high = served
    if not low <= version <= high:
        if api_key == APIVERSIONS_KEY:
            # KIP-511: an unknown ApiVersions version is answered v0 with UNSUPPORTED_VERSION.
            return Request(api_key, version, correlation_id, _client_id_v1(frame), None)
        name = API_NAMES[api_key]
        raise WireError(f"unsupported {name} version {version} (groupsim serves {low}-{high})")
    flexible, read_body, _ = _request_reader(api_key, version)
    try:
        client_id, header_size = _read_header_rest(frame, flexible)
        # kio readers return (value, number of bytes read)
        body, _body_size = read_body(frame, header_size)
    except Exception as exc:  # kio raises several types on a malformed body
        raise WireError(f"cannot decode {API_NAMES[api_key]} v{version}: {exc}") from None
    return Request(api_key, version, correlation_id, client_id, body)


def _client_id_v1(frame: bytes) -> str:
    if len(frame) < _HEAD.size + 2:
        return ""
    (length,) = struct.unpack_from(">h", frame, _HEAD.size)
    if length < 0:
        return ""
    start = _HEAD.size + 2
    return _utf8(frame[start : start + length])


def _utf8(data: bytes) -> str:
    """Bytes as Kafka's ``Readable#readString`` reads them (``new String(bytes, UTF_8)``): a
    malformed sequence becomes U+FFFD instead of failing the request."""
    return data.decode("utf-8", "replace")


def _read_header_rest(frame: bytes, flexible: bool) -> tuple[str, int]:
    """The client id and the size of a request header v1 (v2 when ``flexible``) at the start
    of ``frame``.

    Read here rather than by kio, which refuses a client id that is not UTF-8 where Kafka
    (``RequestHeader#parse``) accepts it with U+FFFD in place of the bad bytes. The client id
    is a nullable int16-length string in both versions (``RequestHeader.json``: not flexible);
    v2 adds a tagged-field section, skipped.

    Raises:
        WireError: the header runs past the end of the frame.
    """
    offset = _HEAD.size + 2
    if len(frame) < offset:
        raise WireError("request header ends before its client id")
    (length,) = struct.unpack_from(">h", frame, _HEAD.size)
    end = offset + max(length, 0)
    if end > len(frame):
        raise WireError("request header: client id runs past the end of the frame")
    client_id = _utf8(frame[offset:end]) if length >= 0 else ""
    offset = end
    if flexible:
        count, size = read_unsigned_varint(frame, offset)
        offset += size
        for _ in range(count):
            _tag, size = read_unsigned_varint(frame, offset)
            offset += size
            length, size = read_unsigned_varint(frame, offset)
            offset += size + length
        if offset > len(frame):
            raise WireError("request header: tagged fields run past the end of the frame")
    return client_id, offset


def encode_response(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    """The framed response (size prefix, header, body) for ``body``, a kio response object of
    ``api_key`` at ``version``."""
    write_header, header_cls, write_body, _ = _response_writer(api_key, version)
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    write_header(buffer, header_cls(correlation_id=correlation_id))
    write_body(buffer, body)
    data = buffer.getbuffer()
    struct.pack_into(">i", data, 0, len(data) - 4)
    return bytes(data)


def response_class(api_key: int, version: int) -> type:
    """The kio response dataclass of ``api_key`` at ``version``."""
    return _response_writer(api_key, version)[3]


@cache
def _field_info(cls: type) -> dict[str, bool]:
    """field name -> whether ``None`` is allowed (resolved type annotations)."""
    hints = typing.get_type_hints(cls)
    info: dict[str, bool] = {}
    for f in dataclasses.fields(cls):
        hint = hints.get(f.name)
        info[f.name] = type(None) in typing.get_args(hint)
    return info


def build(cls: type, **values: Any) -> Any:
    """Construct the kio dataclass ``cls`` from ``values``, keeping only the fields it has at
    its version, and turning ``None`` into ``""`` for a string field that is not nullable at
    that version (e.g. JoinGroup's ``protocol_name`` before v7)."""
    info = _field_info(cls)
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        nullable = info.get(name)
        if nullable is None:
            continue
        if value is None and not nullable:
            value = ""
        kwargs[name] = value
    return cls(**kwargs)


def td(ms_value: int) -> datetime.timedelta:
    """Milliseconds as the ``timedelta`` kio uses for ``*_ms`` fields."""
    return datetime.timedelta(milliseconds=ms_value)


def ms(value: datetime.timedelta | int | None, default: int = -1) -> int:
    """A kio duration field in whole milliseconds (``default`` when absent)."""
    if value is None:
        return default
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    return int(value)


def kio_error(code: int) -> KioErrorCode:
    """A Kafka error code as kio's enum."""
    return KioErrorCode(int(code))


def decode_consumer_assignment(data: bytes) -> list[str] | None:
    """The partitions ``"<topic>-<n>"`` in a consumer-protocol assignment
    (:func:`protocol.consumer_codec.decode_assignment`, versions 0-3), ``[]`` for empty bytes,
    or ``None`` if ``data`` is not one (another protocol type: a version outside 0-3, or bytes
    that do not parse)."""
    if len(data) < 2:
        return [] if not data else None
    (version,) = struct.unpack_from(">h", data)
    if not 0 <= version <= 3:
        return None
    try:
        value = consumer_codec.decode_assignment(data)
    except consumer_codec.ConsumerProtocolError:
        return None
    return consumer_codec.partition_labels(value.partitions)
