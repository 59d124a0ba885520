"""The Streams assignment contract checkers (scenarios/check/assignment_contracts.py): each
reports its rule on a hand-built ``streams_assignment`` that breaks it, stays silent on the
same record obeying it or outside what the rule judges, and runs in ``groupsim check``."""

from __future__ import annotations

import copy
from typing import Any

from scenarios.check.assignment_contracts import (
    check_min_traffic_cost,
    check_standby_replicas,
    check_standby_tags,
    check_warmup_budget,
)
from scenarios.check.log_check import check_records
from scenarios.eventlog.records import decode_log

from .logs import violation_names

Record = dict[str, Any]


def _client(member_id: str, active: list[str], standby: list[str]) -> Record:
    return {
        "member_id": member_id,
        "active": active,
        "standby": standby,
        "warmups": [],
        "withheld": [],
    }


def _assignment(**contract: Any) -> Record:
    """Three clients, two stateful tasks, one standby each (num.standby.replicas 1)."""
    return {
        "t_ms": 0,
        "seq": 0,
        "kind": "streams_assignment",
        "member": "s1",
        "generation": 2,
        "version": 11,
        "commonly_supported_version": 11,
        "version_probing": False,
        "clients": {
            "PID_1": _client("m1", ["0_0"], ["0_1"]),
            "PID_2": _client("m2", ["0_1"], []),
            "PID_3": _client("m3", [], ["0_0"]),
        },
        "lags": {p: {"0_0": 0, "0_1": 0} for p in ("PID_1", "PID_2", "PID_3")},
        "acceptable_recovery_lag": 100,
        "probing_rebalance_needed": False,
        "active_movements": 0,
        "standby_movements": 0,
        "followup_for_revocation": False,
        **_bounds(**contract),
    }


def _bounds(
    max_warmup_replicas: int = 1,
    num_standby_replicas: int = 1,
    rack_aware_assignment_strategy: str = "none",
    kafka_warmups: dict[str, list[str]] | None = None,
    rack_aware_assignment_tags: list[str] | None = None,
    client_tags: dict[str, dict[str, str]] | None = None,
) -> Record:
    """The record's ``inputs`` (configs by Kafka's names, the clients' tags) and
    ``kafka_warmups``: what the checkers read the bounds from."""
    tags = client_tags or {}
    return {
        "inputs": {
            "config": {
                "max.warmup.replicas": max_warmup_replicas,
                "num.standby.replicas": num_standby_replicas,
                "rack.aware.assignment.strategy": rack_aware_assignment_strategy,
                "rack.aware.assignment.tags": list(rack_aware_assignment_tags or ()),
            },
            "clients": [
                {
                    "id": p,
                    "capacity": 1,
                    "rack": None,
                    "tags": tags.get(p, {}),
                    "prev_active": [],
                    "prev_standby": [],
                }
                for p in ("PID_1", "PID_2", "PID_3")
            ],
            "tasks": {
                "stateful": ["0_0", "0_1"],
                "stateless": [],
                "subtopologies": {},
                "task_source_partition_racks": {},
                "task_changelog_partition_racks": {},
            },
        },
        "kafka_warmups": kafka_warmups or {},
    }


def _names(found: list[Any]) -> list[str]:
    return violation_names(found)


def test_kip441_warmups_stay_within_max_warmup_replicas() -> None:
    ok = _assignment()
    assert check_warmup_budget(decode_log([ok])) == []
    # one warm-up from an active movement: within a budget of 1
    warm = _assignment(kafka_warmups={"PID_2": ["0_0"]})
    warm["clients"]["PID_2"]["standby"] = ["0_0"]
    assert check_warmup_budget(decode_log([warm])) == []
    # a standby movement kept a second copy of 0_1 as well: 2 > 1
    over = copy.deepcopy(warm)
    over["clients"]["PID_3"]["standby"] = ["0_0", "0_1"]
    assert _names(check_warmup_budget(decode_log([over]))) == ["warmups_over_budget"]
    over["inputs"]["config"]["max.warmup.replicas"] = 2
    assert check_warmup_budget(decode_log([over])) == []
    # a log without Kafka's warm-up map is not judged
    del over["kafka_warmups"]
    over["clients"]["PID_1"]["standby"] = ["0_1", "0_2"]
    assert check_warmup_budget(decode_log([over])) == []
    zero = _assignment(max_warmup_replicas=0, kafka_warmups={"PID_2": ["0_0"]})
    zero["clients"]["PID_2"]["standby"] = ["0_0"]
    assert "warmups_over_budget" in _names(check_records([zero]))


