"""Unit tests of the Streams data model, Kafka orderings and the ``groupsim assign`` input
checks for Streams assignors."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from members.assignors.streams import (
    JAVA_LONG_MAX,
    AssignmentConfigs,
    ClientState,
    ProcessId,
    StreamsAssignmentError,
    TaskId,
    WarmupBudget,
    assign_high_availability,
    caught_up_clients,
    clients_by_lag,
)
from members.assignors.streams._queues import ConstrainedPrioritySet, JavaPriorityQueue
from members.assignors.streams.model import task_id_java_hash
from scenarios.assign.streams import StreamsAssignInputError, run_assign_streams


def test_process_id_order_is_java_uuid_order() -> None:
    neg = ProcessId.of("80000000-0000-0000-0000-000000000000")  # msb negative as a long
    one = ProcessId.of("00000000-0000-0000-0000-000000000001")
    lsb_neg = ProcessId.of("00000000-0000-0000-8000-000000000000")
    assert sorted([one, lsb_neg, neg]) == [neg, lsb_neg, one]
    assert ProcessId.of("PID_1") == one and hash(ProcessId.of("PID_1")) == hash(one)
    assert sorted(ProcessId.of(f"PID_{n}") for n in (10, 2, 1)) == [
        ProcessId.of("PID_1"),
        ProcessId.of("PID_2"),
        ProcessId.of("PID_10"),
    ]


def test_labels_sort_after_uuids_in_java_string_order() -> None:
    emoji, halfwidth = ProcessId.of("\U0001f600"), ProcessId.of("\uff61")
    assert emoji < halfwidth  # UTF-16: the surrogate 0xD83D sorts before 0xFF61
    assert ProcessId.of("PID_99") < ProcessId.of("A")


def test_task_id_parse_order_and_java_hash() -> None:
    assert TaskId.parse("10_0") > TaskId.parse("2_5")
    assert str(TaskId.parse("3_14")) == "3_14"
    assert task_id_java_hash(TaskId(0, 0)) == 29791  # Objects.hash(0, 0, null)
    assert task_id_java_hash(TaskId(1, 2)) == 30814
    for bad in ("0-1", "01_1", "a_1", "1_", "_1", "2147483648_0"):
        with pytest.raises(StreamsAssignmentError):
            TaskId.parse(bad)


def test_client_never_holds_a_task_twice() -> None:
    c = ClientState(ProcessId.of("PID_1"), 2)
    c.assign_active(TaskId(0, 0))
    with pytest.raises(StreamsAssignmentError):
        c.assign_standby(TaskId(0, 0))
    with pytest.raises(StreamsAssignmentError):
        c.assign_active(TaskId(0, 0))
    c.assign_standby(TaskId(0, 1))
    assert c.assigned_task_count == 2 and c.assigned_task_load == 1.0 and c.active_task_load == 0.5


def test_lag_semantics_caught_up_and_order() -> None:
    t = TaskId(0, 0)
    lags = {"PID_1": -3, "PID_2": -2, "PID_3": 0, "PID_4": 100, "PID_5": 101}
    clients = {
        ProcessId.of(p): ClientState(ProcessId.of(p), lags={t: lag}) for p, lag in lags.items()
    }
    caught = caught_up_clients(clients, [t], 100)[t]
    assert {p.label for p in caught} == {"PID_2", "PID_3", "PID_4"}
    assert len(caught_up_clients(clients, [t], JAVA_LONG_MAX)[t]) == 5
    order = [p.label for p in clients_by_lag(clients, [t])[t]]
    assert order == ["PID_1", "PID_2", "PID_3", "PID_4", "PID_5"]  # -3 before -2


def test_missing_lag_is_an_error() -> None:
    p = ProcessId.of("PID_1")
    clients = {p: ClientState(p, lags={})}
    with pytest.raises(StreamsAssignmentError, match="no lag for stateful task 0_0"):
        assign_high_availability(clients, [TaskId(0, 0)], [], AssignmentConfigs())


def test_warmup_budget_keeps_decrementing() -> None:
    b = WarmupBudget(1)
    assert [b.take(), b.take(), b.take()] == [True, False, False]
    assert b.remaining == -2


def test_java_priority_queue_tie_order() -> None:
    q: JavaPriorityQueue[str] = JavaPriorityQueue(lambda s: s[0])
    for item in ("1a", "1b", "1c"):
        q.offer(item)
    assert [q.poll(), q.poll(), q.poll(), q.poll()] == ["1a", "1c", "1b", None]


def test_constrained_set_keeps_a_stale_heap_like_kafka() -> None:
    # Kafka's comparator reads live loads: a client whose load drops while it sits below the
    # root is not moved up, so poll returns the root even though another client is lighter.
    a, b, c = (ProcessId.of(f"PID_{i}") for i in (1, 2, 3))
    load = {a: 0.0, b: 1.0, c: 2.0}
    s = ConstrainedPrioritySet(lambda _c, _t: True, load.__getitem__)
    s.offer_all([a, b, c])
    assert s.heap() == [a, b, c]
    load[c] = -1.0  # c is now the lightest, but stays in its slot
    assert s.poll(TaskId(0, 0)) == a
    assert s.poll(TaskId(0, 0)) == c  # siftDown of c from the last slot puts it at the root
    assert s.poll(TaskId(0, 0)) == b
    assert s.poll(TaskId(0, 0)) is None


# --- groupsim assign input ------------------------------------------------------------------
BASE: dict[str, Any] = {
    "assignor": "high_availability",
    "config": {"num.standby.replicas": 1},
    "clients": [
        {"id": "PID_1", "capacity": 1, "task_lags": {"0_0": 0, "0_1": -2}},
        {"id": "PID_2", "capacity": 2, "task_lags": {"0_0": 5, "0_1": 0}},
    ],
    "tasks": {"stateful": ["0_0", "0_1"], "stateless": ["1_0"]},
}


def _mutate(path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


BAD = [
    (["extra"], 1, "extra: unknown key"),
    (["assignor"], "sticky", "assignor: unknown Streams assignor"),
    (["assignor"], KeyError, "assignor: missing"),
    (["optimize"], "active_tasks", "optimize: only the rack_aware"),
    (["config", "max.warmup.replicas"], 0, "config.max.warmup.replicas: must be >= 1"),
    (["config", "probing.rebalance.interval.ms"], 59_999, "config.probing.rebalance"),
    (["config", "acceptable.recovery.lag"], -1, "config.acceptable.recovery.lag: must be >= 0"),
    (
        ["config", "rack.aware.assignment.strategy"],
        "fastest",
        "config.rack.aware.assignment.strategy",
    ),
    (["config", "rack.aware.assignment.tags"], list("abcdef"), "config.rack.aware.assignment.tags"),
    (["config", "bogus"], 1, "config.bogus: unknown key"),
    (["clients"], [], "clients: must hold at least one client"),
    (["clients", 1, "id"], "00000000-0000-0000-0000-000000000001", "clients[1].id: "),
    (["clients", 0, "capacity"], 0, "clients[0].capacity: must be >= 1"),
    (["clients", 0, "tags"], {f"k{i}": "v" for i in range(6)}, "clients[0].tags: at most 5"),
    (["clients", 0, "tags"], {"k" * 21: "v"}, "clients[0].tags: client tag key"),
    (["clients", 0, "tags"], {"zone": "v" * 31}, "clients[0].tags: client tag value"),
    (["clients", 0, "task_lags", "1_0"], 0, "clients[0].task_lags.1_0: 1_0 is not a stateful"),
    (["clients", 0, "task_lags", "0_0"], -1, "clients[0].task_lags.0_0: a lag is"),
    (["clients", 1, "task_lags"], {"0_0": 1}, "clients[1].task_lags: missing lag for stateful"),
    (["clients", 0, "current_active"], ["0_0"], "clients[0].current_active: high_availability"),
    (
        ["clients", 0, "prev_active"],
        ["0_0", "0_0"],
        "clients[0].prev_active[1]: task 0_0 is listed",
    ),
    (["clients", 0, "prev_active"], ["x"], "clients[0].prev_active[0]: bad task id"),
    (["tasks", "stateless"], ["0_0"], "tasks.stateless[0]: task 0_0 is also listed as stateful"),
    (["tasks", "subtopologies"], {"0": ["1_0"]}, "tasks.subtopologies.0[0]: task 1_0 belongs"),
    (["tasks", "subtopologies"], {"0": ["0_7"]}, "tasks.subtopologies.0[0]: 0_7 is not a task"),
    (["tasks", "task_changelog_partition_racks"], {"1_0": ["r"]}, "tasks.task_changelog"),
    (["tasks"], KeyError, "tasks: missing"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD, ids=[m for *_, m in BAD])
def test_bad_input_names_the_key_path(path: list[Any], value: Any, message: str) -> None:
    with pytest.raises(StreamsAssignInputError) as info:
        run_assign_streams(_mutate(path, value))
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)


def test_rack_aware_needs_optimize_and_one_active_per_task() -> None:
    doc = copy.deepcopy(BASE)
    doc["assignor"] = "rack_aware"
    for c in doc["clients"]:
        del c["task_lags"]
    with pytest.raises(StreamsAssignInputError, match="^optimize: missing"):
        run_assign_streams(doc)
    doc["optimize"] = "active_tasks"
    doc["clients"][0]["current_active"] = ["0_0", "1_0"]
    with pytest.raises(StreamsAssignInputError, match=r"^tasks.stateful\[1\]: task 0_1 is active"):
        run_assign_streams(doc)
    doc["clients"][1]["current_active"] = ["0_0"]
    with pytest.raises(StreamsAssignInputError, match="already active on PID_1"):
        run_assign_streams(doc)
    doc["clients"][1]["current_active"] = ["0_1"]
    doc["clients"][1]["current_standby"] = ["1_0"]
    with pytest.raises(StreamsAssignInputError, match="stateless: no standby"):
        run_assign_streams(doc)


def test_rack_awareness_off_without_client_racks_is_a_logged_note(
    caplog: pytest.LogCaptureFixture,
) -> None:
    doc = {
        "assignor": "rack_aware",
        "optimize": "active_tasks",
        "config": {"rack.aware.assignment.strategy": "min_traffic"},
        "clients": [
            {"id": "PID_1", "rack": "r1", "current_active": ["0_0"]},
            {"id": "PID_2", "current_active": ["0_1"]},
        ],
        "tasks": {
            "stateful": ["0_0", "0_1"],
            "task_source_partition_racks": {"0_0": ["r2"], "0_1": ["r1"]},
        },
    }
    with caplog.at_level(logging.WARNING, logger="groupsim.streams"):
        out = run_assign_streams(doc)
    assert "cost" not in out
    assert out["clients"]["PID_1"]["active"] == ["0_0"]
    assert "client PID_2 has no rack" in caplog.text
    doc["clients"][1]["rack"] = "r2"
    out = run_assign_streams(doc)
    assert out["cost"] == {"before": 20, "after": 2}
    assert out["clients"] == {
        "PID_1": {"active": ["0_1"], "standby": []},
        "PID_2": {"active": ["0_0"], "standby": []},
    }


def test_output_shape_and_order() -> None:
    doc = copy.deepcopy(BASE)
    doc["clients"][0]["id"] = "ffffffff-0000-0000-0000-000000000000"  # msb < 0: sorts first
    out = run_assign_streams(doc)
    assert list(out) == ["clients", "probing_rebalance_needed"]
    assert list(out["clients"]) == ["ffffffff-0000-0000-0000-000000000000", "PID_2"]
    assert run_assign_streams(copy.deepcopy(doc)) == out  # deterministic


def test_high_availability_with_rack_awareness_reports_cost() -> None:
    doc = {
        "assignor": "high_availability",
        "config": {"rack.aware.assignment.strategy": "min_traffic", "num.standby.replicas": 1},
        "clients": [
            {"id": f"PID_{i}", "rack": f"r{i % 2}", "task_lags": {"0_0": 0, "0_1": 0}}
            for i in range(1, 4)
        ],
        "tasks": {
            "stateful": ["0_0", "0_1"],
            "stateless": ["1_0"],
            "task_source_partition_racks": {"0_0": ["r0"], "0_1": ["r1"], "1_0": ["r1"]},
            "task_changelog_partition_racks": {"0_0": ["r0"], "0_1": ["r1"]},
        },
    }
    out = run_assign_streams(doc)
    assert out["cost"]["after"] <= out["cost"]["before"]
    for c in out["clients"].values():
        assert not set(c["active"]) & set(c["standby"])
    doc["tasks"]["task_changelog_partition_racks"] = {"0_0": ["r0"]}
    assert "cost" not in run_assign_streams(doc)  # a changelog without racks: disabled


def test_standby_assignors_from_actives() -> None:
    doc: dict[str, Any] = {
        "assignor": "default_standby",
        "config": {"num.standby.replicas": 2},
        "clients": [
            {"id": "PID_1", "current_active": ["0_0"]},
            {"id": "PID_2", "capacity": 2, "current_active": ["0_1"]},
            {"id": "PID_3"},
        ],
        "tasks": {"stateful": ["0_0", "0_1"]},
    }
    out = run_assign_streams(doc)
    assert out["clients"]["PID_3"]["standby"] == ["0_0", "0_1"]
    assert out["clients"]["PID_2"]["standby"] == ["0_0"]
    assert out["clients"]["PID_1"]["standby"] == ["0_1"]
    doc["clients"][2]["current_standby"] = ["0_0"]
    with pytest.raises(StreamsAssignInputError, match=r"^clients\[2\].current_standby"):
        run_assign_streams(doc)
