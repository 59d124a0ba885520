"""Every round of connect_assignor_sequences_examples.json: Kafka's real assignors' outputs.

* core: ``perform_task_assignment`` as IncrementalCooperativeAssignorTest drives it (member
  state = previous − revoked + newly assigned);
* full: ``perform_assignment`` with v2 metadata (allocation = the member's merged assignment),
  byte-for-byte assignment, then the member-side merge;
* eager: ``EagerAssignor.perform_assignment`` under ``default``, byte for byte.
"""

from __future__ import annotations

import pytest
from assignor_helpers import load_vectors, merge

from members.assignors import ConfigSnapshot, EagerAssignor, IncrementalCooperativeAssignor
from protocol.connect import ConnectProtocol, WorkerSubscription
from protocol.connect_codec import decode_assignment, encode_subscription

DATA = load_vectors("connect_assignor_sequences_examples.json")


def _ids(key: str) -> list[str]:
    return [s["name"] for s in DATA[key]]


def _tasks(items) -> list[list]:
    return [[c, t] for c, t in items]


CORE = "sequences_incremental_core"
FULL = "sequences_incremental_full"


@pytest.mark.parametrize("seq", DATA[CORE], ids=_ids(CORE))
def test_core_sequence(seq: dict) -> None:
    assignor = IncrementalCooperativeAssignor(seq["max_delay_ms"])
    state: dict[str, tuple[list, list]] = {}
    for rnd in seq["rounds"]:
        state = {m: state.get(m, ([], [])) for m in rnd["members"]}
        snap = ConfigSnapshot(0, rnd["configured_connectors"])
        res = assignor.perform_task_assignment(
            snap, rnd["generation"] - 1, rnd["generation"], state, rnd["time_ms"]
        )
        where = f"round {rnd['round']} ({rnd['label']})"
        for w, exp in rnd["workers"].items():
            assert res.newly_assigned_connectors[w] == exp["assigned_connectors"], (where, w)
            assert _tasks(res.newly_assigned_tasks[w]) == exp["assigned_tasks"], (where, w)
            assert res.newly_revoked_connectors[w] == exp["revoked_connectors"], (where, w)
            assert _tasks(res.newly_revoked_tasks[w]) == exp["revoked_tasks"], (where, w)
            conns, tasks = state[w]
            conns = [c for c in conns if c not in res.newly_revoked_connectors[w]]
            conns += res.newly_assigned_connectors[w]
            tasks = [t for t in tasks if t not in res.newly_revoked_tasks[w]]
            tasks += res.newly_assigned_tasks[w]
            state[w] = (conns, tasks)
            assert sorted(conns) == exp["all_connectors_after"], (where, w)
            assert _tasks(sorted(tasks)) == exp["all_tasks_after"], (where, w)
            assert sorted(res.all_assigned_connectors[w]) == exp["all_connectors_after"]
            assert _tasks(sorted(res.all_assigned_tasks[w])) == exp["all_tasks_after"]
        assert assignor.delay_ms == rnd["delay"], where
        assert assignor.scheduled_rebalance_ms == rnd["scheduled_rebalance_ms"], where


def _run_full(seq: dict, proto: ConnectProtocol, assignor) -> None:
    held = {}
    for rnd in seq["rounds"]:
        # config offset starts at 618 and grows with every connector added
        offset = 618 + len(rnd["configured_connectors"])
        members = []
        for m in rnd["members"]:
            sub = WorkerSubscription(proto.version, f"http://{m}:8083", offset, held.get(m))
            members.append((m, encode_subscription(sub)))
        snap = ConfigSnapshot(offset, rnd["configured_connectors"])
        res = assignor.perform_assignment(
            leader_id=rnd["leader"],
            protocol=proto,
            members=members,
            snapshot=snap,
            refresh_snapshot=lambda s=snap: s,
            last_completed_generation=rnd["generation"] - 1,
            generation=rnd["generation"],
            now_ms=rnd["time_ms"],
        )
        where = f"round {rnd['round']} ({rnd['label']})"
        assert list(res.assignments) == rnd["members"]
        assert res.delay_ms == rnd["delay"], where
        for w, exp in rnd["workers"].items():
            assert res.assignments[w].hex() == exp["assignment_hex"], (where, w)
            dec = decode_assignment(res.assignments[w])
            assert res.decoded[w] == dec, (where, w)
            assert list(dec.connectors) == exp["assigned_connectors"], (where, w)
            assert _tasks(dec.tasks) == exp["assigned_tasks"], (where, w)
            if "revoked_tasks" in exp:
                assert list(dec.revoked_connectors) == exp["revoked_connectors"], (where, w)
                assert _tasks(dec.revoked_tasks) == exp["revoked_tasks"], (where, w)
            assert dec.error == exp["error"] and dec.leader == exp["leader"]
            assert dec.config_offset == exp["config_offset"]
            held[w] = dec if proto.is_eager else merge(held.get(w), dec)
            assert sorted(held[w].connectors) == exp["all_connectors_after"], (where, w)
            assert _tasks(sorted(held[w].tasks)) == exp["all_tasks_after"], (where, w)


@pytest.mark.parametrize("seq", DATA[FULL], ids=_ids(FULL))
def test_full_sequence(seq: dict) -> None:
    _run_full(seq, ConnectProtocol.SESSIONED, IncrementalCooperativeAssignor(seq["max_delay_ms"]))


@pytest.mark.parametrize("seq", DATA["sequences_eager"], ids=_ids("sequences_eager"))
def test_eager_sequence(seq: dict) -> None:
    _run_full(seq, ConnectProtocol.EAGER, EagerAssignor())