def test_kip441_every_stateful_task_has_its_standbys() -> None:
    assert check_standby_replicas(decode_log([_assignment()])) == []
    short = _assignment()
    short["clients"]["PID_3"]["standby"] = []
    found = check_standby_replicas(decode_log([short]))
    assert _names(found) == ["standby_replicas_missing"]
    assert found[0].tasks == ["0_0"]
    # a warm-up does not count as a standby
    warm_only = _assignment(kafka_warmups={"PID_3": ["0_0"]})
    assert _names(check_standby_replicas(decode_log([warm_only]))) == ["standby_replicas_missing"]
    # not enough clients: two standbys asked, only two other clients exist
    two = _assignment(num_standby_replicas=5)
    two["clients"]["PID_2"]["standby"] = ["0_0"]
    two["clients"]["PID_3"]["standby"] = ["0_0", "0_1"]
    assert check_standby_replicas(decode_log([two])) == []
    assert "standby_replicas_missing" in _names(check_records([short]))


def _tagged(zones: dict[str, str], **extra: Any) -> Record:
    return _assignment(
        rack_aware_assignment_tags=["zone"],
        client_tags={p: {"zone": z} for p, z in zones.items()},
        **extra,
    )


def test_kip708_standbys_spread_over_distinct_tag_values() -> None:
    # 0_0: active PID_1 (z1), standby PID_3 (z2); 0_1: active PID_2 (z2), standby PID_1 (z1)
    spread = _tagged({"PID_1": "z1", "PID_2": "z2", "PID_3": "z2"})
    assert check_standby_tags(decode_log([spread])) == []
    same = _tagged({"PID_1": "z1", "PID_2": "z2", "PID_3": "z1"})
    found = check_standby_tags(decode_log([same]))
    assert _names(found) == ["standby_tags_not_spread"]
    assert found[0].tasks == ["0_0"]
    assert "standby_tags_not_spread" in _names(check_records([same]))
    # one distinct value: nothing to spread over
    one_zone = _tagged(dict.fromkeys(("PID_1", "PID_2", "PID_3"), "z1"))
    assert check_standby_tags(decode_log([one_zone])) == []
    # what Kafka does not guarantee is not judged: movements, the rack-aware optimiser, a
    # client without the key, several keys
    unjudged: list[Record] = [
        {"active_movements": 1},
        {"standby_movements": 1},
        {"cost": {"before": 1, "after": 1}},
    ]
    for moved in unjudged:
        assert check_standby_tags(decode_log([{**same, **moved}])) == []
    lacking = copy.deepcopy(same)
    lacking["inputs"]["clients"][2]["tags"] = {}
    assert check_standby_tags(decode_log([lacking])) == []
    two_keys = copy.deepcopy(same)
    two_keys["inputs"]["config"]["rack.aware.assignment.tags"] = ["zone", "cluster"]
    assert check_standby_tags(decode_log([two_keys])) == []


def test_kip925_min_traffic_never_raises_the_cost() -> None:
    raised = _assignment(rack_aware_assignment_strategy="min_traffic")
    raised["cost"] = {"before": 100, "after": 102}
    assert _names(check_min_traffic_cost(decode_log([raised]))) == ["rack_cost_raised"]
    assert "rack_cost_raised" in _names(check_records([raised]))
    lowered = {**raised, "cost": {"before": 100, "after": 90}}
    assert check_min_traffic_cost(decode_log([lowered])) == []
    # balance_subtopology may raise it (its balance constraints): not judged
    balanced = copy.deepcopy(raised)
    balanced["inputs"]["config"]["rack.aware.assignment.strategy"] = "balance_subtopology"
    assert check_min_traffic_cost(decode_log([balanced])) == []
    unknown = {**raised, "cost": {"before": 100, "after": None}}
    assert check_min_traffic_cost(decode_log([unknown])) == []
