"""Every ``"kind": "assignor"`` case of connect_cases.json, through a small interpreter of the
Java tests' harnesses (IncrementalCooperativeAssignorTest, WorkerCoordinatorIncrementalTest,
WorkerCoordinatorTest). The assertions are the Java tests' own, as data; keys prefixed
``derived`` are checked too (computed from the documented algorithm)."""

from __future__ import annotations

from collections import Counter

import pytest
from assignor_helpers import load_vectors

from members.assignors import (
    ConfigSnapshot,
    EagerAssignor,
    IncrementalCooperativeAssignor,
    WorkerLoad,
)
from protocol.connect import (
    CONFIG_MISMATCH,
    ConnectorTaskId,
    ConnectProtocol,
    WorkerSubscription,
)
from protocol.connect_codec import decode_assignment, encode_subscription

CASES = [c for c in load_vectors("connect_cases.json")["cases"] if c["kind"] == "assignor"]


def _case_id(case: dict) -> str:
    return case["source"].split("#", 1)[1]


def _t(items) -> list[tuple[str, int]]:
    return [(c, n) for c, n in items]


def _check_delay(expected, actual: int) -> None:
    if isinstance(expected, dict):
        assert actual > expected["gt"]
    else:
        assert actual == expected


# ------------------------------------------------------------- IncrementalCooperativeAssignorTest


