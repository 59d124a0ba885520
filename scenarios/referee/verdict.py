"""What a referee returns: :class:`RefereeVerdict`, the violation kind of a disagreement, and
:func:`replay`, the batch-and-compare loop the Connect, Streams and consumer referees share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scenarios.check.violation import LocatedViolation, Violation, located

if TYPE_CHECKING:
    from scenarios.referee.harness import KafkaOracle

__all__ = [
    "REFEREE_INVARIANT",
    "Judged",
    "RefereeVerdict",
    "Round",
    "leader_rounds",
    "replay",
]

#: The violation kind of a disagreement between groupsim and Kafka's referee.
REFEREE_INVARIANT = "referee_disagrees"


@dataclass
class RefereeVerdict:
    """What the referee did with a log.

    Attributes:
        compared: leader rounds replayed through Kafka and compared.
        answers: coordinator answers replayed through Kafka's ``GroupMetadataManager`` and
            compared (:mod:`scenarios.referee.coordinator`).
        skipped: rounds not judged, by reason (``static``, ``no_inputs``,
            ``version_probing``, ...).
        violations: one ``referee_disagrees``
            :class:`~scenarios.check.violation.LocatedViolation` per disagreeing round or
            answer, in log order; its ``t_ms`` is the round's, its ``cause_seq`` the ``seq`` of the
            round's ``assignor`` (Connect), ``streams_assignment`` (Streams) or
            ``consumer_assignor`` (consumer) record, or of the coordinator record judged.
        kafka: the Kafka version that judged (``None`` when nothing was sent).
        notes: what was judged under a stated treatment, by name (the coordinator's
            ``same_ms_timer``: requests handled before a coordinator timer due at the same
            millisecond, replayed in that order).
    """

    compared: int = 0
    answers: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    violations: list[LocatedViolation] = field(default_factory=list)
    kafka: str | None = None
    notes: Counter[str] = field(default_factory=Counter)


def leader_rounds(
    records: Sequence[dict[str, Any]], kind: str
) -> Iterator[tuple[dict[str, Any], str]]:
    """Each record of ``kind`` in ``records`` with its member's incarnation key
    ``<member>#<n>`` (the ``n``-th ``member_start`` of that member): the leader's assignor
    instance lives as long as the client that built it, across member-id changes, as
    Kafka's ``WorkerCoordinator`` / ``ConsumerCoordinator`` keep theirs."""
    incarnation: Counter[str] = Counter()
    for rec in records:
        tag = rec.get("kind")
        if tag == "member_start":
            incarnation[str(rec.get("member"))] += 1
        elif tag == kind:
            member = str(rec.get("member"))
            yield rec, f"{member}#{incarnation[member]}"


#: One leader round to replay: its record, and the harness ``(op, fields)`` that replays it.
Round = tuple[dict[str, Any], tuple[str, dict[str, Any]]]


#: One judged answer: the record it is attached to, the request's fields, Kafka's answer.
Judged = tuple[dict[str, Any], dict[str, Any], Any]


def replay(
    oracle: KafkaOracle,
    verdict: RefereeVerdict,
    rounds: list[Round],
    differences: Callable[[dict[str, Any], dict[str, Any], Any], list[str]],
    who: Callable[[dict[str, Any]], str],
    *,
    extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    after: Sequence[tuple[str, dict[str, Any]]] = (),
    before: Sequence[tuple[str, dict[str, Any]]] = (),
    regroup: Callable[[list[Round], list[Any]], list[Judged]] | None = None,
    subject: Callable[[dict[str, Any]], str] | None = None,
    first_only: bool = False,
) -> RefereeVerdict:
    """The replay loop every referee shares: sends ``before``, ``rounds`` (then ``after``,
    e.g. a session reset) to ``oracle`` as one batch, counts each round compared, and adds a
    violation to ``verdict`` for each round whose ``differences(record, fields, answer)``
    (Kafka's answer, or an :class:`OracleError`) is not empty. ``who(record)`` names Kafka's
    class in the detail; ``extra(record)`` adds fields to the violation.

    A referee whose answers do not come one per round (the coordinator's: a request's
    answer may come with a later step) passes ``regroup(rounds, answers)``, which turns the
    rounds' answers into the ``(record, fields, answer)`` triples to judge; ``subject(record)``
    then says what Kafka disagrees with (default: the leader's assignment of the record's
    generation), and ``first_only`` stops at the first disagreement (past it the two runs
    have forked, so later answers say nothing more). Returns ``verdict``.

    Raises:
        scenarios.referee.harness.OracleUnavailable: the JVM died.
    """
    if not rounds:
        return verdict
    answers = oracle.call_many(list(before) + [request for _, request in rounds] + list(after))[
        len(before) :
    ]
    judged: list[Judged] = (
        regroup(rounds, answers)
        if regroup is not None
        else [(rec, fields, a) for (rec, (_, fields)), a in zip(rounds, answers, strict=False)]
    )
    for rec, fields, answer in judged:
        verdict.compared += 1
        diff = differences(rec, fields, answer)
        if not diff:
            continue
        what = (
            subject(rec)
            if subject is not None
            else f"the leader's assignment of generation {rec['generation']}"
        )
        named: dict[str, Any] = {"generation": rec.get("generation"), "member": rec.get("member")}
        named.update(extra(rec) if extra is not None else {})
        violation = Violation(
            invariant=REFEREE_INVARIANT,
            detail=f"Kafka {oracle.version}'s {who(rec)} disagrees with {what}: " + "; ".join(diff),
            **named,
            cause_seq=rec["seq"],
        )
        verdict.violations.append(located(int(rec["t_ms"]), violation))
        if first_only:
            break
    return verdict
