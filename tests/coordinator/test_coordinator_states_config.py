"""ClassicGroupState's transition table and CoordinatorConfig."""

from __future__ import annotations

import itertools

import pytest

from coordinator import (
    VALID_PREVIOUS_STATES,
    CoordinatorConfig,
    GroupCoordinator,
    GroupState,
    IllegalStateTransition,
)
from coordinator.state import check_transition
from protocol.connect import ConfigError
from protocol.effects import Log

S = GroupState
LEGAL = {
    (S.PREPARING_REBALANCE, S.EMPTY),
    (S.STABLE, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.STABLE, S.DEAD),
    (S.PREPARING_REBALANCE, S.DEAD),
    (S.COMPLETING_REBALANCE, S.DEAD),
    (S.EMPTY, S.DEAD),
    (S.DEAD, S.DEAD),
}


def test_wire_names() -> None:
    assert [s.value for s in S] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]


def test_table_is_kafkas() -> None:
    table = {(prev, target) for target, prevs in VALID_PREVIOUS_STATES.items() for prev in prevs}
    assert table == LEGAL


@pytest.mark.parametrize("source,target", sorted(itertools.product(S, S), key=str))
def test_every_edge(source: GroupState, target: GroupState) -> None:
    if (source, target) in LEGAL:
        check_transition("g", source, target)
    else:
        with pytest.raises(IllegalStateTransition, match=f"{source.value} -> {target.value}"):
            check_transition("g", source, target)


def test_coordinator_asserts_its_transitions() -> None:
    g = GroupCoordinator("g", CoordinatorConfig(), lambda c: c)
    effects: list = []
    with pytest.raises(IllegalStateTransition):
        g.group.transition(S.STABLE, 0, effects)
    assert g.state is S.EMPTY and effects == []
    g.group.transition(S.PREPARING_REBALANCE, 0, effects)
    # a join phase logs the group's rebalance timeout (no members: 0) and, from Empty, the
    # initial delay: what KIP-62's join-phase checkers bound it by
    assert effects == [
        Log(
            "group_state",
            {
                "from": "Empty",
                "to": "PreparingRebalance",
                "generation": 0,
                "rebalance_timeout_ms": 0,
                "initial_rebalance_delay_ms": 3_000,
            },
        )
    ]
    assert g.previous_state is S.EMPTY


def test_config_defaults_are_kafkas() -> None:
    c = CoordinatorConfig()
    assert (c.initial_rebalance_delay_ms, c.min_session_timeout_ms, c.max_session_timeout_ms) == (
        3000,
        6000,
        1_800_000,
    )
    assert (c.max_size, c.new_member_join_timeout_ms, c.protocol_tie_break) == (
        2**31 - 1,
        300_000,
        "java",
    )


def test_config_from_kafka_names() -> None:
    c = CoordinatorConfig.from_mapping(
        {
            "group.initial.rebalance.delay.ms": 0,
            "group.min.session.timeout.ms": 1000,
            "group.max.session.timeout.ms": 5000,
            "group.max.size": 7,
            "groupsim.protocol.tie.break": "first_listed",
        }
    )
    assert c == CoordinatorConfig(0, 1000, 5000, 7, 300_000, "first_listed")
    assert CoordinatorConfig.from_mapping({"max_size": 3}).max_size == 3


@pytest.mark.parametrize(
    "values,fragment",
    [
        ({"group.initial.rebalance.delay": 1}, "cluster.group.initial.rebalance.delay: unknown"),
        ({"group.max.size": -1}, "cluster.group.max.size: must be >= 0"),
        ({"group.max.size": 0}, "cluster.group.max.size: must be >= 1"),
        ({"group.max.size": "3"}, "cluster.group.max.size: expected an integer"),
        ({"group.max.size": True}, "cluster.group.max.size: expected an integer"),
        ({"group.max.size": 2**31}, "a Java int"),
        ({"groupsim.protocol.tie.break": "random"}, "tie.break: expected one of"),
        ({"group.min.session.timeout.ms": 10**7}, "cluster.group.min.session.timeout.ms"),
        ({"group.max.size": 2, "max_size": 3}, "given twice"),
    ],
)
def test_config_errors_name_the_key(values: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment.replace(".", r"\.")) as info:
        CoordinatorConfig.from_mapping(values, where="cluster")
    assert isinstance(info.value, ValueError)


def test_config_direct_construction_is_checked() -> None:
    with pytest.raises(ValueError, match="min_session_timeout_ms"):
        CoordinatorConfig(min_session_timeout_ms=10, max_session_timeout_ms=5)
