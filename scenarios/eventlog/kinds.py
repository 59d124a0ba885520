"""The event-log record kinds as msgspec Structs (the union is in :mod:`.records`).

The log itself stays a list of dicts (:mod:`scenarios.eventlog.log`); these Structs are its
closed schema (log_version 1). Every record is ``t_ms`` (virtual ms), ``seq``, ``kind``, then
the kind's fields in the order the emitters write them. A field that some records of a kind
carry and others do not defaults to :data:`msgspec.UNSET`, so an absent key stays absent and
an explicit ``null`` stays ``null`` when a record is re-encoded (:func:`record_to_dict`).
The Streams-only kinds are in :mod:`.kinds_streams`. Kinds that Connect and Kafka Streams
both write with different payloads (``run_start``,
``member_start``, ``step``, ``assignment``) have the union of both apps' fields, in an order
that is a common super-sequence of the two. ``docs/event-log.md`` says what each kind means;
``docs/event-log.schema.json`` is :func:`log_schema`'s output.

Emitters: ``coordinator/`` (``Log(...)``), ``members/worker.py`` and
``members/streams_client.py`` (``self._log(...)``), ``scenarios/sim/*`` (``log.emit(...)``),
the checkers in ``scenarios/check`` (``violation`` payloads).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "Assignment",
    "Assignor",
    "AssignorInputs",
    "Config",
    "ConfigView",
    "CoordinatorFound",
    "CoordinatorUnknown",
    "Fault",
    "Generation",
    "GroupLoaded",
    "GroupState",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "RebalanceHeartbeat",
    "CompletingHeartbeat",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LateRequest",
    "LeaveGroup",
    "MemberAdded",
    "MemberConfig",
    "MemberCrash",
    "MemberFatal",
    "MemberRemoved",
    "MemberReplaced",
    "MemberStart",
    "MemberStop",
    "Phase",
    "Revoke",
    "RunEnd",
    "RunStart",
    "StaticPlacement",
    "Step",
    "StreamsTasks",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TimerFired",
    "Violation",
    "Work",
]

_CONFIG = {"forbid_unknown_fields": True, "omit_defaults": True, "kw_only": True}


class _Part(msgspec.Struct, **_CONFIG):  # type: ignore[call-arg,misc]
    """A nested object of a record (closed: unknown keys are rejected)."""


class _Rec(msgspec.Struct, tag_field="kind", **_CONFIG):  # type: ignore[call-arg,misc]
    """The envelope every record has: virtual time (ms) and position in the log."""

    t_ms: int
    seq: int


# ----------------------------------------------------------------------------- nested objects


class StreamsTasks(_Part, kw_only=True):
    """``run_start.tasks`` of a Streams run: task ids ``"<subtopology>_<partition>"``."""

    stateful: list[str]
    stateless: list[str]


class MemberConfig(_Part, kw_only=True):
    """``member_start.config``: the settings that shape the member (Connect worker: its
    ``connect.protocol``, KIP-987 ``static.*`` and the timing settings of
    ``members.config.LOGGED_TIMING_KEYS`` that differ from Kafka's defaults; Streams client:
    process id, threads, rack, tags, a KIP-345 ``group.instance.id`` and a non-default
    ``latest_supported_version``)."""

    connect_protocol: str | UnsetType = msgspec.field(default=UNSET, name="connect.protocol")
    static_connectors: list[str] | UnsetType = msgspec.field(
        default=UNSET, name="static.connectors"
    )
    static_tasks: list[str] | UnsetType = msgspec.field(default=UNSET, name="static.tasks")
    process_id: str | UnsetType = UNSET
    num_stream_threads: int | UnsetType = msgspec.field(default=UNSET, name="num.stream.threads")
    client_rack: str | UnsetType = msgspec.field(default=UNSET, name="client.rack")
    client_tags: dict[str, str] | UnsetType = msgspec.field(default=UNSET, name="client.tags")
    group_instance_id: str | UnsetType = msgspec.field(default=UNSET, name="group.instance.id")
    latest_supported_version: int | UnsetType = UNSET
    # consumer groups
    partition_assignment_strategy: list[str] | UnsetType = msgspec.field(
        default=UNSET, name="partition.assignment.strategy"
    )
    # Connect: timing settings that differ from Kafka's defaults (LOGGED_TIMING_KEYS)
    scheduled_rebalance_max_delay_ms: int | UnsetType = msgspec.field(
        default=UNSET, name="scheduled.rebalance.max.delay.ms"
    )
    session_timeout_ms: int | UnsetType = msgspec.field(default=UNSET, name="session.timeout.ms")
    heartbeat_interval_ms: int | UnsetType = msgspec.field(
        default=UNSET, name="heartbeat.interval.ms"
    )
    rebalance_timeout_ms: int | UnsetType = msgspec.field(
        default=UNSET, name="rebalance.timeout.ms"
    )
    worker_sync_timeout_ms: int | UnsetType = msgspec.field(
        default=UNSET, name="worker.sync.timeout.ms"
    )
    worker_unsync_backoff_ms: int | UnsetType = msgspec.field(
        default=UNSET, name="worker.unsync.backoff.ms"
    )
    connector_start_ms: int | UnsetType = msgspec.field(
        default=UNSET, name="groupsim.connector.start.ms"
    )
    connector_stop_ms: int | UnsetType = msgspec.field(
        default=UNSET, name="groupsim.connector.stop.ms"
    )
    task_start_ms: int | UnsetType = msgspec.field(default=UNSET, name="groupsim.task.start.ms")
    task_stop_ms: int | UnsetType = msgspec.field(default=UNSET, name="groupsim.task.stop.ms")
    config_read_lag_ms: int | UnsetType = msgspec.field(
        default=UNSET, name="groupsim.config.read.lag.ms"
    )


class Work(_Part, kw_only=True):
    """Connectors and task ids (``"<connector>-<n>"``) of one worker."""

    connectors: list[str]
    tasks: list[str]


class StaticPlacement(_Part, kw_only=True):
    """KIP-987 step 6: ``job`` went to ``worker``, chosen by ``rule`` among ``candidates``."""

    job: str
    kind: Literal["connector", "task"]
    worker: str
    candidates: list[str]
    rule: str


class ConfigView(_Part, kw_only=True):
    """A worker's view of the config topic (Kafka ``ClusterConfigState``): its ``offset`` and
    each connector's task count."""

    offset: int
    connectors: dict[str, int]


