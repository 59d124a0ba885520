"""Contract checkers over a consumer group leader's assignment (``kind = "consumer"`` logs).

Pure functions over one run's records, like :mod:`scenarios.check.contracts` (which adds them
to ``CONTRACT_CHECKERS``). Each reads the leader's ``consumer_assignor`` records: ``assigned``
({member id: ["<topic>-<partition>", ...]}, one entry per member of the generation, empty lists
included) and ``assignor`` (the elected protocol). A consumer of a groupsim scenario starts
subscribed to every topic of ``run_start.topics`` (docs/consumer.md); a ``subscribe`` step
(``subscription_changed``) can narrow it, and both rules below hold only while all
subscriptions are equal (``AbstractStickyAssignor`` takes its general path otherwise, and a
range or round-robin count includes consumers that cannot take a topic), so a leader's round
is not judged from a subscription change until every consumer subscribes to every topic again
(a restarted consumer does) and one more round has passed (the one whose JoinGroups may still
carry the old subscription). One pass over the log; O(size of the record) per
``consumer_assignor``. A round's partition count ``P`` is what its leader assigned from (the
record's ``inputs.topics``; without them, ``run_start.topics`` grown by ``partitions_added``).

Only bounds the assignors publish are judged here; the exact placement (which consumer gets
which range, the round robin's order) is the output of a deterministic algorithm and is left
to a referee (docs/chaos.md "Contract rules").

``consumer_assignment_unbalanced`` — the balance each assignor states:
    ``range`` (``RangeAssignor``: per topic, partitions ÷ consumers each, the first
    ``partitions % consumers`` one more): per topic, the counts of the generation's members
    differ by at most one. ``roundrobin`` (``RoundRobinAssignor``, equal subscriptions): the
    members' total counts differ by at most one. ``sticky`` / ``cooperative-sticky``
    (``AbstractStickyAssignor``, ``allSubscriptionsEqual``: every member gets ``minQuota`` or
    ``maxQuota`` partitions): total counts differ by at most one — judged under
    ``cooperative-sticky`` only in rounds that hand out every partition (KIP-429 withholds a
    partition changing owner until its owner revoked it, so a revocation round is unbalanced
    by design).
``sticky_partitions_moved`` — KIP-54 / KIP-341, ``AbstractStickyAssignor``
    (``ConstrainedAssignmentBuilder#assignOwnedPartitions``): with equal subscriptions each
    member keeps its valid previously owned partitions up to the quota, so a member of
    generation ``g`` that applied an assignment of generation ``g - 1`` under the same member
    id from the same assignor and can still report it (no ``partitions_lost``; under
    ``cooperative-sticky`` no revocation either, its owned partitions being what it holds at
    JoinGroup time; under ``sticky`` only the eager revocation before a JoinGroup, its user
    data keeping the last assignment) and has sent a JoinGroup since (a KIP-345 static member
    the join phase keeps without one is assigned by the metadata of its last JoinGroup, which
    does not carry that assignment) keeps at least ``min(|owned|, floor(P / n))`` of it
    (``P`` partitions, ``n`` members). Not judged when any member sets ``client.rack``
    (KIP-881 trades stickiness for rack matching).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence

from msgspec import UNSET

from protocol.consumer_codec import ConsumerProtocolError, decode_subscription
from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog.records import LogRecord

__all__ = [
    "CONSUMER_CONTRACT_INVARIANTS",
    "CONSUMER_CONTRACT_CHECKERS",
    "check_consumer_balance",
    "check_sticky_keeps_owned",
    "EqualSubscriptions",
    "RoundPartitions",
    "consumer_topics",
    "member_subscriptions",
    "partition_owners",
]

CONSUMER_ASSIGNMENT_UNBALANCED = "consumer_assignment_unbalanced"
STICKY_PARTITIONS_MOVED = "sticky_partitions_moved"

CONSUMER_CONTRACT_INVARIANTS = (CONSUMER_ASSIGNMENT_UNBALANCED, STICKY_PARTITIONS_MOVED)

_STICKY = frozenset({"sticky", "cooperative-sticky"})
#: ``partitions_revoked`` reason of an eager member before its JoinGroup: the sticky user data
#: still carries the previous assignment (``StickyAssignor#onAssignment``)
_EAGER_REVOKE = "eager rebalance: revoke all before JoinGroup"


def _topic_of(label: str) -> str:
    return label.rsplit("-", 1)[0]


def _typed_topics(records: Sequence[LogRecord]) -> Mapping[str, int] | None:
    """The topics of a consumer log's ``run_start`` ({name: partition count}), ``None`` in
    another log."""
    for r in records:
        if isinstance(r, k.RunStart):
            return r.topics if r.app == "consumer" and isinstance(r.topics, dict) else None
    return None


class _EqualSubscriptions:
    """Whether the leader's next round saw equal subscriptions (the module docstring):
    :meth:`see_record` every record in log order, then ask :meth:`judged` on a
    ``consumer_assignor``."""

    def __init__(self, topics: Mapping[str, int]) -> None:
        self._every = frozenset(topics)
        self._narrowed: set[str] = set()  # consumers subscribed to fewer topics
        self._settling = False  # equal again, but the next round may predate it

    def see_record(self, r: LogRecord) -> None:
        """Take in one record (a ``member_start`` or ``subscription_changed``; others change
        nothing)."""
        match r:
            case k.MemberStart(member=name):
                self._back(name)
            case ku.SubscriptionChanged(member=name, topics=topics):
                if frozenset(topics) == self._every:
                    self._back(name)
                else:
                    self._narrowed.add(name)

    def _back(self, name: str) -> None:
        """``name`` subscribes to every topic again."""
        if name in self._narrowed:
            self._narrowed.discard(name)
            self._settling = not self._narrowed

    def judged(self) -> bool:
        """For a ``consumer_assignor`` record (after :meth:`see` of it)."""
        if self._narrowed:
            return False
        if self._settling:
            self._settling = False
            return False
        return True


class _Partitions:
    """The partition count a leader's round assigned from (the module docstring)."""

    def __init__(self, topics: Mapping[str, int]) -> None:
        self.counts = dict(topics)

    def see_record(self, r: LogRecord) -> None:
        """Take in one record (a ``partitions_added``; others change nothing)."""
        if isinstance(r, ku.PartitionsAdded):
            self.counts[r.topic] = r.partitions

    def of_round(self, r: ku.ConsumerAssignor) -> Mapping[str, int]:
        """For a ``consumer_assignor`` record: topic → partition count."""
        inputs = r.inputs
        if isinstance(inputs, ku.ConsumerAssignorInputs) and inputs.topics:
            return {t: len(parts) for t, parts in inputs.topics.items()}
        return self.counts

    def total_of(self, r: ku.ConsumerAssignor) -> int:
        """For a ``consumer_assignor`` record: the partitions of its round."""
        return sum(self.of_round(r).values())


