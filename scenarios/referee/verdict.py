"""What a referee returns: :class:`RefereeVerdict`, and the violation kind of a disagreement."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["REFEREE_INVARIANT", "RefereeVerdict"]

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
            ``seq`` of its ``assignor`` (Connect) or
            ``streams_assignment`` record; ``seq`` is left to the caller.
        kafka: the Kafka version that judged (``None`` when nothing was sent).
    """

    compared: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    violations: list[dict[str, Any]] = field(default_factory=list)
    kafka: str | None = None
