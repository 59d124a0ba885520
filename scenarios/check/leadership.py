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

from scenarios.check.log_rules import reads_typed
from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k
from scenarios.eventlog.records import LogRecord

__all__ = ["LEADER_CHANGED", "check_leader_continuity"]

LEADER_CHANGED = "leader_changed"


#: the record kinds :func:`check_leader_continuity` reads
_KINDS = frozenset(
    {"join_group_response", "member_replaced", "member_start", "group_loaded", "generation"}
)


@reads_typed(*_KINDS)
def check_leader_continuity(records: Sequence[LogRecord]) -> list[Violation]:
    """``leader_changed`` violations: a ``generation`` whose leader is not among its
    ``member_ids``, or that replaces a dynamic leader that is still a member."""
    found: list[Violation] = []
    static: set[str] = set()  # members whose process has a group.instance.id
    name_of: dict[str, str] = {}  # member id -> member name (its join answers)
    leader: str | None = None
    # generation -> its leader id, and the ids a static leader's replacements took since (an
    # answer sent before the replacement names the old id, one sent after the new)
    leader_of: dict[int, set[str | None]] = {}
    for r in records:
        match r:
            case k.JoinGroupResponse(member=member, member_id=member_id, leader_id=told):
                want = leader_of.get(r.generation) if r.error == "NONE" else None
                if want is not None and told not in want:
                    found.append(
                        _violation(
                            r,
                            f"{member} was told leader {told}, "
                            f"the generation's is {' or '.join(sorted(map(str, want)))}",
                        )
                    )
                if member_id:
                    name_of[member_id] = member
            case k.MemberReplaced(old_member_id=old, member_id=new_id):
                for ids in leader_of.values():
                    if old in ids:
                        ids.add(new_id)
                if leader == old:
                    leader = new_id
            case k.MemberStart(member=member, config=config):
                if config.group_instance_id:
                    static.add(member)
                else:
                    static.discard(member)
            # a generation id a coordinator failover made the group reuse keeps the leaders of
            # both: a member stalled mid-join handles the lost round's answer late
            case k.GroupLoaded(leader_id=loaded, generation=generation):
                leader = loaded
                leader_of.setdefault(generation, set()).add(leader)
            case k.Generation(member_ids=member_ids, leader_id=new, generation=generation):
                leader_of.setdefault(generation, set()).add(new)
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
                            f"{name_of.get(str(new), new)} though {name_of[leader]} is still a "
                            "member",
                        )
                    )
                leader = new
    return found


def _violation(record: k.JoinGroupResponse | k.Generation, why: str) -> Violation:
    return Violation(
        invariant=LEADER_CHANGED,
        detail=f"generation {record.generation}: {why}",
        generation=record.generation,
        cause_seq=record.seq,
    )