def _spread(counts: Sequence[int]) -> int:
    return max(counts) - min(counts) if counts else 0


@reads_typed(
    "run_start", "member_start", "subscription_changed", "partitions_added", "consumer_assignor"
)
def check_consumer_balance(records: Sequence[LogRecord]) -> list[Violation]:
    """``consumer_assignment_unbalanced``: a leader's round breaks its assignor's balance."""
    topics = _typed_topics(records)
    if not topics:
        return []
    partitions = _Partitions(topics)
    equal = _EqualSubscriptions(topics)
    found: list[Violation] = []
    for r in records:
        equal.see_record(r)
        partitions.see_record(r)
        if not isinstance(r, ku.ConsumerAssignor) or not equal.judged():
            continue
        total = partitions.total_of(r)
        assigned, name = r.assigned, r.assignor
        if not assigned:
            continue
        what = ""
        if name == "range":
            for topic in sorted(topics):
                counts = [
                    sum(1 for p in parts if _topic_of(p) == topic) for parts in assigned.values()
                ]
                if _spread(counts) > 1:
                    what = f"topic {topic}: counts {sorted(counts)} differ by more than one"
                    break
        elif name == "roundrobin" or name in _STICKY:
            counts = [len(parts) for parts in assigned.values()]
            handed_out = sum(counts)
            judged = name != "cooperative-sticky" or handed_out == total
            if judged and _spread(counts) > 1:
                what = f"counts {sorted(counts)} differ by more than one"
        if what:
            found.append(
                violation_at(
                    CONSUMER_ASSIGNMENT_UNBALANCED,
                    f"generation {r.generation} ({name}): {what}",
                    r,
                    generation=r.generation,
                )
            )
    return found


