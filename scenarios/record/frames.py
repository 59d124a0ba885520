"""Kafka frames as the recording proxy sees them: headers, bodies, and broker addresses.

The proxy forwards every frame unchanged except the answers that name brokers (Metadata,
FindCoordinator, DescribeCluster): those it decodes with ``kio`` (Kafka's message schemas),
points at its own listeners and re-encodes. Everything else is only *read* — the request header
(``org.apache.kafka.common.requests.RequestHeader``: api key, api version, correlation id,
client id) for every request, and the bodies of the APIs the trace records.

Nothing here does I/O; :mod:`.proxy` owns the sockets.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import io
import struct
import uuid
from collections.abc import Callable
from functools import cache
from typing import Any

from kio.index import load_payload_module
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from scenarios.serve import wire

__all__ = [
    "API_NAMES",
    "RECORDED_APIS",
    "NEXT_GEN_GROUP_APIS",
    "ADDRESS_APIS",
    "SASL_HANDSHAKE",
    "RequestHead",
    "FrameError",
    "read_request_head",
    "decode_request_body",
    "decode_response",
    "rewrite_addresses",
    "looks_like_tls",
    "to_json",
]

#: The heartbeats of the group protocols after the classic one: KIP-848 consumer groups
#: (``group.protocol=consumer``), KIP-932 share groups, KIP-1071 Streams groups. Their requests
#: are written to the trace (header and raw bytes) so that ``replay --conform`` can say it does
#: not replay them, instead of passing over those groups in silence.
NEXT_GEN_GROUP_APIS: dict[int, str] = {
    68: "ConsumerGroupHeartbeat",
    76: "ShareGroupHeartbeat",
    88: "StreamsGroupHeartbeat",
}
#: API key → Kafka's name (``ApiKeys``): the APIs ``groupsim serve`` answers, and the others a
#: recorded client may send that the trace names.
API_NAMES: dict[int, str] = {
    **wire.API_NAMES,
    0: "Produce",
    17: "SaslHandshake",
    36: "SaslAuthenticate",
    60: "DescribeCluster",
    **NEXT_GEN_GROUP_APIS,
}

#: The APIs whose requests and responses go into the trace with decoded fields: the group
#: APIs, and what a leader's assignor reads (Metadata; ListOffsets for Streams changelogs).
RECORDED_APIS = frozenset({2, 3, 8, 10, 11, 12, 13, 14, 15})
#: The answers that name brokers, rewritten to the proxy's listeners.
ADDRESS_APIS = frozenset({3, 10, 60})
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36

_HEAD = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class FrameError(ValueError):
    """A frame the proxy cannot read (shorter than its header, an undecodable body)."""


@dataclasses.dataclass(frozen=True, slots=True)
class RequestHead:
    """The fields of a request header every version has (``RequestHeader`` v1/v2)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str

    @property
    def api(self) -> str:
        """Kafka's API name, or ``"ApiKey<n>"`` for one the proxy does not know."""
        return API_NAMES.get(self.api_key, f"ApiKey{self.api_key}")


def read_request_head(frame: bytes) -> RequestHead:
    """The header of one request frame (without its 4-byte size prefix).

    The client id is a nullable INT16-length string in every header version; bytes that are not
    UTF-8 are replaced (the proxy forwards the frame unchanged either way).

    Raises:
        FrameError: the frame is shorter than a header.
    """
    if len(frame) < _HEAD.size + 2:
        raise FrameError(f"request of {len(frame)} bytes is shorter than a request header")
    api_key, version, correlation_id = _HEAD.unpack_from(frame)
    (length,) = _INT16.unpack_from(frame, _HEAD.size)
    start = _HEAD.size + 2
    if length < 0:
        client_id = ""
    elif start + length > len(frame):
        raise FrameError(f"client id of {length} bytes runs past the {len(frame)}-byte frame")
    else:
        client_id = frame[start : start + length].decode("utf-8", "replace")
    return RequestHead(api_key, version, correlation_id, client_id)


def looks_like_tls(first_bytes: bytes) -> bool:
    """A TLS ClientHello (record type 22, version 3.x) rather than a Kafka frame size."""
    return len(first_bytes) >= 3 and first_bytes[0] == 0x16 and first_bytes[1] == 0x03


