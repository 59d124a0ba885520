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

from msgspec import UNSET

from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_coordinator as kg
from scenarios.eventlog.records import LogRecord

__all__ = ["EmptyJoinPhase", "EmptyJoinPhases", "PHASE_KINDS", "group_of"]

#: the record kinds :class:`EmptyJoinPhases` reads (every other record changes nothing)
PHASE_KINDS = (
    "group_state",
    "generation",
    "member_added",
    "group_loaded",
    "member_removed",
    "member_pending_removed",
)


def group_of(record: Any) -> str | None:
    """The ``group`` a coordinator record names (``groupsim serve`` tags each with its group
    id), ``None`` in a simulated log."""
    group = getattr(record, "group", UNSET)
    return None if group is UNSET else group


@dataclass
class EmptyJoinPhase:
    """One group's join phase begun from Empty.

    ``start`` is the ``group_state`` record Empty → PreparingRebalance (it carries
    ``initial_rebalance_delay_ms`` and ``rebalance_timeout_ms``); ``added_ms`` the virtual
    times (ms) of the phase's ``member_added`` records; ``disturbed`` whether a removal
    happened in it."""

    start: k.GroupState
    added_ms: list[int] = field(default_factory=list)
    disturbed: bool = False

    @property
    def begun_ms(self) -> int:
        """When the phase began (virtual ms)."""
        return self.start.t_ms

    @property
    def delay_ms(self) -> int:
        """The phase's ``group.initial.rebalance.delay.ms`` (ms)."""
        delay = self.start.initial_rebalance_delay_ms
        return 0 if delay is UNSET else delay

    @property
    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout as the phase began (ms)."""
        timeout = self.start.rebalance_timeout_ms
        return 0 if timeout is UNSET else timeout


class EmptyJoinPhases:
    """Each group's open join phase begun from Empty, fed the records of a log in order with
    :meth:`see` (typed records, :data:`scenarios.eventlog.records.LogRecord`; only
    :data:`PHASE_KINDS` matter). A phase ends with the group's ``generation`` or its
    ``group_state`` leaving PreparingRebalance; a reload (``group_loaded``) drops it unjudged.
    Groups are keyed by :func:`group_of`."""

    def __init__(self) -> None:
        self._open: dict[str | None, EmptyJoinPhase] = {}
        self._removed_ms: dict[str | None, int] = {}  # group -> time of its latest removal

    def see(self, r: LogRecord) -> EmptyJoinPhase | None:
        """Take in one record; the phase it ends, if it ends one other than by the group
        going Dead (an unload: not judged) and the phase saw no reload, else ``None``."""
        match r:
            case k.MemberAdded():
                phase = self._open.get(group_of(r))
                if phase is not None:
                    phase.added_ms.append(r.t_ms)
            case k.MemberRemoved() | kg.MemberPendingRemoved():
                group = group_of(r)
                self._removed_ms[group] = r.t_ms
                phase = self._open.get(group)
                if phase is not None:
                    phase.disturbed = True
            case k.GroupLoaded():
                self._open.pop(group_of(r), None)
            case k.Generation():
                return self._end(group_of(r), dead=False)
            case k.GroupState():
                group = group_of(r)
                ended = (
                    self._end(group, dead=r.to == "Dead")
                    if r.from_ == "PreparingRebalance"
                    else None
                )
                if (
                    r.to == "PreparingRebalance"
                    and r.from_ == "Empty"
                    and r.initial_rebalance_delay_ms is not UNSET
                ):
                    self._open[group] = EmptyJoinPhase(r)
                return ended
        return None

    def _end(self, group: str | None, *, dead: bool) -> EmptyJoinPhase | None:
        phase = self._open.pop(group, None)
        return None if dead else phase

    def removed_at(self, group: str | None, t_ms: int) -> bool:
        """Whether ``group``'s latest removal so far happened at ``t_ms`` (virtual ms)."""
        return self._removed_ms.get(group) == t_ms
