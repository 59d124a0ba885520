"""A Kafka Connect worker as a pure state machine.

One object plays three Kafka roles, because in Kafka they share one thread and one fate:

* the group client, ``AbstractCoordinator`` — :class:`members.group_client.GroupClient`;
* ``WorkerCoordinator`` (the metadata a worker advertises per ``connect.protocol``,
  ``onJoinPrepare`` revoking the assignment snapshot under eager, ``onJoinComplete`` merging
  incremental assignments into it, the leader running the elected protocol's assignor) — this
  module, with the snapshot's merge in :mod:`members.worker_snapshot` and the leader's
  assignors in :mod:`members.worker_leader`;
* the ``DistributedHerder`` reactions (stop revoked work, check the config offset, start new
  work, rejoin after a revocation, rejoin when the scheduled delay expires, read the config
  topic to its end on CONFIG_MISMATCH) — this module, on the herder's job queue
  (:mod:`members.herder`) and KIP-507's signed requests (:mod:`members.session_keys`).

Sans-IO: every entry point takes the virtual time ``now_ms`` and returns a list of effects
(:mod:`protocol.effects`). Timer keys besides the group client's: ``herder``,
``scheduled-rebalance``, ``config-sync``, ``coordinator-lost``, ``session-key``,
``reconfigure:<connector>:<tasks>``.
"""

from __future__ import annotations

from collections.abc import Callable

from members.assignors.base import AssignorInputError, ConfigSnapshot
from members.config import LOGGED_TIMING_KEYS, WORKER_CONFIG_KEYS, WorkerConfig
from members.group_client import COORDINATOR_ADDRESS, GroupClient
from members.herder import HerderQueue, Job
from members.member_state import GroupTimeouts, MemberState, PollStall
from members.messages import (
    CONFIG_ADDRESS,
    ConfigUpdate,
    ReadConfigToEnd,
    ReconfigureTasks,
    SessionKey,
    TaskConfigsRequest,
    TaskConfigsResponse,
)
from members.session_keys import SessionKeys
from members.worker_leader import LeaderAssignors
from members.worker_snapshot import merge_incremental, snapshot_items
from protocol.connect import (
    PROTOCOL_TYPE,
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
)
from protocol.connect_codec import decode_assignment, join_group_protocols
from protocol.effects import Effect, Send
from protocol.group import UNKNOWN_GENERATION_ID, JoinGroupResponse
from protocol.primitives import DecodeError

__all__ = ["ConnectWorker", "MemberState", "COORDINATOR_ADDRESS"]

#: Connect's ``request.timeout.ms`` default (DistributedConfig): a SyncGroup unanswered this
#: long counts as a lost connection to the coordinator.
REQUEST_TIMEOUT_MS = 40_000


