"""Shared vocabulary of the Connect leader's assignors.

Kafka: ``ConnectAssignor`` (interface), ``ClusterConfigState`` (the config snapshot a leader
assigns from), ``WorkerCoordinator.configSnapshot()/configFreshSnapshot()``.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from itertools import accumulate
from typing import ParamSpec, Protocol, TypeVar

import msgspec

from protocol.connect import CONFIG_MISMATCH, ConnectAssignment, ConnectorTaskId, ConnectProtocol

from ._wire import (
    assignment_header,
    encode_assignment_fast,
    sorted_connectors,
    task_entry,
    task_ids,
)

__all__ = [
    "ConfigSnapshot",
    "AssignmentRound",
    "ConnectAssignor",
    "LazyDecoded",
    "check_members",
    "AssignorInputError",
    "leader_config_offset",
    "config_mismatch_round",
    "SnapshotTables",
    "snapshot_tables",
    "pauses_gc",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class ConfigSnapshot(msgspec.Struct, frozen=True):
    """A worker's view of the Connect config topic (Kafka ``ClusterConfigState``).

    ``offset`` is the config-topic offset the view reflects; ``connectors`` maps each configured
    connector to its task count (tasks are numbered ``0..n-1``; a count of 0 models a connector
    with no task configs yet, or one Kafka flags inconsistent: ``ClusterConfigState.tasks(c)``
    is empty for both).

    Never mutate ``connectors`` after construction (the Struct is frozen; the dict must be
    treated so too): the assignors cache tables derived from a snapshot per object
    (:func:`snapshot_tables`).
    """

    offset: int
    connectors: dict[str, int] = msgspec.field(default_factory=dict)

    def connector_names(self) -> list[str]:
        """Configured connectors sorted as Java's ``TreeSet<String>`` (UTF-16 order)."""
        return sorted_connectors(self.connectors)

    def tasks(self, connector: str) -> list[ConnectorTaskId]:
        """``ClusterConfigState.tasks(connector)``: task ids 0..n-1 (empty if unknown)."""
        return [ConnectorTaskId(connector, i) for i in range(self.connectors.get(connector, 0))]

    def all_tasks(self) -> list[ConnectorTaskId]:
        """Every configured task, connectors in Java order then task number."""
        return [t for c in self.connector_names() for t in self.tasks(c)]

    @property
    def task_count(self) -> int:
        """Total number of configured tasks."""
        return sum(self.connectors.values())


class SnapshotTables:
    """Derived views of one config snapshot that every assignment round needs.

    Built once per distinct snapshot content and shared by every assignor instance
    (:func:`snapshot_tables`); treat every attribute as read-only.

    Attributes:
        offset / connectors: a copy of the snapshot's content (the cache key).
        connector_set: the configured connector names.
        sorted_names: the connector names in Java ``TreeSet<String>`` order.
        sorted_tasks: every configured task ``(connector, n)`` in ``ConnectorTaskId`` order.
        task_set: the same task tuples (the same objects) as a set.
        task_offsets: ``task_offsets[j]`` is the position in ``sorted_tasks`` of the first
            task of ``sorted_names[j]``; one more entry holds the total.
        max_tasks: the largest task count of one connector (0 without connectors).
    """

    __slots__ = (
        "source",
        "offset",
        "connectors",
        "connector_set",
        "sorted_names",
        "sorted_tasks",
        "task_set",
        "task_offsets",
        "max_tasks",
        "_task_entries",
    )

    def __init__(self, snapshot: ConfigSnapshot) -> None:
        self.source = snapshot
        self.offset = snapshot.offset
        self.connectors = dict(snapshot.connectors)
        self.connector_set = set(self.connectors)
        self.sorted_names = sorted_connectors(self.connectors)
        counts = self.connectors
        # the shared tuples the decoder hands out too (identity makes set operations fast)
        self.sorted_tasks: list[tuple[str, int]] = [
            t for c in self.sorted_names for t in task_ids(c, counts[c])[: counts[c]]
        ]
        self.task_set: set[tuple[str, int]] = set(self.sorted_tasks)
        self.task_offsets = [0, *accumulate(counts[c] for c in self.sorted_names)]
        self.max_tasks = max(counts.values(), default=0)
        self._task_entries: list[bytes] | None = None

    def task_entries(self) -> list[bytes]:
        """The lone-task entry bytes (:func:`~._wire.task_entry`) of ``sorted_tasks``, in order
        (built on first use)."""
        if self._task_entries is None:
            self._task_entries = [task_entry(t) for t in self.sorted_tasks]
        return self._task_entries

    def matches(self, snapshot: ConfigSnapshot) -> bool:
        """True when ``snapshot`` has the content these tables were built from."""
        return self.offset == snapshot.offset and self.connectors == snapshot.connectors