class RebalanceHarness:
    """The test class's worker map, config and generation bookkeeping."""

    def __init__(self, case: dict) -> None:
        init = case["initial"]
        self.max_delay = case["config"]["scheduled.rebalance.max.delay.ms"]
        self.connectors = dict(init["connectors"])
        self.workers = {
            w: (list(v["connectors"]), _t(v["tasks"])) for w, v in init["workers"].items()
        }
        self.generation = init["generation"]
        self.assignor = IncrementalCooperativeAssignor(self.max_delay)
        self.assignor.previous_generation_id = init["previous_generation_id"]
        self.now = 0

    def op(self, op: dict) -> None:
        kind = op["op"]
        if kind == "add_worker":
            self.workers[op["worker"]] = (list(op["connectors"]), _t(op["tasks"]))
        elif kind == "remove_worker":
            del self.workers[op["worker"]]
        elif kind == "add_connector":
            self.connectors[op["connector"]] = op["tasks"]
        elif kind == "remove_connector":
            del self.connectors[op["connector"]]
        elif kind == "sleep":
            ms = op["ms"]
            expr = op.get("ms_expr")
            if expr is not None:
                delay = self.assignor.delay_ms
                ours = {"assignor.delay": delay, "assignor.delay / 2": delay // 2}[expr]
                assert ours == ms, f"derived sleep {expr}"
            self.now += ms
        elif kind == "reset_assignor":
            self.assignor = IncrementalCooperativeAssignor(self.max_delay)
        else:  # pragma: no cover - a new op in the vectors
            raise AssertionError(f"unknown op {kind}")

    def rebalance(self, mode: str):
        self.generation += 1
        last = self.generation - (2 if mode == "mismatched_generation" else 1)
        snap = ConfigSnapshot(0, dict(self.connectors))
        result = self.assignor.perform_task_assignment(
            snap, last, self.generation, dict(self.workers), self.now
        )
        if mode != "failed":
            for w in result.all_workers:
                conns, tasks = self.workers.get(w, ([], []))
                rc = set(result.newly_revoked_connectors.get(w, []))
                rt = set(result.newly_revoked_tasks.get(w, []))
                conns = [c for c in conns if c not in rc]
                conns += result.newly_assigned_connectors.get(w, [])
                tasks = [t for t in tasks if t not in rt]
                tasks += result.newly_assigned_tasks.get(w, [])
                self.workers[w] = (conns, tasks)
        return result

    def check(self, result, exp: dict) -> None:
        if "delay" in exp:
            _check_delay(exp["delay"], self.assignor.delay_ms)
        if "derived_delay_value" in exp:
            assert self.assignor.delay_ms == exp["derived_delay_value"]
        if "workers" in exp:
            assert sorted(result.all_workers) == sorted(exp["workers"])
        if "connector_counts" in exp:
            counts = sorted(len(c) for c, _ in self.workers.values())
            assert counts == exp["connector_counts"]
        if "task_counts" in exp:
            assert sorted(len(t) for _, t in self.workers.values()) == exp["task_counts"]
        if exp.get("no_revocations"):
            assert not result.has_revocations()
        if exp.get("empty_assignment"):
            assert result.is_empty_assignment()
        if exp.get("balanced_and_complete"):
            conn_counts = [len(c) for c, _ in self.workers.values()]
            task_counts = [len(t) for _, t in self.workers.values()]
            assert max(conn_counts) - min(conn_counts) <= 1
            assert max(task_counts) - min(task_counts) <= 1
            held_c = Counter(c for cs, _ in self.workers.values() for c in cs)
            held_t = Counter(t for _, ts in self.workers.values() for t in ts)
            assert set(held_c) == set(self.connectors) and max(held_c.values()) == 1
            configured = {(c, i) for c, n in self.connectors.items() for i in range(n)}
            assert set(held_t) == configured and max(held_t.values()) == 1


def _run_rebalance_case(case: dict) -> None:
    h = RebalanceHarness(case)
    for i, (step, exp) in enumerate(zip(case["steps"], case["expect"], strict=True)):
        assert step["event"] == "rebalance"
        for op in step["before"]:
            h.op(op)
        result = h.rebalance(step["mode"])
        try:
            h.check(result, exp)
        except AssertionError as exc:
            raise AssertionError(f"step {i + 1}: {exc}") from exc


# ------------------------------------------------------------------------------ unit cases


def _loads(spec: list[dict]) -> list[WorkerLoad]:
    return [WorkerLoad(w["worker"], w["connectors"], _t(w["tasks"])) for w in spec]


def _run_assign_units(case: dict) -> None:
    assignor = IncrementalCooperativeAssignor(300_000)
    loads: list[WorkerLoad] = []
    for step, exp in zip(case["steps"], case["expect"], strict=True):
        if step["event"] == "assignConnectors":
            loads = _loads(step["worker_loads_in_list_order"])
            assignor.assign_connectors(loads, step["new_connectors_in_order"])
        else:
            assignor.assign_tasks(loads, _t(step["new_tasks_in_order"]))
        if "exact_connectors_after" in exp:
            expected = exp["exact_connectors_after"]
            assert [w.worker for w in loads] == list(expected)
            assert {w.worker: w.connectors for w in loads} == expected
        if "every_worker_connector_count" in exp:
            assert {len(w.connectors) for w in loads} == {exp["every_worker_connector_count"]}
        if "every_worker_task_count" in exp:
            assert {len(w.tasks) for w in loads} == {exp["every_worker_task_count"]}


def _run_lost_units(case: dict) -> None:
    assignor = IncrementalCooperativeAssignor(case["config"]["scheduled.rebalance.max.delay.ms"])
    now = 0
    for i, (step, exp) in enumerate(zip(case["steps"], case["expect"], strict=True)):
        event = step["event"]
        if event == "set_previous_members":
            assignor.previous_members = list(step["members"])
            continue
        if event == "sleep":
            now += step["ms"]
            continue
        assert event == "handleLostAssignments"
        lost = step["lost"]
        to_c, to_t = assignor.handle_lost_assignments(
            lost["connectors"], _t(lost["tasks"]), _loads(step["workers"]), now
        )
        where = f"step {i + 1}"
        if "candidates" in exp:
            assert assignor.candidate_workers == exp["candidates"], where
        if "delay" in exp:
            assert assignor.delay_ms == exp["delay"], where
        if "scheduledRebalance" in exp:
            sched = exp["scheduledRebalance"]
            want = now + int(sched.split("+")[1]) if isinstance(sched, str) else sched
            assert assignor.scheduled_rebalance_ms == want, where
        if "lostAssignmentsToReassign_contains" in exp:
            want = exp["lostAssignmentsToReassign_contains"]
            assert set(want["connectors"]) <= set(to_c), where
            assert set(_t(want["tasks"])) <= set(to_t), where


# ------------------------------------------------------------------ WorkerCoordinator cases


def _run_incremental_leader(case: dict) -> None:
    proto = ConnectProtocol.from_setting(case["protocol"])
    cfg = case["config"]
    snap = ConfigSnapshot(cfg["config_offset"], cfg["connectors"])
    assignor = IncrementalCooperativeAssignor(cfg["scheduled.rebalance.max.delay.ms"])
    decoded: dict[str, object] = {}
    now = 0
    previous_members = None
    for i, (step, exp) in enumerate(zip(case["steps"], case["expect"], strict=True)):
        now += step.get("sleep_before_ms", 0)
        spec = step["members"]
        if isinstance(spec, str):  # "same as step N"
            spec = case["steps"][int(spec.rsplit(" ", 1)[1]) - 1]["members"]
            if isinstance(spec, str):
                spec = previous_members
        previous_members = spec
        members = []
        for m in spec:
            alloc = decoded[m["assignment_from"]] if m["assignment_from"] else None
            url = f"http://{m['id']}:8083"
            sub = WorkerSubscription(proto.version, url, cfg["config_offset"], alloc)
            members.append((m["id"], encode_subscription(sub)))
        res = assignor.perform_assignment(
            leader_id="worker1",
            protocol=proto,
            members=members,
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=-1,
            generation=-1,
            now_ms=now,
        )
        for w, want in exp.items():
            got = decode_assignment(res.assignments[w])
            assert got == res.decoded[w]
            decoded[f"step{i + 1}.{w}"] = got
            where = f"step {i + 1} {w}"
            assert got.version == proto.version, where
            assert got.leader == want["leader"] and got.leader_url == want["leaderUrl"], where
            assert got.config_offset == want["offset"] and got.error == want["error"], where
            assert list(got.connectors) == want["connectors_exact"], where
            assert len(got.tasks) == want["task_count"], where
            assert list(got.revoked_connectors) == want["revoked_connectors_exact"], where
            assert len(got.revoked_tasks) == want["revoked_task_count"], where
            assert got.delay_ms == want["delay"], where


def _run_eager_leader(case: dict) -> None:
    cfg = case["config"]
    snap = ConfigSnapshot(cfg["leader_config_offset"], cfg["connectors"])
    (step,) = case["steps"]
    (exp,) = case["expect"]
    res = EagerAssignor().perform_assignment(
        leader_id=step["leader"],
        protocol=ConnectProtocol.from_protocol_name(step["protocol_name"]),
        members=[(m["member_id"], bytes.fromhex(m["metadata_hex"])) for m in step["members"]],
        snapshot=snap,
        refresh_snapshot=lambda: snap,
        last_completed_generation=-1,
        generation=1,
        now_ms=0,
    )
    for member, hexdata in exp["derived_bytes_hex"].items():
        assert res.assignments[member].hex() == hexdata
    for member in ("leader", "member"):
        want = exp[member]
        got = decode_assignment(res.assignments[member])
        assert got == res.decoded[member]
        assert got.error == want["error"] and got.leader == want["leader"]
        assert got.config_offset == want["offset"]
        assert list(got.connectors) == want["connectors_exact"]
        assert [list(t) for t in got.tasks] == want["tasks_exact"]


def _run_cannot_assign(case: dict) -> None:
    """testJoinLeaderCannotAssign: what belongs to the assignor. The leader's snapshot (and a
    fresh read) is at offset 4 while the follower reports 9: CONFIG_MISMATCH at 9 for everyone,
    nothing assigned. Once the leader reads up to 9, the follower gets its real assignment.
    (The follower's immediate rejoin and its second config snapshot are member-side.)"""
    cfg = case["config"]
    follower = cfg["follower"]
    first = case["steps"][0]["sync_assignment"]
    second = case["steps"][1]["sync_assignment"]
    behind = ConfigSnapshot(cfg["first_snapshot_offset"], {"connector1": 1})
    caught_up = ConfigSnapshot(cfg["second_snapshot_offset"], {"connector1": 1})

    def metadata(member: str, offset: int) -> bytes:
        return encode_subscription(WorkerSubscription(0, f"{member}Url:8083", offset))

    members = [
        ("leader", metadata("leader", cfg["first_snapshot_offset"])),
        (follower, metadata(follower, cfg["second_snapshot_offset"])),
    ]
    assignor = EagerAssignor()
    res = assignor.perform_assignment(
        leader_id="leader",
        protocol=ConnectProtocol.EAGER,
        members=members,
        snapshot=behind,
        refresh_snapshot=lambda: behind,
    )
    got = decode_assignment(res.assignments[follower])
    assert got.error == first["error"] == CONFIG_MISMATCH
    assert got.leader == first["leader"] and got.config_offset == first["offset"]
    assert list(got.connectors) == first["connectors"] and list(got.tasks) == []
    assert res.error == CONFIG_MISMATCH and res.snapshot is None
    res = assignor.perform_assignment(
        leader_id="leader",
        protocol=ConnectProtocol.EAGER,
        members=members,
        snapshot=behind,
        refresh_snapshot=lambda: caught_up,
    )
    got = decode_assignment(res.assignments[follower])
    assert got.error == second["error"] and got.config_offset == second["offset"]
    assert list(got.tasks) == [ConnectorTaskId(c, n) for c, n in second["tasks"]]
    assert res.snapshot is caught_up


def _dispatch(case: dict) -> None:
    source = case["source"]
    first = case["steps"][0]["event"]
    if "testJoinLeaderCannotAssign" in source:
        _run_cannot_assign(case)
    elif first == "rebalance":
        _run_rebalance_case(case)
    elif first == "assignConnectors":
        _run_assign_units(case)
    elif first == "handleLostAssignments":
        _run_lost_units(case)
    elif first == "leader_assign" and source.startswith("WorkerCoordinatorIncrementalTest"):
        _run_incremental_leader(case)
    elif first == "leader_assign":
        _run_eager_leader(case)
    else:  # pragma: no cover
        raise AssertionError(f"no interpreter for {source}")


def test_every_assignor_case_is_covered() -> None:
    assert len(CASES) == 18


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_kafka_case(case: dict) -> None:
    _dispatch(case)
