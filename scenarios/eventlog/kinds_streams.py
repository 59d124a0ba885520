"""The event-log record kinds only Kafka Streams runs write (docs/event-log.md, "Kafka Streams
runs"; emitted by ``members/streams_client.py``). Shared kinds are in :mod:`.kinds`."""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from scenarios.eventlog.kinds import _Part, _Rec

__all__ = [
    "ActiveTaskRunning",
    "ActiveTaskStart",
    "ActiveTaskStopped",
    "AssignmentCost",
    "ProbingRebalanceScheduled",
    "StandbyTaskCaughtUp",
    "StandbyTaskStart",
    "StandbyTaskStopped",
    "StreamsAssignment",
    "StreamsAssignorClient",
    "StreamsAssignorInputs",
    "StreamsAssignorTasks",
    "StreamsClientDecision",
    "StreamThreadStall",
    "SubscriptionVersionUpdate",
]


class StreamsClientDecision(_Part, kw_only=True):
    """One client's part of a ``streams_assignment``: task ids per role."""

    member_id: str
    active: list[str]
    standby: list[str]
    warmups: list[str]
    withheld: list[str]


class AssignmentCost(_Part, kw_only=True):
    """Rack-aware assignment cost before and after the optimisation (KIP-925)."""

    before: int
    after: int | None


class StreamsAssignorClient(_Part, kw_only=True):
    """One client as the leader's task assignor read it (Kafka ``ClientState``): process
    ``id``, ``capacity`` (stream threads), ``client.rack``, client ``tags`` and the tasks it
    reported from its previous generation."""

    id: str
    capacity: int
    rack: str | None
    tags: dict[str, str]
    prev_active: list[str]
    prev_standby: list[str]


class StreamsAssignorTasks(_Part, kw_only=True):
    """The topology as the task assignor read it: task ids, subtopology → tasks, and per task
    the racks of each source / changelog partition (only where known, KIP-925)."""

    stateful: list[str]
    stateless: list[str]
    subtopologies: dict[str, list[str]]
    task_source_partition_racks: dict[str, list[list[str]]]
    task_changelog_partition_racks: dict[str, list[list[str]]]


class StreamsAssignorInputs(_Part, kw_only=True):
    """Everything a Streams leader's task assignor read besides the lags (the record's
    ``lags``): a ``groupsim assign`` ``high_availability`` document without ``task_lags``
    (docs/cli-contracts.md), which ``groupsim check --referee kafka`` replays through Kafka's
    ``HighAvailabilityTaskAssignor``. ``config`` is keyed by Kafka's config names."""

    config: dict[str, int | str | list[str] | None]
    clients: list[StreamsAssignorClient]
    tasks: StreamsAssignorTasks


# ----------------------------------------------------------------------------- Kafka Streams


class SubscriptionVersionUpdate(_Rec, tag="subscription_version_update", kw_only=True):
    from_version: int
    to_version: int
    assignment_version: int
    commonly_supported_version: int
    member: str


class StreamsAssignment(_Rec, tag="streams_assignment", kw_only=True):
    """The Streams leader ran the assignor. ``clients`` and ``lags`` are keyed by process
    id; a lag is records behind, −2 for a running active, −3 unknown.
    ``acceptable_recovery_lag``: the leader's setting, by which a lag counts as caught up."""

    generation: int
    version: int
    commonly_supported_version: int
    version_probing: bool
    clients: dict[str, StreamsClientDecision]
    lags: dict[str, dict[str, int]]
    acceptable_recovery_lag: int | UnsetType = UNSET
    probing_rebalance_needed: bool
    active_movements: int
    standby_movements: int
    followup_for_revocation: bool
    cost: AssignmentCost | UnsetType = UNSET
    notes: list[str] | UnsetType = UNSET
    # the leader's inputs, for the Kafka referee (scenarios/referee)
    inputs: StreamsAssignorInputs | UnsetType = UNSET
    # Kafka's warm-up map (process label -> task ids given a warm-up by an active movement;
    # the standby-movement copies ``clients[*].warmups`` also lists are not in it)
    kafka_warmups: dict[str, list[str]] | UnsetType = UNSET
    member: str


class ProbingRebalanceScheduled(_Rec, tag="probing_rebalance_scheduled", kw_only=True):
    generation: int
    at_ms: int
    interval_ms: int
    member: str


class ActiveTaskStart(_Rec, tag="active_task_start", kw_only=True):
    """``lag`` is null for a stateless task."""

    task: str
    generation: int
    lag: int | None
    member: str


class ActiveTaskRunning(_Rec, tag="active_task_running", kw_only=True):
    task: str
    generation: int
    restore_ms: int
    member: str


class ActiveTaskStopped(_Rec, tag="active_task_stopped", kw_only=True):
    task: str
    reason: str
    member: str


class StandbyTaskStart(_Rec, tag="standby_task_start", kw_only=True):
    task: str
    generation: int
    lag: int
    member: str


class StandbyTaskCaughtUp(_Rec, tag="standby_task_caught_up", kw_only=True):
    task: str
    lag: int
    acceptable_recovery_lag: int
    member: str


class StandbyTaskStopped(_Rec, tag="standby_task_stopped", kw_only=True):
    task: str
    reason: str
    member: str


class StreamThreadStall(_Rec, tag="stream_thread_stall", kw_only=True):
    """A ``slow`` fault blocks the client's stream thread for ``stall_ms`` (virtual ms): it
    does not poll, so past ``max.poll.interval.ms`` the heartbeat thread leaves the group
    (``leave_group`` with reason ``poll timeout expired``: ``AbstractCoordinator``'s
    heartbeat thread calls ``maybeLeaveGroup`` when ``pollTimer`` expires) and the client's
    active tasks are closed as lost (``active_task_stopped`` ``lost: poll timeout
    expired``)."""

    stall_ms: int
    member: str
