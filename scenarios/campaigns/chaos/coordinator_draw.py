"""The broker's ``[coordinator]`` settings of a chaos run (every kind's generator), drawn from a
stream of their own (``.../<index>/<kind>-coordinator``) *after* every other draw, so a run
that draws none is the scenario it was before (docs/chaos.md "Coordinator settings").

In :data:`COORDINATOR_SHARE` of the runs, each independently:

- ``group.initial.rebalance.delay.ms`` across its range (0 to the members' 60 s rebalance
  timeout: KIP-134's delay, extended while members keep arriving, never past the rebalance
  timeout);
- ``group.max.size`` (KIP-389) from two below the member count to one above it — below it
  the last joiners are refused GROUP_MAX_SIZE_REACHED at once, at it a member that restarts
  under a new member id while its old one is still in the group is refused;
- ``group.{min,max}.session.timeout.ms`` around the members' ``session.timeout.ms``: the
  lowest and highest exactly (both bounds inclusive), wider, or — when some member may be
  refused — one member's ``session.timeout.ms`` raised above every other's and the maximum
  set to the others' highest, so that member's every JoinGroup gets INVALID_SESSION_TIMEOUT.

Both errors are fatal to a Kafka client (``AbstractCoordinator.JoinGroupResponseHandler``:
``GroupMaxSizeReachedException``, ``InvalidSessionTimeoutException`` out of ``poll()``), so a
refused member dies (``member_fatal``) until a timeline step restarts it. Only settings Kafka
starts with are drawn (``CoordinatorConfig``: min ≤ max, max size ≥ 1), and a member that must
stay (a KIP-987 static worker, a zombie's pair) is never the refused one.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from typing import Any

from coordinator.config import CoordinatorConfig

__all__ = ["COORDINATOR_SHARE", "INITIAL_DELAYS_MS", "draw_coordinator", "draw_for_members"]

#: The share of runs that draw a ``[coordinator]`` table.
COORDINATOR_SHARE = 0.3
#: ``group.initial.rebalance.delay.ms`` values (Kafka's default is 3,000).
INITIAL_DELAYS_MS = (0, 100, 3_000, 10_000, 30_000, 60_000)


def draw_coordinator(
    rng: random.Random,
    sessions: Mapping[str, int],
    *,
    refusable: Collection[str] = (),
    max_size: bool = True,
) -> tuple[dict[str, Any], dict[str, int]]:
    """The ``[coordinator]`` table of a run (Kafka names; empty: none drawn) and the members
    whose ``session.timeout.ms`` it raises (name → virtual ms) so the session bounds refuse
    them.

    Args:
        rng: the run's ``.../<kind>-coordinator`` stream.
        sessions: each member's ``session.timeout.ms`` (virtual ms), every member the run may
            start.
        refusable: members the run may lose to a refused JoinGroup (INVALID_SESSION_TIMEOUT):
            at most one of them is, and only while two members stay.
        max_size: whether ``group.max.size`` may be drawn (not for groups whose members must
            all run, e.g. KIP-987 static workers).
    """
    if rng.random() >= COORDINATOR_SHARE or not sessions:
        return {}, {}
    table: dict[str, Any] = {}
    raised: dict[str, int] = {}
    if rng.random() < 0.6:
        table["group.initial.rebalance.delay.ms"] = rng.choice(INITIAL_DELAYS_MS)
    n = len(sessions)
    if max_size and rng.random() < 0.5:
        table["group.max.size"] = rng.randint(max(2, n - 2), n + 1)
    if rng.random() < 0.5:
        low, high = min(sessions.values()), max(sessions.values())
        roll = rng.random()
        candidates = sorted(refusable)
        if roll < 0.4 and candidates and n - 1 >= 2:
            victim = rng.choice(candidates)
            others = [s for m, s in sessions.items() if m != victim]
            top = max(others)
            raised[victim] = top + rng.choice((1, 1_000, 15_000))
            low = min(others)
            high = top
        elif roll < 0.7:
            low = max(0, low - rng.choice((1, 1_000, 4_000)))
            high += rng.choice((1, 1_000, 60_000))
        table["group.min.session.timeout.ms"] = low
        table["group.max.session.timeout.ms"] = high
    CoordinatorConfig.from_mapping(table)  # only settings a broker starts with
    return table, raised


def draw_for_members(
    rng: random.Random,
    entries: list[dict[str, Any]],
    gone: Collection[str],
    default_session_ms: int,
) -> dict[str, Any] | None:
    """:func:`draw_coordinator` for a kind whose scenario lists its members as tables
    (``clients``, ``consumers``: ``name`` and an optional ``config``), applying a raised
    ``session.timeout.ms`` to the refused member's ``config`` in place. Members that share a
    ``group.instance.id`` (a zombie and its pair) are never refused, nor is any member when
    fewer than three stay for good (``gone``: the timeline's permanent departures). Returns
    the ``[coordinator]`` table, ``None`` when none was drawn."""
    sessions = {
        str(e["name"]): int(e.get("config", {}).get("session.timeout.ms", default_session_ms))
        for e in entries
    }
    ids = [e.get("config", {}).get("group.instance.id") for e in entries]
    paired = {str(e["name"]) for e, i in zip(entries, ids, strict=True) if i and ids.count(i) > 1}
    staying = [m for m in sessions if m not in gone]
    refusable = [m for m in staying if m not in paired] if len(staying) >= 3 else []
    table, raised = draw_coordinator(rng, sessions, refusable=refusable)
    for e in entries:
        if e["name"] in raised:
            e.setdefault("config", {})["session.timeout.ms"] = raised[e["name"]]
    return table or None
