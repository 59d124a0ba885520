"""``leader_changed``: the group keeps its leader while the leader stays a member.

Kafka picks a leader only when the group has none (the first member added,
``ClassicGroup#add``), when the leader leaves (``ClassicGroup#remove`` hands leadership to
another member) or when a join phase completes without the leader having rejoined
(``ClassicGroup#maybeElectNewJoinedLeader``). So a dynamic leader that is a member of the next
generation (it rejoined: join completion removes dynamic members that did not) leads that
generation too. A KIP-345 static leader may be kept in the next generation without having
rejoined, and then loses the leadership: static members are not judged. A coordinator failover
reloads the leader with the group (``group_loaded``).

Also every generation with members names a leader among them, and every member's successful
JoinGroup answer of a generation names that generation's leader (the coordinator answers all
members of a join phase with one leader id; a static leader replaced by a new member id,
``member_replaced``, hands its leadership to that id).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["LEADER_CHANGED", "check_leader_continuity"]

LEADER_CHANGED = "leader_changed"


def check_leader_continuity(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``leader_changed`` violations: a ``generation`` whose leader is not among its
    ``member_ids``, or that replaces a dynamic leader that is still a member."""
    found: list[dict[str, Any]] = []
    static: set[str] = set()  # members whose process has a group.instance.id
    name_of: dict[str, str] = {}  # member id -> member name (its join answers)
    leader: str | None = None
    # generation -> its leader id, and the ids a static leader's replacements took since (an
    # answer sent before the replacement names the old id, one sent after the new)
    leader_of: dict[int, set[str | None]] = {}
    for r in records:
        kind = r.get("kind")
        if kind == "join_group_response" and r.get("error") == "NONE":
            told, generation = r.get("leader_id"), r.get("generation")
            want = leader_of.get(generation) if isinstance(generation, int) else None
            if want is not None and told not in want:
                found.append(
                    _violation(
                        r,
                        f"{r.get('member')} was told leader {told}, "
                        f"the generation's is {' or '.join(map(str, sorted(map(str, want))))}",
                    )
                )
        if kind == "member_replaced":
            old, new_id = r.get("old_member_id"), r.get("member_id")
            for ids in leader_of.values():
                if old in ids:
                    ids.add(new_id)
            if leader == old:
                leader = new_id
        elif kind == "member_start":
            member = str(r.get("member"))
            if (r.get("config") or {}).get("group.instance.id"):
                static.add(member)
            else:
                static.discard(member)
        elif kind == "join_group_response" and r.get("member_id"):
            name_of[str(r["member_id"])] = str(r.get("member"))
        elif kind == "group_loaded":
            leader = r.get("leader_id")
            if isinstance(r.get("generation"), int):
                leader_of[r["generation"]] = {leader}
        elif kind == "generation":
            member_ids = [str(m) for m in r.get("member_ids") or ()]
            new = r.get("leader_id")
            if isinstance(r.get("generation"), int):
                leader_of[r["generation"]] = {new}
            if member_ids and new not in member_ids:
                found.append(_violation(r, f"leader {new} is not a member of the generation"))
            elif (
                leader is not None
                and leader in member_ids
                and new != leader
                and name_of.get(leader) is not None
                and name_of[leader] not in static
            ):
                found.append(
                    _violation(
                        r,
                        f"the leader moved from {name_of[leader]} to "
                        f"{name_of.get(str(new), new)} though {name_of[leader]} is still a member",
                    )
                )
            leader = new
    return found


def _violation(record: dict[str, Any], why: str) -> dict[str, Any]:
    return {
        "invariant": LEADER_CHANGED,
        "detail": f"generation {record.get('generation')}: {why}",
        "generation": record.get("generation"),
        "cause_seq": record.get("seq"),
    }
