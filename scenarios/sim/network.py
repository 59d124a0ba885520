"""The simulated network: latency, per-link FIFO order, and the faults on a member's link with
the group coordinator (partition, loss, extra latency, delayed requests).

Every message between two addresses takes ``latency_ms`` plus a seeded uniform extra in
``[0, jitter_ms]`` (virtual ms) and never overtakes an earlier message on the same link, as
TCP does. Faults apply to the link between a member (by name, whatever its incarnation) and
the coordinator, in either direction.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from members.group_client import COORDINATOR_ADDRESS

__all__ = ["Network", "member_name", "rename_members"]


def member_name(address: str) -> str:
    """A member's name from its address (``w1#2`` is the second incarnation of ``w1``)."""
    return address.partition("#")[0]


def rename_members(fields: dict[str, Any]) -> dict[str, Any]:
    """A coordinator record's fields with its members named by name, not address (the
    coordinator knows members by address; the log names them by member name)."""
    renamed = dict(fields)
    for key in ("member", "leader"):
        value = renamed.get(key)
        if isinstance(value, str):
            renamed[key] = member_name(value)
    members = renamed.get("members")
    if isinstance(members, list):
        renamed["members"] = [member_name(m) if isinstance(m, str) else m for m in members]
    return renamed


class Network:
    """Delivery times of messages, with the faults currently in force.

    Args:
        latency_ms: one-way latency of every message (virtual ms).
        jitter_ms: a seeded uniform extra in ``[0, jitter_ms]`` per message.
        rng: the run's one random generator (jitter and loss draw from it).
    """

    def __init__(self, latency_ms: int, jitter_ms: int, rng: random.Random) -> None:
        self.latency_ms = latency_ms
        self.jitter_ms = jitter_ms
        self.rng = rng
        self.partitioned: set[str] = set()
        self._loss: dict[str, tuple[str, float, int]] = {}  # direction, probability, until
        self._latency: dict[str, tuple[int, int]] = {}  # extra ms, until
        self.delays: dict[str, tuple[str, int, int]] = {}  # request kind, delay ms, until
        # each link's clock (the latest arrival on it) in a one-item list, so that a link's
        # arrival function (fault_free_link) can hold its own clock
        self._link_clock: dict[tuple[str, str], list[int]] = {}
        self._links: dict[tuple[str, str], Callable[[int], int]] = {}  # fault_free_link's
        self._names: dict[str, str] = {}  # address -> member name (a cache)
        # rng.randint(0, jitter_ms) drawn as CPython's Random does it (getrandbits of the
        # width's bit length until below the width): the same numbers, without the layers.
        self._jitter_width = jitter_ms + 1
        self._jitter_bits = self._jitter_width.bit_length()
        self._getrandbits = rng.getrandbits
        # True once any partition, loss or latency fault was injected (then looked up)
        self._faulted = False

    def arrival_ms(self, source: str, dest: str, now_ms: int) -> int | None:
        """When a message sent now from ``source`` to ``dest`` arrives, or ``None`` when a
        fault drops it."""
        latency = self.latency_ms
        if self.jitter_ms:
            width, bits, draw = self._jitter_width, self._jitter_bits, self._getrandbits
            extra = draw(bits)
            while extra >= width:
                extra = draw(bits)
            latency += extra
        if not self._faulted:
            pass  # no fault was ever injected: nothing to look up
        elif source == COORDINATOR_ADDRESS or dest == COORDINATOR_ADDRESS:
            outbound = dest == COORDINATOR_ADDRESS
            address = source if outbound else dest
            member = self._names.get(address)
            if member is None:
                member = self._names[address] = member_name(address)
            if member in self.partitioned:
                return None
            loss = self._loss.get(member)
            if loss is not None and now_ms < loss[2]:
                direction = "to_coordinator" if outbound else "from_coordinator"
                if loss[0] in ("both", direction) and self.rng.random() < loss[1]:
                    return None
            slow = self._latency.get(member)
            if slow is not None and now_ms < slow[1]:
                latency += slow[0]
        at = now_ms + latency
        return self._in_link_order((source, dest), at)

    def fault_free_arrival(self, source: str, dest: str, now_ms: int) -> int:
        """:meth:`arrival_ms` of a message on a link no fault is in force on (no partition,
        loss or latency fault: see :meth:`link_faults_in_force`), without looking faults up:
        the latency, a jitter draw, the link's FIFO order. The same arrival and the same
        draws as :meth:`arrival_ms` there (``tests/scenarios/sim/test_engine_fast_path.py``);
        the heartbeat replay's path (:mod:`scenarios.sim.fastpath.heartbeats`)."""
        at = now_ms + self.latency_ms
        if self.jitter_ms:
            width, bits, draw = self._jitter_width, self._jitter_bits, self._getrandbits
            extra = draw(bits)
            while extra >= width:
                extra = draw(bits)
            at += extra
        return self._in_link_order((source, dest), at)

    def _clock_of(self, link: tuple[str, str]) -> list[int]:
        """The link's clock: the latest arrival on it so far (virtual ms), one list shared by
        every arrival path."""
        clock = self._link_clock.get(link)
        if clock is None:
            clock = self._link_clock[link] = [0]
        return clock

    def _in_link_order(self, link: tuple[str, str], at: int) -> int:
        """``at``, or the link's latest arrival if that is later: a link delivers in order
        (one TCP connection); the result becomes the link's clock."""
        clock = self._clock_of(link)
        if at < clock[0]:
            at = clock[0]
        clock[0] = at
        return at

    def fault_free_link(self, source: str, dest: str) -> Callable[[int], int]:
        """:meth:`fault_free_arrival` on the link ``source`` -> ``dest`` as a function of the
        send time (virtual ms): the same arrivals and draws, with the link's clock, the
        latency and the generator's draw bound once (one function per link, kept), for the
        heartbeat replay's two messages a round. For a link no fault is in force on, as
        :meth:`fault_free_arrival`."""
        link = (source, dest)
        known = self._links.get(link)
        if known is not None:
            return known
        clock = self._clock_of(link)
        latency = self.latency_ms
        width, bits, draw = self._jitter_width, self._jitter_bits, self._getrandbits
        jitter = bool(self.jitter_ms)

        def arrival(now_ms: int) -> int:
            at = now_ms + latency
            if jitter:  # rng.randint(0, jitter_ms), as in arrival_ms
                extra = draw(bits)
                while extra >= width:
                    extra = draw(bits)
                at += extra
            if at < clock[0]:
                at = clock[0]
            clock[0] = at
            return at

        self._links[link] = arrival
        return arrival

    def partition(self, member: str) -> None:
        """Cut the member's link with the coordinator, both ways."""
        self.partitioned.add(member)
        self._faulted = True

    def heal(self, member: str) -> bool:
        """End the member's partition; True if it was partitioned."""
        if member not in self.partitioned:
            return False
        self.partitioned.discard(member)
        return True

    def lose(self, member: str, direction: str, probability: float, until_ms: int) -> None:
        """Drop each message on the member's link in ``direction`` with ``probability``."""
        self._loss[member] = (direction, probability, until_ms)
        self._faulted = True

    def slow_down(self, member: str, extra_ms: int, until_ms: int) -> None:
        """Add ``extra_ms`` one-way latency on the member's link until ``until_ms``."""
        self._latency[member] = (extra_ms, until_ms)
        self._faulted = True

    def delay_requests(self, member: str, request: str, delay_ms: int, until_ms: int) -> None:
        """Hold the member's ``request`` requests (``heartbeat``, ``sync_group``,
        ``join_group`` or ``any``) sent before ``until_ms`` for ``delay_ms`` more, out of
        their link's FIFO order (a ``delay_request`` fault)."""
        self.delays[member] = (request, delay_ms, until_ms)

    def link_faults_in_force(self, now_ms: int) -> bool:
        """True while a partition, loss or latency fault is in force at ``now_ms`` (then
        :meth:`arrival_ms` may drop or slow a message)."""
        return (
            bool(self.partitioned)
            or any(until > now_ms for _, _, until in self._loss.values())
            or any(until > now_ms for _, until in self._latency.values())
        )

    def faults_in_force(self, now_ms: int) -> bool:
        """True while any fault is in force at ``now_ms``: a link fault
        (:meth:`link_faults_in_force`) or a ``delay_request``."""
        return self.link_faults_in_force(now_ms) or any(
            until > now_ms for _, _, until in self.delays.values()
        )

    def faults_until_ms(self) -> int:
        """When the last loss, latency or ``delay_request`` fault injected so far ends
        (virtual ms; 0 if none was): a partition lasts until its heal."""
        return max(
            [u for _, _, u in self._loss.values()]
            + [u for _, u in self._latency.values()]
            + [u for _, _, u in self.delays.values()],
            default=0,
        )

    def request_delay(self, member: str, request: str, now_ms: int) -> int | None:
        """The extra ms a ``request`` of ``member`` sent now is held for, or ``None``."""
        held = self.delays.get(member)
        if held is None or now_ms >= held[2] or held[0] not in ("any", request):
            return None
        return held[1]