class AssignorInputs(_Part, kw_only=True):
    """Everything a Connect leader's assignor read besides its own state (what
    ``groupsim check --referee kafka`` replays through Kafka's ``performAssignment``):
    the leader's own ``leader_id``, ``members`` as ``[member id, base64 JoinGroup metadata]``
    in JoinGroup order, the cached ``snapshot`` (``WorkerCoordinator.configSnapshot()``),
    ``fresh_snapshot`` only when ``configFreshSnapshot()`` would differ from it,
    ``last_completed_generation`` and the leader's ``scheduled.rebalance.max.delay.ms``.
    The time read is the record's ``t_ms``."""

    leader_id: str
    members: list[list[str]]
    snapshot: ConfigView
    fresh_snapshot: ConfigView | UnsetType = UNSET
    last_completed_generation: int
    max_delay_ms: int


# ----------------------------------------------------------------------------- run


class RunStart(_Rec, tag="run_start", kw_only=True):
    """First record. Streams runs add ``app: "streams"`` and ``tasks``, consumer-group runs
    ``app: "consumer"`` and ``topics``; a ``groupsim serve``
    log adds ``mode: "serve"``, the listen ``host`` and ``port`` (0: an ephemeral port, the
    bound one is in ``listening``) and ``topics`` ({name: partition count}); a ``groupsim
    record`` log has ``mode: "record"`` and the proxy's listen address (its topics are the
    real cluster's, not listed)."""

    log_version: int
    scenario: str
    seed: int
    app: Literal["streams", "consumer"] | UnsetType = UNSET
    mode: Literal["serve", "record"] | UnsetType = UNSET
    host: str | UnsetType = UNSET
    port: int | UnsetType = UNSET
    topics: dict[str, int] | UnsetType = UNSET
    workers: list[str]
    connectors: dict[str, int]
    tasks: StreamsTasks | UnsetType = UNSET


class Phase(_Rec, tag="phase", kw_only=True):
    name: str


