"""A group member's rebalance round: the JoinGroup / SyncGroup half of Kafka's
``AbstractCoordinator``, once.

One :class:`JoinGroupHandler` is owned by each :class:`members.group_client.GroupClient`. It
sends the JoinGroup (``sendJoinGroupRequest``), acts on its answer
(``JoinGroupResponseHandler``), runs the leader's assignor and sends the SyncGroup
(``onLeaderElected`` / ``sendSyncGroupRequest``), and acts on the SyncGroup answer
(``SyncGroupResponseHandler``, then ``onJoinComplete``). The member's state and generation stay
with the client; what the handler reads and asks of it is :class:`JoinOwner`, and its effects
go out through the client's effect sinks (:class:`members.member_state.ClientEffects`), handed
over explicitly. Timer keys it arms:
``request-timeout``, ``retry``, ``session`` (and, through the heartbeat thread,
``heartbeat``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Protocol

from members.heartbeat import COORDINATOR_ERRORS
from members.member_state import ClientEffects, GroupTimeouts, MemberState
from protocol.group import (
    ErrorCode,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from protocol.primitives import DecodeError

__all__ = [
    "FATAL_JOIN_ERRORS",
    "JOIN_GROUP_TIMEOUT_LAPSE_MS",
    "RETRY_BACKOFF_MS",
    "JoinGroupHandler",
    "join_group_timeout_ms",
    "JoinOwner",
]

#: ``retry.backoff.ms`` default: wait before retrying a failed JoinGroup.
RETRY_BACKOFF_MS = 100
#: ``AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE``: a JoinGroup waits the rebalance timeout
#: plus this before the client gives up on it.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000

#: JoinGroup errors after which ``AbstractCoordinator`` throws out of ``poll()``: the thread
#: that polls (the Connect herder, the Streams stream thread) dies with it (FENCED_INSTANCE_ID
#: through :meth:`members.group_client.GroupClient.on_fenced`).
FATAL_JOIN_ERRORS = frozenset(
    {
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode.INVALID_SESSION_TIMEOUT,
        ErrorCode.INVALID_GROUP_ID,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.FENCED_INSTANCE_ID,
    }
)

_UNJOINED = MemberState.UNJOINED
_PREPARING = MemberState.PREPARING_REBALANCE
_COMPLETING = MemberState.COMPLETING_REBALANCE


class JoinOwner(Protocol):
    """What the rebalance round reads and asks of its group client: the ``AbstractCoordinator``
    fields, hooks and state changes its JoinGroup and SyncGroup handlers use (the hooks are
    documented on :class:`members.group_client.GroupClient`)."""

    ASSIGNOR_ERRORS: ClassVar[tuple[type[Exception], ...]]
    name: str
    group_id: str
    protocol_type: str
    timeouts: GroupTimeouts
    group_instance_id: str | None
    state: MemberState
    member_id: str
    generation: int
    leader_id: str | None
    rejoin_reason: str

    def transition(self, target: MemberState) -> None:
        """Move the member to ``target`` (the transition table is checked)."""
        ...

    def reset_generation(self, *, reset_member_id: bool) -> None:
        """``resetGenerationOnResponseError``."""
        ...

    def maybe_rejoin(self, now_ms: int) -> None:
        """``ensureActiveGroup``: JoinGroup again if needed and free to."""
        ...

    def request_rejoin(self, reason: str, now_ms: int) -> None:
        """``requestRejoin``."""
        ...

    def mark_coordinator_unknown(self, reason: str, now_ms: int) -> None:
        """``markCoordinatorUnknown``."""
        ...

    def fail(self, now_ms: int) -> None:
        """The polling thread died."""
        ...

    def metadata(self, now_ms: int) -> tuple[tuple[str, bytes], ...]:
        """``AbstractCoordinator.metadata()``."""
        ...

    def perform_assignment(
        self, response: JoinGroupResponse, now_ms: int
    ) -> tuple[tuple[str, bytes], ...]:
        """The leader's assignor."""
        ...

    def decode_assignment(self, data: bytes) -> object:
        """Decode this member's SyncGroup assignment."""
        ...

    def on_join_complete(self, assignment: object, protocol_name: str, now_ms: int) -> None:
        """``onJoinComplete``."""
        ...

    def on_partitions_lost(self, reason: str, now_ms: int) -> None:
        """The generation is gone: what the member owned is lost."""
        ...

    def on_fenced(self, now_ms: int) -> None:
        """FENCED_INSTANCE_ID: another process took over the ``group.instance.id``."""
        ...


