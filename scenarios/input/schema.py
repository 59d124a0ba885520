"""The scenario file format, as msgspec Structs (decoded from TOML by
:mod:`scenarios.input.loader`).

Every Struct rejects unknown keys (``forbid_unknown_fields=True``). Kafka settings keep their
Kafka names (``"group.initial.rebalance.delay.ms"``); groupsim's own keys are snake_case.
All times are integer **virtual milliseconds**. Worker settings (``cluster.config``,
``cluster.workers[i].config``, ``timeline[i].config``) are plain tables here: they are checked
by :meth:`members.config.WorkerConfig.from_mapping` in the loader, which owns their names,
types and defaults.

The timeline is a tagged union on ``action``: each action is its own Struct, so a key that
does not belong to an action is an unknown key, and a missing required key is reported by
msgspec with its path. The user-facing description is ``docs/scenario-format.md``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import UNSET, Meta, UnsetType

from protocol.config_values import JAVA_INT_MAX

__all__ = [
    "INT_MAX",
    "ACTIONS",
    "INVARIANTS",
    "NonNegInt",
    "JavaInt",
    "Scenario",
    "CoordinatorSettings",
    "NetworkSettings",
    "Cluster",
    "WorkerEntry",
    "Workload",
    "ConnectorEntry",
    "GenerateConnectors",
    "Expect",
    "ExpectBase",
    "TimelineStep",
    "FaultStep",
    "StepBase",
    "Join",
    "Leave",
    "Crash",
    "Restart",
    "RollingRestart",
    "AddConnector",
    "RemoveConnector",
    "SetTasks",
    "Phase",
    "Partition",
    "Heal",
    "Loss",
    "Latency",
    "Slow",
    "CoordinatorFailover",
    "DelayRequest",
    "DelayedRequest",
    "INT64_MAX",
    "PosMs",
    "LossDirection",
    "FAULT_ACTIONS",
]

#: Java ``Integer.MAX_VALUE``: the bound of every setting Kafka holds in an ``int``.
INT_MAX = JAVA_INT_MAX

#: The largest TOML integer (a signed 64-bit ``long``): the bound of every virtual time.
INT64_MAX = 2**63 - 1

#: A non-negative integer (virtual ms, counts) without a Java-int bound: at most 2^63 − 1, the
#: largest TOML integer (Python's ``tomllib`` reads larger ones; they are rejected here).
NonNegInt = Annotated[int, Meta(ge=0, le=INT64_MAX)]
#: A positive virtual duration (ms): 1 … 2^63 − 1.
PosMs = Annotated[int, Meta(ge=1, le=INT64_MAX)]
#: A count of at least 1 (a 64-bit long).
PositiveCount = Annotated[int, Meta(ge=1, le=INT64_MAX)]
#: A non-negative integer that Kafka holds in a Java ``int`` (task counts, broker settings).
JavaInt = Annotated[int, Meta(ge=0, le=INT_MAX)]
#: A worker name: it becomes the REST host (``http://<name>:8083``) and prefixes member ids.
WorkerName = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
#: A connector name: non-empty; task ids are ``"<connector>-<n>"``.
ConnectorName = Annotated[str, Meta(min_length=1)]

#: Invariant names a violation record can carry (``docs/event-log.md``).
InvariantName = Literal[
    "double_ownership",
    "stale_generation",
    "illegal_transition",
    "foreign_assignment",
    "active_and_standby",
    "liveness",
    "balance",
    "KAFKA-13816",
    "KAFKA-9184",
    "KAFKA-16056",
    "failover-protocol-replay",
    "streams-zombie",
    "consumer-zombie",
    "sticky-unsubscribed-owner",
    "KAFKA-12759",
    "eager-member-cooperative-loop",
    "deleted-not-revoked",
    "static-member-kept",
    # scenarios.check.protocol_checkers
    "generation_regressed",
    "member_generation_regressed",
    "stale_generation_accepted",
    "protocol_mismatch",
    "protocol_vote",
    "leader_changed",
    "active_not_caught_up",
    "static_placement",
    "stale_active_task",
    "scheduled_delay",
    "unexplained_removal",
    "quiet_period_balance",
    # scenarios.sim.runner: the run went over its budget (max_records, CPU seconds)
    "run_budget_exceeded",
    # scenarios.check.contracts
    "revoked_and_reassigned",
    "probing_rebalance_missing",
    "scheduled_delay_not_shared",
    "followup_rebalance_missing",
    "generation_skipped",
    "member_id_not_required",
    "static_rejoin_rebalanced",
    "static_rejoin_not_rebalanced",
    "fenced_member_accepted",
    "heartbeat_not_rebalancing",
    "heartbeat_completing_refused",
    "assignment_recomputed",
    "zombie_owns_work",
    "sync_not_fenced",
    "parked_sync_unanswered",
    "sticky_rack_unmatched",
    # coordinator timers (scenarios.check.coordinator_contracts) and KIP-415's config offset
    "join_phase_overran",
    "join_completed_early",
    "pending_member_kept",
    "pending_member_listed",
    "join_answer_outside_generation",
    "pending_sync_kept",
    "pending_sync_expired_early",
    "config_behind_assignment",
    # scenarios.check.assignment_contracts
    "warmups_over_budget",
    "standby_replicas_missing",
    "standby_tags_not_spread",
    "rack_cost_raised",
    # scenarios.check.connect_contracts
    "revoked_below_floor",
    "revoked_while_balanced",
    "revocation_leaves_excess",
    "lost_work_not_returned",
    "lost_work_dealt_unevenly",
    "new_work_not_least_loaded",
    # scenarios.check.consumer_contracts
    "consumer_assignment_unbalanced",
    "sticky_partitions_moved",
    # scenarios.check.kip_contracts (the issue-23 audit)
    "initial_delay_skipped",
    "range_not_copartitioned",
    "range_rack_unmatched",
    "warmup_on_caught_up_client",
    "scheduled_rejoin_missed",
    "static_member_left",
    # scenarios.check.poll_contracts (KIP-62's poll timer)
    "poll_timer_off_deadline",
    "poll_timeout_not_left",
    "join_timeout_off_bound",
    "leader_not_rejoined",
    "member_id_reused",
    # scenarios.check.answer_contracts (the round-28 audit)
    "sync_unknown_to_member",
    "session_expired_after_heartbeat",
    "member_id_dropped",
    "revoked_without_generation",
    "leader_rejoin_not_rebalanced",
    # scenarios.check.rejoin_contracts
    "followup_rejoin_missed",
    "completing_rejoin_rebalanced",
    "completing_rejoin_not_rebalanced",
    # scenarios.check.coordinator_config_contracts ([coordinator] settings)
    "session_timeout_accepted",
    "session_timeout_refused",
    "max_size_exceeded",
    "max_size_refused_with_room",
    "generation_over_max_size",
    "initial_delay_not_extended",
]
INVARIANTS: tuple[str, ...] = get_args(InvariantName)

#: ``final_protocol`` accepts JoinGroup protocol names and ``connect.protocol`` settings
#: (``eager`` means ``default``).
ProtocolName = Literal["default", "eager", "compatible", "sessioned", "static"]


class _Base(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class CoordinatorSettings(_Base, frozen=True):
    """``[coordinator]``: broker settings, Kafka names (``GroupCoordinatorConfig``).

    Only the keys written in the file are set; the rest are ``msgspec.UNSET`` and take the
    defaults of :class:`coordinator.config.CoordinatorConfig`, which owns them. The Struct
    reads like a mapping of the keys that are set (:meth:`items`, :meth:`to_mapping`), so
    ``CoordinatorConfig.from_mapping(scenario.coordinator)`` works; the loader validates it
    that way and keeps the result in ``LoadedScenario.coordinator_config``.
    """

    group_initial_rebalance_delay_ms: JavaInt | UnsetType = msgspec.field(
        default=UNSET, name="group.initial.rebalance.delay.ms"
    )
    group_min_session_timeout_ms: JavaInt | UnsetType = msgspec.field(
        default=UNSET, name="group.min.session.timeout.ms"
    )
    group_max_session_timeout_ms: JavaInt | UnsetType = msgspec.field(
        default=UNSET, name="group.max.session.timeout.ms"
    )
    group_max_size: JavaInt | UnsetType = msgspec.field(default=UNSET, name="group.max.size")
    new_member_join_timeout_ms: JavaInt | UnsetType = msgspec.field(
        default=UNSET, name="groupsim.new.member.join.timeout.ms"
    )
    protocol_tie_break: Literal["java", "first_listed"] | UnsetType = msgspec.field(
        default=UNSET, name="groupsim.protocol.tie.break"
    )

    def items(self) -> list[tuple[str, Any]]:
        """``[(Kafka name, value)]`` of the keys set in the file, in field order."""
        return [
            (f.encode_name, getattr(self, f.name))
            for f in msgspec.structs.fields(self)
            if getattr(self, f.name) is not UNSET
        ]

    def to_mapping(self) -> dict[str, Any]:
        """``{Kafka name: value}`` of the keys set in the file."""
        return dict(self.items())


class NetworkSettings(_Base, frozen=True):
    """``[network]``: one-way delivery latency ``latency_ms`` plus a seeded uniform extra in
    ``[0, jitter_ms]`` (virtual ms)."""

    latency_ms: NonNegInt = 1
    jitter_ms: NonNegInt = 0


class WorkerEntry(_Base, frozen=True):
    """``[[cluster.workers]]``: one worker, started at ``start_ms`` with ``config`` on top of
    ``cluster.config``."""

    name: WorkerName
    start_ms: NonNegInt = 0
    config: dict[str, Any] = {}


class Cluster(_Base, frozen=True):
    """``[cluster]``: ``size`` (workers ``w1..wN`` at t=0) and/or an explicit ``workers`` list
    (then ``size`` must be absent or equal its length); ``config`` applies to every worker."""

    size: JavaInt | None = None
    config: dict[str, Any] = {}
    workers: list[WorkerEntry] = []


class ConnectorEntry(_Base, frozen=True):
    """``[[workload.connectors]]``: a connector and its task count."""

    name: ConnectorName
    tasks: JavaInt


class GenerateConnectors(_Base, frozen=True):
    """``[workload.generate]``: ``count`` connectors ``f"{prefix}{i}"`` (i = 1..count)."""

    count: JavaInt
    tasks: JavaInt
    prefix: ConnectorName = "connector"


class Workload(_Base, frozen=True):
    """``[workload]``: the connectors configured at t=0 (explicit ones first, then generated)."""

    connectors: list[ConnectorEntry] = []
    generate: GenerateConnectors | None = None


# ----------------------------------------------------------------------------- timeline


class StepBase(_Base, frozen=True, tag_field="action"):
    """A timeline step (either kind of scenario): ``action`` is its tag; ``at_ms`` when it
    applies (virtual ms)."""

    at_ms: NonNegInt


class Join(StepBase, frozen=True, tag="join"):
    """A worker process starts (a new name introduces a new worker)."""

    member: WorkerName
    config: dict[str, Any] = {}


class Leave(StepBase, frozen=True, tag="leave"):
    """A worker shuts down cleanly (LeaveGroup)."""

    member: WorkerName


class Crash(StepBase, frozen=True, tag="crash"):
    """A worker process dies (no LeaveGroup; the coordinator notices at session timeout)."""

    member: WorkerName


class Restart(StepBase, frozen=True, tag="restart"):
    """Stop a worker (clean or crash), start it again ``down_ms`` later with new config."""

    member: WorkerName
    config: dict[str, Any] = {}
    down_ms: NonNegInt = 0
    clean: bool = True


class RollingRestart(StepBase, frozen=True, tag="rolling_restart"):
    """One ``restart`` per member, ``interval_ms`` apart, starting at ``at_ms``."""

    interval_ms: NonNegInt
    members: list[WorkerName] | None = None
    config: dict[str, Any] = {}
    down_ms: NonNegInt = 0
    clean: bool = True


class AddConnector(StepBase, frozen=True, tag="add_connector"):
    """Create a connector with ``tasks`` tasks (a config-topic write)."""

    connector: ConnectorName
    tasks: JavaInt


class RemoveConnector(StepBase, frozen=True, tag="remove_connector"):
    """Delete a connector (a config-topic write)."""

    connector: ConnectorName


class SetTasks(StepBase, frozen=True, tag="set_tasks"):
    """Change a connector's task count (a config-topic write)."""

    connector: ConnectorName
    tasks: JavaInt


