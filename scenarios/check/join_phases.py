"""Join phases begun from Empty, followed through a log: what KIP-134's two rules judge.

``GroupMetadataManager#prepareRebalance`` starts a group's join phase from Empty with an
``InitialDelayedJoin`` (``group.initial.rebalance.delay.ms``) instead of the plain rebalance
timer; ``initial_delay_skipped`` (:mod:`scenarios.check.kip_contracts`) and
``initial_delay_not_extended`` (:mod:`scenarios.check.coordinator_config_contracts`) both
judge how such a phase ends. :class:`EmptyJoinPhases` is the one place that follows the
phases, so both rules agree on where a phase starts, what happens in it and where it ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scenarios.check.log_rules import Record

__all__ = ["EmptyJoinPhase", "EmptyJoinPhases", "REMOVALS"]

#: the records of a removal that may complete a join phase at once
#: (``removePendingMemberAndUpdateClassicGroup``, ``removeMemberAndUpdateClassicGroup``)
REMOVALS = frozenset({"member_removed", "member_pending_removed"})


@dataclass
class EmptyJoinPhase:
    """One group's join phase begun from Empty.

    ``start`` is the ``group_state`` record Empty → PreparingRebalance (it carries
    ``initial_rebalance_delay_ms`` and ``rebalance_timeout_ms``); ``added_ms`` the virtual
    times (ms) of the phase's ``member_added`` records; ``disturbed`` whether a removal or a
    reload (``group_loaded``) happened in it."""

    start: Record
    added_ms: list[int] = field(default_factory=list)
    disturbed: bool = False

    @property
    def begun_ms(self) -> int:
        """When the phase began (virtual ms)."""
        return int(self.start.get("t_ms") or 0)

    @property
    def delay_ms(self) -> int:
        """The phase's ``group.initial.rebalance.delay.ms`` (ms)."""
        return int(self.start.get("initial_rebalance_delay_ms") or 0)


class EmptyJoinPhases:
    """Each group's open join phase begun from Empty, fed every record of a log in order with
    :meth:`see`. A phase ends with the group's ``generation`` or its ``group_state`` leaving
    PreparingRebalance; a reload ends it unjudged. Groups are keyed by the record's ``group``
    (``None`` in a simulated log)."""

    def __init__(self) -> None:
        self._open: dict[Any, EmptyJoinPhase] = {}
        self._removed_ms: dict[Any, int] = {}  # group -> time of its latest removal

    def see(self, r: Record) -> EmptyJoinPhase | None:
        """Take in one record; the phase it ends, if it ends one other than by the group
        going Dead (an unload: not judged) and the phase saw no reload, else ``None``."""
        kind = r.get("kind")
        group = r.get("group")
        phase = self._open.get(group)
        if kind == "member_added":
            if phase is not None:
                phase.added_ms.append(int(r.get("t_ms") or 0))
            return None
        if kind in REMOVALS:
            self._removed_ms[group] = int(r.get("t_ms") or 0)
            if phase is not None:
                phase.disturbed = True
            return None
        if kind == "group_loaded":
            self._open.pop(group, None)
            return None
        ended = None
        ends = kind == "generation" or (
            kind == "group_state" and r.get("from") == "PreparingRebalance"
        )
        if ends and phase is not None:
            del self._open[group]
            ended = None if r.get("to") == "Dead" else phase
        if (
            kind == "group_state"
            and r.get("to") == "PreparingRebalance"
            and r.get("from") == "Empty"
            and "initial_rebalance_delay_ms" in r
        ):
            self._open[group] = EmptyJoinPhase(r)
        return ended

    def removed_at(self, group: Any, t_ms: int) -> bool:
        """Whether ``group``'s latest removal so far happened at ``t_ms`` (virtual ms)."""
        return self._removed_ms.get(group) == t_ms
