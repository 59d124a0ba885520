"""The ``[coordinator]`` settings' planted bugs
(tests/scenarios/campaigns/chaos/planted/coordinator_config.py): each found in chaos by the
checker of the rule it breaks (scenarios/check/coordinator_config_contracts.py), within a
budget a few runs above the run that found it on seed 1 (docs/chaos.md "Planted bugs")."""

from __future__ import annotations

import pytest

from .planted import by_name, detect


@pytest.mark.parametrize(
    ("name", "budget", "invariant"),
    [
        # a Connect group whose group.max.size is at or below its worker count (run 4)
        ("coordinator-max-size-off-by-one", 10, "max_size_exceeded"),
        # a consumer group with a group.max.size below its member count (run 18)
        ("coordinator-max-size-never-enforced", 25, "max_size_exceeded"),
        # a Connect group whose session bounds are its workers' 10 s exactly (run 0)
        ("coordinator-session-bounds-exclusive", 5, "session_timeout_refused"),
        # a Streams client whose session.timeout.ms the generator raised above the maximum
        # (run 21)
        ("coordinator-session-bounds-unchecked", 30, "session_timeout_accepted"),
        # members arriving during the first join phase's delay at the start of a run (run 1)
        ("coordinator-initial-delay-not-extended", 5, "initial_delay_not_extended"),
    ],
)
def test_chaos_finds_a_coordinator_settings_bug_by_its_rule(
    name: str, budget: int, invariant: str
) -> None:
    found = detect(by_name(name), budget)
    assert found.found_at is not None, f"{name} not found in {budget} runs"
    assert invariant in found.new, found
