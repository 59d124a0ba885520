"""A Kafka Streams client (one ``KafkaStreams`` instance) as a pure group member.

What one :class:`StreamsClient` plays, and the Kafka classes followed:

* the group client (``AbstractCoordinator`` — :class:`members.group_client.GroupClient` —
  and ``ConsumerCoordinator`` with the COOPERATIVE
  rebalance protocol): JoinGroup with protocol type ``consumer`` and the one protocol
  ``stream``; KIP-394 ``MEMBER_ID_REQUIRED``; SyncGroup; heartbeats; rediscovering the
  coordinator; ``onPartitionsRevoked`` for partitions no longer assigned followed by a rejoin;
  ``onPartitionsLost`` when fenced;
* ``StreamsPartitionAssignor`` on the member side: the ``SubscriptionInfo`` it sends (v11:
  process id, per-task offset sums, client tags) and what it does with its ``AssignmentInfo``
  (decided by :func:`members.streams_on_assignment.plan_assignment`); on the leader, the
  assignment itself
  (:class:`members.assignors.streams.partition_assignor.StreamsPartitionAssignor`);
* ``StreamThread`` / ``TaskManager``: creating, restoring, running, recycling and closing
  active and standby tasks, and the offset sums it reports (``-2`` for a running active task,
  the checkpointed offset for any other task with state on disk).

**Simplifications** (docs/streams.md): one group member per client standing for all its
``num.stream.threads`` threads (capacity travels in a trailer of the user data; Kafka counts
the client's consumers); its tasks are spread over its threads as Kafka's leader spreads them
over a client's consumers (:func:`members.restore.assign_tasks_to_threads`) and each thread
restores them through one restore stream (:class:`members.restore.RestoreThread`: actives
before standbys, changelog after changelog in chunks of ``max.partition.fetch.bytes``, at
``groupsim.restore.records.per.sec`` per thread); a running active moved to another thread of
its client does not restore again; changelogs grow at their configured rate whether or not
their task runs; closing and starting tasks take no time; no EOS state wiping.
Like Kafka Streams (``internal.leave.group.on.close=false``), a client that shuts down does not
send LeaveGroup unless asked to (KIP-812's ``CloseOptions.leaveGroup``).

A ``slow`` fault blocks the stream thread (:class:`members.group_client.PollStall`): it sends
no JoinGroup until the stall ends, and a stall longer than ``max.poll.interval.ms`` expires the
poll timer: the client leaves the group and loses its active tasks.

Sans-IO: every entry point takes ``now_ms`` and returns effects (:mod:`protocol.effects`).
Timer keys besides the group client's: ``probing-rebalance``, ``restore-thread:<i>`` (stream
thread ``i``'s restore stream ends a chunk or a standby gets within
``acceptable.recovery.lag``), ``stream-thread`` (a stall ends).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from members.assignors.streams import LATEST_OFFSET, AssignmentConfigs, TaskId
from members.assignors.streams.partition_assignor import StreamsPartitionAssignor
from members.group_client import COORDINATOR_ADDRESS, GroupClient
from members.member_state import GroupTimeouts, MemberState, PollStall
from members.restore import RestoreEvent, RestoreThread, assign_tasks_to_threads, chunk_records
from members.streams_on_assignment import plan_assignment
from members.streams_state import (
    CONSUMER_PROTOCOL_VERSION,
    PROTOCOL_NAME,
    PROTOCOL_TYPE,
    StoreState,
    StreamsTopology,
    process_uuid,
    read_assignment,
    subscription_user_data,
    with_threads,
)
from protocol import consumer_codec
from protocol.consumer_codec import TopicPartition
from protocol.effects import Effect
from protocol.group import JoinGroupResponse
from protocol.kafka_configs import STREAMS_DEFAULTS
from protocol.primitives import DecodeError
from protocol.streams_types import StreamsAssignment
from protocol.streams_versions import LATEST_SUPPORTED_VERSION, StreamsVersionError

__all__ = ["StreamsClient", "StreamsClientConfig", "MemberState", "COORDINATOR_ADDRESS"]

#: The consumer's ``request.timeout.ms`` default.
REQUEST_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class StreamsClientConfig:
    """One client's settings (Kafka names in scenario files; defaults are Kafka's).

    Attributes:
        process_id: ``PID_<n>`` (= ``UUID(0, n)``) or a UUID string.
        num_stream_threads: ``num.stream.threads`` = the client's capacity.
        client_rack: the consumers' ``client.rack`` (KIP-925), or ``None``.
        client_tags: ``client.tag.<key>`` values (KIP-708).
        group_instance_id: the consumers' ``group.instance.id`` (KIP-345 static membership),
            or ``None`` for a dynamic member. A restarted client rejoins under the same id
            and takes over its assignment, without a rebalance in a Stable group.
        assignment: the ``StreamsConfig`` assignment configs (``acceptable.recovery.lag``,
            ``max.warmup.replicas``, ``num.standby.replicas``,
            ``probing.rebalance.interval.ms``, ``rack.aware.assignment.*``); the leader uses
            its own.
        session_timeout_ms / heartbeat_interval_ms / max_poll_interval_ms: consumer configs
            (defaults: :class:`protocol.kafka_configs.StreamsSettings`); the rebalance timeout
            is ``max.poll.interval.ms``.
        restore_records_per_sec: groupsim's restore speed per stream thread (records per
            virtual second), shared by the actives it restores and the standbys it updates.
        max_partition_fetch_bytes: the restore consumers' ``max.partition.fetch.bytes``.
        changelog_record_bytes: ``groupsim.changelog.record.bytes``: one changelog record's
            size in a fetch (a chunk is ``max.partition.fetch.bytes`` / this records).
        latest_supported_version: ``groupsim.latest.supported.version``: the client plays a
            Streams release whose ``LATEST_SUPPORTED_VERSION`` is this (7-11; 11 = this
            release). It subscribes with it, reads newer subscriptions as future ones when
            leader, and follows version probing (docs/streams.md).
        future_process_id: ``groupsim.future.process.id``: the process id (``PID_<n>`` or a
            UUID string) this client, as leader, gives the client of future subscriptions
            (Kafka's ``FUTURE_ID``, a random UUID per JVM in ``StreamsPartitionAssignor``);
            ``None``: after every UUID, groupsim's fixed place.
    """

    process_id: str
    num_stream_threads: int = STREAMS_DEFAULTS.num_stream_threads
    client_rack: str | None = None
    client_tags: Mapping[str, str] = field(default_factory=dict)
    group_instance_id: str | None = None
    assignment: AssignmentConfigs = field(default_factory=AssignmentConfigs)
    session_timeout_ms: int = STREAMS_DEFAULTS.session_timeout_ms
    heartbeat_interval_ms: int = STREAMS_DEFAULTS.heartbeat_interval_ms
    max_poll_interval_ms: int = STREAMS_DEFAULTS.max_poll_interval_ms
    restore_records_per_sec: int = STREAMS_DEFAULTS.restore_records_per_sec
    max_partition_fetch_bytes: int = STREAMS_DEFAULTS.max_partition_fetch_bytes
    changelog_record_bytes: int = STREAMS_DEFAULTS.changelog_record_bytes
    latest_supported_version: int = STREAMS_DEFAULTS.latest_supported_version
    future_process_id: str | None = None


class StreamsClient(GroupClient):
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

    ASSIGNOR_ERRORS = (DecodeError, StreamsVersionError)
    SILENT_TIMER_PREFIXES = ("restore-thread:", "stream-thread")

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
        # The consumer's rebalance timeout is max.poll.interval.ms.
        poll_ms = config.max_poll_interval_ms
        timeouts = GroupTimeouts(
            config.session_timeout_ms, config.heartbeat_interval_ms, poll_ms, REQUEST_TIMEOUT_MS
        )
        super().__init__(name, group_id, PROTOCOL_TYPE, timeouts, address=address)
        self.log_heartbeats = log_heartbeats
        self.group_instance_id = config.group_instance_id
        self.config = config
        self.topology = topology
        self.process_id: uuid.UUID = process_uuid(config.process_id)
        self.stores: dict[TaskId, StoreState] = stores if stores is not None else {}
        self.active: dict[TaskId, str] = {}  # task -> "restoring" | "running"
        self.standby: dict[TaskId, bool] = {}  # task -> caught up (within acceptable lag)
        self._started_at: dict[TaskId, int] = {}
        #: one restore stream per stream thread (``DefaultStateUpdater``)
        chunk = chunk_records(config.max_partition_fetch_bytes, config.changelog_record_bytes)
        self._threads = [
            RestoreThread(
                config.restore_records_per_sec,
                chunk,
                topology.end_offset,
                topology.changelog_rate,
                config.assignment.acceptable_recovery_lag,
                lambda task: topology.named_changelog_topic(task.subtopology),
            )
            for _ in range(config.num_stream_threads)
        ]
        #: stateful task (active or standby) → the stream thread it is on
        self._thread_of: dict[TaskId, int] = {}
        self._unique = 0
        #: ``usedSubscriptionMetadataVersion``: starts at the release's latest version.
        self.subscription_version = config.latest_supported_version
        self._stalled = False

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
        if c.group_instance_id is not None:
            summary["group.instance.id"] = c.group_instance_id
        if c.latest_supported_version != LATEST_SUPPORTED_VERSION:
            summary["latest_supported_version"] = c.latest_supported_version
        self._log("member_start", config=summary, state_dir=sorted(map(str, self.stores)))
        return super().start(now_ms)

    def on_message(self, message: object, now_ms: int) -> None:
        if isinstance(message, PollStall):
            self._stall(message.stall_ms, now_ms)

    def on_timer(self, key: str, now_ms: int) -> None:
        if key == "probing-rebalance":
            # StreamThread: now > nextScheduledRebalanceMs → enforceRebalance.
            self.request_rejoin("scheduled probing rebalance", now_ms)

    def on_silent_timer(self, key: str, now_ms: int) -> None:
        if key.startswith("restore-thread:"):
            index = int(key[len("restore-thread:") :])
            self._restore_events(self._threads[index].advance(now_ms), now_ms)
            self._schedule_restore(index, now_ms)
        elif key == "stream-thread":
            self._end_stall(now_ms)

    def shutdown(self, now_ms: int, *, leave_group: bool = False) -> list[Effect]:
        """``KafkaStreams.close``: close every task (state stays on disk), stop.

        Kafka Streams' consumers do not send LeaveGroup on close
        (``internal.leave.group.on.close=false``): the coordinator notices after
        ``session.timeout.ms``. ``leave_group=True`` is KIP-812's
        ``CloseOptions.leaveGroup(true)``.
        """
        if self.state is MemberState.STOPPED:
            return []
        self._close_all("shutdown", now_ms)
        if leave_group and self.member_id and self.state is not MemberState.UNJOINED:
            self.leave_group("shutdown", "the consumer is being closed")
        self._log("member_stop")
        self._stop_everything()
        return self._take()

    def on_crash(self, now_ms: int) -> None:
        self._close_all("crash", now_ms)

    def on_fatal(self, now_ms: int) -> None:
        self._close_all("stream thread died", now_ms)

    def on_partitions_lost(self, reason: str, now_ms: int) -> None:
        self._lose_all(reason, now_ms)

    def poll_blocked(self) -> bool:
        return self._stalled

    def extra_timer_keys(self) -> tuple[str, ...]:
        restore = tuple(f"restore-thread:{i}" for i in range(len(self._threads)))
        return ("probing-rebalance", "stream-thread", *restore)

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

    # ------------------------------------------------------------------ ConsumerCoordinator

    def metadata(self, now_ms: int) -> tuple[tuple[str, bytes], ...]:
        """The one protocol ``stream`` with the consumer subscription and Streams'
        ``SubscriptionInfo`` as its user data."""
        return ((PROTOCOL_NAME, self._subscription(now_ms)),)

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
        envelope = consumer_codec.Subscription(
            topics=tuple(self.topology.source_topics),
            user_data=with_threads(user, self.config.num_stream_threads),
            owned_partitions=owned,
            generation_id=self.generation,
            rack_id=self.config.client_rack,
        )
        return consumer_codec.encode_subscription(envelope, CONSUMER_PROTOCOL_VERSION)

    def perform_assignment(
        self, response: JoinGroupResponse, now_ms: int
    ) -> tuple[tuple[str, bytes], ...]:
        assignor = StreamsPartitionAssignor(
            self.topology,
            self.config.assignment,
            self.process_id,
            self.config.latest_supported_version,
            None
            if self.config.future_process_id is None
            else process_uuid(self.config.future_process_id),
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

    def decode_assignment(self, data: bytes) -> object:
        return read_assignment(data)

    def on_join_complete(self, assignment: object, protocol_name: str, now_ms: int) -> None:
        assert isinstance(assignment, tuple)
        consumer, info = assignment
        self._on_assignment(consumer.partitions, info, now_ms)

    def _on_assignment(
        self, partitions: tuple[TopicPartition, ...], info: object, now_ms: int
    ) -> None:
        """``ConsumerCoordinator.onJoinComplete`` (COOPERATIVE) +
        ``StreamsPartitionAssignor.onAssignment`` + ``TaskManager.handleAssignment``:
        :func:`members.streams_on_assignment.plan_assignment` decides, this applies."""
        assert isinstance(info, StreamsAssignment)
        try:
            plan = plan_assignment(
                self.topology,
                partitions,
                info,
                self.active,
                self.standby,
                self.subscription_version,
                self.config.latest_supported_version,
                now_ms,
            )
        except StreamsVersionError as exc:
            self._log("member_fatal", error=f"assignment versions: {exc}")
            self.fail(now_ms)
            return
        self.complete_join()
        generation = self.generation
        self._log(
            "assignment",
            member_id=self.member_id,
            generation=generation,
            protocol=PROTOCOL_NAME,
            leader_id=self.leader_id,
            **plan.record,
        )
        # onPartitionsRevoked: close (or recycle into a standby) what was taken away.
        for task, reason in plan.close_active:
            self._close_active(task, reason, now_ms)
        for task, reason in plan.close_standby:
            self._close_standby(task, reason, now_ms)
        self._place_on_threads(plan.active, plan.standby, now_ms)
        for task in plan.active:
            if task not in self.active:
                self._create_active(task, generation, now_ms)
        for task in plan.standby:
            if task not in self.standby and task not in self.active:
                self._create_standby(task, generation, now_ms)
        # maybeScheduleFollowupRebalance (version probing first; see plan_assignment)
        if plan.version_record is not None:
            self.subscription_version = plan.version
            self._log("subscription_version_update", **plan.version_record)
        if plan.probing_at_ms is None:
            self._cancel("probing-rebalance")
        else:
            self._set("probing-rebalance", plan.probing_at_ms)
        for reason in plan.rejoins:
            self.request_rejoin(reason, now_ms)

    # ------------------------------------------------------------------ the stream thread

    def _stall(self, stall_ms: int, now_ms: int) -> None:
        """A fault: the stream thread blocks for ``stall_ms``; past ``max.poll.interval.ms``
        the poll timer expires (the heartbeat thread leaves the group)."""
        self._log("stream_thread_stall", stall_ms=stall_ms)
        self._stalled = True
        self._set("stream-thread", now_ms + stall_ms)
        self.start_poll_timer(now_ms)

    def _end_stall(self, now_ms: int) -> None:
        self._stalled = False
        self.stop_poll_timer()
        self.poll_resumed(now_ms)

    # ------------------------------------------------------------------ tasks

    def _rate(self) -> int:
        return self.config.restore_records_per_sec

    def _end(self, task: TaskId, now_ms: int) -> int:
        return self.topology.end_offset(task, now_ms)

    def _restore_thread(self, task: TaskId) -> RestoreThread | None:
        """The restore stream ``task`` is on (a restoring active or a standby), if any."""
        index = self._thread_of.get(task)
        if index is None or task not in self._threads[index].kind:
            return None
        return self._threads[index]

    def _offset(self, task: TaskId, now_ms: int) -> int:
        thread = self._restore_thread(task)
        if thread is not None:
            return thread.offset(task, now_ms)
        store = self.stores.get(task)
        if store is None:
            return 0
        return store.offset(now_ms, self._end(task, now_ms), self._rate())

    def _store(self, task: TaskId, now_ms: int) -> StoreState:
        store = self.stores.get(task)
        if store is None:
            store = self.stores[task] = StoreState(0, now_ms)
        return store

    def _place_on_threads(self, actives: list[TaskId], standbys: list[TaskId], now_ms: int) -> None:
        """Which stream thread each stateful task is on (Kafka's leader,
        ``StreamsPartitionAssignor#assignTasksToThreads``: stateful actives, then standbys,
        each thread first keeping what it held, least lag first); a restoring active or a
        standby placed on another thread moves there with its store's offset."""
        lags: dict[TaskId, int] = {}
        previous: dict[int, list[TaskId]] = {}
        for task, index in self._thread_of.items():
            running = self.active.get(task) == "running"
            lags[task] = 0 if running else self._end(task, now_ms) - self._offset(task, now_ms)
            previous.setdefault(index, []).append(task)
        for held in previous.values():
            held.sort(key=lambda t: (lags[t], t))
        threads = len(self._threads)
        load: dict[int, int] = {}
        stateful = [t for t in actives if self.topology.is_stateful(t)]
        target: dict[TaskId, int] = {}
        for tasks in (stateful, standbys):
            for index, placed in assign_tasks_to_threads(tasks, threads, previous, load).items():
                target.update((task, index) for task in placed)
        for task in sorted(self._thread_of):
            new, old = target.get(task), self._thread_of[task]
            if new is None or new == old:
                continue
            self._thread_of[task] = new
            thread = self._threads[old]
            if task not in thread.kind:
                continue  # a running active: it does not restore again (module doc)
            kind = thread.kind[task]
            offset, events = thread.remove(task, now_ms)
            store = self._store(task, now_ms)
            store.offset0, store.t0, store.mode = offset, now_ms, "frozen"
            self._restore_events(events, now_ms)
            self._schedule_restore(old, now_ms)
            if (kind == "active" and self.active.get(task) == "restoring") or (
                kind == "standby" and task in self.standby
            ):
                self._restore_events(self._threads[new].add(task, kind, offset, now_ms), now_ms)
                self._schedule_restore(new, now_ms)
        for task, index in target.items():
            self._thread_of.setdefault(task, index)

    def _schedule_restore(self, index: int, now_ms: int) -> None:
        due = self._threads[index].next_event_ms(now_ms)
        if due is None:
            self._cancel(f"restore-thread:{index}")
        else:
            self._set(f"restore-thread:{index}", due)

    def _restore_events(self, events: list[RestoreEvent], now_ms: int) -> None:
        for event in events:
            if event.kind == "restored":
                self._on_restored(event.task, now_ms)
            else:
                self._on_standby_caught_up(event.task, now_ms)

    def _create_active(self, task: TaskId, generation: int, now_ms: int) -> None:
        """A new active task: restore its stores from the changelog (on its stream thread's
        restore stream), then run."""
        self._started_at[task] = now_ms
        if not self.topology.is_stateful(task):
            self.active[task] = "running"
            self._log("active_task_start", task=str(task), generation=generation, lag=None)
            self._log("active_task_running", task=str(task), generation=generation, restore_ms=0)
            return
        # a task assigned as both active and standby (a leader's bug) restores as the active
        index = self._thread_of.get(task, 0)
        self._leave_thread(task, now_ms, "standby")
        self._thread_of[task] = index
        end = self._end(task, now_ms)
        offset = min(end, self._store(task, now_ms).offset(now_ms, end, self._rate()))
        self.active[task] = "restoring"
        self._log("active_task_start", task=str(task), generation=generation, lag=end - offset)
        self._restore_events(self._threads[index].add(task, "active", offset, now_ms), now_ms)
        self._schedule_restore(index, now_ms)

    def _on_restored(self, task: TaskId, now_ms: int) -> None:
        if self.active.get(task) != "restoring":
            return
        store = self._store(task, now_ms)
        store.offset0, store.t0, store.mode = self._end(task, now_ms), now_ms, "current"
        self.active[task] = "running"
        self._log(
            "active_task_running",
            task=str(task),
            generation=self.generation,
            restore_ms=now_ms - self._started_at.get(task, now_ms),
        )

    def _create_standby(self, task: TaskId, generation: int, now_ms: int) -> None:
        end = self._end(task, now_ms)
        offset = min(end, self._store(task, now_ms).offset(now_ms, end, self._rate()))
        self.standby[task] = False
        self._log("standby_task_start", task=str(task), generation=generation, lag=end - offset)
        index = self._thread_of.setdefault(task, 0)
        self._restore_events(self._threads[index].add(task, "standby", offset, now_ms), now_ms)
        self._schedule_restore(index, now_ms)

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

    def _leave_thread(self, task: TaskId, now_ms: int, kind: str | None = None) -> None:
        """Take ``task`` off its restore stream (if on one, as ``kind`` when given) and freeze
        its store where it got."""
        index = self._thread_of.get(task)
        if (
            index is not None
            and kind is not None
            and self._threads[index].kind.get(task, kind) != kind
        ):
            return
        self._thread_of.pop(task, None)
        store = self.stores.get(task)
        if index is not None and task in self._threads[index].kind:
            offset, events = self._threads[index].remove(task, now_ms)
            if store is not None:
                store.offset0, store.t0, store.mode = offset, now_ms, "frozen"
            self._restore_events([e for e in events if e.task != task], now_ms)
            self._schedule_restore(index, now_ms)
        elif store is not None:
            store.rebase(now_ms, self._end(task, now_ms), self._rate(), "frozen")

    def _close_active(self, task: TaskId, reason: str, now_ms: int) -> None:
        if self.active.pop(task, None) is None:
            return
        self._leave_thread(task, now_ms, "active")
        self._log("active_task_stopped", task=str(task), reason=reason)

    def _close_standby(self, task: TaskId, reason: str, now_ms: int) -> None:
        if self.standby.pop(task, None) is None:
            return
        self._leave_thread(task, now_ms, "standby")
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
