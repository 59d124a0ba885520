"""``scenarios.assign.connect.run_assign``: the engine of ``groupsim assign``."""

from __future__ import annotations

import copy

import pytest
from assignor_helpers import load_vectors

from scenarios.assign.connect import AssignInputError, run_assign

SEQS = load_vectors("connect_assignor_sequences_examples.json")


def _merge(held: dict, out: dict) -> dict:
    """Member-side merge of run_assign's output: new items + (old − revoked)."""
    if held is None:
        return {"connectors": list(out["connectors"]), "tasks": list(out["tasks"])}
    rc, rt = set(out["revoked_connectors"]), set(out["revoked_tasks"])
    return {
        "connectors": out["connectors"] + [c for c in held["connectors"] if c not in rc],
        "tasks": out["tasks"] + [t for t in held["tasks"] if t not in rt],
    }


@pytest.mark.parametrize("key", ["sequences_incremental_full", "sequences_eager"])
def test_reproduces_kafka_sequences(key: str) -> None:
    for seq in SEQS[key]:
        held: dict[str, dict | None] = {}
        eager = key == "sequences_eager"
        doc = {
            "assignor": "eager" if eager else "incremental_cooperative",
            "protocol": "eager" if eager else "sessioned",
            "config": {"scheduled.rebalance.max.delay.ms": seq["max_delay_ms"]},
            "rounds": [],
        }
        for rnd in seq["rounds"]:
            offset = 618 + len(rnd["configured_connectors"])
            members = {}
            for m in rnd["members"]:
                spec = {"config_offset": offset}
                if held.get(m) is not None and not eager:
                    spec.update(held[m])
                members[m] = spec
            doc["rounds"].append(
                {
                    "time_ms": rnd["time_ms"],
                    "generation": rnd["generation"],
                    "leader": rnd["leader"],
                    "config_offset": offset,
                    "connectors": rnd["configured_connectors"],
                    "members": members,
                }
            )
            # run all rounds so far from scratch: the assignor is kept between rounds
            out = run_assign(copy.deepcopy(doc))["rounds"][-1]["members"]
            assert list(out) == rnd["members"]
            for w, exp in rnd["workers"].items():
                got = out[w]
                assert got["assignment_hex"] == exp["assignment_hex"], (seq["name"], rnd["round"])
                assert got["connectors"] == exp["assigned_connectors"]
                assert got["tasks"] == [f"{c}-{n}" for c, n in exp["assigned_tasks"]]
                assert got["delay_ms"] == rnd["delay"] and got["error"] == 0
                held[w] = _merge(held.get(w), got)


def test_example_from_the_issue() -> None:
    doc = {
        "assignor": "incremental_cooperative",
        "protocol": "sessioned",
        "config": {"scheduled.rebalance.max.delay.ms": 300000},
        "rounds": [
            {
                "time_ms": 0,
                "generation": 1001,
                "last_completed_generation": 1000,
                "leader": "worker1",
                "config_offset": 620,
                "connectors": {"connector1": 4},
                "members": {
                    "worker1": {
                        "url": "http://worker1:8083",
                        "config_offset": 620,
                        "connectors": ["connector1"],
                        "tasks": ["connector1-0"],
                    },
                    "worker2": {},
                },
            }
        ],
    }
    out = run_assign(doc)
    (rnd,) = out["rounds"]
    assert set(rnd["members"]) == {"worker1", "worker2"}
    w1, w2 = rnd["members"]["worker1"], rnd["members"]["worker2"]
    assert set(w1) == {
        "error",
        "connectors",
        "tasks",
        "revoked_connectors",
        "revoked_tasks",
        "delay_ms",
        "assignment_hex",
    }
    # the new leader has no previous assignment: connector1-1..3 are new, water filled
    assert sorted(w1["tasks"] + w2["tasks"]) == ["connector1-1", "connector1-2", "connector1-3"]
    assert w1["revoked_tasks"] == [] and w2["revoked_tasks"] == []
    assert bytes.fromhex(w1["assignment_hex"])[:2] == b"\x00\x02"


def test_members_lists_are_not_resorted() -> None:
    """Load-balancing revokes the first items of a worker's own list, in the given order."""

    def run(order: list[str]) -> list[str]:
        doc = {
            "assignor": "incremental_cooperative",
            "rounds": [
                {
                    "connectors": {"c": 4},
                    "members": {"w1": {"connectors": ["c"], "tasks": order}, "w2": {}},
                }
            ],
        }
        return run_assign(doc)["rounds"][0]["members"]["w1"]["revoked_tasks"]

    assert run(["c-0", "c-1", "c-2", "c-3"]) == ["c-0", "c-1"]
    assert run(["c-3", "c-2", "c-1", "c-0"]) == ["c-3", "c-2"]


