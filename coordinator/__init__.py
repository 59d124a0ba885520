"""The broker-side classic group coordinator as a pure (sans-IO) state machine.

:class:`GroupCoordinator` follows Kafka's ``GroupMetadataManager``/``ClassicGroup``;
:mod:`coordinator.state` holds ``ClassicGroupState`` and its transition table;
:mod:`coordinator.config` the broker settings; :mod:`coordinator.record` the group metadata
record that a coordinator taking the group over loads (:meth:`GroupCoordinator.load`).
Nothing here imports trio.
"""

from .config import CoordinatorConfig
from .group import DescribedGroup, DescribedMember, GroupCoordinator, MemberView
from .record import GroupRecord, GroupRecordMember
from .state import VALID_PREVIOUS_STATES, GroupState, IllegalStateTransition

__all__ = [
    "CoordinatorConfig",
    "DescribedGroup",
    "DescribedMember",
    "GroupCoordinator",
    "GroupRecord",
    "GroupRecordMember",
    "GroupState",
    "IllegalStateTransition",
    "MemberView",
    "VALID_PREVIOUS_STATES",
]
