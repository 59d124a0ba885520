"""A Kafka Connect worker as a pure state machine.

One object plays three Kafka roles, because in Kafka they share one thread and one fate:

* the group client, ``AbstractCoordinator`` (member states UNJOINED → PREPARING_REBALANCE →
  COMPLETING_REBALANCE → STABLE, JoinGroup/SyncGroup/Heartbeat/LeaveGroup, the heartbeat,
  session and poll timers);
* ``WorkerCoordinator`` (the metadata a worker advertises per ``connect.protocol``,
  ``onJoinPrepare`` revoking everything under eager, ``onJoinComplete`` merging incremental
  assignments, the leader running the elected protocol's assignor);
* the ``DistributedHerder`` reactions (stop revoked work, check the config offset, start new
  work, rejoin after a revocation, rejoin when the scheduled delay expires, read the config
  topic to its end on CONFIG_MISMATCH).

The herder is a single thread in Kafka: starting and stopping connectors and tasks blocks it,
and the group protocol only advances when it polls. groupsim models it as a queue of jobs that
take virtual time (``groupsim.*.start.ms`` / ``.stop.ms``); a JoinGroup is sent only when the
queue is idle. A job that outlasts ``rebalance.timeout.ms`` expires the poll timer and the
worker leaves the group (KAFKA-16056's path).

Sans-IO: every entry point takes the virtual time ``now_ms`` and returns a list of effects
(:mod:`protocol.effects`). Timer keys: ``heartbeat``, ``session``, ``poll``, ``herder``,
``scheduled-rebalance``, ``retry``, ``config-sync``.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
from collections import deque
from collections.abc import Callable
from typing import Any

from members.assignors import create_assignor
from members.assignors.base import ConfigSnapshot
from members.config import WorkerConfig
from members.messages import (
    CONFIG_ADDRESS,
    ConfigUpdate,
    HerderStall,
    ReadConfigToEnd,
    ReconfigureTasks,
    SessionKey,
    TaskConfigsRequest,
    TaskConfigsResponse,
    WriteSessionKey,
    WriteTaskConfigs,
    worker_address,
)
from protocol.connect import (
    PROTOCOL_TYPE,
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
)
from protocol.connect_codec import decode_assignment, join_group_protocols
from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from protocol.group import (
    UNKNOWN_GENERATION_ID,
    UNKNOWN_MEMBER_ID,
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from protocol.primitives import DecodeError

__all__ = ["ConnectWorker", "MemberState", "COORDINATOR_ADDRESS"]

#: Network address of the group coordinator.
COORDINATOR_ADDRESS = "coordinator"

#: ``retry.backoff.ms`` default: wait before retrying a failed JoinGroup.
RETRY_BACKOFF_MS = 100

#: Connect's ``request.timeout.ms`` default (DistributedConfig): a SyncGroup unanswered this
#: long counts as a lost connection to the coordinator.
REQUEST_TIMEOUT_MS = 40_000
#: AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE: JoinGroup waits rebalance.timeout.ms + this.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000
#: How often an unreachable coordinator is looked up again (FindCoordinator round trips).
FIND_COORDINATOR_RETRY_MS = 1_000

#: DistributedHerder's backoff for retrying a failed task reconfiguration (doubling, capped).
RECONFIGURE_BACKOFF_INITIAL_MS = 250
RECONFIGURE_BACKOFF_MAX_MS = 60_000

# JoinGroup errors after which Kafka's AbstractCoordinator throws out of poll(); the herder
# thread dies with it ("Uncaught exception in herder work thread, exiting").
_FATAL_JOIN_ERRORS = frozenset(
    {
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode.INVALID_SESSION_TIMEOUT,
        ErrorCode.INVALID_GROUP_ID,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.FENCED_INSTANCE_ID,
    }
)


#: The assignor a leader runs for each elected protocol (WorkerCoordinator.onLeaderElected;
#: ``static`` is KIP-987's leader algorithm).
_ASSIGNOR_BY_PROTOCOL = {
    ConnectProtocol.EAGER: "eager",
    ConnectProtocol.COMPATIBLE: "incremental_cooperative",
    ConnectProtocol.SESSIONED: "incremental_cooperative",
    ConnectProtocol.STATIC: "static",
}


#: Errors meaning "this broker is not (or no longer) the group coordinator": rediscover it.
_COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


class MemberState(enum.Enum):
    """``AbstractCoordinator.MemberState`` plus the process lifecycle."""

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    STABLE = "STABLE"
    STOPPED = "STOPPED"


class _Job:
    """One blocking herder operation: stop or start a set of connectors and tasks."""

    __slots__ = ("kind", "connectors", "tasks", "reason", "generation", "then", "duration_ms")

    def __init__(
        self,
        kind: str,
        connectors: list[str],
        tasks: list[ConnectorTaskId],
        reason: str = "",
        generation: int = UNKNOWN_GENERATION_ID,
        then: Callable[[int], None] | None = None,
        duration_ms: int = 0,
    ) -> None:
        self.kind = kind
        self.duration_ms = duration_ms
        self.connectors = connectors
        self.tasks = tasks
        self.reason = reason
        self.generation = generation
        self.then = then


class ConnectWorker:
    """A Connect worker process: group member, WorkerCoordinator and herder.

    Args:
        name: the worker's name; also its network address and ``client.id``.
        config: its settings (Kafka names and defaults, see :class:`WorkerConfig`).
        group_id: the Connect cluster's ``group.id``.
        config_view: the config topic as the worker reads it at start-up (Kafka's herder reads
            the topic to its end before joining).
        address: where responses reach this incarnation (defaults to ``name``).

    Entry points (each returns the effects to carry out, in order): :meth:`start`,
    :meth:`handle` (a delivered message), :meth:`fire` (a due timer), :meth:`shutdown`
    (clean stop: stop work, LeaveGroup) and :meth:`crash` (the process dies silently).
    """

    def __init__(
        self,
        name: str,
        config: WorkerConfig,
        *,
        group_id: str,
        config_view: ConfigSnapshot,
        address: str | None = None,
        log_heartbeats: bool = False,
        session_key: SessionKey | None = None,
    ) -> None:
        self.name = name
        self.address = address or name
        self.config = config
        self.group_id = group_id
        self.url = config.url(name)
        self.config_view = config_view
        self.log_heartbeats = log_heartbeats

        self.state = MemberState.UNJOINED
        self.member_id = UNKNOWN_MEMBER_ID
        self.generation = UNKNOWN_GENERATION_ID
        self.last_completed_generation = UNKNOWN_GENERATION_ID
        self.leader_id: str | None = None
        # WorkerCoordinator.currentConnectProtocol starts as the configured compatibility.
        self.current_protocol: ConnectProtocol = config.connect_protocol
        self.assignment_snapshot: ConnectAssignment | None = None
        self.rejoin_needed = True
        self.rejoin_reason = "start-up"
        # AbstractCoordinator.coordinatorUnknown(): found at start-up (the runtime's bootstrap).
        self.coordinator_known = True

        self.running_connectors: dict[str, str] = {}  # name -> starting|running|stopping
        self.running_tasks: dict[ConnectorTaskId, str] = {}
        self._jobs: deque[_Job] = deque()
        self._job: _Job | None = None
        self._waiting_config_offset: int | None = None
        self._after_config: Callable[[int], None] | None = None

        # KIP-507: the session key as read from the config topic; a leader rotates it.
        self.session_key = session_key
        self._key_write_pending = False
        self._reconfigure_backoff: dict[str, int] = {}

        self._join_snapshot: ConfigSnapshot | None = None
        self._heartbeat_in_flight = False
        self._heartbeat_generation = UNKNOWN_GENERATION_ID
        self._leaving = False
        self._assignors: dict[str, Any] = {}
        self._fx: list[Effect] = []

    # ------------------------------------------------------------------ entry points

    def start(self, now_ms: int) -> list[Effect]:
        """The process starts: log it and begin joining the group."""
        self._log("member_start", config=self._config_summary())
        if (
            self.config.is_static_worker
            and self.config.connect_protocol is not ConnectProtocol.STATIC
        ):
            # KIP-987: static assignments need connect.protocol=static; elsewhere they are
            # ignored (the worker is a wildcard worker).
            self._log(
                "static_config_ignored",
                protocol=self.config.connect_protocol.setting,
            )
        self._maybe_rejoin(now_ms)
        return self._take()

    def handle(self, message: object, now_ms: int) -> list[Effect]:
        """Process a message delivered to this worker (a group response or a config update)."""
        if self.state is MemberState.STOPPED:
            return []
        if isinstance(message, HeartbeatResponse):
            self._on_heartbeat_response(message, now_ms)
        elif isinstance(message, JoinGroupResponse):
            self._on_join_response(message, now_ms)
        elif isinstance(message, SyncGroupResponse):
            self._on_sync_response(message, now_ms)
        elif isinstance(message, ConfigUpdate):
            self._on_config_update(message, now_ms)
        elif isinstance(message, ReconfigureTasks):
            self._reconfigure_tasks(message.connector, message.tasks, now_ms)
        elif isinstance(message, TaskConfigsRequest):
            self._on_task_configs_request(message, now_ms)
        elif isinstance(message, TaskConfigsResponse):
            self._on_task_configs_response(message, now_ms)
        elif isinstance(message, FindCoordinatorResponse):
            self._on_find_coordinator_response(message, now_ms)
        elif isinstance(message, HerderStall):
            # A fault: the herder thread blocks (a slow connector start, a long GC, ...).
            self._enqueue(_Job("stall", [], [], duration_ms=message.stall_ms), now_ms)
        elif isinstance(message, LeaveGroupResponse):
            pass
        return self._take()

    def fire(self, key: str, now_ms: int) -> list[Effect]:
        """A timer this worker armed is due."""
        if self.state is MemberState.STOPPED:
            return []
        if key == "heartbeat":
            self._send_heartbeat(now_ms)
        elif key == "herder":
            self._finish_job(now_ms)
        else:
            self._log("timer_fired", key=key)
            if key == "scheduled-rebalance":
                # DistributedHerder: the scheduled rebalance is due, ask the group to rejoin.
                self._request_rejoin("scheduled rebalance delay expired", now_ms)
            elif key == "retry":
                self._maybe_rejoin(now_ms)
            elif key == "session":
                # Heartbeat.sessionTimerExpired: "session timed out without receiving a
                # heartbeat response" marks the coordinator unknown.
                if self.state in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
                    self._coordinator_unknown("session timed out", now_ms)
            elif key == "request-timeout":
                self._on_request_timeout(now_ms)
            elif key == "find-coordinator":
                if not self.coordinator_known:
                    self._find_coordinator(now_ms)
            elif key == "coordinator-lost":
                self._on_coordinator_lost(now_ms)
            elif key == "poll":
                self._on_poll_timeout(now_ms)
            elif key == "config-sync":
                self._on_config_sync_timeout(now_ms)
            elif key == "session-key":
                self._maybe_rotate_session_key(now_ms)
            elif key.startswith("reconfigure:"):
                connector, _, tasks = key[len("reconfigure:") :].rpartition(":")
                self._reconfigure_tasks(connector, int(tasks), now_ms)
        return self._take()

    def shutdown(self, now_ms: int) -> list[Effect]:
        """Clean shutdown: the herder stops all work, then the member sends LeaveGroup.

        Kafka: ``DistributedHerder.halt`` then ``WorkerGroupMember.stop`` →
        ``AbstractCoordinator.close`` → ``maybeLeaveGroup`` (Connect always leaves on close).
        """
        if self.state is MemberState.STOPPED or self._leaving:
            return []
        self._leaving = True
        self._jobs.clear()
        connectors, tasks = self._owned_work()
        self._enqueue(
            _Job("stop", connectors, tasks, reason="shutdown", then=self._complete_shutdown),
            now_ms,
        )
        return self._take()

    def crash(self, now_ms: int) -> list[Effect]:
        """The process dies: no LeaveGroup; everything it ran stops at once."""
        if self.state is MemberState.STOPPED:
            return []
        for connector in list(self.running_connectors):
            self._log("connector_stopped", connector=connector, reason="crash")
        for task in list(self.running_tasks):
            self._log("task_stopped", task=str(task), reason="crash")
        self.running_connectors.clear()
        self.running_tasks.clear()
        self._log("member_crash")
        self._stop_everything()
        return self._take()

    # ------------------------------------------------------------------ group protocol

    def _maybe_rejoin(self, now_ms: int) -> None:
        """Send JoinGroup if a rejoin is needed and the herder thread is free to poll."""
        if (
            not self.rejoin_needed
            or self._leaving
            or self.state not in (MemberState.UNJOINED, MemberState.STABLE)
            or self._job is not None
            or self._jobs
            or self._waiting_config_offset is not None
            or not self.coordinator_known
        ):
            return
        # WorkerCoordinator.onJoinPrepare: under eager (the protocol of the previous
        # generation) the worker revokes its whole assignment before joining.
        snapshot = self.assignment_snapshot
        if self.current_protocol.is_eager and snapshot is not None and not snapshot.failed:
            connectors, tasks = self._owned_work()
            if connectors or tasks:
                self._log(
                    "revoke",
                    generation=self.generation,
                    connectors=connectors,
                    tasks=[str(t) for t in tasks],
                    reason="eager_rejoin",
                )
                self._enqueue(
                    _Job("stop", connectors, tasks, reason="eager_rejoin", then=self._send_join),
                    now_ms,
                )
                return
        self._send_join(now_ms)

    def _send_join(self, now_ms: int) -> None:
        if self._leaving:
            return  # shutting down: the eager revoke-all that preceded this was the last act
        # metadata() takes a fresh config snapshot on every JoinGroup.
        self._join_snapshot = self.config_view
        allocation = self.assignment_snapshot
        static = self.config.connect_protocol is ConnectProtocol.STATIC
        protocols = join_group_protocols(
            self.config.connect_protocol,
            self.url,
            self.config_view.offset,
            allocation,
            self.config.static_connectors if static else (),
            self.config.static_tasks if static else (),
        )
        self.state = MemberState.PREPARING_REBALANCE
        self._cancel("heartbeat")
        self._cancel("session")
        self._set(
            "request-timeout",
            now_ms + self.config.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS,
        )
        self._log(
            "join_group_request",
            member_id=self.member_id,
            protocols=[name for name, _ in protocols],
            reason=self.rejoin_reason,
        )
        self._send(
            JoinGroupRequest(
                group_id=self.group_id,
                member_id=self.member_id,
                protocol_type=PROTOCOL_TYPE,
                protocols=tuple(protocols),
                session_timeout_ms=self.config.session_timeout_ms,
                rebalance_timeout_ms=self.config.rebalance_timeout_ms,
                client_id=self.name,
                reason=self.rejoin_reason,
            )
        )

    def _on_join_response(self, response: JoinGroupResponse, now_ms: int) -> None:
        if self.state is not MemberState.PREPARING_REBALANCE:
            return
        self._cancel("request-timeout")
        error = response.error
        self._log(
            "join_group_response",
            member_id=response.member_id or self.member_id,
            error=error.name,
            generation=response.generation_id,
            protocol=response.protocol_name,
            leader_id=response.leader,
            is_leader=error == ErrorCode.NONE and response.leader == response.member_id,
        )
        if error == ErrorCode.NONE:
            self.member_id = response.member_id
            self.generation = response.generation_id
            self.leader_id = response.leader
            self.state = MemberState.COMPLETING_REBALANCE
            self._arm_heartbeat(now_ms)
            self._set("session", now_ms + self.config.session_timeout_ms)
            is_leader = response.leader == response.member_id
            assignments: tuple[tuple[str, bytes], ...] = ()
            if is_leader:
                try:
                    assignments = self._run_assignor(response, now_ms)
                except DecodeError as exc:
                    # A member's metadata cannot be read: in Kafka the assignor throws out of
                    # poll() and the leader's herder thread dies with it.
                    self._log("member_fatal", error=f"assignor failed: {exc}")
                    self._fail(now_ms)
                    return
            self._log(
                "sync_group_request",
                member_id=self.member_id,
                generation=self.generation,
                is_leader=is_leader,
            )
            self._set("request-timeout", now_ms + REQUEST_TIMEOUT_MS)
            self._send(
                SyncGroupRequest(
                    group_id=self.group_id,
                    member_id=self.member_id,
                    generation_id=self.generation,
                    protocol_type=PROTOCOL_TYPE,
                    protocol_name=response.protocol_name,
                    assignments=assignments,
                )
            )
            return
        self.state = MemberState.UNJOINED
        if error == ErrorCode.MEMBER_ID_REQUIRED:
            # KIP-394: adopt the id the coordinator made for us and join again at once.
            self.member_id = response.member_id
            self._maybe_rejoin(now_ms)
        elif error == ErrorCode.UNKNOWN_MEMBER_ID:
            self._reset_generation(reset_member_id=True)
            self._maybe_rejoin(now_ms)
        elif error == ErrorCode.REBALANCE_IN_PROGRESS:
            self._maybe_rejoin(now_ms)
        elif error in _FATAL_JOIN_ERRORS:
            self._log("member_fatal", error=error.name)
            self._fail(now_ms)
        elif error in _COORDINATOR_ERRORS:
            self._coordinator_unknown(f"JoinGroup: {error.name}", now_ms)
        else:  # coordinator moving or loading: back off and retry
            self._set("retry", now_ms + RETRY_BACKOFF_MS)

    def _run_assignor(
        self, response: JoinGroupResponse, now_ms: int
    ) -> tuple[tuple[str, bytes], ...]:
        """WorkerCoordinator.onLeaderElected: run the elected protocol's assignor."""
        protocol = ConnectProtocol.from_protocol_name(response.protocol_name or "default")
        name = _ASSIGNOR_BY_PROTOCOL[protocol]
        assignor = self._assignors.get(name)
        if assignor is None:
            assignor = create_assignor(
                name, max_delay_ms=self.config.scheduled_rebalance_max_delay_ms
            )
            self._assignors[name] = assignor
        members = [(m.member_id, m.metadata) for m in response.members]
        result = assignor.perform_assignment(
            leader_id=self.member_id,
            protocol=protocol,
            members=members,
            snapshot=self._join_snapshot or self.config_view,
            refresh_snapshot=lambda: self.config_view,
            last_completed_generation=self.last_completed_generation,
            generation=self.generation,
            now_ms=now_ms,
        )
        extra: dict[str, object] = {}
        placements = getattr(result, "static_placements", None)
        if placements is not None:
            # KIP-987: where each static job went, and which static jobs have nowhere to go.
            extra["static_placements"] = [p.to_json() for p in placements]
            connectors, tasks = getattr(result, "unassigned_static_jobs", ((), ()))
            extra["unassigned_static_jobs"] = {
                "connectors": list(connectors),
                "tasks": [str(ConnectorTaskId(*t)) for t in tasks],
            }
        self._log(
            "assignor",
            generation=self.generation,
            protocol=protocol.protocol_name,
            assignor=name,
            error=result.error,
            delay_ms=result.delay_ms,
            config_offset=result.config_offset,
            assigned={
                member_id: {
                    "connectors": list(a.connectors),
                    "tasks": [str(t) for t in a.tasks],
                }
                for member_id, a in result.decoded.items()
                if a.connectors or a.tasks
            },
            revoked={
                member_id: {
                    "connectors": list(a.revoked_connectors),
                    "tasks": [str(t) for t in a.revoked_tasks],
                }
                for member_id, a in result.decoded.items()
                if a.revoked_connectors or a.revoked_tasks
            },
            **extra,
        )
        return tuple(result.assignments.items())

    def _on_sync_response(self, response: SyncGroupResponse, now_ms: int) -> None:
        if self.state is not MemberState.COMPLETING_REBALANCE:
            return
        self._cancel("request-timeout")
        error = response.error
        self._log(
            "sync_group_response",
            member_id=self.member_id,
            generation=self.generation,
            error=error.name,
        )
        if error != ErrorCode.NONE:
            self.state = MemberState.UNJOINED
            if error == ErrorCode.UNKNOWN_MEMBER_ID:
                self._reset_generation(reset_member_id=True)
            elif error == ErrorCode.ILLEGAL_GENERATION:
                self._reset_generation(reset_member_id=False)
            elif error in _COORDINATOR_ERRORS:
                self._coordinator_unknown(f"SyncGroup: {error.name}", now_ms)
            self._request_rejoin(f"SyncGroup failed: {error.name}", now_ms)
            return
        try:
            assignment = decode_assignment(response.assignment)
        except DecodeError as exc:
            # WorkerCoordinator.onJoinComplete throws out of poll(); DistributedHerder logs
            # "Uncaught exception in herder work thread, exiting" and the worker exits.
            self._log("member_fatal", error=f"unreadable assignment: {exc}")
            self._fail(now_ms)
            return
        self._on_join_complete(assignment, response.protocol_name or "default", now_ms)

    def _on_join_complete(
        self, assignment: ConnectAssignment, protocol_name: str, now_ms: int
    ) -> None:
        """WorkerCoordinator.onJoinComplete + DistributedHerder.handleRebalanceCompleted."""
        previous_protocol = self.current_protocol
        self.current_protocol = ConnectProtocol.from_protocol_name(protocol_name)
        self.state = MemberState.STABLE
        self.rejoin_needed = False
        if (
            self.last_completed_generation != UNKNOWN_GENERATION_ID
            and previous_protocol.version >= 2 > self.current_protocol.version
        ):
            # DistributedHerder warns that request validation (KIP-507) is now off: the
            # group ran v2+ in this worker's previous generation and runs below v2 now.
            self._log(
                "protocol_downgrade",
                from_version=previous_protocol.version,
                to_version=self.current_protocol.version,
            )
        self._log(
            "assignment",
            member_id=self.member_id,
            generation=self.generation,
            protocol=self.current_protocol.protocol_name,
            leader_id=assignment.leader,
            error=assignment.error,
            config_offset=assignment.config_offset,
            connectors=list(assignment.connectors),
            tasks=[str(t) for t in assignment.tasks],
            revoked_connectors=list(assignment.revoked_connectors),
            revoked_tasks=[str(t) for t in assignment.revoked_tasks],
            delay_ms=assignment.delay_ms,
        )
        revoked_connectors = list(dict.fromkeys(assignment.revoked_connectors))
        revoked_tasks = list(dict.fromkeys(assignment.revoked_tasks))
        old = self.assignment_snapshot
        if not self.current_protocol.is_eager:
            # Merge: new incremental items + (old snapshot - revoked).
            # Kafka merges into whatever snapshot it holds, even a failed (CONFIG_MISMATCH) one,
            # so the items survive a failed round (WorkerCoordinator.onJoinComplete).
            if old is not None:
                gone_c = set(revoked_connectors)
                gone_t = set(revoked_tasks)
                connectors = tuple(assignment.connectors) + tuple(
                    c for c in old.connectors if c not in gone_c
                )
                tasks = tuple(assignment.tasks) + tuple(t for t in old.tasks if t not in gone_t)
                merged = ConnectAssignment(
                    version=assignment.version,
                    error=assignment.error,
                    leader=assignment.leader,
                    leader_url=assignment.leader_url,
                    config_offset=assignment.config_offset,
                    connectors=connectors,
                    tasks=tasks,
                    revoked_connectors=assignment.revoked_connectors,
                    revoked_tasks=assignment.revoked_tasks,
                    delay_ms=assignment.delay_ms,
                )
            else:
                merged = assignment
        else:
            merged = assignment
        self.assignment_snapshot = merged
        self.last_completed_generation = self.generation
        generation = self.generation

        # onRevoked: stop what the leader took away (cooperative protocols only).
        stop_connectors = [c for c in revoked_connectors if c in self.running_connectors]
        stop_tasks = [t for t in revoked_tasks if t in self.running_tasks]
        if not self.current_protocol.is_eager and (revoked_connectors or revoked_tasks):
            self._log(
                "revoke",
                generation=generation,
                connectors=revoked_connectors,
                tasks=[str(t) for t in revoked_tasks],
                reason="revoked",
            )
            if stop_connectors or stop_tasks:
                self._enqueue(_Job("stop", stop_connectors, stop_tasks, reason="revoked"), now_ms)

        # onAssigned: a positive delay schedules a rejoin (KIP-415), otherwise none.
        if assignment.delay_ms > 0:
            self._set("scheduled-rebalance", now_ms + assignment.delay_ms)
        else:
            self._cancel("scheduled-rebalance")

        self._maybe_rotate_session_key(now_ms)
        revoked_any = bool(assignment.revoked_connectors or assignment.revoked_tasks)
        self._after_jobs(
            lambda t: self._handle_rebalance_completed(merged, generation, revoked_any, t), now_ms
        )

    def _handle_rebalance_completed(
        self, assignment: ConnectAssignment, generation: int, revoked_any: bool, now_ms: int
    ) -> None:
        """DistributedHerder.handleRebalanceCompleted: config checks, then start work."""
        if generation != self.generation or self._leaving:
            return
        target = assignment.config_offset
        if assignment.failed:
            # CONFIG_MISMATCH: always rejoin; the leader, or a worker behind, reads to end first.
            is_leader = self.leader_id == self.member_id
            if is_leader or self.config_view.offset < target:
                self._read_config_to_end(
                    now_ms, lambda t: self._request_rejoin("config mismatch", t)
                )
            else:
                self._request_rejoin("config mismatch", now_ms)
            return
        if self.config_view.offset < target:
            self._read_config_to_end(
                now_ms,
                lambda t: self._start_assigned(assignment, generation, revoked_any, t),
            )
            return
        self._start_assigned(assignment, generation, revoked_any, now_ms)

    def _start_assigned(
        self, assignment: ConnectAssignment, generation: int, revoked_any: bool, now_ms: int
    ) -> None:
        if generation != self.generation or self._leaving:
            return
        if self.config_view.offset != assignment.config_offset:
            # The worker read past (or could not reach) the leader's offset: rejoin, start nothing.
            self._request_rejoin("config offset mismatch", now_ms)
            return
        # The herder starts only what the config it has read defines: Worker.startConnector
        # and startTask fail for a connector or task config that no longer exists.
        configured = self.config_view.connectors
        start_connectors = [
            c
            for c in dict.fromkeys(assignment.connectors)
            if c not in self.running_connectors and c in configured
        ]
        start_tasks = [
            t
            for t in dict.fromkeys(assignment.tasks)
            if t not in self.running_tasks and t.task < configured.get(t.connector, 0)
        ]
        if start_connectors or start_tasks:
            self._enqueue(
                _Job("start", start_connectors, start_tasks, generation=generation), now_ms
            )
        if revoked_any:
            # The follow-up rebalance in which revoked work is handed to other workers.
            self._after_jobs(lambda t: self._request_rejoin("revocation follow-up", t), now_ms)

    def _request_rejoin(self, reason: str, now_ms: int) -> None:
        """AbstractCoordinator.requestRejoin: join again as soon as the herder polls."""
        if not self.rejoin_needed:
            self.rejoin_needed = True
            self.rejoin_reason = reason
        self._maybe_rejoin(now_ms)

    def _reset_generation(self, *, reset_member_id: bool) -> None:
        self.generation = UNKNOWN_GENERATION_ID
        if reset_member_id:
            self.member_id = UNKNOWN_MEMBER_ID
        self._cancel("heartbeat")
        self._cancel("session")

    # ------------------------------------------------------------------ heartbeats

    def _arm_heartbeat(self, now_ms: int) -> None:
        self._set("heartbeat", now_ms + self.config.heartbeat_interval_ms)

    def _send_heartbeat(self, now_ms: int) -> None:
        if (
            self.state not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE)
            or not self.coordinator_known
        ):
            return
        self._arm_heartbeat(now_ms)
        if self._heartbeat_in_flight:
            return
        self._heartbeat_in_flight = True
        self._heartbeat_generation = self.generation
        if self.log_heartbeats:
            self._log("heartbeat_request", member_id=self.member_id, generation=self.generation)
        self._fx.append(
            Send(
                COORDINATOR_ADDRESS,
                HeartbeatRequest(
                    group_id=self.group_id, member_id=self.member_id, generation_id=self.generation
                ),
            )
        )

    def _on_heartbeat_response(self, response: HeartbeatResponse, now_ms: int) -> None:
        self._heartbeat_in_flight = False
        error = response.error
        if self.log_heartbeats:
            self._log(
                "heartbeat_response",
                member_id=self.member_id,
                generation=self.generation,
                error=error.name,
            )
        if error == ErrorCode.NONE:
            if self.state in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
                self._set("session", now_ms + self.config.session_timeout_ms)
            return
        if error == ErrorCode.REBALANCE_IN_PROGRESS:
            # Only a stable member rejoins; during a rebalance this counts as a success.
            if self.state is MemberState.STABLE:
                self._request_rejoin("group is rebalancing", now_ms)
            else:
                self._set("session", now_ms + self.config.session_timeout_ms)
            return
        if error in _COORDINATOR_ERRORS:
            self._coordinator_unknown(f"Heartbeat: {error.name}", now_ms)
            return
        if error in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID):
            # Stale errors (for a generation we already left) are ignored.
            if self._heartbeat_generation != self.generation:
                return
            if self.state in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
                self.state = MemberState.UNJOINED
                self._reset_generation(reset_member_id=error == ErrorCode.UNKNOWN_MEMBER_ID)
                self._request_rejoin(f"heartbeat failed: {error.name}", now_ms)

    # ------------------------------------------------------------------ losing the coordinator

    def _coordinator_unknown(self, reason: str, now_ms: int) -> None:
        """AbstractCoordinator.markCoordinatorUnknown: stop heartbeating and look it up again.

        WorkerCoordinator.poll gives discovery ``heartbeat.interval.ms``; if the coordinator is
        still unknown then, the worker revokes its whole assignment (KAFKA-9184's fix,
        reference/connect.md §4.4).
        """
        if not self.coordinator_known:
            return
        self.coordinator_known = False
        self._heartbeat_in_flight = False
        self._log("coordinator_unknown", member_id=self.member_id, reason=reason)
        self._cancel("heartbeat")
        self._cancel("session")
        self._set("coordinator-lost", now_ms + self.config.heartbeat_interval_ms)
        self._find_coordinator(now_ms)

    def _find_coordinator(self, now_ms: int) -> None:
        self._send(FindCoordinatorRequest(key=self.group_id))
        self._set("find-coordinator", now_ms + FIND_COORDINATOR_RETRY_MS)

    def _on_find_coordinator_response(self, response: FindCoordinatorResponse, now_ms: int) -> None:
        if self.coordinator_known or response.error != ErrorCode.NONE:
            return  # still unknown: the find-coordinator timer retries
        self.coordinator_known = True
        self._cancel("find-coordinator")
        self._cancel("coordinator-lost")
        self._log("coordinator_found", member_id=self.member_id)
        if self.state in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
            # The heartbeat thread resumes; its answer says whether we are still a member.
            self._set("session", now_ms + self.config.session_timeout_ms)
            self._send_heartbeat(now_ms)
        self._maybe_rejoin(now_ms)

    def _on_coordinator_lost(self, now_ms: int) -> None:
        """WorkerCoordinator.poll: discovery failed within heartbeat.interval.ms."""
        if self.coordinator_known:
            return
        snapshot = self.assignment_snapshot
        if snapshot is not None and not snapshot.failed:
            connectors, tasks = self._owned_work()
            self._log(
                "revoke",
                generation=self.generation,
                connectors=connectors,
                tasks=[str(t) for t in tasks],
                reason="coordinator_lost",
            )
            if connectors or tasks:
                self._enqueue(_Job("stop", connectors, tasks, reason="coordinator_lost"), now_ms)
            # The next JoinGroup carries no allocation: the worker starts over. A null snapshot
            # makes WorkerCoordinator.rejoinNeededOrPending() true: it rejoins once it finds
            # the coordinator again.
            self.assignment_snapshot = None
            self.rejoin_needed = True
            self.rejoin_reason = "assignment revoked after losing the coordinator"

    def _on_request_timeout(self, now_ms: int) -> None:
        """A JoinGroup/SyncGroup went unanswered: Kafka treats it as a lost connection."""
        if self.state not in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
            return
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.rejoin_reason = "request timed out"
        self._coordinator_unknown("request timed out", now_ms)

    def _on_poll_timeout(self, now_ms: int) -> None:
        # Heartbeat.pollTimer expired (herder stalled > rebalance.timeout.ms): leave the group.
        if self.member_id and self.state is not MemberState.UNJOINED:
            self._log("leave_group", member_id=self.member_id, reason="poll timeout expired")
            self._send(
                LeaveGroupRequest(
                    group_id=self.group_id,
                    member_ids=(self.member_id,),
                    reason="consumer poll timeout has expired",
                )
            )
        self.state = MemberState.UNJOINED
        self._reset_generation(reset_member_id=True)
        self.rejoin_needed = True
        self.rejoin_reason = "poll timeout expired"

    # ------------------------------------------------------------------ config topic

    def _on_config_update(self, update: ConfigUpdate, now_ms: int) -> None:
        if update.offset <= self.config_view.offset:
            return
        old = self.config_view.connectors
        self.config_view = ConfigSnapshot(offset=update.offset, connectors=dict(update.connectors))
        if update.session_key != self.session_key:
            self.session_key = update.session_key
            self._key_write_pending = False
            self._maybe_rotate_session_key(now_ms)
        if self._waiting_config_offset is not None and update.offset >= self._waiting_config_offset:
            self._waiting_config_offset = None
            self._cancel("config-sync")
            callback, self._after_config = self._after_config, None
            if callback is not None:
                callback(now_ms)
            self._maybe_rejoin(now_ms)
            return
        if old != update.connectors:
            if not self.current_protocol.is_eager:
                self._stop_removed_work(update.connectors, now_ms)
            # DistributedHerder: connectors added or removed, or task configs changed,
            # need a rebalance.
            self._request_rejoin("connector configuration changed", now_ms)

    def _stop_removed_work(self, connectors: dict[str, int], now_ms: int) -> None:
        """Stop work whose configuration is gone, without waiting for the leader.

        DistributedHerder (incremental cooperative): a connector-only config update "by
        stopping connector" when the connector was deleted, and a task config update "by
        stopping tasks, which will be restarted after rebalance if still assigned".
        """
        gone_connectors = [c for c in self.running_connectors if c not in connectors]
        gone_tasks = [t for t in self.running_tasks if t.task >= connectors.get(t.connector, 0)]
        if gone_connectors or gone_tasks:
            self._enqueue(
                _Job("stop", gone_connectors, gone_tasks, reason="configuration removed"), now_ms
            )

    def _read_config_to_end(self, now_ms: int, then: Callable[[int], None]) -> None:
        """configBackingStore.refresh(worker.sync.timeout.ms): block the herder until done."""
        self._waiting_config_offset = self.config_view.offset + 1
        self._after_config = then
        self._set("config-sync", now_ms + self.config.worker_sync_timeout_ms)
        self._fx.append(Send(CONFIG_ADDRESS, ReadConfigToEnd()))

    def _on_config_sync_timeout(self, now_ms: int) -> None:
        if self._waiting_config_offset is None:
            return
        # The read reached the end without newer records: the view is current.
        self._waiting_config_offset = None
        callback, self._after_config = self._after_config, None
        if callback is not None:
            callback(now_ms)
        self._maybe_rejoin(now_ms)

    # ------------------------------------------------------------------ KIP-507 session keys

    def _is_leader(self) -> bool:
        return self.leader_id is not None and self.leader_id == self.member_id

    def _maybe_rotate_session_key(self, now_ms: int) -> None:
        """DistributedHerder.tick: a v2+ leader writes a new key when there is none or it expired.

        The key lives ``inter.worker.key.ttl.ms``; the leader wakes up when it expires.
        """
        if not self._is_leader() or self.current_protocol.version < 2 or self._leaving:
            return
        ttl = self.config.inter_worker_key_ttl_ms
        key = self.session_key
        if key is not None and key.created_ms + ttl > now_ms:
            self._set("session-key", key.created_ms + ttl)
            return
        if self._key_write_pending:
            return
        key_id = key.key_id + 1 if key is not None else 1
        # Deterministic stand-in for KeyGenerator("HmacSHA256"): no randomness outside the seed.
        secret = hashlib.sha256(f"{self.member_id}/{now_ms}/{key_id}".encode()).digest()
        self._key_write_pending = True
        self._log(
            "session_key",
            key_id=key_id,
            created_ms=now_ms,
            reason="expired" if key is not None else "none yet",
        )
        self._fx.append(Send(CONFIG_ADDRESS, WriteSessionKey(SessionKey(key_id, secret, now_ms))))

    def _reconfigure_tasks(self, connector: str, tasks: int, now_ms: int) -> None:
        """The connector here has new task configs: write them (leader) or forward them."""
        if self.state is MemberState.STOPPED:
            return
        if self._is_leader():
            self._reconfigure_backoff.pop(connector, None)
            self._fx.append(Send(CONFIG_ADDRESS, WriteTaskConfigs(connector, tasks)))
            return
        leader = self._leader_name()
        key = self.session_key
        signed = self.current_protocol.version >= 2
        signature = None
        if signed and key is not None:
            signature = hmac.new(
                key.secret, _task_configs_body(connector, tasks), "sha256"
            ).digest()
        self._log(
            "internal_request",
            to=leader,
            connector=connector,
            tasks=tasks,
            key_id=key.key_id if signed and key is not None else None,
            signed=signature is not None,
        )
        if leader is None:
            self._retry_reconfigure(connector, tasks, now_ms)
            return
        self._fx.append(
            Send(
                worker_address(leader),
                TaskConfigsRequest(
                    origin=self.name,
                    connector=connector,
                    tasks=tasks,
                    key_id=key.key_id if signature is not None and key is not None else None,
                    signature=signature,
                ),
            )
        )

    def _on_task_configs_request(self, request: TaskConfigsRequest, now_ms: int) -> None:
        """The leader's REST handler: verify the signature (KIP-507), then write the configs."""
        reason = ""
        if not self._is_leader():
            reason = "not the leader"
        elif self.current_protocol.version >= 2:
            key = self.session_key
            if request.signature is None or request.key_id is None:
                reason = "request is not signed"
            elif key is None or request.key_id != key.key_id:
                reason = f"unknown session key {request.key_id}"
            elif key.created_ms + self.config.inter_worker_key_ttl_ms <= now_ms:
                reason = f"expired session key {request.key_id}"
            else:
                body = _task_configs_body(request.connector, request.tasks)
                expected = hmac.new(key.secret, body, "sha256").digest()
                if not hmac.compare_digest(expected, request.signature):
                    reason = "signature does not match"
        accepted = not reason
        self._log(
            "internal_request_verified" if accepted else "internal_request_rejected",
            origin=request.origin,
            connector=request.connector,
            tasks=request.tasks,
            validation=self.current_protocol.version >= 2,
            reason=reason or None,
        )
        if accepted:
            self._fx.append(
                Send(CONFIG_ADDRESS, WriteTaskConfigs(request.connector, request.tasks))
            )
        self._fx.append(
            Send(
                worker_address(request.origin),
                TaskConfigsResponse(request.connector, request.tasks, accepted, reason),
            )
        )

    def _on_task_configs_response(self, response: TaskConfigsResponse, now_ms: int) -> None:
        if response.accepted:
            self._reconfigure_backoff.pop(response.connector, None)
            return
        self._retry_reconfigure(response.connector, response.tasks, now_ms)

    def _retry_reconfigure(self, connector: str, tasks: int, now_ms: int) -> None:
        backoff = self._reconfigure_backoff.get(connector, RECONFIGURE_BACKOFF_INITIAL_MS)
        self._reconfigure_backoff[connector] = min(backoff * 2, RECONFIGURE_BACKOFF_MAX_MS)
        self._set(f"reconfigure:{connector}:{tasks}", now_ms + backoff)

    def _leader_name(self) -> str | None:
        """The leader's host, from the leader url of the last assignment (``http://w1:8083``)."""
        snapshot = self.assignment_snapshot
        if snapshot is None or not snapshot.leader_url:
            return None
        return snapshot.leader_url.split("://", 1)[-1].rsplit(":", 1)[0] or None

    # ------------------------------------------------------------------ herder jobs

    def _owned_work(self) -> tuple[list[str], list[ConnectorTaskId]]:
        return list(self.running_connectors), list(self.running_tasks)

    def _enqueue(self, job: _Job, now_ms: int) -> None:
        self._jobs.append(job)
        if self._job is None:
            self._next_job(now_ms)

    def _after_jobs(self, callback: Callable[[int], None], now_ms: int) -> None:
        """Run ``callback`` once every queued herder job has finished."""
        if self._job is None and not self._jobs:
            callback(now_ms)
        else:
            self._jobs.append(_Job("call", [], [], then=callback))

    def _next_job(self, now_ms: int) -> None:
        while self._job is None and self._jobs:
            job = self._jobs.popleft()
            if job.kind == "call":
                if job.then is not None:
                    job.then(now_ms)
                continue
            self._job = job
            duration = self._begin_job(job)
            if duration > 0:
                self._set("herder", now_ms + duration)
                self._set("poll", now_ms + self.config.rebalance_timeout_ms)
                return
            self._finish_job(now_ms)
        if self._job is None and not self._jobs:
            self._maybe_rejoin(now_ms)

    def _begin_job(self, job: _Job) -> int:
        config = self.config
        if job.kind == "stall":
            self._log("herder_stall", stall_ms=job.duration_ms)
            return job.duration_ms
        if job.kind == "stop":
            job.connectors = [c for c in job.connectors if c in self.running_connectors]
            job.tasks = [t for t in job.tasks if t in self.running_tasks]
            for connector in job.connectors:
                self.running_connectors[connector] = "stopping"
                self._log("connector_stop", connector=connector, reason=job.reason)
            for task in job.tasks:
                self.running_tasks[task] = "stopping"
                self._log("task_stop", task=str(task), reason=job.reason)
            return max(
                config.connector_stop_ms if job.connectors else 0,
                config.task_stop_ms if job.tasks else 0,
            )
        # start
        job.connectors = [c for c in job.connectors if c not in self.running_connectors]
        job.tasks = [t for t in job.tasks if t not in self.running_tasks]
        for connector in job.connectors:
            self.running_connectors[connector] = "starting"
            self._log("connector_start", connector=connector, generation=job.generation)
        for task in job.tasks:
            self.running_tasks[task] = "starting"
            self._log("task_start", task=str(task), generation=job.generation)
        return max(
            config.connector_start_ms if job.connectors else 0,
            config.task_start_ms if job.tasks else 0,
        )

    def _finish_job(self, now_ms: int) -> None:
        job = self._job
        if job is None:
            return
        self._job = None
        self._cancel("poll")
        if job.kind == "stall":
            pass
        elif job.kind == "stop":
            for connector in job.connectors:
                if self.running_connectors.pop(connector, None) is not None:
                    self._log("connector_stopped", connector=connector, reason=job.reason)
            for task in job.tasks:
                if self.running_tasks.pop(task, None) is not None:
                    self._log("task_stopped", task=str(task), reason=job.reason)
        else:
            for connector in job.connectors:
                if self.running_connectors.get(connector) == "starting":
                    self.running_connectors[connector] = "running"
                    self._log("connector_started", connector=connector, generation=job.generation)
            for task in job.tasks:
                if self.running_tasks.get(task) == "starting":
                    self.running_tasks[task] = "running"
                    self._log("task_started", task=str(task), generation=job.generation)
        if job.then is not None:
            job.then(now_ms)
        self._next_job(now_ms)

    # ------------------------------------------------------------------ lifecycle

    def _complete_shutdown(self, now_ms: int) -> None:
        # AbstractCoordinator.maybeLeaveGroup: only a member that has joined sends LeaveGroup.
        if self.member_id and self.state is not MemberState.UNJOINED:
            self._log("leave_group", member_id=self.member_id, reason="shutdown")
            self._send(
                LeaveGroupRequest(
                    group_id=self.group_id,
                    member_ids=(self.member_id,),
                    reason="the consumer is being closed",
                )
            )
        self._log("member_stop")
        self._stop_everything()

    def _fail(self, now_ms: int) -> None:
        """The herder thread died: work stops abruptly, the member goes silent."""
        for connector in list(self.running_connectors):
            self._log("connector_stopped", connector=connector, reason="herder failed")
        for task in list(self.running_tasks):
            self._log("task_stopped", task=str(task), reason="herder failed")
        self.running_connectors.clear()
        self.running_tasks.clear()
        # DistributedHerder: "Uncaught exception in herder work thread, exiting" — the process
        # exits without leaving the group.
        self._log("member_crash", reason="herder thread died")
        self._stop_everything()

    def _stop_everything(self) -> None:
        self.state = MemberState.STOPPED
        self._jobs.clear()
        self._job = None
        for key in (
            "session-key",
            "heartbeat",
            "session",
            "poll",
            "herder",
            "scheduled-rebalance",
            "retry",
            "config-sync",
            "request-timeout",
            "find-coordinator",
            "coordinator-lost",
        ):
            self._cancel(key)

    # ------------------------------------------------------------------ effect helpers

    def _config_summary(self) -> dict[str, object]:
        summary: dict[str, object] = {"connect.protocol": self.config.connect_protocol.setting}
        if self.config.static_connectors:
            summary["static.connectors"] = list(self.config.static_connectors)
        if self.config.static_tasks:
            summary["static.tasks"] = [str(t) for t in self.config.static_tasks]
        return summary

    def _take(self) -> list[Effect]:
        effects, self._fx = self._fx, []
        return effects

    def _send(self, message: object) -> None:
        self._fx.append(Send(COORDINATOR_ADDRESS, message))

    def _set(self, key: str, at_ms: int) -> None:
        self._fx.append(SetTimer(key, at_ms))

    def _cancel(self, key: str) -> None:
        self._fx.append(CancelTimer(key))

    def _log(self, kind: str, **fields: object) -> None:
        fields["member"] = self.name
        self._fx.append(Log(kind, fields))

    # ------------------------------------------------------------------ views

    def running_work(self) -> tuple[list[str], list[ConnectorTaskId]]:
        """Connectors and tasks currently running (started and not being stopped)."""
        return (
            [c for c, s in self.running_connectors.items() if s == "running"],
            [t for t, s in self.running_tasks.items() if s == "running"],
        )


def _task_configs_body(connector: str, tasks: int) -> bytes:
    """The bytes a task-configs request signs (its REST body, here reduced to what changes)."""
    return f"{connector}\n{tasks}".encode()
