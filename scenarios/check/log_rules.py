"""What the log checkers share: the shape of a violation, and the classic protocol vote as it
can be judged from logged protocol lists.

Used by :mod:`scenarios.check.protocol_checkers` and :mod:`scenarios.check.contracts`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_serve as kv
from scenarios.eventlog.records import LogRecord

__all__ = [
    "Checker",
    "KnownProtocols",
    "Record",
    "TypedChecker",
    "Violation",
    "violation_at",
    "protocol_vote",
    "reads_typed",
    "reads_all_typed",
    "finds_only_with",
    "kinds_read",
    "kinds_needed",
    "is_typed",
]

Record = dict[str, Any]
Checker = Callable[[Sequence[Record]], list[Violation]]
#: a checker over the log's records decoded into their Structs
#: (:func:`scenarios.eventlog.records.decode_log`)
TypedChecker = Callable[[Sequence[LogRecord]], list[Violation]]

#: checker -> the only record kinds its verdict depends on (see :func:`reads_typed`)
_KINDS_READ: dict[Checker | TypedChecker, frozenset[str]] = {}
#: the checkers declared with :func:`reads_typed`
_TYPED: set[TypedChecker] = set()
#: a checker of either sort
_C = TypeVar("_C", bound=Callable[[Any], list[Violation]])
#: checker -> kinds one of which a log must have for it to find anything (:func:`finds_only_with`)
_NEEDS: dict[Checker | TypedChecker, frozenset[str]] = {}


def reads_typed(*kinds: str) -> Callable[[TypedChecker], TypedChecker]:
    """Declare a checker over typed records (:data:`scenarios.eventlog.records.LogRecord`,
    decoded once per log by :func:`scenarios.check.protocol_checkers.protocol_violations`)
    whose verdict depends on records of ``kinds`` only: it does nothing for a record of
    another kind (no time or position read from it), so it gives the same violations over the
    log's records of those kinds, in log order. The checker stays a pure function over any
    log; ``protocol_violations`` uses the declaration to hand it only those records (one index
    of the log by kind for all checkers)."""

    def declare(checker: TypedChecker) -> TypedChecker:
        _KINDS_READ[checker] = frozenset(kinds)
        _TYPED.add(checker)
        return checker

    return declare


def reads_all_typed(checker: TypedChecker) -> TypedChecker:
    """Declare a checker over typed records whose verdict may depend on a record of any kind
    (a deadline judged at the next record's time, the log's last record): it reads the whole
    log decoded (:func:`scenarios.check.protocol_checkers.protocol_violations`)."""
    _TYPED.add(checker)
    return checker


def finds_only_with(*kinds: str) -> Callable[[_C], _C]:
    """Declare that a checker finds nothing in a log without a record of one of ``kinds``
    (every violation it reports follows from such a record: a static member's replacement,
    a Streams leader's assignment), whatever else it reads:
    ``protocol_violations`` does not call it on such a log, where its verdict is ``[]``
    anyway (most of a campaign's logs, for a rule about another kind's records or a rare
    event), and does not make it scan the log to find that out."""

    def declare(checker: _C) -> _C:
        _NEEDS[checker] = frozenset(kinds)
        return checker

    return declare


def kinds_read(checker: Checker | TypedChecker) -> frozenset[str] | None:
    """The kinds ``checker`` declared with :func:`reads_typed`, or
    ``None`` (it reads every record: undeclared, or declared with :func:`reads_all_typed`)."""
    return _KINDS_READ.get(checker)


def kinds_needed(checker: Checker | TypedChecker) -> frozenset[str] | None:
    """The kinds ``checker`` declared with :func:`finds_only_with`, or ``None``."""
    return _NEEDS.get(checker)


def is_typed(checker: Checker | TypedChecker) -> bool:
    """Whether ``checker`` was declared with :func:`reads_typed` or :func:`reads_all_typed`
    (it reads Structs)."""
    return checker in _TYPED


def violation_at(invariant: str, detail: str, record: LogRecord, **extra: Any) -> Violation:
    """A :class:`scenarios.check.violation.Violation` caused by the typed ``record``
    (:data:`scenarios.eventlog.records.LogRecord`): its ``cause_seq`` is ``record.seq``;
    ``extra`` names the items involved. Encoded, its fields come in the order of the event
    log's ``violation`` record whatever order a checker names them in.

    Raises:
        TypeError: a field the ``violation`` record does not have (a checker bug).
    """
    return Violation(invariant=invariant, detail=detail, **extra, cause_seq=record.seq)


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


#: the records :meth:`KnownProtocols.see_record` reads
_PROTOCOL_TYPES = frozenset(
    {
        k.MemberStart,
        k.JoinGroupRequest,
        k.JoinGroupResponse,
        kv.WireRequest,
        kv.WireResponse,
        k.GroupLoaded,
    }
)


class KnownProtocols:
    """The protocol list the coordinator knows for each member id, as the log shows it: a
    member's JoinGroup carries its process's list (``join_group_request``; with ``wire``,
    also a served client's ``wire_request`` JoinGroup), its answer ties the list to the id it
    hands out, and a group loaded from its record knows each member's metadata for the
    group's protocol only (``GroupMetadataManager#replay`` of a ``GroupMetadataValue``) until
    the member joins again. Feed it every record with :meth:`see_record` (typed records:
    :data:`scenarios.eventlog.records.LogRecord`)."""

    def __init__(self, *, wire: bool = False) -> None:
        self._wire = wire
        self._current: dict[str, list[str]] = {}  # member name -> its process's list
        self._by_id: dict[str, list[str]] = {}  # member id -> the list the coordinator has

    def see_record(self, r: LogRecord) -> None:
        """Take in one record (records of other kinds change nothing)."""
        if type(r) not in _PROTOCOL_TYPES:
            return
        match r:
            case k.MemberStart(member=name):
                self._current.pop(name, None)
            case k.JoinGroupRequest(member=name, protocols=protocols, member_id=member_id):
                self._joined(name, protocols, member_id)
            case kv.WireRequest(api="JoinGroup", member=name) if self._wire:
                self._joined(name, r.protocols or (), r.member_id or None)
            case (
                k.JoinGroupResponse(member=name, member_id=member_id)
                | kv.WireResponse(api="JoinGroup", member=name, member_id=member_id)
            ) if self._wire or isinstance(r, k.JoinGroupResponse):
                if member_id and name in self._current:
                    self._by_id.setdefault(member_id, self._current[name])
            case k.GroupLoaded(protocol=str() as protocol):
                for member_id in r.member_ids:
                    self._by_id[member_id] = [protocol]

    def _joined(self, name: str, protocols: Iterable[str], member_id: str | None) -> None:
        """Member ``name`` sent a JoinGroup with ``protocols`` (and ``member_id``, if any)."""
        self._current[name] = list(protocols)
        if member_id:
            self._by_id[member_id] = self._current[name]

    def adopt(self, name: str, member_id: str) -> None:
        """``member_id`` now stands for member ``name`` (a static member's replacement id)."""
        if name in self._current:
            self._by_id[member_id] = self._current[name]

    def of(self, member_id: str) -> list[str] | None:
        """The list the coordinator knows for ``member_id``, or ``None``."""
        return self._by_id.get(member_id)