class Step(_Rec, tag="step", kw_only=True):
    """A timeline step; which parameters it has depends on ``action`` (Connect steps end with
    ``origin``, the step's key path in the scenario file; Streams steps have none). ``config``
    is the step's own worker-config table as written in the scenario."""

    action: str
    name: str | UnsetType = UNSET
    member: str | UnsetType = UNSET
    config: dict[str, Any] | UnsetType = UNSET
    down_ms: int | UnsetType = UNSET
    clean: bool | UnsetType = UNSET
    connector: str | UnsetType = UNSET
    tasks: int | UnsetType = UNSET
    duration_ms: int | UnsetType = UNSET
    direction: str | UnsetType = UNSET
    probability: float | UnsetType = UNSET
    extra_ms: int | UnsetType = UNSET
    stall_ms: int | UnsetType = UNSET
    request: str | UnsetType = UNSET
    delay_ms: int | UnsetType = UNSET
    wipe_state: bool | UnsetType = UNSET
    latest_supported_version: int | UnsetType = UNSET
    leave_group: bool | UnsetType = UNSET
    origin: str | UnsetType = UNSET


class Config(_Rec, tag="config", kw_only=True):
    """A config-topic write: the connectors ``{name: task count}`` after it."""

    offset: int
    connectors: dict[str, int]
    session_key_id: int | UnsetType = UNSET


class Fault(_Rec, tag="fault", kw_only=True):
    fault: str
    member: str | UnsetType = UNSET
    duration_ms: int | UnsetType = UNSET
    direction: str | UnsetType = UNSET
    probability: float | UnsetType = UNSET
    extra_ms: int | UnsetType = UNSET
    request: str | UnsetType = UNSET
    delay_ms: int | UnsetType = UNSET
    until_ms: int | UnsetType = UNSET
    stall_ms: int | UnsetType = UNSET
    down_ms: int | UnsetType = UNSET


class LateRequest(_Rec, tag="late_request", kw_only=True):
    """A request held by a ``delay_request`` fault reaches the coordinator (sent at
    ``sent_ms``, held ``delay_ms``). ``request``: ``heartbeat``, ``sync_group``,
    ``join_group`` or ``leave_group``; ``generation``: the request's generation (SyncGroup,
    Heartbeat); ``error``: the coordinator's answer, ``null`` while it is parked (a JoinGroup
    or SyncGroup answered later); ``dropped``: the member no longer waits for it (it sent
    another request of the same type, or stopped), so the answer is not delivered."""

    member: str
    request: str
    generation: int | UnsetType = UNSET
    sent_ms: int
    delay_ms: int
    error: str | None
    dropped: bool


class RunEnd(_Rec, tag="run_end", kw_only=True):
    """Last record. A ``groupsim serve`` log gives each group's final state (``groups``, in
    group-id order)."""

    groups: list[str] | UnsetType = UNSET


# ----------------------------------------------------------------------------- coordinator


class _CoordRec(_Rec, kw_only=True):
    """A coordinator record (a ``Log`` effect of ``coordinator/``). ``groupsim serve``
    runs one coordinator per group id and tags its records with ``group``, right after
    ``kind``; a simulated run has one group and leaves it out."""

    group: str | UnsetType = UNSET


class GroupState(_CoordRec, tag="group_state", kw_only=True):
    """A ``ClassicGroupState`` transition. A move to PreparingRebalance carries the group's
    rebalance timeout as the join phase begins (``rebalance_timeout_ms``: the members'
    maximum, ``ClassicGroup#rebalanceTimeoutMs``, 0 without members) and, from Empty,
    ``initial_rebalance_delay_ms`` (``group.initial.rebalance.delay.ms``)."""

    from_: str = msgspec.field(name="from")
    to: str
    generation: int
    rebalance_timeout_ms: int | UnsetType = UNSET
    initial_rebalance_delay_ms: int | UnsetType = UNSET


class Generation(_CoordRec, tag="generation", kw_only=True):
    """``initNextGeneration`` (``protocol``/``leader``/``leader_id`` null when Empty);
    ``rebalance_timeout_ms`` (with members): how long its members have to send SyncGroup
    (``schedulePendingSync``, the group's rebalance timeout); ``not_rejoined`` (only when
    some): the member ids of KIP-345 static members the join completed without."""

    generation: int
    protocol: str | None
    leader: str | None
    leader_id: str | None
    members: list[str]
    member_ids: list[str]
    rebalance_timeout_ms: int | UnsetType = UNSET
    not_rejoined: list[str] | UnsetType = UNSET


class GroupLoaded(_CoordRec, tag="group_loaded", kw_only=True):
    generation: int
    protocol: str | None
    state: str
    leader: str | None
    leader_id: str | None
    members: list[str]
    member_ids: list[str]


