"""The broker-side classic group coordinator as a pure (sans-IO) state machine.

:class:`GroupCoordinator` follows Kafka's ``GroupMetadataManager``/``ClassicGroup``;
:mod:`coordinator.state` holds ``ClassicGroupState`` and its transition table;
:mod:`coordinator.config` the broker settings. Nothing here imports trio.
"""

from .config import CoordinatorConfig
from .group import GroupCoordinator, MemberView
from .state import VALID_PREVIOUS_STATES, GroupState, IllegalStateTransition

__all__ = [
    "CoordinatorConfig",
    "GroupCoordinator",
    "GroupState",
    "IllegalStateTransition",
    "MemberView",
    "VALID_PREVIOUS_STATES",
]
