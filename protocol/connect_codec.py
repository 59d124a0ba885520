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
  instance itself and n >= 0 is task n.

Writer rules that make the bytes Kafka's: the assigned connectors are visited in Java
``HashSet`` order (``new HashSet<>(connectors)``, presized, :mod:`protocol.java_hash_order`)
and each gets an entry ``name: [-1]``; tasks are then appended, in list order, to their
connector's entry (a new entry at the end when the connector has none). The revoked entries
follow the revoked connector list order (deduplicated) instead. Writers always emit non-null arrays.

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

import json
from collections.abc import Iterable, Sequence
from itertools import groupby, repeat
from operator import itemgetter
from struct import Struct
from typing import Any

from protocol.connect import (
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
    WorkerSubscription,
)
from protocol.errors import InputError
from protocol.java_capacity import presized_capacity
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash
from protocol.primitives import (
    INT16_MAX,
    INT16_MIN,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    DecodeError,
    EncodeError,
    Reader,
    Writer,
    encoded_string,
)

__all__ = [
    "CodecInputError",
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
    "assignment_to_json",
    "assignment_from_json",
    "subscription_to_json",
    "subscription_from_json",
]

#: Highest header version groupsim writes (3 = ``static``).
MAX_VERSION = 3

_CONNECTOR = -1
# Smallest ConnectorAssignment on the wire: empty name (2) + empty task array (4).
_ENTRY_MIN_SIZE = 6
_task_number = itemgetter(1)
_task_connector = itemgetter(0)
_new_tuple = tuple.__new__
_I16 = Struct(">h")


class CodecInputError(InputError):
    """Invalid JSON input for the codec (``groupsim codec encode``).

    Attributes:
        key: dotted path of the offending key, e.g. ``allocation.tasks[2]``.
    """

    def __init__(self, key: str, detail: str) -> None:
        self.key = key
        self.detail = detail
        super().__init__(f"{key}: {detail}")


# ----------------------------------------------------------------------------------------------
# Encoding


def _check_version(version: int, field: str) -> int:
    if type(version) is not int or not 0 <= version <= MAX_VERSION:
        raise EncodeError(
            field, f"unsupported version {version!r} (groupsim writes 0..{MAX_VERSION})"
        )
    return version


def _write_entries(w: Writer, entries: dict[str, list[int]], field: str) -> None:
    w.int32(len(entries), field)
    raw = w.raw
    for i, (name, numbers) in enumerate(entries.items()):
        raw(encoded_string(name, f"{field}[{i}].connector"))
        w.int32_array(numbers, f"{field}[{i}].tasks")


def _add_tasks(entries: dict[str, list[int]], tasks: Iterable[ConnectorTaskId], field: str) -> None:
    """Append task numbers to their connector's entry (new entries at the end).

    Runs of one connector are handled in C (``groupby``/``map``), which keeps a 100k-task
    assignment in the low milliseconds.
    """
    for connector, run in groupby(tasks, _task_connector):
        numbers = list(map(_task_number, run))
        if min(numbers) < 0:
            bad = next(n for n in numbers if n < 0)
            raise EncodeError(field, f"task {connector}-{bad}: task numbers must be >= 0")
        entry = entries.get(connector)
        if entry is None:
            entries[connector] = numbers
        else:
            entry.extend(numbers)


def _assigned_entries(
    connectors: Sequence[str], tasks: Iterable[ConnectorTaskId]
) -> dict[str, list[int]]:
    """``Assignment.asMap()``: HashSet order of the connectors, then tasks in list order."""
    if len(connectors) <= 1:
        order: Iterable[str] = connectors
    else:
        order = hash_order(connectors, string_hash, presized_capacity(len(connectors)))
    entries = {name: [_CONNECTOR] for name in order}
    _add_tasks(entries, tasks, "tasks")
    return entries


def _revoked_entries(
    connectors: Sequence[str], tasks: Iterable[ConnectorTaskId]
) -> dict[str, list[int]]:
    """``ExtendedAssignment.revokedAsMap()``: revoked connectors in list order, deduplicated."""
    entries = {name: [_CONNECTOR] for name in connectors}
    _add_tasks(entries, tasks, "revoked_tasks")
    return entries


