"""Inputs where Kafka's real Java classes once disagreed with groupsim (issue 11), reproduced.

``tests/vectors/fidelity_examples.json`` holds the ``groupsim assign`` input and what Kafka's
classes (commit 1eb7644349cb, JDK 17) produced for it:

* ``connect_hashmap_resize`` — ten worker ids in one bucket of a 16-slot ``HashMap``: the ninth
  put doubles the table (resize instead of treeify), which decides which worker's task is
  revoked when a new worker joins.
* ``streams_ha_priority_queue`` — Kafka Streams' ``ConstrainedPrioritySet`` keeps a stale
  ``PriorityQueue`` while loads change, which decides standby placement.

Plus Kafka's ``testTaskAssignmentWhenLeaderLeavesPermanently``: a worker leading for the first
time runs its own, clean assignor.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from scenarios.assign.connect import run_assign
from scenarios.assign.streams import run_assign_streams

_EXAMPLES = json.loads(
    (Path(__file__).parents[2] / "vectors" / "fidelity_examples.json").read_text()
)


def test_connect_hashmap_resize_matches_kafka_member_for_member() -> None:
    case = _EXAMPLES["connect_hashmap_resize"]
    out = run_assign(copy.deepcopy(case["input"]))
    want = case["kafka_output"]["rounds"]
    assert len(out["rounds"]) == len(want)
    for got_round, want_round in zip(out["rounds"], want, strict=True):
        assert got_round["members"] == want_round["members"]
    # the point of the example: nodej9 (not the first worker) gives up conn-8
    revoked = {m: v["revoked_tasks"] for m, v in out["rounds"][1]["members"].items()}
    assert {m: r for m, r in revoked.items() if r} == {"nodej9": ["conn-8"]}


def test_streams_priority_queue_matches_kafka_client_for_client() -> None:
    case = _EXAMPLES["streams_ha_priority_queue"]
    out = run_assign_streams(copy.deepcopy(case["input"]))
    want = case["kafka_output"]
    assert out["probing_rebalance_needed"] == want["probing_rebalance_needed"]
    assert out["clients"] == want["clients"]


def _held(round_out: dict[str, Any], before: dict[str, dict[str, list[str]]]) -> dict:
    """Each member's allocation after applying one round's incremental assignment."""
    after = {}
    for m, a in round_out["members"].items():
        prev = before.get(m, {"connectors": [], "tasks": []})
        conns = [c for c in prev["connectors"] if c not in a["revoked_connectors"]]
        tasks = [t for t in prev["tasks"] if t not in a["revoked_tasks"]]
        after[m] = {"connectors": conns + a["connectors"], "tasks": tasks + a["tasks"]}
    return after


def test_new_leader_starts_with_a_clean_assignor() -> None:
    # Kafka IncrementalCooperativeAssignorTest.testTaskAssignmentWhenLeaderLeavesPermanently
    connectors = {"connector1": 4, "connector2": 4}
    doc: dict[str, Any] = {
        "assignor": "incremental_cooperative",
        "rounds": [
            {
                "time_ms": 0,
                "generation": 1001,
                "leader": "worker1",
                "connectors": connectors,
                "members": {"worker1": {}, "worker2": {}, "worker3": {}},
            }
        ],
    }
    first = run_assign(copy.deepcopy(doc))["rounds"][0]
    held = _held(first, {})
    assert sorted(len(v["connectors"]) for v in held.values()) == [0, 1, 1]
    assert sorted(len(v["tasks"]) for v in held.values()) == [2, 3, 3]

    # worker1, the leader, leaves for good; worker2 leads with its own (empty) assignor
    survivors = {m: held[m] for m in ("worker2", "worker3")}
    doc["rounds"].append(
        {"time_ms": 1000, "leader": "worker2", "connectors": connectors, "members": survivors}
    )
    second = run_assign(copy.deepcopy(doc))["rounds"][1]
    assert {v["delay_ms"] for v in second["members"].values()} == {0}
    held2 = _held(second, survivors)
    assert sorted(len(v["connectors"]) for v in held2.values()) == [1, 1]
    assert sorted(len(v["tasks"]) for v in held2.values()) == [4, 4]

    doc["rounds"].append(
        {"time_ms": 2000, "leader": "worker2", "connectors": connectors, "members": held2}
    )
    third = run_assign(copy.deepcopy(doc))["rounds"][2]
    for a in third["members"].values():
        assert a["delay_ms"] == 0
        assert a["connectors"] == a["tasks"] == []
        assert a["revoked_connectors"] == a["revoked_tasks"] == []


def test_a_leader_that_leads_again_resumes_its_own_state() -> None:
    # worker1 leads generation 1; worker2 leads generation 2, which never completes; worker1
    # leads generation 3 (last completed: 1). worker1's own assignor still holds generation 1's
    # assignment, so worker3's absence is lost work and a delay starts. (A fresh assignor would
    # see nothing lost; one assignor shared with worker2 would have reset on the generation.)
    connectors = {"c": 6}
    rounds: list[dict[str, Any]] = [
        {
            "time_ms": 0,
            "generation": 1,
            "leader": "worker1",
            "connectors": connectors,
            "members": {"worker1": {}, "worker2": {}, "worker3": {}},
        },
    ]
    doc: dict[str, Any] = {"assignor": "incremental_cooperative", "rounds": rounds}
    held = _held(run_assign(copy.deepcopy(doc))["rounds"][0], {})
    rounds.append(
        {
            "time_ms": 10,
            "generation": 2,
            "leader": "worker2",
            "connectors": connectors,
            "members": held,
        }
    )
    rounds.append(
        {
            "time_ms": 20,
            "generation": 3,
            "last_completed_generation": 1,
            "leader": "worker1",
            "connectors": connectors,
            "members": {m: held[m] for m in ("worker1", "worker2")},
        }
    )
    out = run_assign(copy.deepcopy(doc))["rounds"]
    assert {v["delay_ms"] for v in out[1]["members"].values()} == {0}
    assert {v["delay_ms"] for v in out[2]["members"].values()} == {300000}