def test_defaults_and_config_mismatch() -> None:
    doc = {
        "assignor": "eager",
        "rounds": [
            {"config_offset": 3, "connectors": {"c": 1}, "members": {"a": {"config_offset": 5}}},
            {"config_offset": 5, "connectors": {"c": 1}, "members": {"a": {"config_offset": 5}}},
        ],
    }
    r1, r2 = run_assign(doc)["rounds"]
    assert r1["members"]["a"]["error"] == 1 and r1["members"]["a"]["connectors"] == []
    assert r2["members"]["a"]["error"] == 0
    assert r2["members"]["a"]["connectors"] == ["c"] and r2["members"]["a"]["tasks"] == ["c-0"]
    assert bytes.fromhex(r2["members"]["a"]["assignment_hex"])[:2] == b"\x00\x00"


def _base() -> dict:
    return {
        "assignor": "incremental_cooperative",
        "rounds": [
            {"connectors": {"c": 2}, "members": {"w1": {}, "w2": {}}},
            {"connectors": {"c": 2}, "members": {"w1": {}, "w2": {}, "worker3": {}}},
        ],
    }


def _bad(mutate) -> str:
    doc = _base()
    mutate(doc)
    with pytest.raises(AssignInputError) as info:
        run_assign(doc)
    return str(info.value)


def test_bad_inputs_name_the_key_path() -> None:
    def set_(path, value):
        def f(doc):
            obj = doc
            for key in path[:-1]:
                obj = obj[key]
            obj[path[-1]] = value

        return f

    cases = [
        (set_(["assignor"], "nope"), "assignor: unknown assignor 'nope' (known: eager, "),
        (set_(["extra"], 1), "extra: unknown key"),
        (
            set_(["config"], {"scheduled.rebalance.max.delay.ms": -1}),
            "config.scheduled.rebalance.max.delay.ms: must be >= 0",
        ),
        (set_(["config"], {"other": 1}), "config.other: unknown key"),
        (set_(["protocol"], "eager"), "protocol: the incremental_cooperative assignor"),
        (set_(["protocol"], "bogus"), "protocol: unknown protocol 'bogus'"),
        (set_(["rounds"], []), "rounds: must hold at least one round"),
        (set_(["rounds", 1, "members"], {}), "rounds[1].members: must hold at least one member"),
        (set_(["rounds", 1, "connectors", "c"], -2), "rounds[1].connectors.c: must be >= 0"),
        (
            set_(["rounds", 1, "connectors", "c"], "2"),
            "rounds[1].connectors.c: expected an integer",
        ),
        (set_(["rounds", 1, "connectors", "c"], True), "expected an integer, got a boolean"),
        (
            set_(["rounds", 1, "members", "worker3"], {"tasks": ["c0"]}),
            "rounds[1].members.worker3.tasks[0]: task id 'c0'",
        ),
        (
            set_(["rounds", 1, "members", "worker3"], {"tasks": "c-0"}),
            "rounds[1].members.worker3.tasks: expected an array, got a string",
        ),
        (
            set_(["rounds", 1, "members", "worker3"], {"conectors": []}),
            "rounds[1].members.worker3.conectors: unknown key",
        ),
        (
            set_(["rounds", 1, "members", "worker3"], {"config_offset": -1}),
            "rounds[1].members.worker3.config_offset: must be >= 0",
        ),
        (set_(["rounds", 1, "leader"], "ghost"), "rounds[1].leader: 'ghost' is not one of"),
        (set_(["rounds", 1, "time_ms"], -5), "rounds[1].time_ms: must be >= 0"),
        (
            lambda d: d["rounds"][0].update(time_ms=10) or d["rounds"][1].update(time_ms=5),
            "rounds[1].time_ms: time must not go backwards",
        ),
        (set_(["rounds", 1], []), "rounds[1]: expected an object, got an array"),
    ]
    for mutate, message in cases:
        assert message in _bad(mutate), message


def test_missing_rounds_and_assignor() -> None:
    with pytest.raises(AssignInputError, match="^assignor: missing"):
        run_assign({"rounds": []})
    with pytest.raises(AssignInputError, match="^rounds: missing"):
        run_assign({"assignor": "eager"})
    with pytest.raises(AssignInputError, match="expected an object"):
        run_assign([])  # type: ignore[arg-type]