def _write_assignment_body(w: Writer, a: ConnectAssignment, cooperative: bool) -> None:
    """Everything after the header: the v0 layout, or the v1-v3 one when ``cooperative``."""
    w.int16(a.error, "error")
    w.string(a.leader, "leader")  # type: ignore[arg-type]  # None -> EncodeError
    w.string(a.leader_url, "leader_url")  # type: ignore[arg-type]
    w.int64(a.config_offset, "config_offset")
    _write_entries(w, _assigned_entries(a.connectors, a.tasks), "assignment")
    if cooperative:
        _write_entries(w, _revoked_entries(a.revoked_connectors, a.revoked_tasks), "revoked")
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


def _static_entries(tasks: Iterable[ConnectorTaskId]) -> dict[str, list[int]]:
    entries: dict[str, list[int]] = {}
    _add_tasks(entries, tasks, "static_tasks")
    return entries


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
            _write_entries(w, _static_entries(s.static_tasks), "static_tasks")
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


def _read_entries(
    r: Reader,
    field: str,
    nullable: bool,
    connectors: list[str] | None,
    tasks: list[ConnectorTaskId],
) -> None:
    """Read an ARRAY(ConnectorAssignment) into ``connectors`` (-1) and ``tasks`` (others).

    With ``connectors=None`` a -1 is rejected (static tasks carry task numbers >= 0 only).
    """
    count = r.array_count(field, _ENTRY_MIN_SIZE, nullable)
    if not count:
        return
    for i in range(count):
        try:
            name = r.string("connector")
            start = r.position
            numbers = r.int32_array("tasks")
        except DecodeError as exc:
            raise exc.within(f"{field}[{i}]") from None
        if not numbers:
            continue
        if numbers[0] == _CONNECTOR and connectors is not None and numbers.count(_CONNECTOR) == 1:
            connectors.append(name)
            numbers = numbers[1:]
        elif _CONNECTOR in numbers:
            if connectors is None:
                raise DecodeError(
                    f"{field}[{i}].tasks", start, "task number -1 is not allowed here"
                )
            for n in numbers:
                if n == _CONNECTOR:
                    connectors.append(name)
                else:
                    tasks.append(ConnectorTaskId(name, n))
            continue
        # C-level construction of ConnectorTaskId tuples (a NamedTuple has no __init__).
        tasks.extend(map(_new_tuple, repeat(ConnectorTaskId), zip(repeat(name), numbers)))


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
        _read_entries(r, "assignment", False, connectors, tasks)
    else:
        # TOLERATE_MISSING_FIELDS_WITH_DEFAULTS: a field with a default whose turn comes at
        # the very end of the buffer takes that default; a partial field is still an error.
        if r.remaining:
            _read_entries(r, "assignment", True, connectors, tasks)
        if r.remaining:
            _read_entries(r, "revoked", True, revoked_connectors, revoked_tasks)
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
        _read_entries(r, "static_tasks", False, None, static_tasks)
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


# ----------------------------------------------------------------------------------------------
# JSON forms (``groupsim codec``, docs/cli-contracts.md)


def _task_str(task: ConnectorTaskId) -> str:
    return f"{task[0]}-{task[1]}"


def assignment_to_json(a: ConnectAssignment) -> dict[str, Any]:
    """The ``groupsim codec`` JSON object of an assignment (docs/cli-contracts.md).

    Keys: ``version, error, leader, leader_url, config_offset, connectors, tasks`` and, from
    version 1, ``revoked_connectors, revoked_tasks, delay_ms``. Tasks are ``"<connector>-<n>"``
    strings; lists keep their order (wire order for a decoded assignment).
    """
    out: dict[str, Any] = {
        "version": a.version,
        "error": a.error,
        "leader": a.leader,
        "leader_url": a.leader_url,
        "config_offset": a.config_offset,
        "connectors": list(a.connectors),
        "tasks": [_task_str(t) for t in a.tasks],
    }
    if a.version != 0:
        out["revoked_connectors"] = list(a.revoked_connectors)
        out["revoked_tasks"] = [_task_str(t) for t in a.revoked_tasks]
        out["delay_ms"] = a.delay_ms
    return out


