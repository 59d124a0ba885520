"""``new_work_not_least_loaded`` (scenarios/check/connect_contracts.py): KIP-415's
``assignConnectors`` / ``assignTasks`` water fill new work over the workers sorted by their
load after the round's revocations (and the lost work dealt to candidates), so a worker given
new connectors (tasks) ends with at most one more of that kind than the least loaded worker.

Hand-written ``assignor`` records: each member's held work is encoded as Kafka's JoinGroup
metadata (``IncrementalCooperativeConnectProtocol`` v2), as the leader logs it in ``inputs``."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from protocol.connect import ConnectAssignment, ConnectorTaskId, WorkerSubscription
from protocol.connect_codec import encode_subscription
from scenarios.check import connect_contracts
from scenarios.check.log_check import check_records
from scenarios.input.library import load_any
from scenarios.sim.runner import simulate
from tests.scenarios.campaigns.chaos.planted import by_name

from .logs import over_dicts, violation_names

check_new_work = over_dicts(connect_contracts.check_new_work_least_loaded)

Record = dict[str, Any]
_NAME = "new_work_not_least_loaded"


def _metadata(worker: str, tasks: Sequence[str], connectors: Sequence[str] = ()) -> str:
    """Base64 v2 JoinGroup metadata of a worker holding ``connectors`` and ``tasks``."""
    allocation = ConnectAssignment(
        version=2,
        error=0,
        leader="w1",
        leader_url="http://w1:8083",
        config_offset=1,
        connectors=tuple(connectors),
        tasks=tuple(ConnectorTaskId.parse(t) for t in tasks),
    )
    sub = WorkerSubscription(
        version=2, url=f"http://{worker}:8083", config_offset=1, allocation=allocation
    )
    return base64.b64encode(encode_subscription(sub)).decode()


def _work(tasks: Sequence[str] = (), connectors: Sequence[str] = ()) -> Record:
    return {"connectors": list(connectors), "tasks": list(tasks)}


def _round(held: dict[str, list[str]], assigned: dict[str, list[str]], **extra: Any) -> Record:
    """An incremental ``assignor`` record: ``held`` the tasks each member joined with,
    ``assigned`` the tasks it is given (``revoked``, ``lost``, ``candidates`` in ``extra``)."""
    return {
        "t_ms": 0,
        "seq": 0,
        "kind": "assignor",
        "member": "w1",
        "generation": 3,
        "protocol": "sessioned",
        "assignor": "incremental_cooperative",
        "error": 0,
        "delay_ms": 0,
        "config_offset": 1,
        "assigned": {m: _work(ts) for m, ts in assigned.items()},
        "revoked": {},
        "inputs": {
            "leader_id": "w1",
            "members": [[m, _metadata(m, ts)] for m, ts in held.items()],
            "snapshot": {"offset": 1, "connectors": {"c": 9}},
            "last_completed_generation": 2,
            "max_delay_ms": 300_000,
        },
        **extra,
    }


def test_new_tasks_on_the_least_loaded_workers_keep_the_rule() -> None:
    # w3 holds none: both new tasks go to it (1 + 1 = 2 ≤ min 2 + 1)
    r = _round({"w1": ["c-0", "c-1"], "w2": ["c-2", "c-3"], "w3": []}, {"w3": ["c-4", "c-5"]})
    assert check_new_work([r]) == []
    # three new tasks: one each to the empty ones, then the level rises to everyone
    r = _round({"w1": ["c-0"], "w2": [], "w3": []}, {"w2": ["c-1", "c-3"], "w3": ["c-2"]})
    assert check_new_work([r]) == []


def test_a_new_task_on_a_worker_two_above_the_least_loaded_is_reported() -> None:
    r = _round({"w1": ["c-0", "c-1"], "w2": ["c-2"], "w3": []}, {"w1": ["c-3"]})
    found = check_new_work([r])
    assert violation_names(found) == [_NAME]
    assert found[0].member == "w1"
    assert _NAME in violation_names(check_records([r]))
    # the level never rising: the two empty workers take all six new tasks, ending at 3
    # while w1 still holds 1 (Kafka: 2, 2, 3 or 3, 2, 2)
    r = _round(
        {"w1": ["c-0"], "w2": [], "w3": []},
        {"w2": ["c-1", "c-2", "c-3"], "w3": ["c-4", "c-5", "c-6"]},
    )
    assert violation_names(check_new_work([r])) == [_NAME, _NAME]


def test_revocations_lower_the_load_the_fill_starts_from() -> None:
    # w1 revokes two of its three tasks (load balancing) and so is the least loaded: a new
    # task on w2 (ending at 3) is two above w1's 1
    held = {"w1": ["c-0", "c-1", "c-2"], "w2": ["c-3", "c-4"]}
    r = _round(held, {"w2": ["c-5"]}, revoked={"w1": _work(["c-0", "c-1"])})
    assert violation_names(check_new_work([r])) == [_NAME]
    r = _round(held, {"w1": ["c-5"]}, revoked={"w1": _work(["c-0", "c-1"])})
    assert check_new_work([r]) == []


def test_empty_and_unjudged_rounds() -> None:
    # every worker empty, new work dealt round robin; a round with nothing new; an eager or
    # failed round; a static (KIP-987) round: none is judged or breaks the rule
    r = _round({"w1": [], "w2": []}, {"w1": ["c-0", "c-2"], "w2": ["c-1"]})
    assert check_new_work([r]) == []
    assert check_new_work([_round({"w1": ["c-0", "c-1", "c-2"], "w2": []}, {})]) == []
    bad = _round({"w1": ["c-0", "c-1"], "w2": []}, {"w1": ["c-2"]})
    assert violation_names(check_new_work([bad])) == [_NAME]
    for field, value in (("protocol", "eager"), ("protocol", "static"), ("error", 1)):
        assert check_new_work([{**bad, field: value}]) == []
    # a record without inputs (an older log) is not judged
    assert check_new_work([{k: v for k, v in bad.items() if k != "inputs"}]) == []


def test_lost_work_handed_to_a_present_candidate_is_not_new_work() -> None:
    # at the delay's expiry handleLostAssignments deals the lost tasks round robin to the
    # candidate workers before the fill, whatever their load: w1 may end far above w2
    held = {"w1": ["c-0", "c-1"], "w2": []}
    lost = {"connectors": [], "tasks": ["c-2", "c-3"]}
    r = _round(held, {"w1": ["c-2", "c-3"]}, lost=lost, candidates=["w1"])
    assert check_new_work([r]) == []
    # ... but its load counts for the fill: a created task given to w1 too is reported
    r = _round(held, {"w1": ["c-2", "c-3", "c-4"]}, lost=lost, candidates=["w1"])
    assert violation_names(check_new_work([r])) == [_NAME]
    # with no candidate in the round the lost work is assigned like new work
    r = _round(held, {"w1": ["c-2", "c-3"]}, lost=lost, candidates=["w9"])
    assert violation_names(check_new_work([r])) == [_NAME]
    r = _round(held, {"w2": ["c-2", "c-3"]}, lost=lost)
    assert check_new_work([r]) == []


def test_connectors_are_judged_by_their_own_count() -> None:
    r = _round({"w1": [], "w2": ["c-0", "c-1", "c-2"]}, {})
    r["inputs"]["members"] = [
        ["w1", _metadata("w1", [], ["a", "b"])],
        ["w2", _metadata("w2", ["c-0", "c-1", "c-2"])],
    ]
    # w2 holds three tasks but no connector: the new connector belongs on it
    r["assigned"] = {"w2": _work(connectors=["c"])}
    assert check_new_work([r]) == []
    r["assigned"] = {"w1": _work(connectors=["c"])}
    assert violation_names(check_new_work([r])) == [_NAME]


def test_library_runs_keep_the_rule_and_the_planted_bug_breaks_it() -> None:
    for name in ("scale-out", "worker-bounce-within-delay", "rolling-upgrade-eager-to-sessioned"):
        log = [r for r in simulate(load_any(name), 1).records if r["kind"] != "violation"]
        assert check_new_work(log) == []
    # the planted bug (the fill's level never rises) in the rolling upgrade: the eager
    # workers' rounds are not judged, the sessioned leader's fill is
    name = "rolling-upgrade-eager-to-sessioned"
    with by_name("cooperative-tasks-level-never-rises").applied():
        log = [r for r in simulate(load_any(name), 1).records if r["kind"] != "violation"]
    assert set(violation_names(check_new_work(log))) == {_NAME}
