"""``replay --conform``'s verdict on groupsim's coordinator: the answers compared, and each
one groupsim gave otherwise than the real broker (:class:`Difference`), timing or divergence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Difference", "Conformance"]


@dataclass(frozen=True, slots=True)
class Difference:
    """One answer groupsim gave otherwise than the real broker: ``kind`` is ``"divergence"``
    or ``"timing"``; ``field`` the first differing field (``"time"`` for a late or early
    answer, ``"answer"`` when one side did not answer)."""

    kind: str
    t_ms: int
    conn: int
    api: str
    group: str
    field: str
    recorded: Any
    groupsim: Any


@dataclass(slots=True)
class Conformance:
    """The verdict: answers ``compared`` per API, ``equal`` (same fields, in time), the
    ``differences`` (timing first, divergences after, each in trace order) and ``skipped``
    requests with why."""

    compared: dict[str, int] = field(default_factory=dict)
    equal: int = 0
    differences: list[Difference] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    deferred_timers: int = 0

    @property
    def divergences(self) -> list[Difference]:
        return [d for d in self.differences if d.kind == "divergence"]

    @property
    def timing(self) -> list[Difference]:
        return [d for d in self.differences if d.kind == "timing"]

    def to_json(self) -> dict[str, Any]:
        """``conformance.json``'s content."""
        return {
            "compared": dict(sorted(self.compared.items())),
            "total": sum(self.compared.values()),
            "equal": self.equal,
            "timing_differences": len(self.timing),
            "divergences": len(self.divergences),
            "skipped": dict(sorted(self.skipped.items())),
            "deferred_join_timers": self.deferred_timers,
            "differences": [
                {
                    "kind": d.kind,
                    "t_ms": d.t_ms,
                    "conn": d.conn,
                    "api": d.api,
                    "group": d.group,
                    "field": d.field,
                    "recorded": d.recorded,
                    "groupsim": d.groupsim,
                }
                for d in self.differences
            ],
        }