def subscription_to_json(s: WorkerSubscription) -> dict[str, Any]:
    """The ``groupsim codec`` JSON object of a subscription (docs/cli-contracts.md).

    Keys: ``version, url, config_offset``; from version 1 ``allocation`` (``null`` or an
    assignment object, see :func:`assignment_to_json`); in version 3 also
    ``static_connectors`` and ``static_tasks`` (``"<connector>-<n>"`` strings).
    """
    out: dict[str, Any] = {
        "version": s.version,
        "url": s.url,
        "config_offset": s.config_offset,
    }
    if s.version >= 1:
        out["allocation"] = None if s.allocation is None else assignment_to_json(s.allocation)
    if s.version >= 3:
        out["static_connectors"] = list(s.static_connectors)
        out["static_tasks"] = [_task_str(t) for t in s.static_tasks]
    return out


def _json_int(obj: dict[str, Any], key: str, path: str, low: int, high: int, kind: str) -> int:
    value = obj[key]
    if type(value) is not int:
        raise CodecInputError(_key(path, key), f"expected an integer, got {_json_type(value)}")
    if not low <= value <= high:
        raise CodecInputError(
            _key(path, key), f"{value} is out of range for {kind} [{low}, {high}]"
        )
    return value


def _json_str(obj: dict[str, Any], key: str, path: str) -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise CodecInputError(_key(path, key), f"expected a string, got {_json_type(value)}")
    return value


def _json_list(obj: dict[str, Any], key: str, path: str) -> list[Any]:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise CodecInputError(_key(path, key), f"expected a list, got {_json_type(value)}")
    return value


def _json_strings(obj: dict[str, Any], key: str, path: str) -> tuple[str, ...]:
    items = _json_list(obj, key, path)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise CodecInputError(
                f"{_key(path, key)}[{i}]", f"expected a string, got {_json_type(item)}"
            )
    return tuple(items)


def _json_tasks(obj: dict[str, Any], key: str, path: str) -> tuple[ConnectorTaskId, ...]:
    out = []
    for i, item in enumerate(_json_list(obj, key, path)):
        where = f"{_key(path, key)}[{i}]"
        if not isinstance(item, str):
            raise CodecInputError(
                where, f"expected a '<connector>-<n>' string, got {_json_type(item)}"
            )
        try:
            task = ConnectorTaskId.parse(item)
        except ValueError:
            raise CodecInputError(
                where, f"{item!r} is not of the form '<connector>-<n>' with n >= 0"
            ) from None
        if task.connector.endswith("-"):
            # "c1--1": a negative task number (or a connector name ending in '-', which the
            # "<connector>-<n>" form cannot tell apart). Connector instances go in the
            # connectors list, not as task -1.
            raise CodecInputError(
                where, f"{item!r}: negative task numbers are not allowed (n must be >= 0)"
            )
        if task.task > INT32_MAX:
            raise CodecInputError(where, f"task number {task.task} is out of range for INT32")
        out.append(task)
    return tuple(out)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "list",
        dict: "object",
    }.get(type(value), type(value).__name__)


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_keys(
    obj: object,
    path: str,
    required: Sequence[str],
    optional: Sequence[str],
    other_versions: dict[str, Any],
    what: str,
) -> dict[str, Any]:
    """Check the key set. ``other_versions``: keys of other layouts, accepted only when they
    hold their empty default (so a decoded v1 object can be re-encoded at v0 as long as
    nothing would be dropped)."""
    if not isinstance(obj, dict):
        raise CodecInputError(path or what, f"expected an object, got {_json_type(obj)}")
    for key in required:
        if key not in obj:
            raise CodecInputError(_key(path, key), f"missing required key for {what}")
    for key, value in obj.items():
        if key in required or key in optional:
            continue
        if key in other_versions:
            default = other_versions[key]
            if type(value) is not type(default) or value != default:
                raise CodecInputError(
                    _key(path, key),
                    f"not carried by {what}: only {json.dumps(default)} is accepted here",
                )
            continue
        raise CodecInputError(_key(path, str(key)), f"unknown key for {what}")
    return obj


def _json_version(obj: object, path: str) -> int:
    if not isinstance(obj, dict) or "version" not in obj:
        return -1  # reported by _check_keys
    value = obj["version"]
    if type(value) is not int or not 0 <= value <= MAX_VERSION:
        raise CodecInputError(
            _key(path, "version"), f"expected an integer 0..{MAX_VERSION}, got {value!r}"
        )
    return value


