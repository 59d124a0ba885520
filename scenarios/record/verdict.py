"""``replay --conform``'s verdict on groupsim's coordinator: the answers compared, and each
one groupsim gave otherwise than the real broker (:class:`Difference`), timing or divergence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Difference", "Conformance", "CoordinatorMove"]


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


@dataclass(frozen=True, slots=True)
class CoordinatorMove:
    """The group's coordinator moved from broker ``source`` to ``target`` (``host:port``):
    the old one last answered at ``died_ms``; the new one first answered as the group's
    coordinator to a request sent at ``loaded_ms``, where the replay loads the group from the
    old coordinator's last record (``GroupMetadataManager#replay`` + ``#onLoaded``), at
    ``generation`` with ``members``. The real load ended after ``not_loaded_ms`` (the new
    coordinator's last answer that it was not yet the group's, or ``died_ms``) and before
    ``loaded_ms``: the replay's session deadlines are at most the gap late."""

    group: str
    source: str
    target: str
    died_ms: int
    loaded_ms: int
    not_loaded_ms: int
    generation: int
    members: tuple[str, ...]


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
    coordinator_moves: list[CoordinatorMove] = field(default_factory=list)

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
            "coordinator_moves": [
                {
                    "group": m.group,
                    "from": m.source,
                    "to": m.target,
                    "died_ms": m.died_ms,
                    "loaded_ms": m.loaded_ms,
                    "not_loaded_ms": m.not_loaded_ms,
                    "generation": m.generation,
                    "members": list(m.members),
                }
                for m in self.coordinator_moves
            ],
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
