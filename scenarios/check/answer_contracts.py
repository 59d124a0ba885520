"""Contract checkers added by the round-28 audit (docs/chaos.md "Planted bugs: the round-28
audit"): a coordinator answer to a known member, the session a Heartbeat extends during a
rebalance, and the member id a member keeps after ILLEGAL_GENERATION.

Pure functions over one run's records, like :mod:`scenarios.check.contracts` (which adds them
to ``CONTRACT_CHECKERS``); one pass over the log each.

``sync_unknown_to_member`` — ``GroupMetadataManager#classicGroupSync`` (``validateSyncGroup``):
    a SyncGroup of a member the group holds is answered UNKNOWN_MEMBER_ID only when the group
    is Empty, which a group with members never is (in PreparingRebalance the answer is
    REBALANCE_IN_PROGRESS, in the other states the assignment or ILLEGAL_GENERATION). So a
    ``sync_group_response`` ``UNKNOWN_MEMBER_ID`` whose ``member_id`` is, when the member
    reads it, a member of the group (``member_added`` / ``member_replaced`` / a
    ``generation``'s or ``group_loaded``'s ``member_ids``, not since ``member_removed``) is a
    violation. A member id is never given again once removed (``generateMemberId``), so an
    answer that raced a removal reads the id as gone.
``session_expired_after_heartbeat`` — ``GroupMetadataManager#classicGroupHeartbeat`` →
    ``rescheduleClassicGroupMemberHeartbeat``: every Heartbeat that passes the member and
    generation checks pushes the member's session deadline to its arrival plus its
    ``session.timeout.ms``, in PreparingRebalance (answered REBALANCE_IN_PROGRESS) and
    CompletingRebalance (NONE) as in Stable. The wire tap logs those of a rebalance
    (``rebalance_heartbeat``, ``completing_heartbeat``); a ``member_removed`` ``session_timeout``
    of that member id sooner than the heartbeat's time plus the removal's
    ``session_timeout_ms`` is a violation (served logs, whose records name their ``group``,
    get :data:`~scenarios.check.coordinator_contracts.SERVE_TIMER_SLACK_MS`).
``member_id_dropped`` — ``AbstractCoordinator`` (``resetGenerationOnResponseError``): a member
    answered ILLEGAL_GENERATION forgets its generation but keeps its member id (only
    UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID reset it), so its next ``join_group_request``
    carries that id. Judged after a ``sync_group_response`` ``ILLEGAL_GENERATION``, and on a
    ``join_group_request`` whose ``reason`` is the heartbeat's ILLEGAL_GENERATION and that is
    the member's first JoinGroup since its last successful SyncGroup; anything the member logs
    in between that may reset the id (another JoinGroup or SyncGroup answer, ``leave_group``,
    ``member_start``/``member_stop``/``member_fatal``) ends the judgement.
``revoked_without_generation`` — KIP-429, ``ConsumerCoordinator#onJoinPrepare`` /
    ``onLeavePrepare``: a consumer whose generation or member id was reset (an error answer, a
    poll timeout) gives its partitions up as *lost* (``onPartitionsLost``, no commit: their
    new owner may already be committing); ``onPartitionsRevoked`` (which commits) is for a
    member still in its generation. A consumer ``partitions_revoked`` whose ``generation`` is
    negative (no generation) is a violation.
``leader_rejoin_not_rebalanced`` — ``GroupMetadataManager#classicGroupJoinExistingMember``: a
    JoinGroup of the leader (by its member id) reaching a Stable group starts a rebalance
    even with unchanged metadata (the leader rejoins to have the group reassigned: new topic
    metadata, a probing or follow-up rebalance); only a follower with unchanged metadata is
    answered the current generation. A ``join_group_request`` with the member id of the latest
    ``generation``'s ``leader_id``, sent while the group's latest ``group_state`` is Stable,
    whose member's next ``join_group_response`` is NONE with that same generation is a
    violation. (A KIP-345 static leader rejoins without a member id and is not judged.)
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UNSET

from scenarios.check.coordinator_contracts import SERVE_TIMER_SLACK_MS
from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog.records import LogRecord

__all__ = [
    "ANSWER_CONTRACT_INVARIANTS",
    "ANSWER_CONTRACT_CHECKERS",
    "check_sync_unknown_to_member",
    "check_session_after_heartbeat",
    "check_member_id_kept",
    "check_lost_not_revoked",
    "check_leader_rejoin_rebalances",
]

SYNC_UNKNOWN_TO_MEMBER = "sync_unknown_to_member"
SESSION_EXPIRED_AFTER_HEARTBEAT = "session_expired_after_heartbeat"
MEMBER_ID_DROPPED = "member_id_dropped"
REVOKED_WITHOUT_GENERATION = "revoked_without_generation"
LEADER_REJOIN_NOT_REBALANCED = "leader_rejoin_not_rebalanced"

ANSWER_CONTRACT_INVARIANTS = (
    SYNC_UNKNOWN_TO_MEMBER,
    SESSION_EXPIRED_AFTER_HEARTBEAT,
    MEMBER_ID_DROPPED,
    REVOKED_WITHOUT_GENERATION,
    LEADER_REJOIN_NOT_REBALANCED,
)

_EXTENDING = frozenset({"NONE", "REBALANCE_IN_PROGRESS"})
_HEARTBEAT_ILLEGAL = "heartbeat failed: ILLEGAL_GENERATION"
_ENDS_JUDGEMENT = frozenset(
    {"join_group_response", "leave_group", "member_start", "member_stop", "member_fatal"}
)


@reads_typed(
    "generation",
    "group_loaded",
    "member_added",
    "member_replaced",
    "member_removed",
    "sync_group_response",
)
def check_sync_unknown_to_member(records: Sequence[LogRecord]) -> list[Violation]:
    """``sync_unknown_to_member``: a member of the group answered UNKNOWN_MEMBER_ID to its
    SyncGroup (module docstring)."""
    found: list[Violation] = []
    members: set[str] = set()
    for r in records:
        match r:
            case k.Generation(member_ids=ids) | k.GroupLoaded(member_ids=ids):
                members = set(ids)
            case k.MemberAdded(member_id=member_id):
                members.add(member_id)
            case k.MemberReplaced(old_member_id=old, member_id=member_id):
                members.discard(old)
                members.add(member_id)
            case k.MemberRemoved(member_id=member_id):
                members.discard(member_id)
            case k.SyncGroupResponse(error="UNKNOWN_MEMBER_ID", member=member, member_id=mid) if (
                mid in members
            ):
                found.append(
                    violation_at(
                        SYNC_UNKNOWN_TO_MEMBER,
                        f"{member} ({mid}), a member of the group, was "
                        f"answered UNKNOWN_MEMBER_ID to its SyncGroup of generation "
                        f"{r.generation} (classicGroupSync: REBALANCE_IN_PROGRESS while the "
                        "group rebalances)",
                        r,
                        member=member,
                        member_id=mid,
                        generation=r.generation,
                    )
                )
    return found


@reads_typed("rebalance_heartbeat", "completing_heartbeat", "member_removed")
def check_session_after_heartbeat(records: Sequence[LogRecord]) -> list[Violation]:
    """``session_expired_after_heartbeat``: a member removed for its session sooner than a
    session timeout after a Heartbeat of a rebalance that the coordinator accepted."""
    found: list[Violation] = []
    # (group, member id) -> its latest tapped beat (a served log's records name their group)
    last: dict[tuple[str | None, str], k.RebalanceHeartbeat | k.CompletingHeartbeat] = {}
    for r in records:
        match r:
            case k.RebalanceHeartbeat() | k.CompletingHeartbeat():
                if r.error in _EXTENDING:
                    last[(None if r.group is UNSET else r.group, r.member_id)] = r
            case k.MemberRemoved(
                reason="session_timeout", session_timeout_ms=int() as timeout, t_ms=t
            ):
                group = None if r.group is UNSET else r.group
                beat = last.get((group, r.member_id))
                if beat is None:
                    continue
                slack = SERVE_TIMER_SLACK_MS if group is not None else 0
                due = beat.t_ms + timeout
                if t + slack < due:
                    found.append(
                        violation_at(
                            SESSION_EXPIRED_AFTER_HEARTBEAT,
                            f"{r.member} ({r.member_id}) removed for its session at "
                            f"{t} ms, though its Heartbeat at {beat.t_ms} ms was answered "
                            f"{beat.error} (member_removed: session {timeout} ms, due {due} ms; "
                            "classicGroupHeartbeat reschedules the session in every state)",
                            r,
                            member=r.member,
                            member_id=r.member_id,
                        )
                    )
    return found


@reads_typed("sync_group_response", "join_group_request", *_ENDS_JUDGEMENT)
def check_member_id_kept(records: Sequence[LogRecord]) -> list[Violation]:
    """``member_id_dropped``: a member rejoined without its member id after ILLEGAL_GENERATION
    (module docstring)."""
    found: list[Violation] = []
    expect: dict[str, str] = {}  # member -> the member id its next JoinGroup must carry
    synced: set[str] = set()  # members whose latest SyncGroup succeeded, no JoinGroup since
    for r in records:
        match r:
            case k.SyncGroupResponse(member=member, error=error, member_id=member_id):
                expect.pop(member, None)
                synced.discard(member)
                if error == "ILLEGAL_GENERATION" and member_id:
                    expect[member] = member_id
                elif error == "NONE":
                    synced.add(member)
            case k.JoinGroupRequest(member=member, member_id=mid):
                wanted = expect.pop(member, None)
                first = member in synced
                synced.discard(member)
                if wanted is None and first and r.reason == _HEARTBEAT_ILLEGAL and not mid:
                    wanted = "its member id"
                if wanted is not None and mid != wanted:
                    found.append(
                        violation_at(
                            MEMBER_ID_DROPPED,
                            f"{member} rejoined with member id {mid!r} after ILLEGAL_GENERATION, "
                            f"not {wanted} (resetGenerationOnResponseError keeps the member id)",
                            r,
                            member=member,
                            member_id=mid,
                        )
                    )
            case (
                k.JoinGroupResponse(member=member)
                | k.LeaveGroup(member=member)
                | k.MemberStart(member=member)
                | k.MemberStop(member=member)
                | k.MemberFatal(member=member)
            ):
                expect.pop(member, None)
                synced.discard(member)
    return found


@reads_typed("partitions_revoked")
def check_lost_not_revoked(records: Sequence[LogRecord]) -> list[Violation]:
    """``revoked_without_generation``: a consumer revoked (committed) partitions while it had
    no generation (module docstring)."""
    found: list[Violation] = []
    for r in records:
        if isinstance(r, ku.PartitionsRevoked) and r.generation < 0:
            found.append(
                violation_at(
                    REVOKED_WITHOUT_GENERATION,
                    f"{r.member} revoked {r.partitions} without a generation "
                    f"({r.reason}): KIP-429 gives them up as lost (onPartitionsLost)",
                    r,
                    member=r.member,
                )
            )
    return found


@reads_typed(
    "generation", "group_loaded", "group_state", "join_group_request", "join_group_response"
)
def check_leader_rejoin_rebalances(records: Sequence[LogRecord]) -> list[Violation]:
    """``leader_rejoin_not_rebalanced``: the leader's JoinGroup to a Stable group was answered
    the current generation (module docstring)."""
    found: list[Violation] = []
    generation: int | None = None
    leader: str | None = None
    stable = False
    # member -> (generation, its leader JoinGroup)
    waiting: dict[str, tuple[int, k.JoinGroupRequest]] = {}
    for r in records:
        match r:
            case k.Generation():
                generation, leader = r.generation, r.leader_id
            case k.GroupLoaded():
                generation, leader = r.generation, r.leader_id
                stable = r.state == "Stable"
            case k.GroupState(to=to):
                stable = to == "Stable"
            case k.JoinGroupRequest(member=member, member_id=mid):
                waiting.pop(member, None)
                if stable and mid and mid == leader and isinstance(generation, int):
                    waiting[member] = (generation, r)
            case k.JoinGroupResponse(member=member):
                sent = waiting.pop(member, None)
                if sent is None or r.error != "NONE" or r.generation != sent[0]:
                    continue
                found.append(
                    violation_at(
                        LEADER_REJOIN_NOT_REBALANCED,
                        f"{member}, leader of generation {sent[0]}, rejoined the Stable "
                        f"group at {sent[1].t_ms} ms and was answered generation "
                        f"{sent[0]} again (classicGroupJoinExistingMember: a leader's JoinGroup "
                        "rebalances)",
                        r,
                        member=member,
                        member_id=r.member_id,
                        generation=sent[0],
                    )
                )
    return found


ANSWER_CONTRACT_CHECKERS = (
    check_sync_unknown_to_member,
    check_session_after_heartbeat,
    check_member_id_kept,
    check_lost_not_revoked,
    check_leader_rejoin_rebalances,
)
