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
from typing import Any

from scenarios.check.coordinator_contracts import SERVE_TIMER_SLACK_MS
from scenarios.check.log_rules import Record, Violation, reads, violation

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


@reads(
    "generation",
    "group_loaded",
    "member_added",
    "member_replaced",
    "member_removed",
    "sync_group_response",
)
def check_sync_unknown_to_member(records: Sequence[Record]) -> list[Violation]:
    """``sync_unknown_to_member``: a member of the group answered UNKNOWN_MEMBER_ID to its
    SyncGroup (module docstring)."""
    found: list[Violation] = []
    members: set[str] = set()
    for r in records:
        kind = r.get("kind")
        if kind in ("generation", "group_loaded"):
            members = {str(m) for m in r.get("member_ids") or ()}
        elif kind == "member_added":
            members.add(str(r.get("member_id")))
        elif kind == "member_replaced":
            members.discard(str(r.get("old_member_id")))
            members.add(str(r.get("member_id")))
        elif kind == "member_removed":
            members.discard(str(r.get("member_id")))
        elif (
            kind == "sync_group_response"
            and r.get("error") == "UNKNOWN_MEMBER_ID"
            and str(r.get("member_id")) in members
        ):
            found.append(
                violation(
                    SYNC_UNKNOWN_TO_MEMBER,
                    f"{r.get('member')} ({r.get('member_id')}), a member of the group, was "
                    f"answered UNKNOWN_MEMBER_ID to its SyncGroup of generation "
                    f"{r.get('generation')} (classicGroupSync: REBALANCE_IN_PROGRESS while the "
                    "group rebalances)",
                    r,
                    member=r.get("member"),
                    member_id=r.get("member_id"),
                    generation=r.get("generation"),
                )
            )
    return found


@reads("rebalance_heartbeat", "completing_heartbeat", "member_removed")
def check_session_after_heartbeat(records: Sequence[Record]) -> list[Violation]:
    """``session_expired_after_heartbeat``: a member removed for its session sooner than a
    session timeout after a Heartbeat of a rebalance that the coordinator accepted."""
    found: list[Violation] = []
    last: dict[tuple[Any, str], Record] = {}  # (group, member id) -> its latest tapped beat
    for r in records:
        kind = r.get("kind")
        if kind in ("rebalance_heartbeat", "completing_heartbeat"):
            if r.get("error") in _EXTENDING:
                last[(r.get("group"), str(r.get("member_id")))] = r
        elif kind == "member_removed" and r.get("reason") == "session_timeout":
            beat = last.get((r.get("group"), str(r.get("member_id"))))
            timeout = r.get("session_timeout_ms")
            if beat is None or not isinstance(timeout, int):
                continue
            t = int(r.get("t_ms") or 0)
            slack = SERVE_TIMER_SLACK_MS if "group" in r else 0
            due = int(beat.get("t_ms") or 0) + timeout
            if t + slack < due:
                found.append(
                    violation(
                        SESSION_EXPIRED_AFTER_HEARTBEAT,
                        f"{r.get('member')} ({r.get('member_id')}) removed for its session at "
                        f"{t} ms, though its Heartbeat at {beat.get('t_ms')} ms was answered "
                        f"{beat.get('error')} ({kind}: session {timeout} ms, due {due} ms; "
                        "classicGroupHeartbeat reschedules the session in every state)",
                        r,
                        member=r.get("member"),
                        member_id=r.get("member_id"),
                    )
                )
    return found


@reads("sync_group_response", "join_group_request", *_ENDS_JUDGEMENT)
def check_member_id_kept(records: Sequence[Record]) -> list[Violation]:
    """``member_id_dropped``: a member rejoined without its member id after ILLEGAL_GENERATION
    (module docstring)."""
    found: list[Violation] = []
    expect: dict[str, str] = {}  # member -> the member id its next JoinGroup must carry
    synced: set[str] = set()  # members whose latest SyncGroup succeeded, no JoinGroup since
    for r in records:
        kind = r.get("kind")
        member = str(r.get("member"))
        if kind == "sync_group_response":
            expect.pop(member, None)
            synced.discard(member)
            if r.get("error") == "ILLEGAL_GENERATION" and r.get("member_id"):
                expect[member] = str(r["member_id"])
            elif r.get("error") == "NONE":
                synced.add(member)
        elif kind in _ENDS_JUDGEMENT:
            expect.pop(member, None)
            synced.discard(member)
        elif kind == "join_group_request":
            wanted = expect.pop(member, None)
            first = member in synced
            synced.discard(member)
            mid = str(r.get("member_id") or "")
            if wanted is None and first and r.get("reason") == _HEARTBEAT_ILLEGAL and not mid:
                wanted = "its member id"
            if wanted is not None and mid != wanted:
                found.append(
                    violation(
                        MEMBER_ID_DROPPED,
                        f"{member} rejoined with member id {mid!r} after ILLEGAL_GENERATION, "
                        f"not {wanted} (resetGenerationOnResponseError keeps the member id)",
                        r,
                        member=member,
                        member_id=mid,
                    )
                )
    return found


@reads("partitions_revoked")
def check_lost_not_revoked(records: Sequence[Record]) -> list[Violation]:
    """``revoked_without_generation``: a consumer revoked (committed) partitions while it had
    no generation (module docstring)."""
    found: list[Violation] = []
    for r in records:
        generation = r.get("generation")
        if r.get("kind") == "partitions_revoked" and isinstance(generation, int) and generation < 0:
            found.append(
                violation(
                    REVOKED_WITHOUT_GENERATION,
                    f"{r.get('member')} revoked {r.get('partitions')} without a generation "
                    f"({r.get('reason')}): KIP-429 gives them up as lost (onPartitionsLost)",
                    r,
                    member=r.get("member"),
                )
            )
    return found


@reads("generation", "group_loaded", "group_state", "join_group_request", "join_group_response")
def check_leader_rejoin_rebalances(records: Sequence[Record]) -> list[Violation]:
    """``leader_rejoin_not_rebalanced``: the leader's JoinGroup to a Stable group was answered
    the current generation (module docstring)."""
    found: list[Violation] = []
    generation: int | None = None
    leader: str | None = None
    stable = False
    waiting: dict[str, tuple[int, Record]] = {}  # member -> (generation, its leader JoinGroup)
    for r in records:
        kind = r.get("kind")
        if kind == "generation":
            generation, leader = r.get("generation"), r.get("leader_id")
        elif kind == "group_loaded":
            generation, leader = r.get("generation"), r.get("leader_id")
            stable = r.get("state") == "Stable"
        elif kind == "group_state":
            stable = r.get("to") == "Stable"
        elif kind == "join_group_request":
            member = str(r.get("member"))
            waiting.pop(member, None)
            mid = r.get("member_id")
            if stable and mid and mid == leader and isinstance(generation, int):
                waiting[member] = (generation, r)
        elif kind == "join_group_response":
            sent = waiting.pop(str(r.get("member")), None)
            if sent is None or r.get("error") != "NONE" or r.get("generation") != sent[0]:
                continue
            found.append(
                violation(
                    LEADER_REJOIN_NOT_REBALANCED,
                    f"{r.get('member')}, leader of generation {sent[0]}, rejoined the Stable "
                    f"group at {sent[1].get('t_ms')} ms and was answered generation "
                    f"{sent[0]} again (classicGroupJoinExistingMember: a leader's JoinGroup "
                    "rebalances)",
                    r,
                    member=r.get("member"),
                    member_id=r.get("member_id"),
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
