"""What a referee returns: :class:`RefereeVerdict`, the violation kind of a disagreement, and
:func:`replay`, the batch-and-compare loop the Connect, Streams and consumer referees share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scenarios.referee.harness import KafkaOracle

__all__ = ["REFEREE_INVARIANT", "RefereeVerdict", "Round", "leader_rounds", "replay"]

#: The violation kind of a disagreement between groupsim and Kafka's referee.
REFEREE_INVARIANT = "referee_disagrees"


@dataclass
class RefereeVerdict:
    """What the referee did with a log.

    Attributes:
        compared: leader rounds replayed through Kafka and compared.
        skipped: rounds not judged, by reason (``static``, ``no_inputs``,
            ``version_probing``, ...).
        violations: ``violation`` records (``invariant`` :data:`REFEREE_INVARIANT`), one per
            disagreeing round, in log order; ``t_ms`` is the round's, ``cause_seq`` the
            ``seq`` of its ``assignor`` (Connect),
            ``streams_assignment`` (Streams) or ``consumer_assignor`` (consumer) record;
            ``seq`` is left to the caller.
        kafka: the Kafka version that judged (``None`` when nothing was sent).
    """

    compared: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    violations: list[dict[str, Any]] = field(default_factory=list)
    kafka: str | None = None


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


def replay(
    oracle: KafkaOracle,
    verdict: RefereeVerdict,
    rounds: list[Round],
    differences: Callable[[dict[str, Any], dict[str, Any], Any], list[str]],
    who: Callable[[dict[str, Any]], str],
    *,
    extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    after: Sequence[tuple[str, dict[str, Any]]] = (),
) -> RefereeVerdict:
    """The replay loop every referee shares: sends ``rounds`` (then ``after``, e.g. a session
    reset) to ``oracle`` as one batch, counts each round compared, and adds a violation to
    ``verdict`` for each round whose ``differences(record, fields, answer)`` (Kafka's
    answer, or an :class:`OracleError`) is not empty. ``who(record)`` names Kafka's class in
    the detail; ``extra(record)`` adds fields to the violation. Returns ``verdict``.

    Raises:
        scenarios.referee.harness.OracleUnavailable: the JVM died.
    """
    if not rounds:
        return verdict
    answers = oracle.call_many([request for _, request in rounds] + list(after))
    for (rec, (_, fields)), answer in zip(rounds, answers, strict=False):
        verdict.compared += 1
        diff = differences(rec, fields, answer)
        if not diff:
            continue
        verdict.violations.append(
            {
                "t_ms": rec["t_ms"],
                "kind": "violation",
                "invariant": REFEREE_INVARIANT,
                "detail": f"Kafka {oracle.version}'s {who(rec)} disagrees with the leader's "
                f"assignment of generation {rec['generation']}: " + "; ".join(diff),
                "generation": rec["generation"],
                **(extra(rec) if extra is not None else {}),
                "member": rec.get("member"),
                "cause_seq": rec["seq"],
            }
        )
    return verdict
