"""Kafka Connect's stop-the-world round-robin assignor (protocol ``default``, v0).

Kafka: ``EagerAssignor.performAssignment`` (connect.md §3). Stateless between rounds.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from protocol.connect import (
    CONFIG_MISMATCH,
    NO_ERROR,
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
)
from protocol.java import java_sorted_strings, presized_capacity

from ._wire import (
    assignment_header,
    connector_hash_order,
    read_member_state,
    string_chunk,
)
from .base import AssignmentRound, ConfigSnapshot, LazyDecoded, leader_config_offset

__all__ = ["EagerAssignor"]

_I = struct.Struct(">i")
_ONE = _I.pack(1)
_CONNECTOR_ONLY = _ONE + _I.pack(-1)


def _check_members(leader_id: str, members: Sequence[tuple[str, bytes]]) -> None:
    if not members:
        raise ValueError("perform_assignment needs at least one member")
    if leader_id not in {m for m, _ in members}:
        raise ValueError(f"leader {leader_id!r} is not among the members")


class EagerAssignor:
    """Round-robin assignor of the eager protocol (Kafka ``EagerAssignor``).

    Every round assigns everything from scratch: members sorted by id (Java String order), one
    circular iterator over them hands out all connectors (sorted) and then, without resetting,
    every task (connectors in order, task numbers ascending). Every member gets a v0 assignment,
    whatever ``protocol`` says (Kafka runs this assignor only for ``default``).
    """

    name = "eager"

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
        _check_members(leader_id, members)
        states = {m: read_member_state(md) for m, md in members}
        max_offset = max(s.config_offset for s in states.values())
        leader_url = states[leader_id].url
        order = [m for m, _ in members]
        checked = leader_config_offset(max_offset, snapshot, refresh_snapshot)
        if checked is None:
            header = assignment_header(0, CONFIG_MISMATCH, leader_id, leader_url, max_offset)
            data = header + _I.pack(0)
            empty = ConnectAssignment(0, CONFIG_MISMATCH, leader_id, leader_url, max_offset)
            return AssignmentRound(
                {m: data for m in order},
                LazyDecoded({m: (lambda: empty) for m in order}),
                0,
                CONFIG_MISMATCH,
                max_offset,
                None,
            )
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
        connectors = snapshot.connector_names()
        counts = snapshot.connectors
        c_total = len(connectors)

        # connectors: connector j goes to member j mod M
        own: list[list[int]] = [[] for _ in range(m_count)]
        for j in range(c_total):
            own[j % m_count].append(j)

        # tasks: the k-th task overall goes to member (C + k) mod M; member m's tasks of one
        # connector form range(first, n, M). runs[m] lists (connector index, first) in order.
        runs: list[list[tuple[int, int]]] = [[] for _ in range(m_count)]
        pos = c_total % m_count
        for ci in range(c_total):
            n = counts[connectors[ci]]
            if n <= 0:
                continue
            if n <= m_count:
                end = pos + n
                if end <= m_count:
                    for t, m in enumerate(range(pos, end)):
                        runs[m].append((ci, t))
                else:
                    for t in range(n):
                        runs[(pos + t) % m_count].append((ci, t))
            else:
                for d in range(m_count):
                    runs[(pos + d) % m_count].append((ci, d))
            pos = (pos + n) % m_count

        chunks = [string_chunk(c) for c in connectors]
        int4 = _I.pack

        assignments: dict[str, bytes] = {}
        builders = {}
        index = {m: i for i, m in enumerate(sorted_members)}
        for member in order:
            mi = index[member]
            own_ci = own[mi]
            member_runs = runs[mi]
            parts: list[bytes] = []
            entry_count = 0
            if own_ci:
                # connector entries in HashSet order, each absorbing that connector's tasks
                own_set = set(own_ci)
                run_of = {ci: first for ci, first in member_runs if ci in own_set}
                names = [connectors[ci] for ci in own_ci]
                ci_of = {connectors[ci]: ci for ci in own_ci}
                for name in connector_hash_order(names, presized_capacity(len(names))):
                    ci = ci_of[name]
                    first = run_of.get(ci)
                    if first is None:
                        parts.append(chunks[ci] + _CONNECTOR_ONLY)
                    else:
                        values = [-1, *range(first, counts[name], m_count)]
                        parts.append(
                            chunks[ci] + struct.pack(f">i{len(values)}i", len(values), *values)
                        )
                    entry_count += 1
                member_runs_rest = [r for r in member_runs if r[0] not in own_set]
            else:
                member_runs_rest = member_runs
            for ci, first in member_runs_rest:
                n = counts[connectors[ci]]
                if first + m_count >= n:  # a single task from this connector
                    parts.append(chunks[ci] + _ONE + int4(first))
                else:
                    values = range(first, n, m_count)
                    packed = struct.pack(f">i{len(values)}i", len(values), *values)
                    parts.append(chunks[ci] + packed)
            entry_count += len(member_runs_rest)
            assignments[member] = header + _I.pack(entry_count) + b"".join(parts)
            builders[member] = _decoder(
                leader_id, leader_url, offset, connectors, counts, own_ci, member_runs, m_count
            )
        return AssignmentRound(assignments, LazyDecoded(builders), 0, NO_ERROR, offset, snapshot)


def _decoder(
    leader_id: str,
    leader_url: str,
    offset: int,
    connectors: list[str],
    counts: dict[str, int],
    own_ci: list[int],
    runs: list[tuple[int, int]],
    m_count: int,
) -> Callable[[], ConnectAssignment]:
    def build() -> ConnectAssignment:
        names = [connectors[ci] for ci in own_ci]
        wire_conns = connector_hash_order(names, presized_capacity(len(names))) if names else []
        by_conn: dict[str, list[int]] = {c: [] for c in wire_conns}
        for ci, first in runs:
            name = connectors[ci]
            by_conn.setdefault(name, []).extend(range(first, counts[name], m_count))
        tasks = tuple(ConnectorTaskId(c, t) for c, ts in by_conn.items() for t in ts)
        return ConnectAssignment(
            0, NO_ERROR, leader_id, leader_url, offset, tuple(wire_conns), tasks
        )

    return build
