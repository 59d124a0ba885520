"""Effects: what a pure state machine asks its runtime to do.

Coordinator and members never perform I/O or read a clock. Their ``handle``/``fire`` methods
take an input and the current virtual time and return a list of these values; the runtime
(`scenarios.sim.engine`) carries them out in list order. All times are virtual milliseconds.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Send", "SetTimer", "CancelTimer", "Log", "Effect"]


class Send(msgspec.Struct, frozen=True):
    """Send ``message`` to the network address ``dest`` (``"coordinator"`` or a member name).

    ``via``: the sender's connection, the address the answer goes back to (``None``: the
    sender's own address). A group member opens a new connection to the coordinator each time
    it drops the old one, and answers on a dropped connection are lost, as in Kafka's
    ``NetworkClient`` (:attr:`members.group_client.GroupClient.connection_address`).
    """

    dest: str
    message: Any
    via: str | None = None


class SetTimer(msgspec.Struct, frozen=True):
    """Arm the owner's timer ``key`` to fire at virtual time ``at_ms``; replaces a timer with
    the same key (Kafka ``CoordinatorTimer.schedule``)."""

    key: str
    at_ms: int


class CancelTimer(msgspec.Struct, frozen=True):
    """Disarm the owner's timer ``key`` if it is armed."""

    key: str


class Log(msgspec.Struct, frozen=True):
    """Append an event-log record of ``kind`` with ``fields`` (see docs/event-log.md)."""

    kind: str
    fields: dict[str, Any]


Effect = Send | SetTimer | CancelTimer | Log
