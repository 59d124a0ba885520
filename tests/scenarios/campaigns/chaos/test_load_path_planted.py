"""The failover load-path bugs of the planted catalogue (planted/load_path.py) patch
``GroupCoordinator.load`` as a classmethod and put it back; their detection needs the Kafka
referee (tests/kafka_oracle/test_referee_planted.py, test_coordinator_referee_failover.py)."""

from __future__ import annotations

import pytest

from coordinator.group import GroupCoordinator

from .planted import by_name


@pytest.mark.parametrize(
    "name", ["coordinator-load-arms-no-session-timers", "coordinator-load-forgets-instance-ids"]
)
def test_a_load_path_bug_is_referee_only_and_patched_out_afterwards(name: str) -> None:
    bug = by_name(name)
    assert bug.referee_only and bug.kind == "consumer"
    original = GroupCoordinator.__dict__["load"]
    with bug.applied():
        patched = GroupCoordinator.__dict__["load"]
        assert isinstance(patched, classmethod) and patched is not original
    assert GroupCoordinator.__dict__["load"] is original
