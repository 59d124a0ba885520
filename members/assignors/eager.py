"""Kafka Connect's stop-the-world round-robin assignor (protocol ``default``, v0).

Kafka: ``EagerAssignor.performAssignment`` (``EagerAssignor.java``). Stateless between rounds.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from functools import partial

from protocol.connect import NO_ERROR, ConnectAssignment, ConnectorTaskId, ConnectProtocol
from protocol.java_capacity import presized_capacity
from protocol.java_strings import java_sorted_strings

from ._wire import (
    assignment_header,
    connector_entry,
    connector_hash_order,
    int4_table,
    read_member_state,
    string_chunk,
)
from .base import (
    AssignmentRound,
    ConfigSnapshot,
    LazyDecoded,
    SnapshotTables,
    check_members,
    config_mismatch_round,
    leader_config_offset,
    pauses_gc,
    snapshot_tables,
)

__all__ = ["EagerAssignor"]

_I = struct.Struct(">i")
_ONE = _I.pack(1)
_CONNECTOR_ONLY = _ONE + _I.pack(-1)


class EagerAssignor:
    """Round-robin assignor of the eager protocol (Kafka ``EagerAssignor``).

    Every round assigns everything from scratch: members sorted by id (Java String order), one
    circular iterator over them hands out all connectors (sorted) and then, without resetting,
    every task (connectors in order, task numbers ascending). Every member gets a v0 assignment,
    whatever ``protocol`` says (Kafka runs this assignor only for ``default``).
    """

    name = "eager"

    @pauses_gc
    def perform_assignment(
        self,
        *,
        leader_id: str,
        protocol: ConnectProtocol,
        members: Sequence[tuple[str, bytes]],
        snapshot: ConfigSnapshot,
        refresh_snapshot: Callable[[], ConfigSnapshot],
        last_completed_generation: int = -1,
        generation: int = -1,
        now_ms: int = 0,
    ) -> AssignmentRound:
        """Kafka ``EagerAssignor.performAssignment``; see :class:`ConnectAssignor`.

        Metadata is decoded with the v1 reader; ``maxOffset`` is the largest member offset; the
        leader config check (:func:`leader_config_offset`) either picks the snapshot and the
        offset label or answers CONFIG_MISMATCH (offset = maxOffset, nothing assigned) to all.
        Generations and time are not used.

        Raises:
            ValueError: no members, or the leader is not one of them.
            protocol.connect_codec errors: malformed metadata.
        """
        check_members(leader_id, {m for m, _ in members})
        states = {m: read_member_state(md) for m, md in members}
        max_offset = max(s.config_offset for s in states.values())
        leader_url = states[leader_id].url
        order = [m for m, _ in members]
        checked = leader_config_offset(max_offset, snapshot, refresh_snapshot)
        if checked is None:
            return config_mismatch_round(0, leader_id, leader_url, max_offset, order)
        offset, used = checked
        return self._round_robin(order, leader_id, leader_url, offset, used)

    def _round_robin(
        self,
        order: list[str],
        leader_id: str,
        leader_url: str,
        offset: int,
        snapshot: ConfigSnapshot,
    ) -> AssignmentRound:
        header = assignment_header(0, NO_ERROR, leader_id, leader_url, offset)
        sorted_members = java_sorted_strings(order)
        m_count = len(sorted_members)
        tables = snapshot_tables(snapshot)
        if tables.max_tasks <= m_count:
            return self._round_robin_spread(
                order, sorted_members, header, leader_id, leader_url, offset, snapshot, tables
            )
        connectors = tables.sorted_names
        counts = tables.connectors
        c_total = len(connectors)
        chunks = [string_chunk(c) for c in connectors]

        # Connector j goes to member j mod M. The k-th task overall goes to member
        # (C + k) mod M, so member m's tasks of connector c are range(first, n, M) with
        # first = (m - start_c) mod M where start_c = (C + tasks before c) mod M.
        own: list[list[int]] = [[] for _ in range(m_count)]
        for j in range(c_total):
            own[j % m_count].append(j)
        starts: list[int] = []
        # parts[m]: encoded entries of member m for connectors it does not own, in order
        parts: list[list[bytes]] = [[] for _ in range(m_count)]
        pos = c_total % m_count
        int4 = _I.pack
        for ci in range(c_total):
            starts.append(pos)
            n = counts[connectors[ci]]
            if n <= 0:
                continue
            owner = ci % m_count
            chunk = chunks[ci]
            if n <= m_count:
                single = chunk + _ONE
                pieces = [single + b for b in int4_table(n)[:n]]
                end = pos + n
                # members pos, pos+1, ... (mod M) get tasks 0, 1, ...; the owner's task
                # (if any) is merged into its connector entry instead
                t_owner = (owner - pos) % m_count
                if t_owner < n:
                    pieces[t_owner] = b""
                if end <= m_count:
                    for lst, piece in zip(parts[pos:end], pieces, strict=True):
                        lst.append(piece)
                else:
                    split = m_count - pos
                    for lst, piece in zip(parts[pos:], pieces[:split], strict=True):
                        lst.append(piece)
                    for lst, piece in zip(parts[: end - m_count], pieces[split:], strict=True):
                        lst.append(piece)
            else:
                for d in range(m_count):
                    m = (pos + d) % m_count
                    if m == owner:
                        continue
                    values = range(d, n, m_count)
                    parts[m].append(chunk + struct.pack(f">i{len(values)}i", len(values), *values))
            pos = (pos + n) % m_count

        assignments: dict[str, bytes] = {}
        builders = {}
        index = {m: i for i, m in enumerate(sorted_members)}
        for member in order:
            mi = index[member]
            own_ci = own[mi]
            member_parts = parts[mi]
            entries = len(member_parts)
            if own_ci:
                own_parts: list[bytes] = []
                names = [connectors[ci] for ci in own_ci]
                ci_of = {connectors[ci]: ci for ci in own_ci}
                for name in connector_hash_order(names, presized_capacity(len(names))):
                    ci = ci_of[name]
                    n = counts[name]
                    first = (mi - starts[ci]) % m_count
                    if first < n:
                        owned = [-1, *range(first, n, m_count)]
                        own_parts.append(
                            chunks[ci] + struct.pack(f">i{len(owned)}i", len(owned), *owned)
                        )
                    else:
                        own_parts.append(chunks[ci] + _CONNECTOR_ONLY)
                    if first < n and n <= m_count:
                        entries -= 1  # its placeholder b"" in member_parts is no entry
                entries += len(own_parts)
                body = b"".join(own_parts) + b"".join(member_parts)
            else:
                body = b"".join(member_parts)
            assignments[member] = header + int4(entries) + body
            builders[member] = _decoder(leader_id, leader_url, offset, tables, own_ci, mi, m_count)
        return AssignmentRound(assignments, LazyDecoded(builders), 0, NO_ERROR, offset, snapshot)

    @staticmethod
    def _round_robin_spread(
        order: list[str],
        sorted_members: list[str],
        header: bytes,
        leader_id: str,
        leader_url: str,
        offset: int,
        snapshot: ConfigSnapshot,
        tables: SnapshotTables,
    ) -> AssignmentRound:
        """:meth:`_round_robin` when no connector has more tasks than there are members.

        Then a member gets at most one task of each connector, so every task it gets from a
        connector it does not own is an entry of its own (cached bytes), and its tasks are the
        slice ``[first::M]`` of all tasks in order (task k goes to member (C + k) mod M). A
        task of a connector the member owns joins that connector's entry instead.
        """
        connectors = tables.sorted_names
        offsets = tables.task_offsets
        entries = tables.task_entries()
        c_total = len(connectors)
        m_count = len(sorted_members)
        index = {m: i for i, m in enumerate(sorted_members)}
        pack = struct.pack
        int4 = _I.pack
        assignments: dict[str, bytes] = {}
        builders = {}
        for member in order:
            mi = index[member]
            first = (mi - c_total) % m_count
            stream = entries[first::m_count]
            own_ci = range(mi, c_total, m_count)
            if not own_ci:
                assignments[member] = b"".join((header, int4(len(stream)), *stream))
            else:
                # the own connector's task (if any) is position k ≡ first (mod M) of its range
                own_entries: dict[str, bytes] = {}
                merged: list[int] = []
                for ci in own_ci:
                    name = connectors[ci]
                    base = offsets[ci]
                    k = base + (first - base) % m_count
                    if k < offsets[ci + 1]:
                        own_entries[name] = string_chunk(name) + pack(">iii", 2, -1, k - base)
                        merged.append((k - first) // m_count)
                    else:
                        own_entries[name] = connector_entry(name)
                for i in reversed(merged):
                    del stream[i]
                names = list(own_entries)
                if len(names) > 1:
                    names = connector_hash_order(names, presized_capacity(len(names)))
                assignments[member] = (
                    header
                    + int4(len(names) + len(stream))
                    + b"".join([own_entries[c] for c in names])
                    + b"".join(stream)
                )
            builders[member] = _decoder(leader_id, leader_url, offset, tables, own_ci, mi, m_count)
        return AssignmentRound(assignments, LazyDecoded(builders), 0, NO_ERROR, offset, snapshot)


def _decoder(
    leader_id: str,
    leader_url: str,
    offset: int,
    tables: SnapshotTables,
    own_ci: Sequence[int],
    mi: int,
    m_count: int,
) -> Callable[[], ConnectAssignment]:
    """A builder of what member ``mi`` (of ``m_count``, in sorted order) decodes."""
    return partial(_decoded, leader_id, leader_url, offset, tables, own_ci, mi, m_count)


def _decoded(
    leader_id: str,
    leader_url: str,
    offset: int,
    tables: SnapshotTables,
    own_ci: Sequence[int],
    mi: int,
    m_count: int,
) -> ConnectAssignment:
    connectors = tables.sorted_names
    counts = tables.connectors
    offsets = tables.task_offsets
    c_total = len(connectors)
    names = [connectors[ci] for ci in own_ci]
    wire_conns = connector_hash_order(names, presized_capacity(len(names))) if names else []
    by_conn: dict[str, list[int]] = {c: [] for c in wire_conns}
    for ci, name in enumerate(connectors):
        n = counts[name]
        first = (mi - (c_total + offsets[ci]) % m_count) % m_count
        if first < n:
            by_conn.setdefault(name, []).extend(range(first, n, m_count))
    tasks = tuple(ConnectorTaskId(c, t) for c, ts in by_conn.items() for t in ts)
    return ConnectAssignment(0, NO_ERROR, leader_id, leader_url, offset, tuple(wire_conns), tasks)
