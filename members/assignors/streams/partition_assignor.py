"""Kafka ``StreamsPartitionAssignor.assign``: the Streams group leader's assignor.

What Kafka's ``org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor#assign``
does on the leader, over the task assignors of this package: decode every member's
``ConsumerProtocolSubscription`` (:mod:`protocol.consumer_codec`) and its SubscriptionInfo
(:mod:`protocol.streams_subscription`; KIP-268 version probing: :mod:`protocol.streams_versions`),
compute lags from the changelog end offsets (``ClientState.computeTaskLags``), run
:func:`assign_high_availability` (KIP-441 standbys and warm-ups, KIP-708 client-tag placement,
KIP-925 rack-aware optimisation per config), withhold tasks that move between clients until
their owner revoked them (COOPERATIVE, KIP-429), and schedule the probing rebalance. The answer
is one ``ConsumerProtocolAssignment`` per member carrying its AssignmentInfo.

Pure (no clock, no I/O, no global randomness); times are virtual ms. The application (tasks,
changelog end offsets, partition racks) is :class:`members.streams_state.StreamsTopology`.
Not re-exported by :mod:`members.assignors.streams` (this module imports
:mod:`members.streams_state`, which imports that package).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from members.streams_state import (
    CONSUMER_PROTOCOL_VERSION,
    StreamsTopology,
    process_label,
    split_threads,
    wire_task,
)
from protocol import consumer_codec
from protocol.streams_assignment import encode_assignment
from protocol.streams_subscription import decode_subscription
from protocol.streams_types import (
    NO_NEXT_REBALANCE,
    StreamsAssignment,
    StreamsSubscription,
    StreamsTaskId,
)
from protocol.streams_versions import LATEST_SUPPORTED_VERSION, choose_assignment_version
from protocol.topic_partitions import TopicPartition

from .high_availability import HighAvailabilityResult, assign_high_availability
from .model import (
    JAVA_LONG_MAX,
    LATEST_OFFSET,
    UNKNOWN_OFFSET_SUM,
    AssignmentConfigs,
    ClientState,
    ProcessId,
    TaskId,
)
from .rack_aware import RackAwareTaskAssignor

__all__ = ["FUTURE_CLIENT", "ClientDecision", "LeaderAssignment", "StreamsPartitionAssignor"]

#: The process label under which a leader groups every member whose subscription is newer than
#: it can read (Kafka's ``FUTURE_ID``): their process ids are not readable.
FUTURE_CLIENT = "FUTURE"


def _to_wire(t: TaskId) -> StreamsTaskId:
    return StreamsTaskId(t.subtopology, t.partition)


@dataclass
class ClientDecision:
    """What the leader decided for one client (one member) in one rebalance.

    Attributes:
        member_id: the client's group member id.
        active / standby: HATA's assignment (task ids, sorted).
        warmups: standbys that are warmups (KIP-441 movements), a subset of ``standby``:
            Kafka's warmup map (active movements) plus, where a task has more standbys than
            ``num.standby.replicas``, its copies on clients that are not caught up.
        withheld: actives not handed out yet because another client still owns their
            partition (COOPERATIVE); the client gets those it previously owned as standbys
            as standbys meanwhile (Kafka ``buildStandbyTaskMap``).
        next_rebalance_ms: the AssignmentInfo ``nextRebalanceMs`` sent to this member.
    """

    member_id: str
    active: list[TaskId] = field(default_factory=list)
    standby: list[TaskId] = field(default_factory=list)
    warmups: list[TaskId] = field(default_factory=list)
    withheld: list[TaskId] = field(default_factory=list)
    next_rebalance_ms: int = NO_NEXT_REBALANCE


@dataclass
class LeaderAssignment:
    """The result of :meth:`StreamsPartitionAssignor.assign`.

    ``assignments`` is the SyncGroup payload (member id → consumer assignment bytes);
    ``record`` the fields of the leader's ``streams_assignment`` log record.
    """

    assignments: tuple[tuple[str, bytes], ...]
    decisions: dict[str, ClientDecision]  # process label -> decision
    result: HighAvailabilityResult
    probing_at_ms: int | None
    record: dict[str, Any]


class StreamsPartitionAssignor:
    """Kafka ``StreamsPartitionAssignor.assign`` on the leader (see module doc).

    Args:
        topology: the application (tasks, changelog end offsets, partition racks).
        configs: the leader's assignment configs (``StreamsConfig``).
        leader_process: the leader client's process id (``taskManager.processId()``).
        latest_supported_version: the leader's release's ``LATEST_SUPPORTED_VERSION`` (11;
            lower for a client emulating an older release): a subscription above it is a
            future one (version probing), read only as ``(version, latest_supported_version)``
            and grouped under the ``FUTURE`` client, as Kafka's ``FUTURE_ID``.
        future_process: the process id that client sorts and hashes as (Kafka's
            ``FUTURE_ID`` is a random UUID drawn once per leader JVM, so where the future
            client stands in the process-id order, which the task assignor follows, is not
            in any message); None: the label ``FUTURE`` (a fixed place).
    """

    def __init__(
        self,
        topology: StreamsTopology,
        configs: AssignmentConfigs,
        leader_process: uuid.UUID,
        latest_supported_version: int = LATEST_SUPPORTED_VERSION,
        future_process: uuid.UUID | None = None,
    ) -> None:
        self.topology = topology
        self.configs = configs
        self.leader_process = leader_process
        self.latest_supported_version = latest_supported_version
        self.future_process = future_process

    def assign(self, members: Sequence[tuple[str, bytes]], now_ms: int) -> LeaderAssignment:
        """One assignment for the group's members (JoinGroup order, ``(member_id, metadata)``).

        Raises:
            DecodeError: a member's metadata cannot be read (Kafka's assignor throws).
            StreamsVersionError: incompatible subscription versions.
        """
        topology = self.topology
        subs: list[tuple[str, consumer_codec.Subscription, int, StreamsSubscription]] = []
        for member_id, metadata in members:
            consumer = consumer_codec.decode_subscription(metadata)
            user, threads = split_threads(consumer.user_data)
            info = decode_subscription(user)
            if info.version > self.latest_supported_version:
                # An older leader reads only the header of a newer member's subscription.
                info = StreamsSubscription(info.version, info.latest_supported_version, 0)
            subs.append((member_id, consumer, threads or 1, info))
        used, common, version_probing = choose_assignment_version(
            [s.version for _, _, _, s in subs],
            [s.latest_supported_version for _, _, _, s in subs],
            self.latest_supported_version,
        )

        # ClientMetadata per process: its consumers, capacity, racks, offset sums.
        by_process: dict[ProcessId, ClientState] = {}
        member_of: dict[ProcessId, str] = {}
        owner_of_partition: dict[TopicPartition, str] = {}
        labels: dict[ProcessId, str] = {}
        extra_members: list[str] = []  # further consumers of one process (FUTURE only)
        # every stateful task's changelog end now, and its name: the same for every client
        ends = [(task, topology.end_offset(task, now_ms)) for task in topology.stateful]
        names = [(task, str(task)) for task in topology.stateful]
        # a task's source partition, made once per task (read several times below)
        source_partition = functools.cache(topology.source_partition)
        for member_id, consumer, capacity, info in subs:
            if info.version > self.latest_supported_version:
                future = self.future_process
                label = FUTURE_CLIENT if future is None else process_label(future)
            else:
                label = process_label(uuid.UUID(int=uuid.UUID(str(info.process_id)).int))
            pid = ProcessId.of(label)
            labels[pid] = label
            sums = {wire_task(t): s for t, s in info.offset_sums().items()}
            owned = [t for t in map(topology.task_of_partition, consumer.owned_partitions) if t]
            for tp in consumer.owned_partitions:
                owner_of_partition[tp] = member_id
            lags: dict[TaskId, int] = {}
            for task, end in ends:
                lags[task] = _lag(sums.get(task, 0), end)
            prev_active = set(owned) | {t for t, s in sums.items() if s == LATEST_OFFSET}
            prev_standby = {t for t in sums if t not in prev_active}
            if pid in by_process:  # another consumer of the same process (not modelled)
                by_process[pid].capacity += capacity
                extra_members.append(member_id)
                continue
            member_of[pid] = member_id
            by_process[pid] = ClientState(
                pid,
                capacity,
                prev_active=prev_active,
                prev_standby=prev_standby,
                lags=lags,
                tags=dict(info.client_tags),
                rack=consumer.rack_id,
            )

        rack_aware = None
        if self.configs.rack_aware_assignment_strategy != "none":
            rack_aware = RackAwareTaskAssignor(
                by_process,
                topology.source_racks(),
                topology.changelog_racks(),
                self.configs,
                subtopologies=topology.subtopology_tasks(),
            )
        process_order = sorted(by_process)  # Kafka's TreeMap order of the clients
        lag_table = {
            labels[p]: {name: by_process[p].lags[t] for t, name in names} for p in process_order
        }
        inputs = self._referee_inputs(by_process, labels)
        result = assign_high_availability(
            by_process, topology.stateful, topology.stateless, self.configs, rack_aware
        )

        # Warmups: Kafka's map (active movements) plus, for a task with more standbys than
        # num.standby.replicas (a standby movement kept the destination's copy), the copies on
        # clients that are not caught up.
        warm: dict[ProcessId, set[TaskId]] = {p: set(ts) for p, ts in result.warmups.items()}
        acceptable = self.configs.acceptable_recovery_lag
        for task in topology.stateful:
            holders = [p for p in process_order if task in by_process[p].standby]
            if len(holders) > self.configs.num_standby_replicas:
                for p in holders:
                    lag = by_process[p].lags[task]
                    if not (lag == LATEST_OFFSET or 0 <= lag <= acceptable):
                        warm.setdefault(p, set()).add(task)

        # COOPERATIVE: an active whose partition another member still owns is withheld. Kafka
        # (StreamsPartitionAssignor#buildStandbyTaskMap) keeps a withheld stateful task as a
        # standby meanwhile only where the client previously owned it as a standby
        # (ClientState#previouslyOwnedStandby): its state store stays open until the follow-up.
        # Releases before 3.6 (so every release whose latest version is below 11: 3.2 brought
        # v11) keep every withheld stateful task as such a transient standby (Kafka PR #14149
        # added the previouslyOwnedStandby condition), which a real 2.7 leader shows.
        transient_for_all = self.latest_supported_version < LATEST_SUPPORTED_VERSION
        decisions: dict[str, ClientDecision] = {}
        kept_standby: dict[str, set[TaskId]] = {}
        any_withheld = False
        for pid in process_order:
            state = by_process[pid]
            member_id = member_of[pid]
            d = ClientDecision(
                member_id,
                active=state.sorted_active(),
                standby=state.sorted_standby(),
                warmups=sorted(warm.get(pid, ())),
            )
            for task in d.active:
                owner = owner_of_partition.get(source_partition(task))
                if owner is not None and owner != member_id:
                    d.withheld.append(task)
            if d.withheld:
                any_withheld = True
                d.next_rebalance_ms = 0
            kept_standby[member_id] = {
                t
                for t in d.withheld
                if topology.is_stateful(t) and (transient_for_all or t in state.prev_standby)
            }
            decisions[labels[pid]] = d

        # The leader's client is told when to probe whenever the task assignor wants a probing
        # rebalance, in a version-probing round too (StreamsPartitionAssignor#assignTasksToClients
        # sets its followupRebalanceDeadline whatever versionProbing says; 2.6 dropped
        # versionProbingAssignment, which encoded none): a later assignment without one resets
        # it (maybeScheduleFollowupRebalance), as the rounds after the future member's rejoin do.
        probing_at = None
        leader_pid = ProcessId.of(process_label(self.leader_process))
        if result.probing_rebalance_needed and leader_pid in by_process:
            d = decisions[labels[leader_pid]]
            if d.next_rebalance_ms != 0:
                probing_at = now_ms + self.configs.probing_rebalance_interval_ms
                d.next_rebalance_ms = probing_at

        payload: list[tuple[str, bytes]] = []
        for d in decisions.values():
            given = [t for t in d.active if t not in d.withheld]
            standby = sorted({*d.standby, *kept_standby[d.member_id]})
            parts = sorted(source_partition(t) for t in given)
            answer = StreamsAssignment(
                version=used,
                commonly_supported_version=common,
                # one entry per assigned partition, in sorted partition order (Kafka)
                active_tasks=tuple(_to_wire(t) for t in sorted(given, key=source_partition)),
                standby_tasks={_to_wire(t): topology.changelog_partitions(t) for t in standby},
                next_rebalance_ms=d.next_rebalance_ms,
            )
            body = _encode_envelope(parts, encode_assignment(answer))
            payload.append((d.member_id, body))
        for member_id in extra_members:  # Kafka would spread the client's tasks over them
            empty = StreamsAssignment(version=used, commonly_supported_version=common)
            body = _encode_envelope([], encode_assignment(empty))
            payload.append((member_id, body))
        member_order = {m: i for i, (m, _) in enumerate(members)}
        payload.sort(key=lambda item: member_order[item[0]])

        record: dict[str, Any] = {
            "version": used,
            "commonly_supported_version": common,
            "version_probing": version_probing,
            "clients": {
                label: {
                    "member_id": d.member_id,
                    "active": [str(t) for t in d.active],
                    "standby": [str(t) for t in d.standby],
                    "warmups": [str(t) for t in d.warmups],
                    "withheld": [str(t) for t in d.withheld],
                }
                for label, d in decisions.items()
            },
            "lags": lag_table,
            "acceptable_recovery_lag": self.configs.acceptable_recovery_lag,
            "probing_rebalance_needed": result.probing_rebalance_needed,
            "active_movements": result.active_movements,
            "standby_movements": result.standby_movements,
            "followup_for_revocation": any_withheld,
        }
        if result.cost_before is not None:
            record["cost"] = {"before": result.cost_before, "after": result.cost_after}
        if result.notes:
            record["notes"] = list(result.notes)
        # one source for the referee and the contract checkers: ``inputs`` carries the configs
        # and client tags both read; ``kafka_warmups`` is Kafka's own warm-up map (the
        # destinations TaskMovement.assignActiveTaskMovements kept a warm-up standby on),
        # which scenarios/check/assignment_contracts.py judges against max.warmup.replicas
        record["inputs"] = inputs
        record["kafka_warmups"] = {
            labels[p]: [str(t) for t in sorted(tasks)]
            for p, tasks in sorted(result.warmups.items())
            if tasks
        }
        return LeaderAssignment(tuple(payload), decisions, result, probing_at, record)

    def _referee_inputs(
        self, clients: Mapping[ProcessId, ClientState], labels: Mapping[ProcessId, str]
    ) -> dict[str, Any]:
        """What the task assignor read besides the lags (the record's ``lags``): the
        ``groupsim assign`` document of a ``high_availability`` run (docs/cli-contracts.md)
        without ``task_lags``, for ``groupsim check --referee kafka`` (scenarios/referee) to
        replay through Kafka's ``HighAvailabilityTaskAssignor``. Taken before the assignor
        runs (it fills the clients' current assignment in place)."""
        c = self.configs
        topology = self.topology

        def racks(table: Mapping[TaskId, tuple[frozenset[str], ...]]) -> dict[str, Any]:
            return {str(t): [sorted(r) for r in parts] for t, parts in sorted(table.items())}

        return {
            "config": {
                "acceptable.recovery.lag": c.acceptable_recovery_lag,
                "max.warmup.replicas": c.max_warmup_replicas,
                "num.standby.replicas": c.num_standby_replicas,
                "probing.rebalance.interval.ms": c.probing_rebalance_interval_ms,
                "rack.aware.assignment.strategy": c.rack_aware_assignment_strategy,
                "rack.aware.assignment.tags": list(c.rack_aware_assignment_tags),
                "rack.aware.assignment.traffic_cost": c.traffic_cost,
                "rack.aware.assignment.non_overlap_cost": c.non_overlap_cost,
            },
            "clients": [
                {
                    "id": labels[pid],
                    "capacity": state.capacity,
                    "rack": state.rack,
                    "tags": dict(sorted(state.tags.items())),
                    "prev_active": [str(t) for t in sorted(state.prev_active)],
                    "prev_standby": [str(t) for t in sorted(state.prev_standby)],
                }
                for pid, state in sorted(clients.items())
            ],
            "tasks": {
                "stateful": [str(t) for t in topology.stateful],
                "stateless": [str(t) for t in topology.stateless],
                "subtopologies": {
                    str(sub): [str(t) for t in ts]
                    for sub, ts in sorted(topology.subtopology_tasks().items())
                },
                "task_source_partition_racks": racks(topology.source_racks()),
                "task_changelog_partition_racks": racks(topology.changelog_racks()),
            },
        }


def _lag(offset_sum: int, end_sum: int) -> int:
    """``ClientState.computeTaskLags`` for one task."""
    if offset_sum == LATEST_OFFSET:
        return LATEST_OFFSET
    if offset_sum == UNKNOWN_OFFSET_SUM:
        return UNKNOWN_OFFSET_SUM
    if end_sum < offset_sum:
        return end_sum
    return min(end_sum - offset_sum, JAVA_LONG_MAX)


def _encode_envelope(parts: Sequence[TopicPartition], user_data: bytes) -> bytes:
    """SyncGroup assignment: a ``ConsumerProtocolAssignment`` at
    :data:`CONSUMER_PROTOCOL_VERSION`, partitions in (topic, partition) order, carrying the
    AssignmentInfo bytes."""
    envelope = consumer_codec.Assignment(tuple(sorted(parts)), user_data)
    return consumer_codec.encode_assignment(envelope, CONSUMER_PROTOCOL_VERSION)
