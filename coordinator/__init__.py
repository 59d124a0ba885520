"""The broker-side classic group coordinator as a pure (sans-IO) state machine.

:class:`GroupCoordinator` (:mod:`coordinator.group`) follows Kafka's
``GroupMetadataManager``/``ClassicGroup``: it is the public face over the group's state and
member table (:mod:`coordinator.classic_group`) and one module per job, plain functions over
that state: :mod:`coordinator.join` (JoinGroup, KIP-345 static members),
:mod:`coordinator.sync` (SyncGroup), :mod:`coordinator.session` (Heartbeat, LeaveGroup,
session timers), :mod:`coordinator.rebalance` (join phases and generations),
:mod:`coordinator.vote` (the protocol vote) and :mod:`coordinator.views` (read-only snapshots);
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
