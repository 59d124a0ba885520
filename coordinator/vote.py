"""The protocol vote of a classic group (``ClassicGroup#selectProtocol`` and
``ClassicGroupMember#vote``), run when a join phase completes and when a static member
rejoins a Stable group (does its new protocol list change the winner?).

Candidates are the protocols every member supports; each member, in coordinator order, votes
for the first candidate in its own list; most votes wins. Ties: ``protocol_tie_break="java"``
(Kafka's) takes the first tied protocol in the iteration order of the votes ``HashMap``
(String.hashCode bucket in a 16-slot table, then order of first vote); ``"first_listed"``
(groupsim's) takes the tied protocol ranked highest by the earliest-added current member.
"""

from __future__ import annotations

from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash

from .classic_group import ClassicGroup, IllegalGroupState

__all__ = ["select_protocol"]


def select_protocol(g: ClassicGroup) -> str:
    """``ClassicGroup#selectProtocol`` of ``g`` with its configured tie-break (module doc).

    Raises:
        IllegalGroupState: the group has no members (Kafka's ``IllegalStateException``).
    """
    members = g.members
    n = len(members)
    if not n:
        raise IllegalGroupState(f"group {g.group_id!r}: cannot select a protocol without members")
    candidates = {name for name, count in g.supported.items() if count == n}
    votes: dict[str, int] = {}
    for mid in g.java_order():
        # ClassicGroupMember#vote: first of its own protocols that is a candidate.
        vote = next(name for name in members[mid].names if name in candidates)
        votes[vote] = votes.get(vote, 0) + 1
    if g.config.protocol_tie_break == "java":
        # Stream.max over the votes HashMap keeps the first maximum it meets.
        best = ""
        best_votes = 0
        for name in hash_order(votes, string_hash):
            if votes[name] > best_votes:
                best, best_votes = name, votes[name]
        return best
    top = max(votes.values())
    tied = {name for name, count in votes.items() if count == top}
    earliest = next(iter(members.values()))
    return next(name for name in earliest.names if name in tied)