_TABLES: list[SnapshotTables] = []
_TABLES_KEPT = 4


def snapshot_tables(snapshot: ConfigSnapshot) -> SnapshotTables:
    """The :class:`SnapshotTables` of ``snapshot``, from a small most-recently-used cache.

    A leader assigns from the same snapshot round after round (and every leader of a group
    from the same content), so the configured sets and the sorted task list are built once
    per content instead of once per round. The cache keeps the last few contents only. The
    snapshot object last matched is remembered, so asking again with the same (unmutated,
    see :class:`ConfigSnapshot`) object skips comparing the connector maps.
    """
    for i, tables in enumerate(_TABLES):
        if tables.source is snapshot and tables.offset == snapshot.offset:
            hit = len(tables.connectors) == len(snapshot.connectors)
        else:
            hit = tables.matches(snapshot)
            if hit:
                tables.source = snapshot
        if hit:
            if i:
                del _TABLES[i]
                _TABLES.insert(0, tables)
            return tables
    tables = SnapshotTables(snapshot)
    _TABLES.insert(0, tables)
    del _TABLES[_TABLES_KEPT:]
    return tables


def pauses_gc(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorate ``fn`` to run with the cyclic garbage collector off (its state restored after).

    An assignment round allocates tens of thousands of containers (one list per worker,
    task tuples, encoded pieces) and frees nearly all of them by reference counting, so
    automatic collections in the middle of a round mostly re-walk the long-lived heap (30–40 %
    of a 1,000-worker round). With the collector paused, what the round leaves behind is
    examined once by the next young collection; reference cycles are collected as usual.
    Nested calls leave the outer call's setting alone.
    """

    @functools.wraps(fn)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return paused


class LazyDecoded(Mapping[str, ConnectAssignment]):
    """Member id → the :class:`ConnectAssignment` it will decode, built on first access.

    Assignors fill it with one builder per member; building a decoded view of 100,000 task ids
    costs more than the assignment itself, and a simulation only reads each member's own.
    """

    __slots__ = ("_builders", "_cache")

    def __init__(self, builders: dict[str, Callable[[], ConnectAssignment]]) -> None:
        self._builders = builders
        self._cache: dict[str, ConnectAssignment] = {}

    def __getitem__(self, member: str) -> ConnectAssignment:
        got = self._cache.get(member)
        if got is None:
            got = self._builders[member]()
            self._cache[member] = got
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)

    def __repr__(self) -> str:
        return f"LazyDecoded({dict(self)!r})"


class AssignmentRound:
    """The outcome of one leader assignment (what goes into SyncGroup).

    Attributes:
        assignments: member id → assignment bytes, in the JoinGroup member order.
        decoded: member id → the :class:`ConnectAssignment` that member decodes from its bytes
            (same order; built lazily, see :class:`LazyDecoded`).
        delay_ms: virtual ms every member is told to wait before rejoining (0 for eager).
        error: ``NO_ERROR`` (0) or ``CONFIG_MISMATCH`` (1); the same for every member.
        config_offset: the config offset written into every assignment.
        snapshot: the config snapshot the leader assigned from; when Kafka's
            ``ensureLeaderConfig`` took a fresh one (``coordinator.configSnapshot(updated)``)
            this is it, and the worker should cache it. None on CONFIG_MISMATCH.
    """

    __slots__ = ("assignments", "decoded", "delay_ms", "error", "config_offset", "snapshot")

    def __init__(
        self,
        assignments: dict[str, bytes],
        decoded: Mapping[str, ConnectAssignment],
        delay_ms: int,
        error: int,
        config_offset: int,
        snapshot: ConfigSnapshot | None = None,
    ) -> None:
        self.assignments = assignments
        self.decoded = decoded
        self.delay_ms = delay_ms
        self.error = error
        self.config_offset = config_offset
        self.snapshot = snapshot

    def __repr__(self) -> str:
        return (
            f"AssignmentRound(error={self.error}, config_offset={self.config_offset}, "
            f"delay_ms={self.delay_ms}, members={list(self.assignments)})"
        )


class ConnectAssignor(Protocol):
    """A Connect leader's assignor (Kafka ``ConnectAssignor.performAssignment``).

    The leader worker keeps one instance per assignor for its process lifetime, so state kept by
    an assignor (the incremental one's previous assignment, delays, generation) persists across
    rounds led by the same worker.
    """

    def perform_assignment(
        self,
        *,
        leader_id: str,
        protocol: ConnectProtocol,
        members: Sequence[tuple[str, bytes]],
        snapshot: ConfigSnapshot,
        refresh_snapshot: Callable[[], ConfigSnapshot],
        last_completed_generation: int,
        generation: int,
        now_ms: int,
    ) -> AssignmentRound:
        """Compute every member's SyncGroup assignment.

        Args:
            leader_id: this worker's member id (must be one of ``members``).
            protocol: the protocol the broker elected.
            members: ``(member_id, metadata bytes for the elected protocol)`` in JoinGroup
                response order; must not be empty.
            snapshot: the leader's cached config snapshot (taken when it sent JoinGroup).
            refresh_snapshot: reads the leader's config topic afresh (Kafka
                ``configFreshSnapshot``); called only when ``snapshot`` is behind.
            last_completed_generation: the coordinator's last successfully synced generation.
            generation: the generation being assigned.
            now_ms: virtual time.
        """
        ...


def leader_config_offset(
    max_offset: int,
    snapshot: ConfigSnapshot,
    refresh_snapshot: Callable[[], ConfigSnapshot],
) -> tuple[int, ConfigSnapshot] | None:
    """Kafka ``ensureLeaderConfig`` (shared by both assignors: ``EagerAssignor``,
    ``IncrementalCooperativeAssignor``).

    Returns ``(offset to label the assignment with, snapshot to assign from)``, or None when
    even a fresh snapshot is behind ``max_offset`` (the caller answers CONFIG_MISMATCH):

    * cached snapshot offset ≥ max_offset → ``(max_offset, snapshot)``;
    * otherwise a fresh snapshot that reaches max_offset → ``(fresh.offset, fresh)``;
    * otherwise None.
    """
    if snapshot.offset >= max_offset:
        return max_offset, snapshot
    fresh = refresh_snapshot()
    if fresh.offset < max_offset:
        return None
    return fresh.offset, fresh


class AssignorInputError(ValueError):
    """A JoinGroup answer a leader's assignor cannot work from: no members, or the leader not
    among them (Kafka's Connect assignors fail there too, e.g. ``IncrementalCooperativeAssignor
    #performAssignment`` taking the largest config offset of no members: the exception leaves
    ``AbstractCoordinator#onLeaderElected`` as a failed join and ends the herder thread)."""


def check_members(leader_id: str, member_ids: Collection[str]) -> None:
    """The argument checks of ``perform_assignment`` shared by both assignors.

    Raises:
        AssignorInputError: no members, or ``leader_id`` is not one of ``member_ids``.
    """
    if not member_ids:
        raise AssignorInputError("perform_assignment needs at least one member")
    if leader_id not in member_ids:
        raise AssignorInputError(f"leader {leader_id!r} is not among the members")


def config_mismatch_round(
    version: int, leader_id: str, leader_url: str, max_offset: int, order: Sequence[str]
) -> AssignmentRound:
    """The round a leader answers when :func:`leader_config_offset` finds no usable snapshot.

    Every member of ``order`` gets the same ``version`` assignment with error CONFIG_MISMATCH,
    config offset ``max_offset`` and nothing assigned or revoked (delay 0).
    """
    header = assignment_header(version, CONFIG_MISMATCH, leader_id, leader_url, max_offset)
    data, _, _ = encode_assignment_fast(header, version, (), ())
    failed = ConnectAssignment(version, CONFIG_MISMATCH, leader_id, leader_url, max_offset)
    return AssignmentRound(
        {m: data for m in order},
        LazyDecoded({m: (lambda: failed) for m in order}),
        0,
        CONFIG_MISMATCH,
        max_offset,
        None,
    )
