"""Everything a Connect (and later Streams) group leader can run, looked up by name.

``create_assignor("incremental_cooperative", max_delay_ms=300000)`` gives a fresh instance
(``"static"`` is KIP-987's, :mod:`members.assignors.static`); a
leader worker keeps its instance for its process lifetime (Kafka's ``WorkerCoordinator`` does),
so leader-local state persists across the rounds it leads.
"""

from __future__ import annotations

from collections.abc import Callable

from members.config import WORKER_DEFAULTS
from protocol.errors import InputError

from .base import AssignmentRound, ConfigSnapshot, ConnectAssignor, LazyDecoded
from .eager import EagerAssignor
from .incremental_cooperative import (
    ClusterAssignment,
    IncrementalCooperativeAssignor,
    WorkerLoad,
    exponential_backoff,
)
from .static import (
    STATIC_TIE_RULE,
    StaticAssignmentRound,
    StaticAssignor,
    StaticClaims,
    StaticClusterAssignment,
    StaticPlacement,
)

__all__ = [
    "ASSIGNORS",
    "UnknownAssignorError",
    "create_assignor",
    "AssignmentRound",
    "ConfigSnapshot",
    "ConnectAssignor",
    "LazyDecoded",
    "EagerAssignor",
    "IncrementalCooperativeAssignor",
    "ClusterAssignment",
    "WorkerLoad",
    "exponential_backoff",
    "STATIC_TIE_RULE",
    "StaticAssignor",
    "StaticAssignmentRound",
    "StaticClaims",
    "StaticClusterAssignment",
    "StaticPlacement",
]


class UnknownAssignorError(InputError):
    """An assignor name that is not in :data:`ASSIGNORS`; the message lists the known ones."""

    def __init__(self, name: str) -> None:
        known = ", ".join(sorted(ASSIGNORS))
        super().__init__(f"unknown assignor {name!r} (known: {known})")
        self.name = name


_MAX_DELAY_MS = WORKER_DEFAULTS.scheduled_rebalance_max_delay_ms
#: Assignor name → factory taking ``max_delay_ms`` (``scheduled.rebalance.max.delay.ms``).
ASSIGNORS: dict[str, Callable[..., ConnectAssignor]] = {
    "eager": lambda *, max_delay_ms=0: EagerAssignor(),
    "incremental_cooperative": lambda *, max_delay_ms=_MAX_DELAY_MS: IncrementalCooperativeAssignor(
        max_delay_ms
    ),
    "static": lambda *, max_delay_ms=_MAX_DELAY_MS: StaticAssignor(max_delay_ms),
}


def create_assignor(name: str, *, max_delay_ms: int) -> ConnectAssignor:
    """A new assignor instance by registry name.

    Args:
        name: a key of :data:`ASSIGNORS` (``"eager"``, ``"incremental_cooperative"``,
            ``"static"``).
        max_delay_ms: ``scheduled.rebalance.max.delay.ms`` in virtual ms (ignored by eager).

    Raises:
        UnknownAssignorError: ``name`` is not registered.
        ValueError: ``max_delay_ms`` is negative.
    """
    factory = ASSIGNORS.get(name)
    if factory is None:
        raise UnknownAssignorError(name)
    if max_delay_ms < 0:
        raise ValueError(f"max_delay_ms must be >= 0, got {max_delay_ms}")
    return factory(max_delay_ms=max_delay_ms)