def join_group_timeout_ms(timeouts: GroupTimeouts) -> int:
    """A JoinGroup's request timeout, virtual ms: ``AbstractCoordinator#sendJoinGroupRequest``'s
    ``joinGroupTimeoutMs = max(request.timeout.ms, rebalanceTimeoutMs +
    JOIN_GROUP_TIMEOUT_LAPSE)`` (KIP-266: the coordinator may hold a JoinGroup for the
    rebalance timeout)."""
    return max(
        timeouts.request_timeout_ms, timeouts.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS
    )


class JoinGroupHandler:
    """One member's JoinGroup / SyncGroup round (see the module docstring).

    Args:
        owner: the group client it joins for.
        effects: the client's effect sinks.
        arm_heartbeat: (re-)arms the heartbeat thread's timer at a virtual ms.
    """

    __slots__ = ("_arm_heartbeat", "_cancel", "_log", "_owner", "_send", "_set", "join_sent_ms")

    def __init__(
        self,
        owner: JoinOwner,
        effects: ClientEffects,
        *,
        arm_heartbeat: Callable[[int], None],
    ) -> None:
        self._owner = owner
        #: virtual ms the latest JoinGroup was sent at (``join_timeout``'s ``sent_ms``)
        self.join_sent_ms = 0
        # the sinks it calls, bound once (a call costs no bundle lookup)
        self._send = effects.send
        self._set = effects.set_timer
        self._cancel = effects.cancel
        self._log = effects.log
        self._arm_heartbeat = arm_heartbeat

    def send_join(self, now_ms: int) -> None:
        """``sendJoinGroupRequest``: the JoinGroup with the owner's ``metadata``, under the
        rebalance timeout plus ``JOIN_GROUP_TIMEOUT_LAPSE``; the member is then
        PREPARING_REBALANCE.

        Raises:
            IllegalMemberTransition: the member may not start a rebalance now.
        """
        owner = self._owner
        protocols = owner.metadata(now_ms)
        owner.transition(_PREPARING)
        self._cancel("heartbeat")
        self._cancel("session")
        timeouts = owner.timeouts
        self.join_sent_ms = now_ms
        self._set("request-timeout", now_ms + join_group_timeout_ms(timeouts))
        self._log(
            "join_group_request",
            member_id=owner.member_id,
            protocols=[name for name, _ in protocols],
            reason=owner.rejoin_reason,
        )
        self._send(
            JoinGroupRequest(
                group_id=owner.group_id,
                member_id=owner.member_id,
                protocol_type=owner.protocol_type,
                protocols=protocols,
                session_timeout_ms=timeouts.session_timeout_ms,
                rebalance_timeout_ms=timeouts.rebalance_timeout_ms,
                client_id=owner.name,
                group_instance_id=owner.group_instance_id,
                reason=owner.rejoin_reason,
            )
        )

    def on_join_response(self, response: JoinGroupResponse, now_ms: int) -> None:
        """``JoinGroupResponseHandler``: ignored unless a JoinGroup is in flight."""
        owner = self._owner
        if owner.state is not _PREPARING:
            return
        self._cancel("request-timeout")
        error = response.error
        self._log(
            "join_group_response",
            member_id=response.member_id or owner.member_id,
            error=error.name,
            generation=response.generation_id,
            protocol=response.protocol_name,
            leader_id=response.leader,
            is_leader=error == ErrorCode.NONE and response.leader == response.member_id,
        )
        if error == ErrorCode.NONE:
            self._on_joined(response, now_ms)
            return
        owner.transition(_UNJOINED)
        if error == ErrorCode.MEMBER_ID_REQUIRED:
            # KIP-394: adopt the id the coordinator made for us and join again at once.
            owner.member_id = response.member_id
            owner.maybe_rejoin(now_ms)
        elif error == ErrorCode.UNKNOWN_MEMBER_ID:
            owner.reset_generation(reset_member_id=True)
            owner.on_partitions_lost("unknown member id", now_ms)
            owner.maybe_rejoin(now_ms)
        elif error == ErrorCode.REBALANCE_IN_PROGRESS:
            owner.maybe_rejoin(now_ms)
        elif error == ErrorCode.FENCED_INSTANCE_ID:
            # JoinGroupResponseHandler: fatal whatever the generation (KIP-345)
            owner.on_fenced(now_ms)
        elif error in FATAL_JOIN_ERRORS:
            self._log("member_fatal", error=error.name)
            owner.fail(now_ms)
        elif error in COORDINATOR_ERRORS:
            owner.mark_coordinator_unknown(f"JoinGroup: {error.name}", now_ms)
        else:  # coordinator moving or loading: back off and retry
            self._set("retry", now_ms + RETRY_BACKOFF_MS)

    def _on_joined(self, response: JoinGroupResponse, now_ms: int) -> None:
        """Joined generation ``response.generation_id``: assign (leader), then SyncGroup."""
        owner = self._owner
        owner.member_id = response.member_id
        owner.generation = response.generation_id
        owner.leader_id = response.leader
        owner.transition(_COMPLETING)
        self._arm_heartbeat(now_ms)
        self._set("session", now_ms + owner.timeouts.session_timeout_ms)
        is_leader = response.leader == response.member_id
        assignments: tuple[tuple[str, bytes], ...] = ()
        # KIP-345 (JoinGroup v9+): a static leader that rejoined a Stable group is told to
        # skip the assignment; it sends an empty SyncGroup and keeps what it had.
        if is_leader and not response.skip_assignment:
            try:
                assignments = owner.perform_assignment(response, now_ms)
            except owner.ASSIGNOR_ERRORS as exc:
                # A member's metadata cannot be read: the assignor throws out of poll() and
                # the leader's polling thread dies with it.
                self._log("member_fatal", error=f"assignor failed: {exc}")
                owner.fail(now_ms)
                return
        self._log(
            "sync_group_request",
            member_id=owner.member_id,
            generation=owner.generation,
            is_leader=is_leader,
        )
        self._set("request-timeout", now_ms + owner.timeouts.request_timeout_ms)
        self._send(
            SyncGroupRequest(
                group_id=owner.group_id,
                member_id=owner.member_id,
                generation_id=owner.generation,
                protocol_type=owner.protocol_type,
                protocol_name=response.protocol_name,
                assignments=assignments,
                group_instance_id=owner.group_instance_id,
            )
        )

    def on_sync_response(self, response: SyncGroupResponse, now_ms: int) -> None:
        """``SyncGroupResponseHandler``, then ``onJoinComplete``: ignored unless a SyncGroup is
        in flight."""
        owner = self._owner
        if owner.state is not _COMPLETING:
            return
        self._cancel("request-timeout")
        error = response.error
        self._log(
            "sync_group_response",
            member_id=owner.member_id,
            generation=owner.generation,
            error=error.name,
        )
        if error == ErrorCode.FENCED_INSTANCE_ID:
            # SyncGroupResponseHandler raises FencedInstanceIdException out of poll(): another
            # process took over this group.instance.id (KIP-345), whatever the generation.
            owner.on_fenced(now_ms)
            return
        if error != ErrorCode.NONE:
            owner.transition(_UNJOINED)
            if error == ErrorCode.UNKNOWN_MEMBER_ID:
                owner.reset_generation(reset_member_id=True)
                owner.on_partitions_lost("unknown member id", now_ms)
            elif error == ErrorCode.ILLEGAL_GENERATION:
                owner.reset_generation(reset_member_id=False)
                owner.on_partitions_lost("illegal generation", now_ms)
            elif error in COORDINATOR_ERRORS:
                owner.mark_coordinator_unknown(f"SyncGroup: {error.name}", now_ms)
            owner.request_rejoin(f"SyncGroup failed: {error.name}", now_ms)
            return
        try:
            assignment = owner.decode_assignment(response.assignment)
        except DecodeError as exc:
            # onJoinComplete throws out of poll(): the polling thread dies (Connect's
            # DistributedHerder: "Uncaught exception in herder work thread, exiting").
            self._log("member_fatal", error=f"unreadable assignment: {exc}")
            owner.fail(now_ms)
            return
        owner.on_join_complete(assignment, response.protocol_name or "default", now_ms)