class MemberAdded(_CoordRec, tag="member_added", kw_only=True):
    member: str
    member_id: str


class MemberRemoved(_CoordRec, tag="member_removed", kw_only=True):
    """``ClassicGroup#remove``; ``session_timeout_ms`` and ``rebalance_timeout_ms`` are the
    member's, from its latest JoinGroup (virtual ms)."""

    member: str
    member_id: str
    reason: str
    session_timeout_ms: int | UnsetType = UNSET
    rebalance_timeout_ms: int | UnsetType = UNSET


class MemberReplaced(_CoordRec, tag="member_replaced", kw_only=True):
    """A KIP-345 static member rejoined with an unknown member id and took over the place of
    its old member id (``GroupMetadataManager#updateStaticMemberThenRebalanceOrCompleteJoin``,
    ``ClassicGroup#replaceStaticMember``): a Streams client with ``group.instance.id``, or a
    real client of ``groupsim serve``."""

    member: str
    member_id: str
    old_member_id: str


# ----------------------------------------------------------------------------- members
# Member records end with ``member``, the member's scenario name.


class MemberStart(_Rec, tag="member_start", kw_only=True):
    config: MemberConfig
    state_dir: list[str] | UnsetType = UNSET
    member: str


class MemberStop(_Rec, tag="member_stop", kw_only=True):
    member: str


class MemberCrash(_Rec, tag="member_crash", kw_only=True):
    reason: str | UnsetType = UNSET
    member: str


class MemberFatal(_Rec, tag="member_fatal", kw_only=True):
    error: str
    member: str


class JoinGroupRequest(_Rec, tag="join_group_request", kw_only=True):
    member_id: str
    protocols: list[str]
    reason: str
    member: str


class JoinGroupResponse(_Rec, tag="join_group_response", kw_only=True):
    member_id: str
    error: str
    generation: int
    protocol: str | None
    leader_id: str
    is_leader: bool
    member: str


class SyncGroupRequest(_Rec, tag="sync_group_request", kw_only=True):
    member_id: str
    generation: int
    is_leader: bool
    member: str


class SyncGroupResponse(_Rec, tag="sync_group_response", kw_only=True):
    member_id: str
    generation: int
    error: str
    member: str


class HeartbeatRequest(_Rec, tag="heartbeat_request", kw_only=True):
    member_id: str
    generation: int
    member: str


class HeartbeatResponse(_Rec, tag="heartbeat_response", kw_only=True):
    member_id: str
    generation: int
    error: str
    member: str


class RebalanceHeartbeat(_CoordRec, tag="rebalance_heartbeat", kw_only=True):
    member_id: str
    generation: int
    group_generation: int
    error: str | None
    member: str


class CompletingHeartbeat(_CoordRec, tag="completing_heartbeat", kw_only=True):
    """A Heartbeat reached the group in CompletingRebalance (the wire tap,
    ``scenarios/sim/wire_tap.py``): the fields of ``rebalance_heartbeat``."""

    member_id: str
    generation: int
    group_generation: int
    error: str | None
    member: str


class LeaveGroup(_Rec, tag="leave_group", kw_only=True):
    member_id: str
    reason: str
    member: str


class TimerFired(_Rec, tag="timer_fired", kw_only=True):
    key: str
    member: str


class CoordinatorUnknown(_Rec, tag="coordinator_unknown", kw_only=True):
    member_id: str
    reason: str
    member: str


class CoordinatorFound(_Rec, tag="coordinator_found", kw_only=True):
    member_id: str
    member: str


class Assignor(_Rec, tag="assignor", kw_only=True):
    """The Connect leader ran its assignor; ``assigned``/``revoked`` keyed by member id."""

    generation: int
    protocol: str
    assignor: str
    error: int
    delay_ms: int
    config_offset: int
    assigned: dict[str, Work]
    revoked: dict[str, Work]
    static_placements: list[StaticPlacement] | UnsetType = UNSET
    unassigned_static_jobs: Work | UnsetType = UNSET
    # incremental assignors, when the round found work lost (KIP-415's handleLostAssignments)
    lost: Work | UnsetType = UNSET
    previous_members_present: bool | UnsetType = UNSET
    # the leader's candidateWorkersForReassignment before the round (when non-empty, with lost)
    candidates: list[str] | UnsetType = UNSET
    # the leader's inputs, for the Kafka referee (scenarios/referee)
    inputs: AssignorInputs | UnsetType = UNSET
    member: str


