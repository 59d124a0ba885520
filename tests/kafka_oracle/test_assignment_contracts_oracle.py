"""The Streams assignment contract checkers hold on Kafka's own assignments (no false
positives from the KIP-441/708/925 rules of ``scenarios/check/assignment_contracts.py``).

Each ``groupsim assign`` document goes to Kafka's classes through the oracle
(``GroupsimStreamsDriver``: ``HighAvailabilityTaskAssignor``,
``ClientTagAwareStandbyTaskAssignor``, ``RackAwareTaskAssignor``); Kafka's answer becomes a
``streams_assignment`` record with a ``contract`` object, and every assignment checker must
stay silent on it. Kafka's answer has no warm-up map, so the record's ``kafka_warmups`` is
empty: the warm-up budget is then judged on all standbys above ``min(n, C - 1)`` (the
active-movement warm-ups are among them, so the total is the same), the standby count
counts warm-ups as standbys (a weaker check), and movements are known only as
``probing_rebalance_needed`` (Kafka: true iff a movement was needed), which stands for both
movement counts. The same documents through groupsim's assignor run in the default suite
(``tests/scenarios/check/test_assignment_contracts_properties.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scenarios.check.assignment_contracts import ASSIGNMENT_CHECKERS, check_min_traffic_cost
from scenarios.check.log_rules import Violation
from scenarios.eventlog.records import LogRecord, decode_log
from tests.kafka_oracle.oracle import KafkaOracle, OracleError
from tests.kafka_oracle.streams_inputs import (
    TAG_VALUES,
    high_availability_inputs,
    rack_aware_inputs,
    standby_inputs,
)

pytestmark = pytest.mark.kafka

EXAMPLES = int(os.environ.get("GROUPSIM_ORACLE_EXAMPLES", "100"))  # ~1 min in the kafka suite


def record_of(doc: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """A leader's ``streams_assignment`` record for ``answer`` (``groupsim assign`` output
    shape) to document ``doc``."""
    moved = int(bool(answer.get("probing_rebalance_needed")))
    record: dict[str, Any] = {
        "t_ms": 0,
        "seq": 0,
        "kind": "streams_assignment",
        "member": "leader",
        "generation": 1,
        "version": 11,
        "commonly_supported_version": 11,
        "version_probing": False,
        "clients": {
            label: {
                "member_id": label,
                "active": c["active"],
                "standby": c["standby"],
                "warmups": [],
                "withheld": [],
            }
            for label, c in answer["clients"].items()
        },
        "lags": {c["id"]: dict(c.get("task_lags") or {}) for c in doc["clients"]},
        "probing_rebalance_needed": bool(answer.get("probing_rebalance_needed")),
        "active_movements": moved,
        "standby_movements": moved,
        "followup_for_revocation": False,
        # the bounds come from the document itself, as a leader logs its inputs (the
        # document without its assignor and lags: those are the record's own fields)
        "inputs": {
            "config": doc["config"],
            "clients": [
                {
                    "id": c["id"],
                    "capacity": c.get("capacity", 1),
                    "rack": c.get("rack"),
                    "tags": c.get("tags") or {},
                    "prev_active": c.get("prev_active") or [],
                    "prev_standby": c.get("prev_standby") or [],
                }
                for c in doc["clients"]
            ],
            # the topology without its partitions' racks, which no contract reads
            "tasks": {
                "stateful": doc["tasks"].get("stateful") or [],
                "stateless": doc["tasks"].get("stateless") or [],
                "subtopologies": doc["tasks"].get("subtopologies") or {},
                "task_source_partition_racks": {},
                "task_changelog_partition_racks": {},
            },
        },
        "kafka_warmups": {},
    }
    if answer.get("cost") is not None:
        record["cost"] = answer["cost"]
    return record


Checker = Callable[[Sequence[LogRecord]], list[Violation]]


def violations(
    doc: dict[str, Any], answer: dict[str, Any], checkers: Sequence[Checker] = ASSIGNMENT_CHECKERS
) -> list[Violation]:
    """What ``checkers`` report on the record of ``answer``."""
    record = record_of(doc, answer)
    typed = decode_log([record])
    return [v for checker in checkers for v in checker(typed)]


@st.composite
def one_tag_key_inputs(draw: st.DrawFn, assignor: str) -> dict[str, Any]:
    """A document the KIP-708 rule judges: one tag key that every client has, standbys
    asked, no rack-aware optimisation."""
    base = (
        high_availability_inputs() if assignor == "high_availability" else standby_inputs(assignor)
    )
    doc = draw(base)
    config = dict(doc["config"])
    config["rack.aware.assignment.tags"] = ["zone"]
    config["rack.aware.assignment.strategy"] = "none"
    config["num.standby.replicas"] = draw(st.integers(1, 3))
    doc["config"] = config
    doc["assignor"] = assignor
    for c in doc["clients"]:
        c["tags"] = {**(c.get("tags") or {}), "zone": draw(st.sampled_from(TAG_VALUES))}
    return doc


def _judge(
    oracle: KafkaOracle,
    doc: dict[str, Any],
    label: str,
    checkers: Sequence[Checker] = ASSIGNMENT_CHECKERS,
) -> None:
    try:
        answer = oracle.call("streams.assign", input=doc)
    except OracleError:
        # an input Kafka's classes refuse (e.g. the optimiser puts an active beside its own
        # drawn standby): no assignment to judge (test_streams_differential: groupsim too)
        oracle.compared[f"assignment contracts: {label} (Kafka rejects)"] += 1
        return
    found = violations(doc, answer, checkers)
    assert found == [], f"{found}\ninput: {doc}\nKafka: {answer}"
    oracle.compared[f"assignment contracts: {label}"] += 1


def _settings() -> settings:
    return settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@_settings()
@given(doc=one_tag_key_inputs("high_availability"))
def test_kafka_hata_with_one_tag_key(kafka_oracle: KafkaOracle, doc: dict[str, Any]) -> None:
    _judge(kafka_oracle, doc, "high_availability, one tag key")


@_settings()
@given(doc=one_tag_key_inputs("client_tag_standby"))
def test_kafka_tag_aware_standbys(kafka_oracle: KafkaOracle, doc: dict[str, Any]) -> None:
    _judge(kafka_oracle, doc, "client_tag_standby, one tag key")


@_settings()
@given(doc=high_availability_inputs())
def test_kafka_hata_any_config(kafka_oracle: KafkaOracle, doc: dict[str, Any]) -> None:
    _judge(kafka_oracle, doc, "high_availability")


@_settings()
@given(doc=st.sampled_from(["active_tasks", "standby_tasks"]).flatmap(rack_aware_inputs))
def test_kafka_rack_aware_min_traffic(kafka_oracle: KafkaOracle, doc: dict[str, Any]) -> None:
    # the standbys of these documents are drawn, not placed by Kafka: only the cost is judged
    doc["config"] = {**doc["config"], "rack.aware.assignment.strategy": "min_traffic"}
    _judge(kafka_oracle, doc, "rack_aware min_traffic", (check_min_traffic_cost,))


def zones_doc(tags: bool) -> dict[str, Any]:
    """Four single-thread clients in zones a, a, b, b, four stateful tasks nobody has state
    for, one standby each; ``tags``: with ``rack.aware.assignment.tags = ["zone"]``."""
    tasks = ["0_0", "0_1", "0_2", "0_3"]
    config: dict[str, Any] = {
        "num.standby.replicas": 1,
        "max.warmup.replicas": 2,
        "acceptable.recovery.lag": 100,
    }
    if tags:
        config["rack.aware.assignment.tags"] = ["zone"]
    clients = [
        {
            "id": f"PID_{i}",
            "capacity": 1,
            "tags": {"zone": zone},
            "task_lags": dict.fromkeys(tasks, -3),
            "prev_active": [],
            "prev_standby": [],
        }
        for i, zone in zip(range(1, 5), "aabb", strict=True)
    ]
    return {
        "assignor": "high_availability",
        "config": config,
        "clients": clients,
        "tasks": {"stateful": tasks, "stateless": [], "subtopologies": {"0": tasks}},
    }


def test_the_tag_rule_is_not_vacuous_on_kafka(kafka_oracle: KafkaOracle) -> None:
    # Kafka's tag-aware assignor spreads the standbys over both zones; its default one (no
    # tags configured) puts each beside its active's zone twin, which the rule reports
    judged = zones_doc(tags=True)
    assert violations(judged, kafka_oracle.call("streams.assign", input=judged)) == []
    untagged = kafka_oracle.call("streams.assign", input=zones_doc(tags=False))
    found = violations(judged, untagged)
    assert {v.invariant for v in found} == {"standby_tags_not_spread"}
    kafka_oracle.compared["assignment contracts: tag rule reports Kafka's default assignor"] += 1
