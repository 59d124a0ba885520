"""KIP-415's config-offset rule on the worker side (scenarios/check/config_contracts.py): a
worker starts an assignment's work only once its config reached the assignment's offset."""

from __future__ import annotations

from typing import Any

from scenarios.check import config_contracts
from scenarios.check.log_check import check_records
from tests.scenarios.check.logs import complete, over_dicts

check_config_before_work = over_dicts(config_contracts.check_config_before_work)


def _log(*records: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"t_ms": i, "seq": i, **r} for i, r in enumerate(records)]


_ASSIGNMENT = {
    "kind": "assignment",
    "member": "w2",
    "member_id": "w2-a",
    "generation": 5,
    "protocol": "sessioned",
    "leader_id": "w1-a",
    "error": 0,
    "config_offset": 12,
    "connectors": [],
    "tasks": [],
    "revoked_connectors": [],
    "revoked_tasks": [],
    "delay_ms": 0,
}


def _start(offset: int, generation: int = 5, kind: str = "task_start") -> dict[str, Any]:
    what = {"task": "c1-0"} if kind == "task_start" else {"connector": "c1"}
    return {
        "kind": kind,
        **what,
        "generation": generation,
        "config_offset": offset,
        "member": "w2",
    }


def test_kip415_a_worker_behind_reads_the_config_before_it_starts_work() -> None:
    for kind in ("task_start", "connector_start"):
        behind = _log(_ASSIGNMENT, _start(11, kind=kind))
        assert [v.invariant for v in check_config_before_work(behind)] == [
            "config_behind_assignment"
        ]
        assert check_config_before_work(_log(_ASSIGNMENT, _start(12, kind=kind))) == []
        assert check_config_before_work(_log(_ASSIGNMENT, _start(13, kind=kind))) == []
    # another generation's start, a CONFIG_MISMATCH round, a restarted worker: not judged
    assert check_config_before_work(_log(_ASSIGNMENT, _start(3, generation=4))) == []
    mismatch = {**_ASSIGNMENT, "error": 1}
    assert check_config_before_work(_log(mismatch, _start(3))) == []
    restart = {"kind": "member_start", "member": "w2", "config": {}}
    assert check_config_before_work(_log(_ASSIGNMENT, restart, _start(3))) == []
    # logs written before the field existed
    old = _start(3)
    del old["config_offset"]
    assert check_config_before_work(_log(_ASSIGNMENT, old)) == []


def test_groupsim_check_runs_the_config_checker() -> None:
    records = _log({"kind": "run_start"}, _ASSIGNMENT, _start(11), {"kind": "run_end"})
    assert "config_behind_assignment" in {v.invariant for v in check_records(complete(records))}
