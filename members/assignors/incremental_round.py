"""The SyncGroup side of an incremental cooperative round (the end of Kafka's
``IncrementalCooperativeAssignor.performAssignment``: ``fillAssignments`` and
``serializeAssignments``), shared by the incremental cooperative and the static (KIP-987)
assignors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

from protocol.connect import NO_ERROR, ConnectAssignment, ConnectorTaskId

from ._wire import assignment_header, encode_assigned, encode_assignment_fast, no_revocations_tail
from .base import AssignmentRound, ConfigSnapshot, LazyDecoded
from .incremental_load import Task

__all__ = ["encode_incremental_round"]


def encode_incremental_round(
    version: int,
    leader_id: str,
    leader_url: str,
    offset: int,
    order: Sequence[str],
    na_c: Mapping[str, Sequence[str]],
    na_t: Mapping[str, Sequence[Task]],
    nr_c: Mapping[str, Sequence[str]],
    nr_t: Mapping[str, Sequence[Task]],
    delay: int,
    used: ConfigSnapshot,
) -> AssignmentRound:
    """The SyncGroup side of an incremental round (the end of Kafka's
    ``performAssignment``: ``fillAssignments`` and ``serializeAssignments``), shared by the
    incremental cooperative and the static (KIP-987) assignors.

    Every member of ``order`` gets ``error = 0``, header ``version``, ``leader_id`` /
    ``leader_url``, config ``offset``, its newly assigned (``na_*``) and newly revoked
    (``nr_*``) items (a member missing from a map has none) and the common ``delay``
    (virtual ms). Members with nothing to start or stop share one encoded buffer.
    """
    header = assignment_header(version, NO_ERROR, leader_id, leader_url, offset)
    tail = no_revocations_tail(version, delay)
    build = partial(_build_decoded, version, leader_id, leader_url, offset, delay)
    empty: tuple[bytes, Callable[[], ConnectAssignment]] | None = None
    assignments: dict[str, bytes] = {}
    builders: dict[str, Callable[[], ConnectAssignment]] = {}
    for m in order:
        ac = na_c.get(m) or ()
        at = na_t.get(m) or ()
        rc = nr_c.get(m) or ()
        rt = nr_t.get(m) or ()
        if rc or rt or not version:
            data, assigned, revoked = encode_assignment_fast(header, version, ac, at, rc, rt, delay)
            assignments[m] = data
            builders[m] = partial(build, assigned, revoked)
        elif ac or at:
            body, assigned = encode_assigned(ac, at)
            assignments[m] = b"".join((header, body, tail))
            builders[m] = partial(build, assigned, _no_items)
        else:
            if empty is None:
                empty_data = b"".join((header, encode_assigned((), ())[0], tail))
                empty = (empty_data, partial(build, _no_items, _no_items))
            assignments[m] = empty[0]
            builders[m] = empty[1]
    return AssignmentRound(assignments, LazyDecoded(builders), delay, NO_ERROR, offset, used)


def _no_items() -> tuple[list[str], list[Task]]:
    return [], []


def _build_decoded(
    version: int,
    leader: str,
    leader_url: str,
    offset: int,
    delay: int,
    assigned: Callable[[], tuple[list[str], list[Task]]],
    revoked: Callable[[], tuple[list[str], list[Task]]],
) -> ConnectAssignment:
    """The :class:`ConnectAssignment` a member decodes, from views of its wire lists."""
    ac, at = assigned()
    rc, rt = revoked()
    return ConnectAssignment(
        version,
        NO_ERROR,
        leader,
        leader_url,
        offset,
        tuple(ac),
        tuple(ConnectorTaskId(c, n) for c, n in at),
        tuple(rc),
        tuple(ConnectorTaskId(c, n) for c, n in rt),
        delay,
    )
