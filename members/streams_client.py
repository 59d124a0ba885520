"""A Kafka Streams client (one ``KafkaStreams`` instance) as a pure group member.

What one :class:`StreamsClient` plays, and the Kafka classes followed:

* the group client (``AbstractCoordinator`` / ``ConsumerCoordinator`` with the COOPERATIVE
  rebalance protocol): JoinGroup with protocol type ``consumer`` and the one protocol
  ``stream``; KIP-394 ``MEMBER_ID_REQUIRED``; SyncGroup; heartbeats; rediscovering the
  coordinator; ``onPartitionsRevoked`` for partitions no longer assigned followed by a rejoin;
  ``onPartitionsLost`` when fenced;
* ``StreamsPartitionAssignor`` on the member side: the ``SubscriptionInfo`` it sends (v11:
  process id, per-task offset sums, client tags) and what it does with its ``AssignmentInfo``
  (``nextRebalanceMs``: rejoin at once for 0, at that time otherwise); on the leader, the
  assignment itself (:class:`members.streams_state.StreamsPartitionAssignor`);
* ``StreamThread`` / ``TaskManager``: creating, restoring, running, recycling and closing
  active and standby tasks, and the offset sums it reports (``-2`` for a running active task,
  the checkpointed offset for any other task with state on disk).

**Simplifications** (docs/streams.md): one group member per client standing for all its
``num.stream.threads`` threads (capacity travels in a trailer of the user data; Kafka counts
the client's consumers); restoration and standby updates advance at the client's
``groupsim.restore.records.per.sec`` per task, changelogs grow at their configured rate whether
or not their task runs; closing and starting tasks take no time; no EOS state wiping.
Like Kafka Streams (``internal.leave.group.on.close=false``), a client that shuts down does not
send LeaveGroup unless asked to (KIP-812's ``CloseOptions.leaveGroup``).

Sans-IO: every entry point takes ``now_ms`` and returns effects (:mod:`protocol.effects`).
Timer keys: ``heartbeat``, ``session``, ``request-timeout``, ``retry``, ``find-coordinator``,
``probing-rebalance``, ``restore:<task>`` (an active task finishes restoring),
``caught-up:<task>`` (a standby gets within ``acceptable.recovery.lag``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from members.assignors.streams import LATEST_OFFSET, AssignmentConfigs, TaskId
from members.streams_state import (
    PROTOCOL_NAME,
    PROTOCOL_TYPE,
    ConsumerSubscription,
    StoreState,
    StreamsPartitionAssignor,
    StreamsTopology,
    catch_up_ms,
    encode_consumer_subscription,
    process_uuid,
    read_assignment,
    subscription_user_data,
    wire_task,
)
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
from protocol.streams_codec import (
    LATEST_SUPPORTED_VERSION,
    NO_NEXT_REBALANCE,
    StreamsAssignment,
    StreamsVersionError,
    next_subscription_version,
)

__all__ = ["StreamsClient", "StreamsClientConfig", "ClientPhase", "COORDINATOR_ADDRESS"]

COORDINATOR_ADDRESS = "coordinator"
RETRY_BACKOFF_MS = 100
REQUEST_TIMEOUT_MS = 30_000  # consumer request.timeout.ms default
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000
FIND_COORDINATOR_RETRY_MS = 1_000

_COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
_FATAL_JOIN_ERRORS = frozenset(
    {
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode.INVALID_SESSION_TIMEOUT,
        ErrorCode.INVALID_GROUP_ID,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.FENCED_INSTANCE_ID,
    }
)


class ClientPhase:
    """Member states (``AbstractCoordinator.MemberState``) plus STOPPED."""

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    STABLE = "STABLE"
    STOPPED = "STOPPED"


@dataclass(frozen=True)
class StreamsClientConfig:
    """One client's settings (Kafka names in scenario files; defaults are Kafka's).

    Attributes:
        process_id: ``PID_<n>`` (= ``UUID(0, n)``) or a UUID string.
        num_stream_threads: ``num.stream.threads`` = the client's capacity.
        client_rack: the consumers' ``client.rack`` (KIP-925), or ``None``.
        client_tags: ``client.tag.<key>`` values (KIP-708).
        assignment: the ``StreamsConfig`` assignment configs (``acceptable.recovery.lag``,
            ``max.warmup.replicas``, ``num.standby.replicas``,
            ``probing.rebalance.interval.ms``, ``rack.aware.assignment.*``); the leader uses
            its own.
        session_timeout_ms / heartbeat_interval_ms / max_poll_interval_ms: consumer configs
            (45000 / 3000 / 300000); the rebalance timeout is ``max.poll.interval.ms``.
        restore_records_per_sec: groupsim's restore speed per task (records per virtual
            second) for restoring actives and updating standbys.
        latest_supported_version: ``groupsim.latest.supported.version``: the client plays a
            Streams release whose ``LATEST_SUPPORTED_VERSION`` is this (7-11; 11 = this
            release). It subscribes with it, reads newer subscriptions as future ones when
            leader, and follows version probing (docs/streams.md).
    """

    process_id: str
    num_stream_threads: int = 1
    client_rack: str | None = None
    client_tags: Mapping[str, str] = field(default_factory=dict)
    assignment: AssignmentConfigs = field(default_factory=AssignmentConfigs)
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    restore_records_per_sec: int = 10_000
    latest_supported_version: int = LATEST_SUPPORTED_VERSION


class StreamsClient:
    """A Kafka Streams instance in the group.

    Args:
        name: the client's name: its ``client.id`` and (with ``address``) network address.
        config: its settings.
        topology: the application (shared by every client of the group: same code).
        group_id: ``application.id``.
        stores: the state directory: task → :class:`StoreState`; survives restarts (the
            runtime passes the same dict to the next incarnation). Mutated.
        address: where responses reach this incarnation (default ``name``).
        log_heartbeats: log heartbeat RPCs.

    Entry points (each returns effects): :meth:`start`, :meth:`handle`, :meth:`fire`,
    :meth:`shutdown` (``KafkaStreams.close``), :meth:`crash`.
    """

    def __init__(
        self,
        name: str,
        config: StreamsClientConfig,
        topology: StreamsTopology,
        *,
        group_id: str,
        stores: dict[TaskId, StoreState] | None = None,
        address: str | None = None,
        log_heartbeats: bool = False,
    ) -> None:
        self.name = name
        self.address = address or name
        self.config = config
        self.topology = topology
        self.group_id = group_id
        self.process_id: uuid.UUID = process_uuid(config.process_id)
        self.stores: dict[TaskId, StoreState] = stores if stores is not None else {}
        self.log_heartbeats = log_heartbeats

        self.state = ClientPhase.UNJOINED
        self.member_id = UNKNOWN_MEMBER_ID
        self.generation = UNKNOWN_GENERATION_ID
        self.leader_id: str | None = None
        self.rejoin_needed = True
        self.rejoin_reason = "start-up"
        self.coordinator_known = True
        self.active: dict[TaskId, str] = {}  # task -> "restoring" | "running"
        self.standby: dict[TaskId, bool] = {}  # task -> caught up (within acceptable lag)
        self._started_at: dict[TaskId, int] = {}
        self._unique = 0
        #: ``usedSubscriptionMetadataVersion``: starts at the release's latest version.
        self.subscription_version = config.latest_supported_version
        self._heartbeat_in_flight = False
        self._heartbeat_generation = UNKNOWN_GENERATION_ID
        self._fx: list[Effect] = []

    # ------------------------------------------------------------------ entry points

    def start(self, now_ms: int) -> list[Effect]:
        """The instance starts (``KafkaStreams.start``): log it and join the group."""
        c = self.config
        summary: dict[str, object] = {
            "process_id": c.process_id,
            "num.stream.threads": c.num_stream_threads,
        }
        if c.client_rack is not None:
            summary["client.rack"] = c.client_rack
        if c.client_tags:
            summary["client.tags"] = dict(c.client_tags)
        if c.latest_supported_version != LATEST_SUPPORTED_VERSION:
            summary["latest_supported_version"] = c.latest_supported_version
        self._log("member_start", config=summary, state_dir=sorted(map(str, self.stores)))
        self._maybe_rejoin(now_ms)
        return self._take()

    def handle(self, message: object, now_ms: int) -> list[Effect]:
        """Process a message delivered to this client."""
        if self.state == ClientPhase.STOPPED:
            return []
        if isinstance(message, HeartbeatResponse):
            self._on_heartbeat_response(message, now_ms)
        elif isinstance(message, JoinGroupResponse):
            self._on_join_response(message, now_ms)
        elif isinstance(message, SyncGroupResponse):
            self._on_sync_response(message, now_ms)
        elif isinstance(message, FindCoordinatorResponse):
            self._on_find_coordinator_response(message, now_ms)
        elif isinstance(message, LeaveGroupResponse):
            pass
        return self._take()

    def fire(self, key: str, now_ms: int) -> list[Effect]:
        """A timer this client armed is due."""
        if self.state == ClientPhase.STOPPED:
            return []
        if key == "heartbeat":
            self._send_heartbeat(now_ms)
        elif key.startswith("restore:"):
            self._on_restored(TaskId.parse(key[len("restore:") :]), now_ms)
        elif key.startswith("caught-up:"):
            self._on_standby_caught_up(TaskId.parse(key[len("caught-up:") :]), now_ms)
        else:
            self._log("timer_fired", key=key)
            if key == "probing-rebalance":
                # StreamThread: now > nextScheduledRebalanceMs → enforceRebalance.
                self._request_rejoin("scheduled probing rebalance", now_ms)
            elif key == "retry":
                self._maybe_rejoin(now_ms)
            elif key == "session":
                if self.state in (ClientPhase.COMPLETING_REBALANCE, ClientPhase.STABLE):
                    self._coordinator_unknown("session timed out", now_ms)
            elif key == "request-timeout":
                self._on_request_timeout(now_ms)
            elif key == "find-coordinator" and not self.coordinator_known:
                self._find_coordinator(now_ms)
        return self._take()

    def shutdown(self, now_ms: int, *, leave_group: bool = False) -> list[Effect]:
        """``KafkaStreams.close``: close every task (state stays on disk), stop.

        Kafka Streams' consumers do not send LeaveGroup on close
        (``internal.leave.group.on.close=false``): the coordinator notices after
        ``session.timeout.ms``. ``leave_group=True`` is KIP-812's
        ``CloseOptions.leaveGroup(true)``.
        """
        if self.state == ClientPhase.STOPPED:
            return []
        self._close_all("shutdown", now_ms)
        if leave_group and self.member_id and self.state != ClientPhase.UNJOINED:
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
        return self._take()

    def crash(self, now_ms: int) -> list[Effect]:
        """The process dies: no LeaveGroup; state on disk stays at the offsets reached."""
        if self.state == ClientPhase.STOPPED:
            return []
        self._close_all("crash", now_ms)
        self._log("member_crash")
        self._stop_everything()
        return self._take()

    # ------------------------------------------------------------------ views

    def running_active(self) -> list[TaskId]:
        """Active tasks in RUNNING (restored and processing), sorted."""
        return sorted(t for t, s in self.active.items() if s == "running")

    def offset_sums(self, now_ms: int) -> dict[TaskId, int]:
        """``TaskManager.getTaskOffsetSums``: ``-2`` for a running active task, else the
        offset reached by every task with state on disk (stateful tasks only)."""
        out: dict[TaskId, int] = {}
        for task in sorted(self.stores):
            if self.active.get(task) == "running":
                out[task] = LATEST_OFFSET
            else:
                out[task] = self._offset(task, now_ms)
        for task, status in self.active.items():
            if status == "running" and self.topology.is_stateful(task):
                out[task] = LATEST_OFFSET
        return out

    # ------------------------------------------------------------------ group protocol

    def _maybe_rejoin(self, now_ms: int) -> None:
        if (
            not self.rejoin_needed
            or self.state not in (ClientPhase.UNJOINED, ClientPhase.STABLE)
            or not self.coordinator_known
        ):
            return
        self._send_join(now_ms)

    def _subscription(self, now_ms: int) -> bytes:
        self._unique = (self._unique + 1) % 128
        owned = tuple(sorted(self.topology.source_partition(t) for t in self.active))
        user = subscription_user_data(
            self.process_id,
            self.offset_sums(now_ms),
            self.config.client_tags,
            self._unique,
            version=self.subscription_version,
            latest_supported_version=self.config.latest_supported_version,
        )
        return encode_consumer_subscription(
            ConsumerSubscription(
                topics=tuple(self.topology.source_topics),
                user_data=user,
                owned_partitions=owned,
                generation_id=self.generation,
                rack_id=self.config.client_rack,
                threads=self.config.num_stream_threads,
            )
        )

    def _send_join(self, now_ms: int) -> None:
        self.state = ClientPhase.PREPARING_REBALANCE
        self._cancel("heartbeat")
        self._cancel("session")
        self._set(
            "request-timeout",
            now_ms + self.config.max_poll_interval_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS,
        )
        self._log(
            "join_group_request",
            member_id=self.member_id,
            protocols=[PROTOCOL_NAME],
            reason=self.rejoin_reason,
        )
        self._send(
            JoinGroupRequest(
                group_id=self.group_id,
                member_id=self.member_id,
                protocol_type=PROTOCOL_TYPE,
                protocols=((PROTOCOL_NAME, self._subscription(now_ms)),),
                session_timeout_ms=self.config.session_timeout_ms,
                rebalance_timeout_ms=self.config.max_poll_interval_ms,
                client_id=self.name,
                reason=self.rejoin_reason,
            )
        )

    def _on_join_response(self, response: JoinGroupResponse, now_ms: int) -> None:
        if self.state != ClientPhase.PREPARING_REBALANCE:
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
            self.state = ClientPhase.COMPLETING_REBALANCE
            self._arm_heartbeat(now_ms)
            self._set("session", now_ms + self.config.session_timeout_ms)
            is_leader = response.leader == response.member_id
            assignments: tuple[tuple[str, bytes], ...] = ()
            if is_leader:
                try:
                    assignments = self._run_assignor(response, now_ms)
                except (DecodeError, StreamsVersionError) as exc:
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
        self.state = ClientPhase.UNJOINED
        if error == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self._maybe_rejoin(now_ms)
        elif error == ErrorCode.UNKNOWN_MEMBER_ID:
            self._reset_generation(reset_member_id=True)
            self._lose_all("unknown member id", now_ms)
            self._maybe_rejoin(now_ms)
        elif error == ErrorCode.REBALANCE_IN_PROGRESS:
            self._maybe_rejoin(now_ms)
        elif error in _FATAL_JOIN_ERRORS:
            self._log("member_fatal", error=error.name)
            self._fail(now_ms)
        elif error in _COORDINATOR_ERRORS:
            self._coordinator_unknown(f"JoinGroup: {error.name}", now_ms)
        else:
            self._set("retry", now_ms + RETRY_BACKOFF_MS)

    def _run_assignor(
        self, response: JoinGroupResponse, now_ms: int
    ) -> tuple[tuple[str, bytes], ...]:
        assignor = StreamsPartitionAssignor(
            self.topology,
            self.config.assignment,
            self.process_id,
            self.config.latest_supported_version,
        )
        members = [(m.member_id, m.metadata) for m in response.members]
        out = assignor.assign(members, now_ms)
        self._log("streams_assignment", generation=self.generation, **out.record)
        if out.probing_at_ms is not None:
            self._log(
                "probing_rebalance_scheduled",
                generation=self.generation,
                at_ms=out.probing_at_ms,
                interval_ms=self.config.assignment.probing_rebalance_interval_ms,
            )
        return out.assignments

    def _on_sync_response(self, response: SyncGroupResponse, now_ms: int) -> None:
        if self.state != ClientPhase.COMPLETING_REBALANCE:
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
            self.state = ClientPhase.UNJOINED
            if error == ErrorCode.UNKNOWN_MEMBER_ID:
                self._reset_generation(reset_member_id=True)
                self._lose_all("unknown member id", now_ms)
            elif error == ErrorCode.ILLEGAL_GENERATION:
                self._reset_generation(reset_member_id=False)
                self._lose_all("illegal generation", now_ms)
            elif error in _COORDINATOR_ERRORS:
                self._coordinator_unknown(f"SyncGroup: {error.name}", now_ms)
            self._request_rejoin(f"SyncGroup failed: {error.name}", now_ms)
            return
        try:
            consumer, info = read_assignment(response.assignment)
        except DecodeError as exc:
            self._log("member_fatal", error=f"unreadable assignment: {exc}")
            self._fail(now_ms)
            return
        self._on_assignment(consumer.partitions, info, now_ms)

    def _on_assignment(self, partitions: tuple, info: object, now_ms: int) -> None:
        """``ConsumerCoordinator.onJoinComplete`` (COOPERATIVE) +
        ``StreamsPartitionAssignor.onAssignment`` + ``TaskManager.handleAssignment``."""
        assert isinstance(info, StreamsAssignment)
        # onAssignment: validateMetadataVersions + maybeUpdateSubscriptionVersion (version
        # probing), only for an assignment without error.
        used = self.subscription_version
        new_version, version_rejoin = used, False
        if info.error_code == 0:
            try:
                new_version, version_rejoin = next_subscription_version(
                    used,
                    info.version,
                    info.commonly_supported_version,
                    self.config.latest_supported_version,
                )
            except StreamsVersionError as exc:
                self._log("member_fatal", error=f"assignment versions: {exc}")
                self._fail(now_ms)
                return
        self.state = ClientPhase.STABLE
        self.rejoin_needed = False
        topology = self.topology
        new_active = sorted(
            {t for tp in partitions if (t := topology.task_of_partition(tp)) is not None}
        )
        new_standby = sorted({wire_task(t) for t in info.standby_tasks})
        revoked = sorted(t for t in self.active if t not in new_active)
        next_ms = info.next_rebalance_ms
        self._log(
            "assignment",
            member_id=self.member_id,
            generation=self.generation,
            protocol=PROTOCOL_NAME,
            leader_id=self.leader_id,
            error=info.error_code,
            active=[str(t) for t in new_active],
            standby=[str(t) for t in new_standby],
            revoked=[str(t) for t in revoked],
            next_rebalance_ms=None if next_ms == NO_NEXT_REBALANCE else next_ms,
        )
        generation = self.generation
        # onPartitionsRevoked: close (or recycle into a standby) what was taken away.
        for task in revoked:
            reason = "revoked"
            if task in new_standby:
                reason = "recycled to standby"
            self._close_active(task, reason, now_ms)
        for task in sorted(self.standby):
            if task not in new_standby:
                reason = "recycled to active" if task in new_active else "unassigned"
                self._close_standby(task, reason, now_ms)
        for task in new_active:
            if task not in self.active:
                self._create_active(task, generation, now_ms)
        for task in new_standby:
            if task not in self.standby and task not in self.active:
                self._create_standby(task, generation, now_ms)

        # StreamsPartitionAssignor.onAssignment: nextScheduledRebalanceMs.
        if next_ms == 0:
            self._cancel("probing-rebalance")
            self._request_rejoin("follow-up rebalance requested by the leader", now_ms)
        elif next_ms != NO_NEXT_REBALANCE:
            self._set("probing-rebalance", max(now_ms, next_ms))
        else:
            self._cancel("probing-rebalance")
        if version_rejoin:
            self.subscription_version = new_version
            self._log(
                "subscription_version_update",
                from_version=used,
                to_version=new_version,
                assignment_version=info.version,
                commonly_supported_version=info.commonly_supported_version,
            )
            upgrade = new_version > used
            why = "every member supports a newer version" if upgrade else "assignment is older"
            self._request_rejoin(f"version probing: {why}", now_ms)
        if revoked:
            self._request_rejoin("need to revoke partitions and re-join", now_ms)

    def _request_rejoin(self, reason: str, now_ms: int) -> None:
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
            self.state not in (ClientPhase.COMPLETING_REBALANCE, ClientPhase.STABLE)
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
        self._send(
            HeartbeatRequest(
                group_id=self.group_id, member_id=self.member_id, generation_id=self.generation
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
            if self.state in (ClientPhase.COMPLETING_REBALANCE, ClientPhase.STABLE):
                self._set("session", now_ms + self.config.session_timeout_ms)
            return
        if error == ErrorCode.REBALANCE_IN_PROGRESS:
            if self.state == ClientPhase.STABLE:
                self._request_rejoin("group is rebalancing", now_ms)
            else:
                self._set("session", now_ms + self.config.session_timeout_ms)
            return
        if error in _COORDINATOR_ERRORS:
            self._coordinator_unknown(f"Heartbeat: {error.name}", now_ms)
            return
        if error in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID):
            if self._heartbeat_generation != self.generation:
                return
            if self.state in (ClientPhase.COMPLETING_REBALANCE, ClientPhase.STABLE):
                self.state = ClientPhase.UNJOINED
                self._reset_generation(reset_member_id=error == ErrorCode.UNKNOWN_MEMBER_ID)
                # ConsumerCoordinator: fenced → onPartitionsLost (Streams: handleLostAll).
                self._lose_all(f"heartbeat failed: {error.name}", now_ms)
                self._request_rejoin(f"heartbeat failed: {error.name}", now_ms)

    # ------------------------------------------------------------------ the coordinator

    def _coordinator_unknown(self, reason: str, now_ms: int) -> None:
        if not self.coordinator_known:
            return
        self.coordinator_known = False
        self._heartbeat_in_flight = False
        self._log("coordinator_unknown", member_id=self.member_id, reason=reason)
        self._cancel("heartbeat")
        self._cancel("session")
        self._find_coordinator(now_ms)

    def _find_coordinator(self, now_ms: int) -> None:
        self._send(FindCoordinatorRequest(key=self.group_id))
        self._set("find-coordinator", now_ms + FIND_COORDINATOR_RETRY_MS)

    def _on_find_coordinator_response(self, response: FindCoordinatorResponse, now_ms: int) -> None:
        if self.coordinator_known or response.error != ErrorCode.NONE:
            return
        self.coordinator_known = True
        self._cancel("find-coordinator")
        self._log("coordinator_found", member_id=self.member_id)
        if self.state in (ClientPhase.COMPLETING_REBALANCE, ClientPhase.STABLE):
            self._set("session", now_ms + self.config.session_timeout_ms)
            self._send_heartbeat(now_ms)
        self._maybe_rejoin(now_ms)

    def _on_request_timeout(self, now_ms: int) -> None:
        if self.state not in (ClientPhase.PREPARING_REBALANCE, ClientPhase.COMPLETING_REBALANCE):
            return
        self.state = ClientPhase.UNJOINED
        self.rejoin_needed = True
        self.rejoin_reason = "request timed out"
        self._coordinator_unknown("request timed out", now_ms)

    # ------------------------------------------------------------------ tasks

    def _rate(self) -> int:
        return self.config.restore_records_per_sec

    def _end(self, task: TaskId, now_ms: int) -> int:
        return self.topology.end_offset(task, now_ms)

    def _offset(self, task: TaskId, now_ms: int) -> int:
        store = self.stores.get(task)
        if store is None:
            return 0
        return store.offset(now_ms, self._end(task, now_ms), self._rate())

    def _store(self, task: TaskId, now_ms: int) -> StoreState:
        store = self.stores.get(task)
        if store is None:
            store = self.stores[task] = StoreState(0, now_ms)
        return store

    def _create_active(self, task: TaskId, generation: int, now_ms: int) -> None:
        """A new active task: restore its stores from the changelog, then run."""
        self._started_at[task] = now_ms
        if not self.topology.is_stateful(task):
            self.active[task] = "running"
            self._log("active_task_start", task=str(task), generation=generation, lag=None)
            self._log("active_task_running", task=str(task), generation=generation, restore_ms=0)
            return
        end = self._end(task, now_ms)
        store = self._store(task, now_ms)
        store.rebase(now_ms, end, self._rate(), "restoring")
        lag = end - store.offset0
        self.active[task] = "restoring"
        self._log("active_task_start", task=str(task), generation=generation, lag=lag)
        due = catch_up_ms(self.topology, task, store, now_ms, self._rate(), 0)
        if due == now_ms:
            self._on_restored(task, now_ms)
        elif due is not None:
            self._set(f"restore:{task}", due)

    def _on_restored(self, task: TaskId, now_ms: int) -> None:
        if self.active.get(task) != "restoring":
            return
        store = self._store(task, now_ms)
        store.rebase(now_ms, self._end(task, now_ms), self._rate(), "current")
        self.active[task] = "running"
        self._log(
            "active_task_running",
            task=str(task),
            generation=self.generation,
            restore_ms=now_ms - self._started_at.get(task, now_ms),
        )

    def _create_standby(self, task: TaskId, generation: int, now_ms: int) -> None:
        end = self._end(task, now_ms)
        store = self._store(task, now_ms)
        store.rebase(now_ms, end, self._rate(), "restoring")
        self.standby[task] = False
        self._log(
            "standby_task_start", task=str(task), generation=generation, lag=end - store.offset0
        )
        acceptable = self.config.assignment.acceptable_recovery_lag
        due = catch_up_ms(self.topology, task, store, now_ms, self._rate(), acceptable)
        if due == now_ms:
            self._on_standby_caught_up(task, now_ms)
        elif due is not None:
            self._set(f"caught-up:{task}", due)

    def _on_standby_caught_up(self, task: TaskId, now_ms: int) -> None:
        if self.standby.get(task) is not False:
            return
        self.standby[task] = True
        self._log(
            "standby_task_caught_up",
            task=str(task),
            lag=self._end(task, now_ms) - self._offset(task, now_ms),
            acceptable_recovery_lag=self.config.assignment.acceptable_recovery_lag,
        )

    def _close_active(self, task: TaskId, reason: str, now_ms: int) -> None:
        if self.active.pop(task, None) is None:
            return
        self._cancel(f"restore:{task}")
        store = self.stores.get(task)
        if store is not None:
            store.rebase(now_ms, self._end(task, now_ms), self._rate(), "frozen")
        self._log("active_task_stopped", task=str(task), reason=reason)

    def _close_standby(self, task: TaskId, reason: str, now_ms: int) -> None:
        if self.standby.pop(task, None) is None:
            return
        self._cancel(f"caught-up:{task}")
        store = self.stores.get(task)
        if store is not None:
            store.rebase(now_ms, self._end(task, now_ms), self._rate(), "frozen")
        self._log("standby_task_stopped", task=str(task), reason=reason)

    def _close_all(self, reason: str, now_ms: int) -> None:
        for task in sorted(self.active):
            self._close_active(task, reason, now_ms)
        for task in sorted(self.standby):
            self._close_standby(task, reason, now_ms)

    def _lose_all(self, reason: str, now_ms: int) -> None:
        """``TaskManager.handleLostAll``: active tasks are closed dirty; standbys stay."""
        for task in sorted(self.active):
            self._close_active(task, f"lost: {reason}", now_ms)

    # ------------------------------------------------------------------ lifecycle

    def _fail(self, now_ms: int) -> None:
        self._close_all("stream thread died", now_ms)
        self._stop_everything()

    def _stop_everything(self) -> None:
        self.state = ClientPhase.STOPPED
        for key in (
            "heartbeat",
            "session",
            "retry",
            "request-timeout",
            "find-coordinator",
            "probing-rebalance",
        ):
            self._cancel(key)

    # ------------------------------------------------------------------ effect helpers

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
