"""The online safety checker's per-member state (:class:`scenarios.check.invariants.
InvariantChecker`), typed: what it knows of each member between records."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MemberState", "Zombie"]


@dataclass(slots=True, frozen=True)
class Zombie:
    """A member out of the group that may still run its work: the known issue whose window it
    is in (``KAFKA-9184``, ``KAFKA-16056``, ``streams-zombie``), the group's generation when it
    was removed (``None``: none yet) and when (virtual ms). The window closes when Kafka's
    client would have given up (:mod:`scenarios.check.known_windows`)."""

    issue: str
    generation: int | None
    removed_ms: int


@dataclass(slots=True)
class MemberState:
    """One member (a Connect worker or a Kafka Streams client) as the checker sees it."""

    #: the (``"task"``/``"connector"``, id) instances it owns, forgotten at once when it goes
    owned: set[tuple[str, str]] = field(default_factory=set)
    #: the generation of its latest applied assignment since it (re)started, or ``None``
    applied_generation: int | None = None
    #: the protocol of its latest applied assignment (``None``: none yet)
    applied_protocol: str | None = None
    #: set while it is out of the group but possibly still running work
    zombie: Zombie | None = None
    #: Kafka Streams: the tasks it holds as active, and its standby tasks
    active: set[str] = field(default_factory=set)
    standby: set[str] = field(default_factory=set)
