"""Kafka Connect group-protocol encodings, byte-identical to Kafka's (v0-v2) plus groupsim's v3.

Layouts (Kafka ``ConnectProtocol``, ``IncrementalCooperativeConnectProtocol``; v3 is KIP-987,
docs/upgrades.md); every message starts with an INT16 header ``version``:

* subscription v0 (``ConnectProtocol``): ``version, url STRING, config_offset INT64``.
* subscription v1/v2 (``IncrementalCooperativeConnectProtocol``): v0 fields +
  ``allocation NULLABLE_BYTES`` = a whole v1/v2 assignment whose header equals the outer one,
  or null when the worker has no assignment.
* subscription v3 (``static``, KIP-987, groupsim's own): v2 fields +
  ``static_connectors ARRAY(STRING)`` + ``static_tasks ARRAY(ConnectorAssignment)``.
* assignment v0: ``version, error INT16, leader STRING, leader_url STRING,
  config_offset INT64, assignment ARRAY(ConnectorAssignment)``.
* assignment v1/v2 (``ExtendedAssignment``): v0 fields with ``assignment`` nullable, then
  ``revoked`` nullable ARRAY(ConnectorAssignment) and ``delay INT32``; v3 is the same layout
  with header 3.
* ConnectorAssignment: ``connector STRING, tasks ARRAY(INT32)`` where -1 marks the connector
  instance itself and n >= 0 is task n (:mod:`protocol.connect_entries`, with the writers' rules
  for their order: assigned connectors in Java ``HashSet`` order, revoked in list order).

Reader rules: the v0 readers check only ``version >= 0`` and ignore trailing bytes. The v1
readers use the v1 layout whatever the header says, take the default (null -> empty, delay 0,
allocation null) for a trailing field when the buffer has **no** bytes left, treat null arrays
as empty, and ignore trailing bytes; a field cut off halfway is an error. Decoding keeps wire
order and duplicates: each -1 becomes a connector, every other number a task.

Normalisation: ``decode(encode(x))`` equals ``x`` except that (a) the assigned connectors
come back deduplicated in HashSet order and the tasks grouped by connector entry, (b) revoked
connectors come back deduplicated, revoked tasks grouped by entry, (c) a v0 encoding drops
revoked/delay (and a v0 subscription the allocation; v0-v2 subscriptions the static fields),
(d) static tasks come back grouped per connector, (e) an embedded allocation comes back with
the subscription's header as its ``version``.

``encode(decode(b)) == b`` holds for every ``b`` a writer here (or Kafka) produced: HashSet
order is idempotent because entries sharing a bucket keep their wire order.
The one exception: Kafka presizes ``new HashSet<>(connectors)`` from the list length *with*
duplicates, so a connector list whose duplicates change that capacity (12 names with one
duplicate: capacity 32 when written, 16 for the 11 decoded names) re-encodes in a different,
equally valid entry order. Kafka's assignors do not emit duplicate connectors for one worker
and no golden vector is affected; the encoder stays byte-faithful to Kafka for such lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from struct import Struct

from protocol.connect import (
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
    WorkerSubscription,
)
from protocol.connect_entries import (
    assigned_entries,
    read_entries,
    revoked_entries,
    static_entries,
    write_entries,
)
from protocol.primitives import DecodeError, EncodeError, Reader, Writer

__all__ = [
    "MAX_VERSION",
    "encode_assignment",
    "decode_assignment",
    "decode_assignment_v0",
    "decode_assignment_v1",
    "encode_subscription",
    "decode_subscription",
    "decode_subscription_v0",
    "decode_subscription_v1",
    "join_group_protocols",
]

#: Highest header version groupsim writes (3 = ``static``).
MAX_VERSION = 3

_I16 = Struct(">h")


# ----------------------------------------------------------------------------------------------
# Encoding


def _check_version(version: int, field: str) -> int:
    if type(version) is not int or not 0 <= version <= MAX_VERSION:
        raise EncodeError(
            field, f"unsupported version {version!r} (groupsim writes 0..{MAX_VERSION})"
        )
    return version


def _write_assignment_body(w: Writer, a: ConnectAssignment, cooperative: bool) -> None:
    """Everything after the header: the v0 layout, or the v1-v3 one when ``cooperative``."""
    w.int16(a.error, "error")
    w.string(a.leader, "leader")  # type: ignore[arg-type]  # None -> EncodeError
    w.string(a.leader_url, "leader_url")  # type: ignore[arg-type]
    w.int64(a.config_offset, "config_offset")
    write_entries(w, assigned_entries(a.connectors, a.tasks), "assignment")
    if cooperative:
        write_entries(w, revoked_entries(a.revoked_connectors, a.revoked_tasks), "revoked")
        w.int32(a.delay_ms, "delay_ms")


def encode_assignment(a: ConnectAssignment, version: int | None = None) -> bytes:
    """Serialize a Connect assignment (the SyncGroup bytes).

    Follows ``ConnectProtocol.serializeAssignment`` (version 0) and
    ``IncrementalCooperativeConnectProtocol.serializeAssignment`` (1 = compatible,
    2 = sessioned; 3 = groupsim's ``static``, the v2 layout with header 3).

    Args:
        a: the assignment; its ``leader`` and ``leader_url`` must be strings.
        version: header and layout to write; defaults to ``a.version``. Version 0 drops
            ``revoked_*`` and ``delay_ms``.

    Returns:
        The bytes, entries in Kafka's order (assigned: HashSet order of the connector names,
        then tasks appended to their connector's entry; revoked: list order, deduplicated).

    Raises:
        EncodeError: version outside 0..3, a ``None`` or over-long string, an int out of its
            wire range, or a negative task number (``field`` names the culprit, prefixed
            ``assignment.``).
    """
    v = _check_version(a.version if version is None else version, "assignment.version")
    w = Writer()
    w.int16(v, "version")
    try:
        _write_assignment_body(w, a, v >= 1)
    except EncodeError as exc:
        raise exc.within("assignment") from None
    return w.getvalue()


def encode_subscription(s: WorkerSubscription, version: int | None = None) -> bytes:
    """Serialize a worker's JoinGroup metadata for one protocol.

    Follows ``ConnectProtocol.serializeMetadata`` (version 0) and
    ``IncrementalCooperativeConnectProtocol.serializeMetadata`` (1 = compatible,
    2 = sessioned); version 3 (``static``, KIP-987, docs/upgrades.md) appends
    ``static_connectors`` and ``static_tasks`` (one entry per connector, first-seen order, task
    numbers >= 0).

    Args:
        s: the subscription.
        version: header and layout; defaults to ``s.version``. From version 1 the
            ``allocation`` is embedded as a whole assignment re-serialized **with this same
            header** (``None`` -> null). Fields the layout lacks are dropped.

    Raises:
        EncodeError: version outside 0..3, bad url, int out of range, an unencodable
            allocation (field ``subscription.allocation.*``), a negative static task number.
    """
    v = _check_version(s.version if version is None else version, "subscription.version")
    body = None if v == 0 or s.allocation is None else _allocation_body(s.allocation)
    return _subscription_bytes(s, v, body)


def _allocation_body(a: ConnectAssignment) -> bytes:
    """The embedded allocation without its header: the same for v1, v2 and v3."""
    w = Writer()
    try:
        _write_assignment_body(w, a, True)
    except EncodeError as exc:
        raise exc.within("subscription.allocation") from None
    return w.getvalue()


def _subscription_bytes(s: WorkerSubscription, v: int, allocation_body: bytes | None) -> bytes:
    w = Writer()
    try:
        w.int16(v, "version")
        w.string(s.url, "url")
        w.int64(s.config_offset, "config_offset")
        if v >= 1:
            # the allocation carries the same header as the subscription
            # (IncrementalCooperativeConnectProtocol)
            allocation = None if allocation_body is None else _I16.pack(v) + allocation_body
            w.nullable_bytes(allocation, "allocation")
        if v >= 3:
            w.string_array(s.static_connectors, "static_connectors")
            write_entries(w, static_entries(s.static_tasks), "static_tasks")
    except EncodeError as exc:
        raise exc.within("subscription") from None
    return w.getvalue()


def join_group_protocols(
    protocol: ConnectProtocol,
    url: str,
    config_offset: int,
    allocation: ConnectAssignment | None,
    static_connectors: Sequence[str] = (),
    static_tasks: Sequence[ConnectorTaskId] = (),
) -> list[tuple[str, bytes]]:
    """The JoinGroup protocol list of a worker (``WorkerCoordinator.metadata()``).

    Args:
        protocol: the worker's *configured* ``connect.protocol``.
        url: the worker's advertised REST url.
        config_offset: offset of the config snapshot taken for this JoinGroup.
        allocation: the worker's current cumulative assignment, ``None`` when it has none;
            each entry re-serializes it with its own header (its ``version`` is ignored).
        static_connectors, static_tasks: the worker's KIP-987 ``static.*`` settings, carried
            only by the ``static`` (v3) entry.

    Returns:
        ``[(protocol_name, subscription_bytes), ...]`` for ``protocol.advertised()``, most
        preferred first, each encoded at its own version (``default`` is always v0).

    Raises:
        EncodeError: as :func:`encode_subscription`.
    """
    subscription = WorkerSubscription(
        version=protocol.version,
        url=url,
        config_offset=config_offset,
        allocation=allocation,
        static_connectors=tuple(static_connectors),
        static_tasks=tuple(static_tasks),
    )
    # The allocation is serialized once; only its header differs between the entries.
    body = None if allocation is None or protocol.is_eager else _allocation_body(allocation)
    return [
        (p.protocol_name, _subscription_bytes(subscription, p.version, body))
        for p in protocol.advertised()
    ]


# ----------------------------------------------------------------------------------------------
# Decoding


def _read_version(r: Reader, field: str) -> int:
    start = r.position
    version = r.int16(field)
    if version < 0:
        raise DecodeError(field, start, f"unsupported version {version} (must be >= 0)")
    return version


def _read_assignment(r: Reader, cooperative: bool) -> ConnectAssignment:
    """The v0 layout, or the v1 one (with Kafka's v1 tolerance rules) when ``cooperative``."""
    version = _read_version(r, "version")
    error = r.int16("error")
    leader = r.string("leader")
    leader_url = r.string("leader_url")
    config_offset = r.int64("config_offset")
    connectors: list[str] = []
    tasks: list[ConnectorTaskId] = []
    revoked_connectors: list[str] = []
    revoked_tasks: list[ConnectorTaskId] = []
    delay = 0
    if not cooperative:
        read_entries(r, "assignment", False, connectors, tasks)
    else:
        # TOLERATE_MISSING_FIELDS_WITH_DEFAULTS: a field with a default whose turn comes at
        # the very end of the buffer takes that default; a partial field is still an error.
        if r.remaining:
            read_entries(r, "assignment", True, connectors, tasks)
        if r.remaining:
            read_entries(r, "revoked", True, revoked_connectors, revoked_tasks)
        if r.remaining:
            delay = r.int32("delay_ms")
    return ConnectAssignment(
        version=version,
        error=error,
        leader=leader,
        leader_url=leader_url,
        config_offset=config_offset,
        connectors=tuple(connectors),
        tasks=tuple(tasks),
        revoked_connectors=tuple(revoked_connectors),
        revoked_tasks=tuple(revoked_tasks),
        delay_ms=delay,
    )


def _decode_assignment(data: bytes, cooperative: bool) -> ConnectAssignment:
    try:
        return _read_assignment(Reader(data), cooperative)
    except DecodeError as exc:
        raise exc.within("assignment") from None


def decode_assignment_v0(data: bytes) -> ConnectAssignment:
    """Read assignment bytes as ``ConnectProtocol.deserializeAssignment`` does (v0 reader).

    Accepts any header >= 0, reads the v0 layout and ignores trailing bytes (a v1/v2
    assignment loses its revoked lists and delay). A null assignment array is an error.

    Returns:
        A :class:`ConnectAssignment` with ``version`` = the header, lists in wire order with
        duplicates kept, empty revoked lists and ``delay_ms`` 0.

    Raises:
        DecodeError: negative header, truncated or malformed field (``field`` starts with
            ``assignment.``; ``offset`` is where the bad field starts).
    """
    return _decode_assignment(data, False)


def decode_assignment_v1(data: bytes) -> ConnectAssignment:
    """Read assignment bytes as ``IncrementalCooperativeConnectProtocol.deserializeAssignment``.

    Reads the v1 layout whatever the header (>= 0), so a v0 assignment gets empty revoked
    lists and delay 0 (fields missing exactly at the end take their defaults), null arrays
    read as empty, trailing bytes are ignored. This is the reader ``WorkerCoordinator`` uses
    for SyncGroup bytes under every protocol.

    Returns:
        A :class:`ConnectAssignment` (``ExtendedAssignment``), ``version`` = the header.

    Raises:
        DecodeError: negative header, a required field (error, leader, leader_url,
            config_offset) missing, or any field cut off halfway or malformed.
    """
    return _decode_assignment(data, True)


#: The reader ``WorkerCoordinator.onJoinComplete`` uses: :func:`decode_assignment_v1`.
decode_assignment = decode_assignment_v1


def _read_subscription_v0(r: Reader) -> tuple[int, str, int]:
    """The fields every subscription starts with: version, url, config_offset."""
    version = _read_version(r, "version")
    url = r.string("url")
    config_offset = r.int64("config_offset")
    return version, url, config_offset


def _read_allocation(r: Reader) -> ConnectAssignment | None:
    """A v1 subscription's allocation: None when null or missing at the very end."""
    if not r.remaining:
        return None
    span = r.nullable_bytes_span("allocation")
    if span is None:
        return None
    try:
        return _read_assignment(r.sub_reader(span), True)
    except DecodeError as exc:
        raise exc.within("allocation") from None


def _read_subscription_v1(r: Reader) -> tuple[int, str, int, ConnectAssignment | None]:
    version, url, config_offset = _read_subscription_v0(r)
    return version, url, config_offset, _read_allocation(r)


def decode_subscription_v0(data: bytes) -> WorkerSubscription:
    """Read JoinGroup metadata as ``ConnectProtocol.deserializeMetadata`` (v0 reader).

    Accepts any header >= 0, reads ``url`` and ``config_offset`` and ignores the rest.

    Returns:
        ``WorkerSubscription(version=header, url, config_offset, allocation=None)``.

    Raises:
        DecodeError: negative header, truncated or malformed url/offset (field
            ``subscription.*``).
    """
    try:
        version, url, config_offset = _read_subscription_v0(Reader(data))
    except DecodeError as exc:
        raise exc.within("subscription") from None
    return WorkerSubscription(version=version, url=url, config_offset=config_offset)


def decode_subscription_v1(data: bytes) -> WorkerSubscription:
    """Read JoinGroup metadata as ``IncrementalCooperativeConnectProtocol.deserializeMetadata``.

    Reads the v1 layout whatever the header (>= 0): an allocation missing at the very end
    (v0 bytes) or null gives ``allocation=None`` (Kafka's ``ExtendedAssignment.empty()``);
    a present allocation is decoded with the v1 assignment reader (its own header kept).
    Trailing bytes (e.g. v3's static fields) are ignored.

    Raises:
        DecodeError: negative header, malformed url/offset/allocation (fields
            ``subscription.allocation.*`` for the embedded assignment, offsets absolute).
    """
    try:
        version, url, config_offset, allocation = _read_subscription_v1(Reader(data))
    except DecodeError as exc:
        raise exc.within("subscription") from None
    return WorkerSubscription(
        version=version, url=url, config_offset=config_offset, allocation=allocation
    )


def decode_subscription(data: bytes) -> WorkerSubscription:
    """Read JoinGroup metadata by its header: what groupsim's leaders use.

    Header 0 -> :func:`decode_subscription_v0`; 1 and 2 -> :func:`decode_subscription_v1`;
    3 (and any higher header, read as its v3 prefix) -> the v1 reader followed by
    ``static_connectors`` and ``static_tasks``, both required (groupsim's own layout has no
    older writer that omits them); trailing bytes are ignored.

    Raises:
        DecodeError: as the readers above; for v3 also a missing/malformed static field, a
            null static array, or a static task number -1.
    """
    try:
        r = Reader(data)
        version, url, config_offset = _read_subscription_v0(r)
        if version == 0:
            return WorkerSubscription(version=0, url=url, config_offset=config_offset)
        allocation = _read_allocation(r)
        if version < 3:
            return WorkerSubscription(
                version=version, url=url, config_offset=config_offset, allocation=allocation
            )
        static_connectors = r.string_array("static_connectors")
        static_tasks: list[ConnectorTaskId] = []
        read_entries(r, "static_tasks", False, None, static_tasks)
    except DecodeError as exc:
        raise exc.within("subscription") from None
    return WorkerSubscription(
        version=version,
        url=url,
        config_offset=config_offset,
        allocation=allocation,
        static_connectors=tuple(static_connectors),
        static_tasks=tuple(static_tasks),
    )