@reads_typed(
    "run_start",
    "member_start",
    "subscription_changed",
    "partitions_added",
    "consumer_assignment",
    "join_group_request",
    "partitions_lost",
    "partitions_revoked",
    "consumer_assignor",
)
def check_sticky_keeps_owned(records: Sequence[LogRecord]) -> list[Violation]:
    """``sticky_partitions_moved``: a sticky leader keeps each member's owned partitions up to
    the minimum quota."""
    topics = _typed_topics(records)
    if not topics:
        return []
    partitions = _Partitions(topics)
    # member id -> (generation, protocol, partitions) of its latest applied assignment while
    # the assignor can still read them (dropped on a loss; on any revocation under
    # cooperative-sticky, whose owned partitions are what the member holds at JoinGroup time;
    # on a non-eager one under sticky, whose user data keeps the last assignment)
    owned: dict[str, tuple[int, str, frozenset[str]]] = {}
    # ... until the member sends a JoinGroup, which carries them (a static member the join
    # phase keeps without one is judged by the metadata of its last JoinGroup, KIP-345)
    unreported: dict[str, tuple[int, str, frozenset[str]]] = {}
    id_of: dict[str, str] = {}  # member name -> its current member id
    racks = False
    equal = _EqualSubscriptions(topics)
    found: list[Violation] = []
    for r in records:
        equal.see_record(r)
        partitions.see_record(r)
        match r:
            case k.MemberStart(member=member, config=config):
                racks = racks or config.client_rack is not UNSET
                gone = id_of.pop(member, None)
                if gone is not None:
                    owned.pop(gone, None)
                    unreported.pop(gone, None)
            case ku.ConsumerAssignment(member=member, member_id=member_id):
                id_of[member] = member_id
                owned.pop(member_id, None)
                unreported[member_id] = (r.generation, r.protocol, frozenset(r.assigned))
            case k.JoinGroupRequest(member_id=member_id):
                if member_id in unreported:
                    owned[member_id] = unreported.pop(member_id)
            case ku.PartitionsLost(member=member) | ku.PartitionsRevoked(member=member):
                gone = id_of.get(member) or ""
                for table in (owned, unreported):
                    held = table.get(gone)
                    if held is not None and (
                        isinstance(r, ku.PartitionsLost)
                        or held[1] != "sticky"
                        or r.reason != _EAGER_REVOKE
                    ):
                        table.pop(gone, None)
            # judged() first: it is asked once per round
            case ku.ConsumerAssignor() if equal.judged() and r.assignor in _STICKY and not racks:
                found.extend(_moved(r, owned, partitions.total_of(r)))
    return found


def _moved(
    r: ku.ConsumerAssignor, owned: Mapping[str, tuple[int, str, frozenset[str]]], total: int
) -> list[Violation]:
    assigned, generation = r.assigned, r.generation
    if not assigned:
        return []
    quota = total // len(assigned)
    out: list[Violation] = []
    for member_id, parts in assigned.items():
        previous = owned.get(member_id)
        if previous is None or previous[:2] != (generation - 1, r.assignor):
            continue
        kept = len(previous[2].intersection(parts))
        need = min(len(previous[2]), quota)
        if kept < need:
            out.append(
                violation_at(
                    STICKY_PARTITIONS_MOVED,
                    f"generation {generation} ({r.assignor}): {member_id} keeps {kept} "
                    f"of the {len(previous[2])} partitions it owned in generation "
                    f"{generation - 1}; the sticky assignor keeps at least {need} "
                    f"(min quota {quota})",
                    r,
                    member=member_id,  # the Violation record's field order
                    generation=generation,
                )
            )
    return out


CONSUMER_CONTRACT_CHECKERS = (check_consumer_balance, check_sticky_keeps_owned)

#: for the other consumer rules (scenarios/check/kip_contracts.py)
EqualSubscriptions = _EqualSubscriptions
RoundPartitions = _Partitions
consumer_topics = _typed_topics


def member_subscriptions(
    inputs: ku.ConsumerAssignorInputs,
) -> dict[str, tuple[str | None, frozenset[str]]] | None:
    """Member id -> (its ``client.rack``, ``None`` for none; the topics it subscribes to),
    decoded from the members' metadata in a ``consumer_assignor`` record's ``inputs``
    (``ConsumerProtocol`` Subscriptions, base64); ``None`` when one does not decode."""
    subscribed: dict[str, tuple[str | None, frozenset[str]]] = {}
    for m in inputs.members:
        try:
            sub = decode_subscription(base64.b64decode(m.metadata))
        except (ConsumerProtocolError, binascii.Error, ValueError):
            return None
        subscribed[m.id] = (sub.rack_id or None, frozenset(sub.topics))
    return subscribed


def partition_owners(assigned: Mapping[str, Sequence[str]] | None) -> dict[tuple[str, int], str]:
    """(topic, partition) -> the member id a ``consumer_assignor`` record's ``assigned``
    (member id -> ``<topic>-<partition>`` labels) gives it to."""
    owner: dict[tuple[str, int], str] = {}
    for member_id, labels in (assigned or {}).items():
        for label in labels:
            topic, _, p = str(label).rpartition("-")
            owner[(topic, int(p))] = str(member_id)
    return owner
