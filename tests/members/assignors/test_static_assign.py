"""``groupsim assign`` with ``"assignor": "static"`` (scenarios/assign.py, KIP-987)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from assignor_helpers import load_vectors
from typer.testing import CliRunner

from protocol.connect_codec import decode_assignment
from scenarios.assign.connect import AssignInputError, run_assign
from scenarios.cli.main import app

SEQS = load_vectors("connect_assignor_sequences_examples.json")["sequences_incremental_full"]


def _merge(held: dict | None, out: dict) -> dict:
    if held is None:
        return {"connectors": list(out["connectors"]), "tasks": list(out["tasks"])}
    rc, rt = set(out["revoked_connectors"]), set(out["revoked_tasks"])
    return {
        "connectors": out["connectors"] + [c for c in held["connectors"] if c not in rc],
        "tasks": out["tasks"] + [t for t in held["tasks"] if t not in rt],
    }


@pytest.mark.parametrize("seq", SEQS, ids=[s["name"] for s in SEQS])
def test_without_static_members_kafka_sessioned_bytes_with_header_3(seq: dict) -> None:
    """KIP-987: a static group without static workers behaves as sessioned (Kafka's real
    bytes, header 2 → 3)."""
    held: dict[str, dict | None] = {}
    doc: dict = {
        "assignor": "static",
        "config": {"scheduled.rebalance.max.delay.ms": seq["max_delay_ms"]},
        "rounds": [],
    }
    for rnd in seq["rounds"]:
        offset = 618 + len(rnd["configured_connectors"])
        members = {}
        for m in rnd["members"]:
            spec: dict = {"config_offset": offset}
            if held.get(m) is not None:
                spec.update(held[m])  # type: ignore[arg-type]
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
        out = run_assign(copy.deepcopy(doc))["rounds"][-1]["members"]
        for w, exp in rnd["workers"].items():
            expected = exp["assignment_hex"]
            assert expected.startswith("0002")
            assert out[w]["assignment_hex"] == "0003" + expected[4:]
            held[w] = _merge(held.get(w), out[w])


def _static_doc() -> dict:
    return {
        "assignor": "static",
        "protocol": "static",
        "config": {"scheduled.rebalance.max.delay.ms": 0},
        "rounds": [
            {
                "connectors": {"c1": 2, "c2": 1},
                "members": {
                    "w1": {"connectors": ["c1", "c2"], "tasks": ["c1-0", "c1-1", "c2-0"]},
                    "s2": {"static_connectors": ["c1"], "static_tasks": ["c1-1", "c1-1"]},
                    "s1": {"static_tasks": ["c1-1", "nope-3"]},
                },
            },
            {
                "connectors": {"c1": 2, "c2": 1},
                "members": {
                    "w1": {"connectors": ["c2"], "tasks": ["c1-0", "c2-0"]},
                    "s2": {"connectors": [], "tasks": [], "static_connectors": ["c1"],
                           "static_tasks": ["c1-1"]},
                    "s1": {"static_tasks": ["c1-1"]},
                },
            },
        ],
    }  # fmt: skip


def test_static_members_revoke_then_place() -> None:
    r1, r2 = run_assign(_static_doc())["rounds"]
    w1 = r1["members"]["w1"]
    # steps 3: static jobs c1 and c1-1 leave the wildcard worker first (nothing assigned)
    assert w1["revoked_connectors"] == ["c1"] and w1["revoked_tasks"] == ["c1-1"]
    assert all(not m["connectors"] and not m["tasks"] for m in r1["members"].values())
    # step 6 next round: c1 → s2 (its only namer); c1-1 → s1 (first of s1, s2 by id)
    assert r2["members"]["s2"]["connectors"] == ["c1"] and r2["members"]["s2"]["tasks"] == []
    assert r2["members"]["s1"]["tasks"] == ["c1-1"] and r2["members"]["s1"]["connectors"] == []
    assert r2["members"]["w1"]["tasks"] == [] and r2["members"]["w1"]["revoked_tasks"] == []
    for rnd in (r1, r2):
        for m in rnd["members"].values():
            assert set(m) == {"error", "connectors", "tasks", "revoked_connectors",
                              "revoked_tasks", "delay_ms", "assignment_hex"}  # fmt: skip
            data = bytes.fromhex(m["assignment_hex"])
            assert data[:2] == b"\x00\x03" and decode_assignment(data).version == 3


def _bad(mutate) -> str:
    doc = _static_doc()
    mutate(doc)
    with pytest.raises(AssignInputError) as info:
        run_assign(doc)
    return str(info.value)


def _member(doc: dict, member: str = "s2", rnd: int = 1) -> dict:
    return doc["rounds"][rnd]["members"][member]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: _member(d).update(static_tasks=["c1-1", "c1"]),
            "rounds[1].members.s2.static_tasks[1]: task id 'c1' is not of the form",
        ),
        (
            lambda d: _member(d).update(static_tasks=["c1-x"]),
            "rounds[1].members.s2.static_tasks[0]: task id 'c1-x'",
        ),
        (
            lambda d: _member(d).update(static_tasks=["c1-99999999999"]),
            "rounds[1].members.s2.static_tasks[0]: task number must be <= 2147483647",
        ),
        (
            lambda d: _member(d).update(static_tasks=[3]),
            "rounds[1].members.s2.static_tasks[0]: expected a string, got an integer",
        ),
        (
            lambda d: _member(d).update(static_tasks="c1-0"),
            "rounds[1].members.s2.static_tasks: expected an array, got a string",
        ),
        (
            lambda d: _member(d).update(static_connectors=["c1", ""]),
            "rounds[1].members.s2.static_connectors[1]: must not be empty",
        ),
        (
            lambda d: _member(d).update(static_connectors=None),
            "rounds[1].members.s2.static_connectors: expected an array, got null",
        ),
        (
            lambda d: _member(d).update(static_conectors=[]),
            "rounds[1].members.s2.static_conectors: unknown key",
        ),
        (lambda d: d.update(protocol="sessioned"), "protocol: the static assignor runs only"),
        (lambda d: d.update(protocol="eager"), "protocol: the static assignor runs only"),
        (
            lambda d: d.update(assignor="incremental_cooperative"),
            "protocol: 'static' needs the static assignor",
        ),
        (
            lambda d: d.update(assignor="incremental_cooperative", protocol="sessioned"),
            "rounds[0].members.s2.static_connectors: static assignments are read only by the "
            "static assignor (this input runs 'incremental_cooperative')",
        ),
        (
            lambda d: d.update(assignor="eager", protocol="eager"),
            "rounds[0].members.s2.static_connectors: static assignments are read only",
        ),
    ],
)
def test_bad_static_input_names_the_key_path(mutate, message: str) -> None:
    assert message in _bad(mutate)


def test_protocol_static_is_the_default_of_the_static_assignor() -> None:
    doc = _static_doc()
    del doc["protocol"]
    assert run_assign(doc) == run_assign(_static_doc())


def test_cli_assign_static(tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    path.write_text(json.dumps(_static_doc()))
    result = CliRunner().invoke(app, ["assign", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == run_assign(_static_doc())
    bad = _static_doc()
    _member(bad)["static_tasks"] = ["x"]
    path.write_text(json.dumps(bad))
    result = CliRunner().invoke(app, ["assign", str(path)])
    assert result.exit_code == 2 and "rounds[1].members.s2.static_tasks[0]" in result.output
