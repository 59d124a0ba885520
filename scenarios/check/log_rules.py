"""What the log checkers share: the shape of a violation, and the classic protocol vote as it
can be judged from logged protocol lists.

Used by :mod:`scenarios.check.protocol_checkers` and :mod:`scenarios.check.contracts`.
"""

from __future__ import annotations

from typing import Any

from scenarios.eventlog.kinds import Violation as EventViolation

__all__ = ["Record", "Violation", "violation", "protocol_vote"]

Record = dict[str, Any]
Violation = dict[str, Any]


#: the ``violation`` record's keys in the order the typed record encodes them
_VIOLATION_KEYS = {
    key: i for i, key in enumerate(EventViolation.__struct_encode_fields__) if key != "cause_seq"
}


def violation(invariant: str, detail: str, record: Record, **extra: Any) -> Violation:
    """``{"invariant", "detail", **extra, "cause_seq"}``: a violation caused by ``record``.

    ``extra`` goes in the order of the event log's ``violation`` record
    (:class:`scenarios.eventlog.kinds.Violation`), so a written violation decodes and encodes
    back to the same line whatever order a checker names its fields in.

    Raises:
        TypeError: a key the ``violation`` record does not have (a checker bug: it would be
            dropped when the log is read back).
    """
    unknown = extra.keys() - _VIOLATION_KEYS.keys()
    if unknown:
        raise TypeError(f"violation {invariant!r}: no such field in the record: {sorted(unknown)}")
    ordered = sorted(extra.items(), key=lambda item: _VIOLATION_KEYS[item[0]])
    return {
        "invariant": invariant,
        "detail": detail,
        **dict(ordered),
        "cause_seq": record.get("seq"),
    }


def protocol_vote(lists: list[list[str]]) -> tuple[list[str], set[str]]:
    """``ClassicGroup#selectProtocol`` over the members' protocol lists (each in preference
    order): the protocols with the most votes, sorted (a tie gives all of them), and the
    candidates (the protocols every member supports). Each member votes for its first
    candidate."""
    candidates = set(lists[0]).intersection(*lists[1:]) if lists else set()
    votes: dict[str, int] = {}
    for protocols in lists:
        vote = next((p for p in protocols if p in candidates), None)
        if vote is not None:
            votes[vote] = votes.get(vote, 0) + 1
    most = max(votes.values(), default=0)
    return sorted(p for p, n in votes.items() if n == most), candidates
