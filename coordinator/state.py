"""The five states of a classic group and Kafka's table of legal transitions.

Kafka: ``ClassicGroupState.java`` (its static block fills ``validPreviousStates``) and
``ClassicGroup#transitionTo``, which asserts every move against that table.
"""

from __future__ import annotations

import enum

__all__ = [
    "GroupState",
    "EMPTY",
    "PREPARING",
    "COMPLETING",
    "STABLE",
    "DEAD",
    "VALID_PREVIOUS_STATES",
    "IllegalStateTransition",
    "check_transition",
]


class GroupState(enum.Enum):
    """A classic group's state; the value is Kafka's wire/describe name (``ClassicGroupState``)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


#: The states as module globals, for the coordinator's handlers (``join``, ``sync``,
#: ``session``, ``rebalance``): ``state is STABLE`` is a global lookup where
#: ``state is GroupState.STABLE`` adds an attribute lookup on every request.
EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

_S = GroupState

#: For each target state, the states it may be entered from (``ClassicGroupState``).
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset(
        {_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}
    ),
}


class IllegalStateTransition(Exception):
    """A transition outside :data:`VALID_PREVIOUS_STATES` (Kafka's ``IllegalStateException``)."""

    def __init__(self, group_id: str, source: GroupState, target: GroupState) -> None:
        super().__init__(
            f"group {group_id!r}: illegal transition {source.value} -> {target.value} "
            f"(legal previous states of {target.value}: "
            f"{sorted(s.value for s in VALID_PREVIOUS_STATES[target])})"
        )
        self.group_id = group_id
        self.source = source
        self.target = target


def check_transition(group_id: str, source: GroupState, target: GroupState) -> None:
    """Raise :class:`IllegalStateTransition` unless ``source -> target`` is in Kafka's table."""
    if source not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(group_id, source, target)
