"""Kafka Streams task assignors, pure and faithful to Kafka (KIP-441, KIP-708, KIP-925).

Public API (everything mutates :class:`ClientState` objects in place):

* model — :class:`TaskId`, :class:`ProcessId`, :class:`ClientState`,
  :class:`AssignmentConfigs`, :class:`StreamsAssignmentError` (a ``ValueError``).
* :func:`assign_high_availability` — ``HighAvailabilityTaskAssignor``.
* :func:`assign_active_task_movements` / :func:`assign_standby_task_movements` —
  ``TaskMovement``.
* :class:`DefaultStandbyTaskAssignor`, :class:`ClientTagAwareStandbyTaskAssignor`,
  :func:`create_standby_assignor` — standby placement.
* :class:`RackAwareTaskAssignor` — rack-aware optimisation; :class:`Graph` — its flow graph.

The leader's ``StreamsPartitionAssignor`` that drives them is in
:mod:`members.assignors.streams.partition_assignor` (import it from there: it reads
:mod:`members.streams_state`, which imports this package, so it is not re-exported here).
"""

from __future__ import annotations

from .graph import Graph
from .high_availability import (
    HighAvailabilityResult,
    assign_high_availability,
    balance_tasks_over_threads,
)
from .model import (
    JAVA_LONG_MAX,
    LATEST_OFFSET,
    UNKNOWN_OFFSET_SUM,
    AssignmentConfigs,
    ClientState,
    ProcessId,
    StreamsAssignmentError,
    TaskId,
    validate_client_tags,
)
from .rack_aware import RackAwareTaskAssignor
from .standby import (
    ClientTagAwareStandbyTaskAssignor,
    DefaultStandbyTaskAssignor,
    StandbyTaskAssignor,
    create_standby_assignor,
)
from .task_movement import (
    WarmupBudget,
    assign_active_task_movements,
    assign_standby_task_movements,
    caught_up_clients,
    clients_by_lag,
)

__all__ = [
    "JAVA_LONG_MAX",
    "LATEST_OFFSET",
    "UNKNOWN_OFFSET_SUM",
    "AssignmentConfigs",
    "ClientState",
    "ProcessId",
    "StreamsAssignmentError",
    "TaskId",
    "validate_client_tags",
    "HighAvailabilityResult",
    "assign_high_availability",
    "balance_tasks_over_threads",
    "WarmupBudget",
    "assign_active_task_movements",
    "assign_standby_task_movements",
    "caught_up_clients",
    "clients_by_lag",
    "StandbyTaskAssignor",
    "DefaultStandbyTaskAssignor",
    "ClientTagAwareStandbyTaskAssignor",
    "create_standby_assignor",
    "RackAwareTaskAssignor",
    "Graph",
]
