"""Fast paths for the bytes a Connect leader reads and writes, plus Java orderings.

The leader decodes every member's JoinGroup metadata and encodes one SyncGroup assignment per
member on every round. At 1,000 workers × 100,000 tasks the general codec
(:mod:`protocol.connect_codec`) would create one object per task; these helpers read and write
the same bytes with per-connector chunks instead. They are an optimisation only: the tests check
them byte for byte against the codec, and anything unusual (truncated buffers, null arrays,
negative lengths) falls back to the codec so errors and tolerance rules stay Kafka's.

Layouts (Kafka ``ConnectProtocol``, ``IncrementalCooperativeConnectProtocol``): STRING = INT16
length + UTF-8; subscription v1/v2 = version, url, configOffset INT64, allocation
NULLABLE_BYTES (a whole v1/v2 assignment); assignment v0 = version, error, leader, leaderUrl,
configOffset, ARRAY(entry); v1+ adds nullable ARRAY revoked and INT32 delay. An entry =
connector STRING + ARRAY(INT32) where -1 marks the connector itself.

The fast paths live in three modules, one job each: :mod:`._wire_read` (the members'
metadata), :mod:`._wire_write` (the assignments) and :mod:`._wire_order` (the Java orderings
both depend on); this module gathers their names.
"""

from __future__ import annotations

from ._wire_order import (
    cached_string_hash,
    connector_hash_order,
    sorted_connectors,
    sorted_tasks,
    task_hash_order,
)
from ._wire_read import MemberState, read_member_state, reread_member_state, task_ids
from ._wire_write import (
    View,
    assignment_header,
    connector_entries,
    connector_entry,
    encode_assigned,
    encode_assignment_fast,
    encode_entries,
    entries_view,
    int4_table,
    no_revocations_tail,
    revoked_entries,
    string_chunk,
    task_entry,
)

__all__ = [
    "MemberState",
    "read_member_state",
    "reread_member_state",
    "string_chunk",
    "encode_assignment_fast",
    "encode_assigned",
    "no_revocations_tail",
    "connector_entries",
    "sorted_connectors",
    "sorted_tasks",
    "task_hash_order",
    "task_ids",
    "connector_hash_order",
    "cached_string_hash",
    "View",
    "assignment_header",
    "connector_entry",
    "encode_entries",
    "entries_view",
    "int4_table",
    "revoked_entries",
    "task_entry",
]
