"""What the fast paths read and update of the engine that hosts them
(:class:`scenarios.sim.engine.Engine` implements it)."""

from __future__ import annotations

from typing import Protocol

from coordinator.group import GroupCoordinator
from members.group_client import GroupClient
from scenarios.sim.events import QueueEvent
from scenarios.sim.network import Network
from scenarios.sim.timers import TimerTable

__all__ = ["Host", "QueueEntry"]

#: An entry of the engine's queue: (virtual ms, sequence number, event).
QueueEntry = tuple[int, int, QueueEvent]


class Host(Protocol):
    """The engine, as the fast paths see it.

    Attributes:
        now_ms: the virtual time of the event being processed (virtual ms).
        end_ms: when the run ends; ``run_end_ms``: where the current
            ``run_until`` stops (virtual ms).
        quiet: True while the stretch since the last heartbeat of the skipper's anchor
            member held nothing but heartbeat steps; the engine clears it on anything else.
        members: live members by address; ``coordinator``, ``coordinator_up``: the group's
            coordinator and whether it is loaded; ``network``: the network with its faults;
            ``timers``: every timer's arming and queue entry.
    """

    now_ms: int
    end_ms: int
    run_end_ms: int
    quiet: bool
    members: dict[str, GroupClient]
    coordinator: GroupCoordinator
    coordinator_up: bool
    network: Network
    timers: TimerTable

    @property
    def seq(self) -> int:
        """The last sequence number taken (every queue push and timer arming takes one)."""

    def queued(self) -> list[QueueEntry]:
        """The queue's entries, in heap order (read only: see :meth:`replace_queue`)."""

    def replace_queue(self, entries: list[QueueEntry]) -> None:
        """Make ``entries`` (any order) the queue."""

    def advance(self, now_ms: int, seq: int) -> None:
        """Move the virtual time and the last sequence number taken forward to where
        processing the events skipped or replayed would have left them."""

    def requests_held(self) -> bool:
        """True while a ``delay_request`` fault holds a request not yet arrived."""