class Phase(StepBase, frozen=True, tag="phase"):
    """Label the timeline from here on (until the next phase) for the summary."""

    name: Annotated[str, Meta(min_length=1)]


# --- faults (applied by the world: the member's coordinator link, its herder, the coordinator)

#: Which way a lossy link drops messages, seen from the member.
LossDirection = Literal["to_coordinator", "from_coordinator", "both"]


class Partition(StepBase, frozen=True, tag="partition"):
    """The member cannot reach the coordinator, nor the coordinator it (both directions).

    Heals after ``duration_ms`` when given, else at a ``heal`` step."""

    member: WorkerName
    duration_ms: PosMs | None = None


class Heal(StepBase, frozen=True, tag="heal"):
    """End a partition of the member (a member that is not partitioned is unaffected)."""

    member: WorkerName


class Loss(StepBase, frozen=True, tag="loss"):
    """Each message on the member's coordinator link, in ``direction``, is dropped with
    ``probability`` (seeded), for ``duration_ms``."""

    member: WorkerName
    probability: Annotated[float, Meta(gt=0.0, le=1.0)]
    duration_ms: PosMs
    direction: LossDirection = "both"


class Latency(StepBase, frozen=True, tag="latency"):
    """``extra_ms`` more one-way latency on the member's coordinator link, for ``duration_ms``."""

    member: WorkerName
    extra_ms: PosMs
    duration_ms: PosMs


