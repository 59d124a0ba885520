"""Planted bug in KIP-881's rack preference of the sticky assignors (issue 23): judged by
``sticky_rack_unmatched`` (``scenarios/check/rack_contracts.py``), reached by consumer
campaigns, half of whose runs draw ``client.rack`` and replica racks
(``scenarios/campaigns/chaos/generate_consumer.py`` ``_draw_racks``); docs/chaos.md "Planted
bugs" gives the runs it took to find.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from members.assignors.consumer import sticky_racks

from . import PlantedBug

__all__ = ["RACK_BUGS"]


def _no_rack_consumer(original: Callable[..., Any]) -> Callable[..., Any]:
    # assignRackAwareRoundRobin finding no member on a partition's racks: every partition not
    # kept goes through the plain round robin, whatever its racks (owned partitions off their
    # owner's rack are still given up)
    def next_rack_consumer(self: Any, tp: Any, consumers: list[str], first: int) -> int:
        return -1

    return next_rack_consumer


RACK_BUGS: tuple[PlantedBug, ...] = (
    PlantedBug(
        "sticky-assignor-ignores-racks",
        "members/assignors/consumer/sticky_racks.py RackInfo.next_rack_consumer "
        "(assignRackAwareRoundRobin)",
        "the sticky assignors' rack-aware round robin never finds a member on a partition's "
        "racks: new and moved partitions are placed without KIP-881's rack preference",
        "consumer",
        ((sticky_racks.RackInfo, "next_rack_consumer", _no_rack_consumer),),
    ),
)