class ConnectWorker(HerderQueue, SessionKeys, GroupClient):
    """A Connect worker process: group member, WorkerCoordinator and herder.

    Args:
        name: the worker's name; also its network address and ``client.id``.
        config: its settings (Kafka names and defaults, see :class:`WorkerConfig`).
        group_id: the Connect cluster's ``group.id``.
        config_view: the config topic as the worker reads it at start-up (Kafka's herder reads
            the topic to its end before joining).
        address: where responses reach this incarnation (defaults to ``name``).
        log_heartbeats: also log heartbeat RPCs.
        session_key: the KIP-507 session key read from the config topic at start-up.

    Entry points (each returns the effects to carry out, in order): :meth:`start`,
    :meth:`handle` (a delivered message), :meth:`fire` (a due timer), :meth:`shutdown`
    (clean stop: stop work, LeaveGroup) and :meth:`crash` (the process dies silently).
    """

    SILENT_TIMER_PREFIXES = ("herder",)
    #: a JoinGroup answer the assignor cannot assign from fails the join and the herder
    #: thread with it (``member_fatal``), as in Kafka
    ASSIGNOR_ERRORS = (DecodeError, AssignorInputError)

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
        timeouts = GroupTimeouts(
            config.session_timeout_ms,
            config.heartbeat_interval_ms,
            config.rebalance_timeout_ms,
            REQUEST_TIMEOUT_MS,
        )
        super().__init__(name, group_id, PROTOCOL_TYPE, timeouts, address=address)
        self.log_heartbeats = log_heartbeats
        self.config = config
        self.url = config.url(name)
        self.config_view = config_view
        self.last_completed_generation = UNKNOWN_GENERATION_ID
        # WorkerCoordinator.currentConnectProtocol starts as the configured compatibility.
        self.current_protocol: ConnectProtocol = config.connect_protocol
        # WorkerCoordinator.assignmentSnapshot: what the worker was last assigned (merged under
        # cooperative protocols). It is what an eager join and a lost coordinator revoke; it
        # can differ from what runs (KAFKA-13816's leftovers, :meth:`leftover_work`).
        self.assignment_snapshot: ConnectAssignment | None = None
        self._init_herder()
        self._waiting_config_offset: int | None = None
        self._after_config: Callable[[int], None] | None = None
        # KIP-507: the session key as read from the config topic; a leader rotates it.
        self.session_key = session_key
        self._key_write_pending = False
        self._reconfigure_backoff = {}
        self._join_snapshot: ConfigSnapshot | None = None
        self._assignors = LeaderAssignors()

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
        return super().start(now_ms)

    def on_message(self, message: object, now_ms: int) -> None:
        """Config-topic updates, REST requests between workers, operator actions, faults."""
        if isinstance(message, ConfigUpdate):
            self._on_config_update(message, now_ms)
        elif isinstance(message, ReconfigureTasks):
            self._reconfigure_tasks(message.connector, message.tasks, now_ms)
        elif isinstance(message, TaskConfigsRequest):
            self._on_task_configs_request(message, now_ms)
        elif isinstance(message, TaskConfigsResponse):
            self._on_task_configs_response(message, now_ms)
        elif isinstance(message, PollStall):
            # A fault: the herder thread blocks (a slow connector start, a long GC, ...).
            self._enqueue(Job("stall", [], [], duration_ms=message.stall_ms), now_ms)

    def on_silent_timer(self, key: str, now_ms: int) -> None:
        self._finish_job(now_ms)  # "herder": the running job is done

    def on_timer(self, key: str, now_ms: int) -> None:
        if key == "scheduled-rebalance":
            # DistributedHerder: the scheduled rebalance is due, ask the group to rejoin.
            self.request_rejoin("scheduled rebalance delay expired", now_ms)
        elif key == "coordinator-lost":
            self._on_coordinator_lost(now_ms)
        elif key == "config-sync":
            self._on_config_sync_timeout(now_ms)
        elif key == "session-key":
            self._maybe_rotate_session_key(now_ms)
        elif key.startswith("reconfigure:"):
            connector, _, tasks = key[len("reconfigure:") :].rpartition(":")
            self._reconfigure_tasks(connector, int(tasks), now_ms)

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
            Job("stop", connectors, tasks, reason="shutdown", then=self._complete_shutdown),
            now_ms,
        )
        return self._take()

    def on_crash(self, now_ms: int) -> None:
        self._stop_all_work("crash")

    def on_fatal(self, now_ms: int) -> None:
        self._stop_all_work("herder failed")
        # DistributedHerder: "Uncaught exception in herder work thread, exiting" — the process
        # exits without leaving the group.
        self._log("member_crash", reason="herder thread died")

    def poll_blocked(self) -> bool:
        """The herder thread is busy with a job or blocked reading the config topic."""
        return self.herder_busy() or self._waiting_config_offset is not None

    def extra_timer_keys(self) -> tuple[str, ...]:
        return (
            "session-key",
            "herder",
            "scheduled-rebalance",
            "config-sync",
            "coordinator-lost",
        )

    # ------------------------------------------------------------------ WorkerCoordinator

    def on_join_prepare(self, now_ms: int) -> bool:
        """WorkerCoordinator.onJoinPrepare: under eager (the protocol of the previous
        generation) the worker revokes its assignment snapshot before joining; under a
        cooperative protocol it revokes nothing.

        Only the snapshot is stopped, not everything the worker runs (Kafka calls
        ``onRevoked`` with the snapshot's connectors and tasks): what the worker kept running
        through an eager round while cooperative, and the eager leader gave to others, is in no
        snapshot and runs on (KAFKA-13816's leftovers, :meth:`leftover_work`).
        """
        snapshot = self.assignment_snapshot
        if self.current_protocol.is_eager and snapshot is not None and not snapshot.failed:
            connectors, tasks = snapshot_items(snapshot)
            if connectors or tasks:
                self._log(
                    "revoke",
                    generation=self.generation,
                    connectors=connectors,
                    tasks=[str(t) for t in tasks],
                    reason="eager_rejoin",
                )
                self._revoke(connectors, tasks, "eager_rejoin", now_ms, then=self.send_join)
                return False
        return True

    def leftover_work(self) -> tuple[list[str], list[ConnectorTaskId]]:
        """Connectors and tasks this worker runs that are not in its assignment snapshot.

        KAFKA-13816: a worker cooperative before an eager round does not revoke when joining
        it, and the eager leader hands some of what it runs to others; the eager snapshot
        holds only the new assignment, so later eager joins (which revoke the snapshot) and a
        lost coordinator do not stop them: they run until the worker stops, or until an
        assignment names them again (then the herder's second start fails, the first instance
        runs on and is owned again). Shapes: ``([connector], [ConnectorTaskId])``, in start
        order.
        """
        owned_c, owned_t = snapshot_items(self.assignment_snapshot)
        connectors = set(owned_c)
        tasks = set(owned_t)
        return (
            [c for c in self.running_connectors if c not in connectors],
            [t for t in self.running_tasks if t not in tasks],
        )

    def _revoke(
        self,
        connectors: list[str],
        tasks: list[ConnectorTaskId],
        reason: str,
        now_ms: int,
        then: Callable[[int], None] | None = None,
    ) -> None:
        """DistributedHerder.RebalanceListener#onRevoked: stop what is named (what of it runs)
        and remove it from the herder's running assignment."""
        self.running_assignment_connectors.difference_update(connectors)
        self.running_assignment_tasks.difference_update(tasks)
        stop_c = [c for c in connectors if c in self.running_connectors]
        stop_t = [t for t in tasks if t in self.running_tasks]
        if stop_c or stop_t or then is not None:
            self._enqueue(Job("stop", stop_c, stop_t, reason=reason, then=then), now_ms)

    def metadata(self, now_ms: int) -> tuple[tuple[str, bytes], ...]:
        """WorkerCoordinator.metadata: a fresh config snapshot on every JoinGroup, and one
        entry per protocol this worker supports (a suffix of static, sessioned, compatible,
        default)."""
        self._join_snapshot = self.config_view
        static = self.config.connect_protocol is ConnectProtocol.STATIC
        return tuple(
            join_group_protocols(
                self.config.connect_protocol,
                self.url,
                self.config_view.offset,
                self.assignment_snapshot,
                self.config.static_connectors if static else (),
                self.config.static_tasks if static else (),
            )
        )

    def perform_assignment(
        self, response: JoinGroupResponse, now_ms: int
    ) -> tuple[tuple[str, bytes], ...]:
        return self._run_assignor(response, now_ms)

    def decode_assignment(self, data: bytes) -> ConnectAssignment:
        return decode_assignment(data)

    def on_join_complete(self, assignment: object, protocol_name: str, now_ms: int) -> None:
        assert isinstance(assignment, ConnectAssignment)
        self._on_join_complete(assignment, protocol_name, now_ms)

    def _run_assignor(
        self, response: JoinGroupResponse, now_ms: int
    ) -> tuple[tuple[str, bytes], ...]:
        """WorkerCoordinator.onLeaderElected: run the elected protocol's assignor
        (:class:`members.worker_leader.LeaderAssignors`) and log its ``assignor`` record."""
        leader_round = self._assignors.run(
            response,
            leader_id=self.member_id,
            generation=self.generation,
            last_completed_generation=self.last_completed_generation,
            snapshot=self._join_snapshot or self.config_view,
            fresh=self.config_view,
            max_delay_ms=self.config.scheduled_rebalance_max_delay_ms,
            now_ms=now_ms,
        )
        self._log("assignor", **leader_round.record)
        return leader_round.assignments

    def _on_join_complete(
        self, assignment: ConnectAssignment, protocol_name: str, now_ms: int
    ) -> None:
        """WorkerCoordinator.onJoinComplete + DistributedHerder.handleRebalanceCompleted."""
        previous_protocol = self.current_protocol
        self.current_protocol = ConnectProtocol.from_protocol_name(protocol_name)
        self.complete_join()
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
        if not self.current_protocol.is_eager:
            # Merge: new incremental items + (old snapshot - revoked).
            merged = merge_incremental(
                self.assignment_snapshot, assignment, revoked_connectors, revoked_tasks
            )
        else:
            merged = assignment
        self.assignment_snapshot = merged
        self.last_completed_generation = self.generation
        generation = self.generation

        # onRevoked: stop what the leader took away (cooperative protocols only).
        if not self.current_protocol.is_eager and (revoked_connectors or revoked_tasks):
            self._log(
                "revoke",
                generation=generation,
                connectors=revoked_connectors,
                tasks=[str(t) for t in revoked_tasks],
                reason="revoked",
            )
            self._revoke(revoked_connectors, revoked_tasks, "revoked", now_ms)

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
                    now_ms, lambda t: self.request_rejoin("config mismatch", t)
                )
            else:
                self.request_rejoin("config mismatch", now_ms)
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
            self.request_rejoin("config offset mismatch", now_ms)
            return
        # DistributedHerder#startWork: start what is assigned and not in the herder's running
        # assignment; then the running assignment is the assignment (empty under eager, v0).
        # The herder starts only what the config it has read defines: Worker.startConnector
        # and startTask fail for a connector or task config that no longer exists. What the
        # worker already runs outside its running assignment (a KAFKA-13816 leftover) is
        # started again and fails (Worker#startTask: "Task already exists in this worker";
        # the herder reports it FAILED) while the first instance runs on (HerderQueue).
        configured = self.config_view.connectors
        start_connectors = [
            c
            for c in dict.fromkeys(assignment.connectors)
            if c not in self.running_assignment_connectors and c in configured
        ]
        start_tasks = [
            t
            for t in dict.fromkeys(assignment.tasks)
            if t not in self.running_assignment_tasks and t.task < configured.get(t.connector, 0)
        ]
        if self.current_protocol.is_eager:
            self.running_assignment_connectors = set()
            self.running_assignment_tasks = set()
        else:
            self.running_assignment_connectors = set(assignment.connectors)
            self.running_assignment_tasks = set(assignment.tasks)
        if start_connectors or start_tasks:
            self._enqueue(
                Job(
                    "start",
                    start_connectors,
                    start_tasks,
                    generation=generation,
                    config_offset=self.config_view.offset,
                ),
                now_ms,
            )
        if revoked_any:
            # The follow-up rebalance in which revoked work is handed to other workers.
            self._after_jobs(lambda t: self.request_rejoin("revocation follow-up", t), now_ms)

    # ------------------------------------------------------------------ losing the coordinator

    def on_coordinator_unknown(self, now_ms: int) -> None:
        """WorkerCoordinator.poll gives discovery ``heartbeat.interval.ms``; if the coordinator
        is still unknown then, the worker revokes its whole assignment (KAFKA-9184's fix,
        ``WorkerCoordinator#onJoinPrepare`` / ``AbstractCoordinator#markCoordinatorUnknown``)."""
        self._set("coordinator-lost", now_ms + self.config.heartbeat_interval_ms)

    def on_coordinator_found(self, now_ms: int) -> None:
        self._cancel("coordinator-lost")

    def _on_coordinator_lost(self, now_ms: int) -> None:
        """WorkerCoordinator.poll: discovery failed within heartbeat.interval.ms."""
        if self.coordinator_known:
            return
        snapshot = self.assignment_snapshot
        if snapshot is not None and not snapshot.failed:
            # Kafka revokes the assignment snapshot, not what else the worker runs.
            connectors, tasks = snapshot_items(snapshot)
            self._log(
                "revoke",
                generation=self.generation,
                connectors=connectors,
                tasks=[str(t) for t in tasks],
                reason="coordinator_lost",
            )
            self._revoke(connectors, tasks, "coordinator_lost", now_ms)
            # The next JoinGroup carries no allocation: the worker starts over. A null snapshot
            # makes WorkerCoordinator.rejoinNeededOrPending() true: it rejoins once it finds
            # the coordinator again.
            self.assignment_snapshot = None
            self.rejoin_needed = True
            self.rejoin_reason = "assignment revoked after losing the coordinator"

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
            self.poll_resumed(now_ms)
            return
        if old != update.connectors:
            if not self.current_protocol.is_eager:
                self._stop_reconfigured_tasks(old, update.connectors, now_ms)
            # DistributedHerder: connectors added or removed, or task configs changed,
            # need a rebalance.
            self.request_rejoin("connector configuration changed", now_ms)

    def _stop_reconfigured_tasks(
        self, old: dict[str, int], new: dict[str, int], now_ms: int
    ) -> None:
        """Stop the local tasks of every connector whose task configs were rewritten.

        DistributedHerder (incremental cooperative): a connector whose task count changed had
        all its task configs written again (``onTaskConfigUpdate``), so every task of it this
        worker runs is stopped at once (``stopReconfiguredTasks``) and restarted after the
        rebalance if still assigned (``startWork``'s ``tasksToRestart``). A deleted connector
        only requests a rebalance (``onConnectorConfigRemove``): it and its tasks run until an
        assignment revokes them.
        """
        rewritten = {c for c, n in new.items() if c in old and old[c] != n}
        stop = [t for t in self.running_tasks if t.connector in rewritten]
        # startWork removes these (tasksToRestart) from the running assignment
        self.running_assignment_tasks.difference_update(stop)
        if stop:
            self._enqueue(Job("stop", [], stop, reason="task configs rewritten"), now_ms)

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
        self.poll_resumed(now_ms)

    # ------------------------------------------------------------------ lifecycle

    def _complete_shutdown(self, now_ms: int) -> None:
        # AbstractCoordinator.maybeLeaveGroup: only a member that has joined sends LeaveGroup.
        if self.member_id and self.state is not MemberState.UNJOINED:
            self.leave_group("shutdown", "the consumer is being closed")
        self._log("member_stop")
        self._stop_everything()

    def _stop_all_work(self, reason: str) -> None:
        """Everything running stops at once (a crash, or the herder thread dying)."""
        for connector in list(self.running_connectors):
            self._log("connector_stopped", connector=connector, reason=reason)
        for task in list(self.running_tasks):
            self._log("task_stopped", task=str(task), reason=reason)
        self.running_connectors.clear()
        self.running_tasks.clear()
        self.running_assignment_connectors = set()
        self.running_assignment_tasks = set()

    def _config_summary(self) -> dict[str, object]:
        summary: dict[str, object] = {"connect.protocol": self.config.connect_protocol.setting}
        if self.config.static_connectors:
            summary["static.connectors"] = list(self.config.static_connectors)
        if self.config.static_tasks:
            summary["static.tasks"] = [str(t) for t in self.config.static_tasks]
        # The timers the checkers bound windows with (scheduled delay, KAFKA-9184, quiet
        # periods), only where they differ from Kafka's defaults: default logs stay unchanged.
        default = WorkerConfig()
        for key in LOGGED_TIMING_KEYS:
            field = WORKER_CONFIG_KEYS[key]
            value = getattr(self.config, field)
            if value != getattr(default, field):
                summary[key] = value
        return summary