@cache
def _payload(api_key: int, version: int, response: bool) -> type | None:
    """kio's request/response class of an API version, or None when kio does not have it."""
    kind = EntityType.response if response else EntityType.request
    try:
        if response:
            mod = load_payload_module(api_key, version, EntityType.response)
        else:
            mod = load_payload_module(api_key, version, EntityType.request)
    except Exception:  # kio raises several types for an unknown key or version
        return None
    for value in vars(mod).values():
        if (
            isinstance(value, type)
            and value.__module__ == mod.__name__
            and getattr(value, "__type__", None) is kind
        ):
            return value
    return None


@cache
def _readers(api_key: int, version: int, response: bool) -> tuple[Callable[..., Any], ...] | None:
    cls = _payload(api_key, version, response)
    if cls is None:
        return None
    return entity_reader(cls.__header_schema__), entity_reader(cls)  # type: ignore[attr-defined]


def decode_request_body(frame: bytes, head: RequestHead) -> Any | None:
    """The kio request object of a frame, or None when kio has no schema for its version.

    Raises:
        FrameError: kio has the schema but the body does not decode.
    """
    readers = _readers(head.api_key, head.api_version, False)
    if readers is None:
        return None
    read_header, read_body = readers
    try:
        _header, used = read_header(frame, 0)
        body, _ = read_body(frame, used)
    except Exception as exc:
        raise FrameError(f"cannot decode {head.api} v{head.api_version}: {exc}") from None
    return body


def decode_response(frame: bytes, api_key: int, version: int) -> tuple[int, Any | None]:
    """``(correlation id, kio response object or None)`` of a response frame (no size prefix).

    The body is None when kio has no schema for the version. The header version is kio's
    (``ResponseHeader`` v0, v1 for flexible versions; ApiVersions always v0).

    Raises:
        FrameError: the frame is too short, or the body does not decode.
    """
    if len(frame) < _INT32.size:
        raise FrameError(f"response of {len(frame)} bytes is shorter than a response header")
    (correlation_id,) = _INT32.unpack_from(frame)
    readers = _readers(api_key, version, True)
    if readers is None:
        return correlation_id, None
    read_header, read_body = readers
    try:
        _header, used = read_header(frame, 0)
        body, _ = read_body(frame, used)
    except Exception as exc:
        name = API_NAMES.get(api_key, f"ApiKey{api_key}")
        raise FrameError(f"cannot decode the {name} v{version} response: {exc}") from None
    return correlation_id, body


def _encode_response(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    """A response frame (no size prefix) with ``body`` re-encoded by kio."""
    cls = _payload(api_key, version, True)
    assert cls is not None
    header_cls = cls.__header_schema__  # type: ignore[attr-defined]
    buffer = io.BytesIO()
    entity_writer(header_cls)(buffer, header_cls(correlation_id=correlation_id))
    entity_writer(cls)(buffer, body)
    return buffer.getvalue()


def rewrite_addresses(
    api_key: int,
    version: int,
    correlation_id: int,
    body: Any,
    listener_for: Callable[[str, int], tuple[str, int]],
) -> tuple[bytes, Any] | None:
    """``(frame, body)``: the response re-encoded with every broker address replaced by
    ``listener_for(host, port)``, and its body; None when nothing changed.

    Covers ``MetadataResponse.brokers``, ``FindCoordinatorResponse`` (``host``/``port`` before
    v4, ``coordinators[]`` from v4, KIP-699) and ``DescribeClusterResponse.brokers``.
    """
    changed = False

    def moved(entry: Any) -> Any:
        nonlocal changed
        host, port = listener_for(entry.host, int(entry.port))
        if (host, port) == (entry.host, int(entry.port)):
            return entry
        changed = True
        return dataclasses.replace(entry, host=host, port=type(entry.port)(port))

    if api_key in (3, 60):
        body = dataclasses.replace(body, brokers=tuple(moved(b) for b in body.brokers))
    elif api_key == 10:
        if version < 4:
            if body.host and int(body.port) > 0:
                body = moved(body)
        else:
            body = dataclasses.replace(
                body,
                coordinators=tuple(
                    moved(c) if c.host and int(c.port) > 0 else c for c in body.coordinators
                ),
            )
    if not changed:
        return None
    return _encode_response(api_key, version, correlation_id, body), body


def to_json(value: Any) -> Any:
    """A kio object as plain JSON values: dataclasses → dicts, bytes → base64, durations →
    milliseconds, UUIDs → strings, enums → their names, tuples and sets → lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, tuple | list | frozenset | set):
        return [to_json(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)
