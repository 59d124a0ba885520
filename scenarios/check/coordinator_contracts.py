"""Contract checkers of the coordinator's answers: one published rule of Kafka's classic group
coordinator each, registered with the others in :mod:`scenarios.check.contracts`.

``heartbeat_not_rebalancing`` — ``GroupMetadataManager#classicGroupHeartbeatToClassicGroup``:
    a Heartbeat from a valid member of the current generation that reaches a group in
    PreparingRebalance is answered REBALANCE_IN_PROGRESS (that is how a member of a Stable
    generation learns to rejoin); other errors (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, …) come
    first, but never ``NONE``. Judged on the ``rebalance_heartbeat`` record the engine and
    ``groupsim serve`` write for every Heartbeat that reaches a PreparingRebalance group, with
    the answer that left the coordinator.
``assignment_recomputed`` — KIP-814,
    ``GroupMetadataManager#updateStaticMemberThenRebalanceOrCompleteJoin``: a static leader
    that rejoins a Stable group under a new member id, with the elected protocol unchanged, is
    answered with ``skip_assignment`` (JoinGroup v9+, as every simulated member sends) and runs
    no assignor: it syncs with an empty assignment and the coordinator keeps the stored one.
    After such a ``member_replaced`` of the generation's leader, a leader decision
    (``assignor``, ``streams_assignment``, ``consumer_assignor``) by that member before its
    SyncGroup or any state change is a violation. (A leader that rejoins during
    CompletingRebalance is given the member list again and does run the assignor again for
    the same generation: that is Kafka's behaviour and not judged here.)
"""

from __future__ import annotations

from collections.abc import Sequence

from scenarios.check.log_rules import Record, Violation, violation

__all__ = [
    "HEARTBEAT_NOT_REBALANCING",
    "ASSIGNMENT_RECOMPUTED",
    "check_rebalance_heartbeat",
    "check_assignment_once",
]

HEARTBEAT_NOT_REBALANCING = "heartbeat_not_rebalancing"
ASSIGNMENT_RECOMPUTED = "assignment_recomputed"


def check_rebalance_heartbeat(records: Sequence[Record]) -> list[Violation]:
    """``heartbeat_not_rebalancing``: a Heartbeat that reached a PreparingRebalance group is
    never answered ``NONE``."""
    found: list[Violation] = []
    for r in records:
        if r.get("kind") == "rebalance_heartbeat" and r.get("error") == "NONE":
            found.append(
                violation(
                    HEARTBEAT_NOT_REBALANCING,
                    f"{r.get('member')}: a Heartbeat (generation {r.get('generation')}) reached "
                    "the group in PreparingRebalance and was answered NONE, so the member does "
                    "not learn to rejoin (Kafka answers REBALANCE_IN_PROGRESS)",
                    r,
                    member=r.get("member"),
                    member_id=r.get("member_id"),
                )
            )
    return found


#: A leader's record of the assignment it computed for a generation, per member kind.
_LEADER_DECISIONS = frozenset({"assignor", "streams_assignment", "consumer_assignor"})


def check_assignment_once(records: Sequence[Record]) -> list[Violation]:
    """``assignment_recomputed``: a static leader that rejoined a Stable group runs no
    assignor for the generation it already assigned (KIP-814 ``skip_assignment``)."""
    found: list[Violation] = []
    leader_id: str | None = None  # the current generation's leader member id
    state: str | None = None
    told_to_skip: dict[str, Record] = {}  # member name -> its replacement as Stable leader
    for r in records:
        kind = r.get("kind")
        name = str(r.get("member"))
        if kind in ("generation", "group_loaded"):
            leader_id = r.get("leader_id")
            if kind == "group_loaded":
                state = r.get("state")
            told_to_skip.clear()
        elif kind == "group_state":
            state = r.get("to")
            told_to_skip.clear()  # a rebalance: the member's next decision is a new round's
        elif kind == "member_replaced":
            if state == "Stable" and r.get("old_member_id") == leader_id:
                leader_id = r.get("member_id")
                told_to_skip[name] = r
        elif kind == "sync_group_request":
            told_to_skip.pop(name, None)
        elif kind in _LEADER_DECISIONS and name in told_to_skip:
            replaced = told_to_skip.pop(name)
            found.append(
                violation(
                    ASSIGNMENT_RECOMPUTED,
                    f"static leader {name} rejoined the Stable group as "
                    f"{replaced.get('member_id')} (was {replaced.get('old_member_id')}) and ran "
                    f"the assignor again for generation {r.get('generation')}; the coordinator "
                    "tells it skip_assignment (KIP-814) and keeps the stored assignment",
                    r,
                    member=name,
                    generation=r.get("generation"),
                )
            )
    return found