_ASSIGNMENT_V0_KEYS = ("version", "error", "leader", "leader_url", "config_offset")
_ASSIGNMENT_LISTS = ("connectors", "tasks")
_ASSIGNMENT_V1_EXTRA: dict[str, Any] = {
    "revoked_connectors": [],
    "revoked_tasks": [],
    "delay_ms": 0,
}
_SUBSCRIPTION_EXTRA: dict[str, Any] = {
    "allocation": None,
    "static_connectors": [],
    "static_tasks": [],
}


def _assignment_from_json(obj: object, path: str) -> ConnectAssignment:
    version = _json_version(obj, path)
    optional: tuple[str, ...]
    if version == 0:
        optional, others = _ASSIGNMENT_LISTS, _ASSIGNMENT_V1_EXTRA
    else:
        optional, others = _ASSIGNMENT_LISTS + tuple(_ASSIGNMENT_V1_EXTRA), {}
    what = f"a version {version} assignment" if version >= 0 else "an assignment"
    d = _check_keys(obj, path, _ASSIGNMENT_V0_KEYS, optional, others, what)
    return ConnectAssignment(
        version=version,
        error=_json_int(d, "error", path, INT16_MIN, INT16_MAX, "INT16"),
        leader=_json_str(d, "leader", path),
        leader_url=_json_str(d, "leader_url", path),
        config_offset=_json_int(d, "config_offset", path, INT64_MIN, INT64_MAX, "INT64"),
        connectors=_json_strings(d, "connectors", path),
        tasks=_json_tasks(d, "tasks", path),
        revoked_connectors=_json_strings(d, "revoked_connectors", path),
        revoked_tasks=_json_tasks(d, "revoked_tasks", path),
        delay_ms=(
            _json_int(d, "delay_ms", path, INT32_MIN, INT32_MAX, "INT32") if "delay_ms" in d else 0
        ),
    )


def assignment_from_json(obj: dict[str, Any]) -> ConnectAssignment:
    """Parse the ``groupsim codec`` JSON of an assignment, strictly.

    Required: ``version`` (0..3), ``error``, ``leader``, ``leader_url``, ``config_offset``.
    Optional (default empty / 0): ``connectors``, ``tasks`` and, for version >= 1,
    ``revoked_connectors``, ``revoked_tasks``, ``delay_ms`` (a version 0 object may carry
    these only empty / 0, since v0 cannot encode them). Tasks are ``"<connector>-<n>"``
    with n >= 0 (the number after the last ``-``; a ``--`` before it reads as a negative
    number and is rejected). Ints must fit their wire type.

    Raises:
        CodecInputError: unknown or missing key, wrong type, out-of-range value, bad task
            string; ``key`` names the culprit (e.g. ``revoked_tasks[1]``).
    """
    return _assignment_from_json(obj, "")


def subscription_from_json(obj: dict[str, Any]) -> WorkerSubscription:
    """Parse the ``groupsim codec`` JSON of a subscription, strictly.

    Required: ``version`` (0..3), ``url``, ``config_offset``. ``allocation`` (``null`` or an
    assignment object, :func:`assignment_from_json`; its version is ignored on encoding) is
    allowed from version 1, default ``null``; ``static_connectors`` / ``static_tasks`` from
    version 3, default empty. Keys of a later version are accepted only with that default
    (``null`` / ``[]``), as the layout would drop anything else.

    Raises:
        CodecInputError: as :func:`assignment_from_json`; keys inside the allocation are
            reported as ``allocation.<key>``.
    """
    version = _json_version(obj, "")
    optional: tuple[str, ...] = ()
    if version >= 1:
        optional += ("allocation",)
    if version >= 3:
        optional += ("static_connectors", "static_tasks")
    others = {k: v for k, v in _SUBSCRIPTION_EXTRA.items() if k not in optional}
    what = f"a version {version} subscription" if version >= 0 else "a subscription"
    d = _check_keys(obj, "", ("version", "url", "config_offset"), optional, others, what)
    raw_allocation = d.get("allocation")
    return WorkerSubscription(
        version=version,
        url=_json_str(d, "url", ""),
        config_offset=_json_int(d, "config_offset", "", INT64_MIN, INT64_MAX, "INT64"),
        allocation=(
            None if raw_allocation is None else _assignment_from_json(raw_allocation, "allocation")
        ),
        static_connectors=_json_strings(d, "static_connectors", ""),
        static_tasks=_json_tasks(d, "static_tasks", ""),
    )