class Slow(StepBase, frozen=True, tag="slow"):
    """The member's herder thread stalls for ``stall_ms`` (more than ``rebalance.timeout.ms``
    expires its poll timer: the member leaves the group, KAFKA-16056's path)."""

    member: WorkerName
    stall_ms: PosMs


class CoordinatorFailover(StepBase, frozen=True, tag="coordinator_failover"):
    """The group is unloaded, and reloaded from its last stored record ``down_ms`` later."""

    down_ms: NonNegInt = 0


#: Which of a member's requests a ``delay_request`` holds: one group RPC, or every one.
DelayedRequest = Literal["heartbeat", "sync_group", "join_group", "any"]


class DelayRequest(StepBase, frozen=True, tag="delay_request"):
    """Each ``request`` the member sends to the coordinator during ``duration_ms`` reaches it
    ``delay_ms`` late, **overtaken** by the member's later messages (they are not queued behind
    it): a request that sat in a send buffer or on a slow path while the group moved on, so it
    may reach the coordinator for an older generation. Its answer goes back as usual, unless
    the member has sent another request of the same kind since (it gave up on this one: the
    answer is dropped). Each held request is a ``late_request`` record when it arrives."""

    member: WorkerName
    delay_ms: PosMs
    duration_ms: PosMs
    request: DelayedRequest = "any"


