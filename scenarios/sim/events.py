"""The engine's queue events: what can happen at a virtual time, as tagged msgspec Structs.

The engine keeps one heap of ``(at_ms, seq, event)``; ``seq`` is unique and grows with every
push, so events at the same virtual time happen in the order they were scheduled and the event
itself is never compared.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "Deliver",
    "TimerDue",
    "StepDue",
    "StartMember",
    "HealDue",
    "CoordinatorReload",
    "LateDeliver",
    "QueueEvent",
]


class Deliver(msgspec.Struct, tag=True):
    """``message`` from ``source`` arrives at the address ``dest``."""

    dest: str
    source: str
    message: Any


class TimerDue(msgspec.Struct, tag=True):
    """The timer ``key`` of ``owner`` is due, if it is still armed with ``token`` (re-arming or
    cancelling a key makes its older entries stale)."""

    owner: str
    key: str
    token: int


class StepDue(msgspec.Struct, tag=True):
    """A timeline step (:class:`scenarios.input.steps.Planned`) is due."""

    planned: Any


class StartMember(msgspec.Struct, tag=True):
    """The member called ``name`` starts a new incarnation (``config``: its settings, or
    ``None`` for the kind's own choice)."""

    name: str
    config: Any = None


class HealDue(msgspec.Struct, tag=True):
    """A ``partition`` with a ``duration_ms`` of ``member`` ends."""

    member: str


class CoordinatorReload(msgspec.Struct, tag=True):
    """After a ``coordinator_failover``: the new coordinator loads the group from its last
    stored record."""


class LateDeliver(msgspec.Struct, tag=True):
    """A request ``message`` of the member at ``source``, held by a ``delay_request`` fault since
    ``sent_ms``, reaches the coordinator. ``superseded`` turns true when the member sends another
    request of the same kind meanwhile (it no longer waits for this one's answer).
    ``coordinator_epoch``: the engine's count of coordinator failovers when it was sent (after
    one, the broker it went to no longer hosts the group)."""

    source: str
    message: Any
    sent_ms: int
    delay_ms: int
    superseded: bool = False
    coordinator_epoch: int = 0


QueueEvent = Deliver | TimerDue | StepDue | StartMember | HealDue | CoordinatorReload | LateDeliver