_CONNECT_ASSIGNMENT = (
    "config_offset",
    "connectors",
    "tasks",
    "revoked_connectors",
    "revoked_tasks",
    "delay_ms",
)
_STREAMS_ASSIGNMENT = ("active", "standby", "revoked", "next_rebalance_ms")


class Assignment(_Rec, tag="assignment", kw_only=True):
    """A member applies its SyncGroup assignment: Connect's fields (``config_offset`` …
    ``delay_ms``) or Streams' (``active`` … ``next_rebalance_ms``), all of one and none of
    the other."""

    member_id: str
    generation: int
    protocol: str
    leader_id: str
    error: int
    config_offset: int | UnsetType = UNSET
    connectors: list[str] | UnsetType = UNSET
    tasks: list[str] | UnsetType = UNSET
    revoked_connectors: list[str] | UnsetType = UNSET
    revoked_tasks: list[str] | UnsetType = UNSET
    delay_ms: int | UnsetType = UNSET
    active: list[str] | UnsetType = UNSET
    standby: list[str] | UnsetType = UNSET
    revoked: list[str] | UnsetType = UNSET
    next_rebalance_ms: int | None | UnsetType = UNSET
    member: str

    def __post_init__(self) -> None:
        connect = [getattr(self, f) is not UNSET for f in _CONNECT_ASSIGNMENT]
        streams = [getattr(self, f) is not UNSET for f in _STREAMS_ASSIGNMENT]
        if not ((all(connect) and not any(streams)) or (all(streams) and not any(connect))):
            raise ValueError(
                "expected either the Connect fields "
                f"({', '.join(_CONNECT_ASSIGNMENT)}) or the Streams fields "
                f"({', '.join(_STREAMS_ASSIGNMENT)})"
            )


class Revoke(_Rec, tag="revoke", kw_only=True):
    generation: int
    connectors: list[str]
    tasks: list[str]
    reason: str
    member: str


# ----------------------------------------------------------------------------- checks


class Violation(_Rec, tag="violation", kw_only=True):
    """An invariant failed. Which items it names depends on ``invariant`` (see
    ``scenarios/check/invariants.py`` and the end-of-run checks); ``cause_seq`` is set for
    safety invariants, ``known_issue`` when the violation is a known upstream behaviour."""

    invariant: str
    detail: str
    from_: str | UnsetType = msgspec.field(default=UNSET, name="from")
    to: str | UnsetType = UNSET
    previous: str | None | UnsetType = UNSET
    task: str | UnsetType = UNSET
    connector: str | UnsetType = UNSET
    job: str | UnsetType = UNSET  # KIP-987 static placement: the job (connector or task)
    tasks: list[str] | UnsetType = UNSET
    connectors: list[str] | UnsetType = UNSET
    task_counts: dict[str, int] | UnsetType = UNSET
    connector_counts: dict[str, int] | UnsetType = UNSET
    role: str | UnsetType = UNSET
    member: str | UnsetType = UNSET
    member_id: str | UnsetType = UNSET
    group: str | None | UnsetType = UNSET  # the group the rule broke in (served logs name it)
    owners: list[str] | UnsetType = UNSET
    members: list[str] | UnsetType = UNSET  # static-member-kept: the gone static members
    generation: int | None | UnsetType = UNSET
    assignment_generation: int | None | UnsetType = UNSET
    group_generation: int | None | UnsetType = UNSET
    leader_id: str | UnsetType = UNSET
    group_leader_id: str | None | UnsetType = UNSET
    known_issue: str | UnsetType = UNSET
    # scheduled_delay (scenarios/check/scheduled_delay.py)
    delay_ms: int | UnsetType = UNSET
    max_delay_ms: int | UnsetType = UNSET
    scheduled_ms: int | UnsetType = UNSET
    # quiet_period_balance (scenarios/check/quiet_periods.py)
    quiet_from_ms: int | UnsetType = UNSET
    checked_at_ms: int | UnsetType = UNSET
    bound_ms: int | UnsetType = UNSET
    # the Kafka referee's coordinator answers (scenarios/referee/coordinator.py)
    referee: str | UnsetType = UNSET
    api: str | UnsetType = UNSET
    differs: str | UnsetType = UNSET
    cause_seq: int | UnsetType = UNSET