#: The fault steps, shared by Connect and Kafka Streams scenarios.
FaultStep = Partition | Heal | Loss | Latency | Slow | CoordinatorFailover | DelayRequest

TimelineStep = (
    Join
    | Leave
    | Crash
    | Restart
    | RollingRestart
    | AddConnector
    | RemoveConnector
    | SetTasks
    | Phase
    | FaultStep
)

#: Action name -> its Struct.
ACTIONS: dict[str, type[StepBase]] = {
    "join": Join,
    "leave": Leave,
    "crash": Crash,
    "restart": Restart,
    "rolling_restart": RollingRestart,
    "add_connector": AddConnector,
    "remove_connector": RemoveConnector,
    "set_tasks": SetTasks,
    "phase": Phase,
    "partition": Partition,
    "heal": Heal,
    "loss": Loss,
    "latency": Latency,
    "slow": Slow,
    "coordinator_failover": CoordinatorFailover,
    "delay_request": DelayRequest,
}

#: The fault actions (network, herder and coordinator faults; the world applies them).
FAULT_ACTIONS: tuple[str, ...] = (
    "partition",
    "heal",
    "loss",
    "latency",
    "slow",
    "coordinator_failover",
    "delay_request",
)


class ExpectBase(_Base, frozen=True):
    """The ``[expect]`` checks both kinds of scenario share (see :class:`Expect`)."""

    converged: bool | None = None
    no_violations: bool = True
    max_rebalances: NonNegInt | None = None
    min_rebalances: NonNegInt | None = None
    max_task_downtime_ms: NonNegInt | None = None
    max_total_downtime_ms: NonNegInt | None = None
    max_time_to_converge_ms: NonNegInt | None = None
    expected_violations: list[InvariantName] = []


class Expect(ExpectBase, frozen=True):
    """``[expect]``: assertions on the run's summary, checked by
    :func:`scenarios.check.expect.evaluate`.

    ``None`` means "not checked". ``no_violations`` is **true by default**, with or without an
    ``[expect]`` table: any violation fails the run unless its invariant is listed in
    ``expected_violations`` (reserved for known upstream bugs, e.g. KAFKA-13816's
    ``double_ownership`` on a downgrade to eager). Downtimes are virtual ms of task downtime.
    """

    max_task_movements: NonNegInt | None = None
    final_protocol: ProtocolName | None = None


class Scenario(_Base, frozen=True, kw_only=True):
    """A whole Connect scenario file. Only ``name`` is required (``kind`` may say
    ``"connect"``; a Kafka Streams file says ``"streams"``, :mod:`scenarios.input.streams`)."""

    kind: Literal["connect"] = "connect"
    name: Annotated[str, Meta(min_length=1)]
    description: str = ""
    seed: NonNegInt = 0
    settle_ms: NonNegInt | None = None
    #: the run's record budget: it stops with a ``run_budget_exceeded`` violation once its
    #: event log holds this many records (:func:`scenarios.sim.runner.simulate`)
    max_records: PositiveCount | None = None
    log_heartbeats: bool = False
    coordinator: CoordinatorSettings = msgspec.field(default_factory=CoordinatorSettings)
    network: NetworkSettings = msgspec.field(default_factory=NetworkSettings)
    cluster: Cluster = msgspec.field(default_factory=Cluster)
    workload: Workload = msgspec.field(default_factory=Workload)
    timeline: list[TimelineStep] = []
    expect: Expect = msgspec.field(default_factory=Expect)
