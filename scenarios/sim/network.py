"""The simulated network: latency, per-link FIFO order, and the faults on a member's link with
the group coordinator (partition, loss, extra latency, delayed requests).

Every message between two addresses takes ``latency_ms`` plus a seeded uniform extra in
``[0, jitter_ms]`` (virtual ms) and never overtakes an earlier message on the same link, as
TCP does. Faults apply to the link between a member (by name, whatever its incarnation) and
the coordinator, in either direction.
"""

from __future__ import annotations

import random
from typing import Any

from members.group_client import COORDINATOR_ADDRESS

__all__ = ["Network", "member_name", "renamed_members"]


def member_name(address: str) -> str:
    """A member's name from its address (``w1#2`` is the second incarnation of ``w1``)."""
    return address.partition("#")[0]


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
        self._link_clock: dict[tuple[str, str], int] = {}
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
        link = (source, dest)
        previous = self._link_clock.get(link, 0)
        if at < previous:
            at = previous
        self._link_clock[link] = at
        return at

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

    def request_delay(self, member: str, request: str, now_ms: int) -> int | None:
        """The extra ms a ``request`` of ``member`` sent now is held for, or ``None``."""
        held = self.delays.get(member)
        if held is None or now_ms >= held[2] or held[0] not in ("any", request):
            return None
        return held[1]


def renamed_members(fields: dict[str, Any]) -> dict[str, Any]:
    """Coordinator records name members by address; the log names them by member name."""
    renamed = dict(fields)
    for key in ("member", "leader"):
        value = renamed.get(key)
        if isinstance(value, str):
            renamed[key] = member_name(value)
    members = renamed.get("members")
    if isinstance(members, list):
        renamed["members"] = [member_name(m) if isinstance(m, str) else m for m in members]
    return renamed
