"""The Streams assignment contract checkers stay silent on groupsim's own assignor (the same
documents ``tests/kafka_oracle/test_assignment_contracts_oracle.py`` sends to Kafka), and the
KIP-708 rule reports the default standby assignor on clients with tags."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scenarios.assign.streams import StreamsAssignInputError, run_assign_streams
from tests.kafka_oracle.streams_inputs import high_availability_inputs
from tests.kafka_oracle.test_assignment_contracts_oracle import (
    one_tag_key_inputs,
    violations,
    zones_doc,
)

_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _answer(doc: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return run_assign_streams(copy.deepcopy(doc))
    except StreamsAssignInputError:
        return None


@_SETTINGS
@given(
    doc=st.one_of(
        high_availability_inputs(),
        one_tag_key_inputs("high_availability"),
        one_tag_key_inputs("client_tag_standby"),
    )
)
def test_groupsim_assignments_keep_the_rules(doc: dict[str, Any]) -> None:
    answer = _answer(doc)
    if answer is not None:
        assert violations(doc, answer) == []


def test_the_tag_rule_reports_standbys_beside_a_zone_twin() -> None:
    judged = zones_doc(tags=True)
    assert violations(judged, run_assign_streams(zones_doc(tags=True))) == []
    found = violations(judged, run_assign_streams(zones_doc(tags=False)))
    assert [v.invariant for v in found] == ["standby_tags_not_spread"]
    assert found[0].tasks == ["0_0", "0_1", "0_2", "0_3"]
