"""Kafka Connect's ``ConnectorAssignment`` arrays: the connector/task entries of both messages.

An assignment's ``assignment`` and ``revoked`` lists and a v3 subscription's ``static_tasks``
are each an ``ARRAY(ConnectorAssignment)`` (Kafka ``ConnectProtocol.CONNECTOR_ASSIGNMENT_V0``):
``connector STRING, tasks ARRAY(INT32)`` where -1 marks the connector instance itself and
n >= 0 is task n. The messages around them are in :mod:`protocol.connect_codec`.

Writer rules that make the bytes Kafka's: the assigned connectors are visited in Java
``HashSet`` order (``new HashSet<>(connectors)``, presized, :mod:`protocol.java_hash_order`;
``ConnectProtocol.Assignment.asMap()``) and each gets an entry ``name: [-1]``; tasks are then
appended, in list order, to their connector's entry (a new entry at the end when the connector
has none). The revoked entries follow the revoked connector list order (deduplicated) instead
(``ExtendedAssignment.revokedAsMap()``). Writers always emit non-null arrays. The reader keeps
wire order and duplicates: each -1 becomes a connector, every other number a task.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import groupby, repeat
from operator import itemgetter

from protocol.connect import ConnectorTaskId
from protocol.java_capacity import presized_capacity
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash
from protocol.primitives import DecodeError, EncodeError, Reader, Writer, encoded_string

__all__ = [
    "CONNECTOR",
    "ENTRY_MIN_SIZE",
    "write_entries",
    "add_tasks",
    "assigned_entries",
    "revoked_entries",
    "static_entries",
    "read_entries",
]

#: The task number that marks the connector instance itself (``ConnectProtocol``'s
#: ``CONNECTOR_TASK``).
CONNECTOR = -1
# Smallest ConnectorAssignment on the wire: empty name (2) + empty task array (4).
ENTRY_MIN_SIZE = 6
_task_number = itemgetter(1)
_task_connector = itemgetter(0)
_new_tuple = tuple.__new__


def write_entries(w: Writer, entries: dict[str, list[int]], field: str) -> None:
    """Write ``entries`` (connector -> task numbers, -1 = the connector) as an
    ARRAY(ConnectorAssignment) in dict order.

    Raises:
        EncodeError: an over-long name or a task number out of INT32 (``field[i]...``).
    """
    w.int32(len(entries), field)
    raw = w.raw
    for i, (name, numbers) in enumerate(entries.items()):
        raw(encoded_string(name, f"{field}[{i}].connector"))
        w.int32_array(numbers, f"{field}[{i}].tasks")


def add_tasks(entries: dict[str, list[int]], tasks: Iterable[ConnectorTaskId], field: str) -> None:
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


def assigned_entries(
    connectors: Sequence[str], tasks: Iterable[ConnectorTaskId]
) -> dict[str, list[int]]:
    """``Assignment.asMap()``: HashSet order of the connectors, then tasks in list order."""
    if len(connectors) <= 1:
        order: Iterable[str] = connectors
    else:
        order = hash_order(connectors, string_hash, presized_capacity(len(connectors)))
    entries = {name: [CONNECTOR] for name in order}
    add_tasks(entries, tasks, "tasks")
    return entries


def revoked_entries(
    connectors: Sequence[str], tasks: Iterable[ConnectorTaskId]
) -> dict[str, list[int]]:
    """``ExtendedAssignment.revokedAsMap()``: revoked connectors in list order, deduplicated."""
    entries = {name: [CONNECTOR] for name in connectors}
    add_tasks(entries, tasks, "revoked_tasks")
    return entries


def static_entries(tasks: Iterable[ConnectorTaskId]) -> dict[str, list[int]]:
    """A v3 subscription's ``static_tasks`` as entries: one per connector, first-seen
    order.

    Raises:
        EncodeError: a negative task number.
    """
    entries: dict[str, list[int]] = {}
    add_tasks(entries, tasks, "static_tasks")
    return entries


def read_entries(
    r: Reader,
    field: str,
    nullable: bool,
    connectors: list[str] | None,
    tasks: list[ConnectorTaskId],
) -> None:
    """Read an ARRAY(ConnectorAssignment) into ``connectors`` (-1) and ``tasks`` (others).

    With ``connectors=None`` a -1 is rejected (static tasks carry task numbers >= 0 only).
    """
    count = r.array_count(field, ENTRY_MIN_SIZE, nullable)
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
        if numbers[0] == CONNECTOR and connectors is not None and numbers.count(CONNECTOR) == 1:
            connectors.append(name)
            numbers = numbers[1:]
        elif CONNECTOR in numbers:
            if connectors is None:
                raise DecodeError(
                    f"{field}[{i}].tasks", start, "task number -1 is not allowed here"
                )
            for n in numbers:
                if n == CONNECTOR:
                    connectors.append(name)
                else:
                    tasks.append(ConnectorTaskId(name, n))
            continue
        # C-level construction of ConnectorTaskId tuples (a NamedTuple has no __init__).
        tasks.extend(map(_new_tuple, repeat(ConnectorTaskId), zip(repeat(name), numbers)))
