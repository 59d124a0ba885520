"""What a Streams client makes of the assignment it receives, decided without touching the
client: the member side of Kafka's ``StreamsPartitionAssignor.onAssignment``
(``validateMetadataVersions``, ``maybeUpdateSubscriptionVersion``,
``maybeScheduleFollowupRebalance``) and the task diff ``TaskManager.handleAssignment`` works
from (which actives are revoked or recycled into standbys, which standbys are closed).

Plain composition: :meth:`members.streams_client.StreamsClient.on_join_complete` calls
:func:`plan_assignment` and applies the :class:`AssignmentPlan` it returns (logs, closes and
creates tasks, arms or cancels the ``probing-rebalance`` timer, rejoins), in the order the plan
lists. Pure: no clock, no effects; times are virtual ms.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from members.assignors.streams import TaskId
from members.streams_state import StreamsTopology, wire_task
from protocol.consumer_codec import TopicPartition
from protocol.streams_types import NO_NEXT_REBALANCE, StreamsAssignment
from protocol.streams_versions import next_subscription_version

__all__ = ["FOLLOWUP_REASON", "REVOKE_REASON", "AssignmentPlan", "plan_assignment"]

#: The rejoin reason when the leader asks for a rebalance at once (``nextRebalanceMs`` 0).
FOLLOWUP_REASON = "follow-up rebalance requested by the leader"
#: The rejoin reason after revoking partitions (``ConsumerCoordinator.onJoinComplete``).
REVOKE_REASON = "need to revoke partitions and re-join"


@dataclass(frozen=True)
class AssignmentPlan:
    """One received assignment's consequences, in the order the client applies them.

    Attributes:
        record: the ``assignment`` log record's fields after ``member_id``, ``generation``,
            ``protocol`` and ``leader_id`` (``error``, ``active``, ``standby``, ``revoked``,
            ``next_rebalance_ms``: ``None`` for no scheduled rebalance), in logging order.
        active / standby: the assigned active and standby tasks, sorted.
        close_active: (running or restoring active task no longer assigned as active, reason:
            ``revoked`` or ``recycled to standby``), sorted by task.
        close_standby: (standby no longer assigned as standby, reason: ``recycled to active``
            or ``unassigned``), sorted by task.
        version: the subscription version to use from now on (``usedSubscriptionMetadataVersion``).
        version_record: the ``subscription_version_update`` record's fields when version
            probing changed the version, else ``None``.
        probing_at_ms: when to fire the ``probing-rebalance`` timer (virtual ms), or ``None``
            to cancel it.
        rejoins: the reasons to rejoin, in order (each one a ``requestRejoin``).
    """

    record: dict[str, object]
    active: list[TaskId]
    standby: list[TaskId]
    close_active: list[tuple[TaskId, str]]
    close_standby: list[tuple[TaskId, str]]
    version: int
    version_record: dict[str, object] | None
    probing_at_ms: int | None
    rejoins: list[str]


def plan_assignment(
    topology: StreamsTopology,
    partitions: Sequence[TopicPartition],
    info: StreamsAssignment,
    active: Collection[TaskId],
    standby: Collection[TaskId],
    used_version: int,
    latest_supported_version: int,
    now_ms: int,
) -> AssignmentPlan:
    """What to do with a received assignment (``StreamsPartitionAssignor.onAssignment`` +
    ``TaskManager.handleAssignment``'s diff).

    Args:
        topology: the application (maps source partitions to active tasks).
        partitions: the consumer assignment's partitions.
        info: the decoded ``AssignmentInfo`` (standby tasks, versions, ``nextRebalanceMs``).
        active / standby: the client's current active and standby tasks.
        used_version: the version the client subscribed with.
        latest_supported_version: the client's release's ``LATEST_SUPPORTED_VERSION``.
        now_ms: the current virtual time (a scheduled rebalance in the past fires now).

    Returns:
        The :class:`AssignmentPlan`. Versions are validated only for an assignment without
        error (Kafka's ``onAssignment`` returns before looking at them otherwise). A version
        change (version probing) asks for a rebalance at once and cancels the probing timer,
        whatever ``nextScheduledRebalanceMs`` says (``maybeScheduleFollowupRebalance``); the
        used version is updated before that rejoin (``StreamThread.runLoop`` enforces it on its
        next poll, and the consumer builds ``subscriptionUserData`` only then), so the
        follow-up JoinGroup carries the new version. Otherwise ``nextRebalanceMs`` 0 rejoins at
        once, another time arms the probing timer at it (at least ``now_ms``). A revoked active
        adds a rejoin after that.

    Raises:
        StreamsVersionError: the assignment's versions are invalid
            (:func:`protocol.streams_versions.next_subscription_version`); the client fails.
    """
    new_version, version_rejoin = used_version, False
    if info.error_code == 0:
        new_version, version_rejoin = next_subscription_version(
            used_version, info.version, info.commonly_supported_version, latest_supported_version
        )
    new_active = sorted(
        {t for tp in partitions if (t := topology.task_of_partition(tp)) is not None}
    )
    new_standby = sorted({wire_task(t) for t in info.standby_tasks})
    revoked = sorted(t for t in active if t not in new_active)
    next_ms = info.next_rebalance_ms
    record: dict[str, object] = {
        "error": info.error_code,
        "active": [str(t) for t in new_active],
        "standby": [str(t) for t in new_standby],
        "revoked": [str(t) for t in revoked],
        "next_rebalance_ms": None if next_ms == NO_NEXT_REBALANCE else next_ms,
    }
    close_active = [(t, "recycled to standby" if t in new_standby else "revoked") for t in revoked]
    close_standby = [
        (t, "recycled to active" if t in new_active else "unassigned")
        for t in sorted(standby)
        if t not in new_standby
    ]
    version_record: dict[str, object] | None = None
    probing_at_ms: int | None = None
    rejoins: list[str] = []
    if version_rejoin:
        version_record = {
            "from_version": used_version,
            "to_version": new_version,
            "assignment_version": info.version,
            "commonly_supported_version": info.commonly_supported_version,
        }
        upgrade = new_version > used_version
        why = "every member supports a newer version" if upgrade else "assignment is older"
        rejoins.append(f"version probing: {why}")
    elif next_ms == 0:
        rejoins.append(FOLLOWUP_REASON)
    elif next_ms != NO_NEXT_REBALANCE:
        probing_at_ms = max(now_ms, next_ms)
    if revoked:
        rejoins.append(REVOKE_REASON)
    return AssignmentPlan(
        record,
        new_active,
        new_standby,
        close_active,
        close_standby,
        new_version,
        version_record,
        probing_at_ms,
        rejoins,
    )
