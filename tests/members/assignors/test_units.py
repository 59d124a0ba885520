"""Unit facts of the Connect assignors (``EagerAssignor``, ``IncrementalCooperativeAssignor``)."""

from __future__ import annotations

import pytest

from members.assignors import (
    ASSIGNORS,
    ConfigSnapshot,
    EagerAssignor,
    IncrementalCooperativeAssignor,
    UnknownAssignorError,
    create_assignor,
    exponential_backoff,
)
from protocol.connect import (
    CONFIG_MISMATCH,
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
    WorkerSubscription,
)
from protocol.connect_codec import decode_assignment, encode_assignment, encode_subscription


def test_backoff_values() -> None:
    assert [exponential_backoff(300_000, n) for n in range(1, 7)] == [
        40,
        1600,
        64000,
        300000,
        300000,
        300000,
    ]
    assert [exponential_backoff(1, n) for n in range(1, 5)] == [1, 1, 1, 1]
    assert [exponential_backoff(0, n) for n in range(1, 5)] == [0, 0, 0, 0]
    assert exponential_backoff(40, 1) == 40 and exponential_backoff(40, 3) == 40
    # 40^(ln 1000 / ln 40) is 999.99…: Java's (long) cast truncates it, and so do we
    assert exponential_backoff(1000, 1) == 40 and exponential_backoff(1000, 2) == 999


def test_registry() -> None:
    assert set(ASSIGNORS) >= {"eager", "incremental_cooperative"}
    assert isinstance(create_assignor("eager", max_delay_ms=0), EagerAssignor)
    inc = create_assignor("incremental_cooperative", max_delay_ms=5)
    assert isinstance(inc, IncrementalCooperativeAssignor) and inc.max_delay_ms == 5
    with pytest.raises(UnknownAssignorError) as info:
        create_assignor("sticky", max_delay_ms=0)
    assert "'sticky'" in str(info.value) and "eager, incremental_cooperative" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError):
        create_assignor("incremental_cooperative", max_delay_ms=-1)


def _md(proto: ConnectProtocol, member: str, offset: int, alloc=None) -> bytes:
    return encode_subscription(
        WorkerSubscription(proto.version, f"http://{member}:8083", offset, alloc)
    )


def _alloc(version: int, conns=(), tasks=()) -> ConnectAssignment:
    return ConnectAssignment(
        version,
        0,
        "w1",
        "http://w1:8083",
        0,
        tuple(conns),
        tuple(ConnectorTaskId(c, n) for c, n in tasks),
    )


@pytest.mark.parametrize("name", ["eager", "incremental_cooperative"])
def test_leader_config_check_three_outcomes(name: str) -> None:
    proto = ConnectProtocol.EAGER if name == "eager" else ConnectProtocol.COMPATIBLE
    members = [("w1", _md(proto, "w1", 5)), ("w2", _md(proto, "w2", 7))]
    calls = []

    def run(snapshot, fresh):
        assignor = create_assignor(name, max_delay_ms=0)

        def refresh():
            calls.append(1)
            return fresh

        return assignor.perform_assignment(
            leader_id="w1",
            protocol=proto,
            members=members,
            snapshot=snapshot,
            refresh_snapshot=refresh,
            last_completed_generation=0,
            generation=1,
            now_ms=0,
        )

    conns = {"c": 1}
    # cached snapshot ahead of every member: used, labelled with maxOffset
    res = run(ConfigSnapshot(9, conns), None)
    assert not calls and res.error == 0 and res.config_offset == 7
    assert all(decode_assignment(b).config_offset == 7 for b in res.assignments.values())
    # behind, but a fresh read catches up: labelled with the fresh offset
    fresh = ConfigSnapshot(8, conns)
    res = run(ConfigSnapshot(6, conns), fresh)
    assert calls == [1] and res.config_offset == 8 and res.snapshot is fresh
    # still behind: CONFIG_MISMATCH at maxOffset for everyone, nothing assigned
    res = run(ConfigSnapshot(6, conns), ConfigSnapshot(6, conns))
    assert res.error == CONFIG_MISMATCH and res.delay_ms == 0
    for member, data in res.assignments.items():
        dec = decode_assignment(data)
        assert dec == res.decoded[member]
        assert (dec.error, dec.config_offset, dec.leader) == (CONFIG_MISMATCH, 7, "w1")
        assert dec.leader_url == "http://w1:8083" and dec.version == proto.version
        assert not dec.connectors and not dec.tasks and not dec.revoked_tasks


def test_config_mismatch_leaves_incremental_state_untouched() -> None:
    proto = ConnectProtocol.SESSIONED
    a = IncrementalCooperativeAssignor(300_000)
    snap = ConfigSnapshot(5, {"c": 2})
    members = [("w1", _md(proto, "w1", 5))]
    a.perform_assignment(
        leader_id="w1",
        protocol=proto,
        members=members,
        snapshot=snap,
        refresh_snapshot=lambda: snap,
        last_completed_generation=0,
        generation=1,
        now_ms=0,
    )
    before = (a.previous_assignment, a.previous_generation_id, a.previous_members, a.delay_ms)
    res = a.perform_assignment(
        leader_id="w1",
        protocol=proto,
        members=[("w1", _md(proto, "w1", 9))],
        snapshot=snap,
        refresh_snapshot=lambda: snap,
        last_completed_generation=1,
        generation=2,
        now_ms=0,
    )
    assert res.error == CONFIG_MISMATCH
    after = (a.previous_assignment, a.previous_generation_id, a.previous_members, a.delay_ms)
    assert before == after and a.previous_generation_id == 1


def test_header_version_follows_protocol() -> None:
    for proto in (ConnectProtocol.COMPATIBLE, ConnectProtocol.SESSIONED):
        a = IncrementalCooperativeAssignor(0)
        snap = ConfigSnapshot(0, {"c": 1})
        res = a.perform_assignment(
            leader_id="w1",
            protocol=proto,
            members=[("w1", _md(proto, "w1", 0))],
            snapshot=snap,
            refresh_snapshot=lambda s=snap: s,
            last_completed_generation=-1,
            generation=0,
            now_ms=0,
        )
        data = res.assignments["w1"]
        assert data[:2] == proto.version.to_bytes(2, "big")
        assert encode_assignment(decode_assignment(data)) == data


def test_perform_assignment_rejects_bad_calls() -> None:
    snap = ConfigSnapshot(0, {})
    a = IncrementalCooperativeAssignor(0)
    kw = dict(
        snapshot=snap,
        refresh_snapshot=lambda: snap,
        last_completed_generation=0,
        generation=1,
        now_ms=0,
    )
    md = _md(ConnectProtocol.SESSIONED, "w1", 0)
    with pytest.raises(ValueError, match="at least one member"):
        a.perform_assignment(leader_id="w1", protocol=ConnectProtocol.SESSIONED, members=[], **kw)
    with pytest.raises(ValueError, match="not among the members"):
        a.perform_assignment(
            leader_id="x", protocol=ConnectProtocol.SESSIONED, members=[("w1", md)], **kw
        )
    with pytest.raises(ValueError, match="default"):
        a.perform_assignment(
            leader_id="w1", protocol=ConnectProtocol.EAGER, members=[("w1", md)], **kw
        )
    with pytest.raises(ValueError, match="not among the members"):
        EagerAssignor().perform_assignment(
            leader_id="x", protocol=ConnectProtocol.EAGER, members=[("w1", md)], **kw
        )
    with pytest.raises(ValueError):
        IncrementalCooperativeAssignor(-1)
    with pytest.raises(ValueError):  # malformed metadata: the codec's error
        a.perform_assignment(
            leader_id="w1", protocol=ConnectProtocol.SESSIONED, members=[("w1", b"\x00")], **kw
        )


def _core(a, conns, members, gen, now=0):
    return a.perform_task_assignment(ConfigSnapshot(0, conns), gen - 1, gen, members, now)


def test_deleted_connector_tasks_revoked_in_hashset_order() -> None:
    """Java HashSet order: deleted connector1 held with tasks 0 and 3 revokes [connector1-3, -0]."""
    a = IncrementalCooperativeAssignor(300_000)
    held = {
        "w1": (["connector1"], [("connector1", 0), ("connector1", 3)]),
        "w2": ([], [("connector1", 1), ("connector1", 2)]),
    }
    _core(a, {"connector1": 4}, {"w1": ([], []), "w2": ([], [])}, 1)
    a._prev_t = {("connector1", i) for i in range(4)}  # what the previous round handed out
    a._prev_c = {"connector1"}
    res = _core(a, {}, held, 2)
    assert res.newly_revoked_connectors["w1"] == ["connector1"]
    assert res.newly_revoked_tasks["w1"] == [("connector1", 3), ("connector1", 0)]
    assert sorted(res.newly_revoked_tasks["w2"]) == [("connector1", 1), ("connector1", 2)]
    assert a.delay_ms == 0


def test_duplicates_revoked_from_every_holder_then_reassigned() -> None:
    a = IncrementalCooperativeAssignor(300_000)
    conns = {"c": 2}
    _core(a, conns, {"w1": ([], []), "w2": ([], [])}, 1)
    both = {"w1": (["c"], [("c", 0), ("c", 1)]), "w2": ([], [("c", 1)])}
    res = _core(a, conns, both, 2)
    assert ("c", 1) in res.newly_revoked_tasks["w1"] and ("c", 1) in res.newly_revoked_tasks["w2"]
    assert not any(("c", 1) in v for v in res.newly_assigned_tasks.values())
    res = _core(a, conns, {"w1": (["c"], [("c", 0)]), "w2": ([], [])}, 3)
    assert res.newly_assigned_tasks["w2"] == [("c", 1)]


def test_generation_guard_clears_previous_assignment() -> None:
    a = IncrementalCooperativeAssignor(300_000)
    conns = {"c": 2}
    _core(a, conns, {"w1": ([], []), "w2": ([], [])}, 1)
    # w2 vanished with its items; a completed generation mismatch makes the leader forget
    res = a.perform_task_assignment(ConfigSnapshot(0, conns), 5, 6, {"w1": (["c"], [("c", 0)])}, 0)
    assert a.delay_ms == 0 and res.newly_assigned_tasks["w1"] == [("c", 1)]
    # without the mismatch the same loss is a departure: delayed
    b = IncrementalCooperativeAssignor(300_000)
    first = _core(b, conns, {"w1": ([], []), "w2": ([], [])}, 1)
    held = (first.all_assigned_connectors["w1"], first.all_assigned_tasks["w1"])
    _core(b, conns, {"w1": held}, 2)
    assert b.delay_ms == 300_000 and b.scheduled_rebalance_ms == 300_000


def test_lost_work_waits_then_goes_to_the_returning_empty_worker() -> None:
    a = IncrementalCooperativeAssignor(1000)
    conns = {"c": 4}
    r = _core(a, conns, {"w1": ([], []), "w2": ([], [])}, 1)
    w1 = (r.all_assigned_connectors["w1"], r.all_assigned_tasks["w1"])
    w2_tasks = r.all_assigned_tasks["w2"]
    _core(a, conns, {"w1": w1}, 2, now=0)
    assert a.delay_ms == 1000
    r = _core(a, conns, {"w1": w1, "w2": ([], [])}, 3, now=400)
    assert a.delay_ms == 600 and a.candidate_workers == ["w2"] and r.is_empty_assignment()
    r = _core(a, conns, {"w1": w1, "w2": ([], [])}, 4, now=1000)
    assert a.delay_ms == 0 and a.candidate_workers == []
    assert sorted(r.newly_assigned_tasks["w2"]) == sorted(w2_tasks)


def test_successive_revocations_back_off() -> None:
    a = IncrementalCooperativeAssignor(300_000)
    conns = {"c": 12}
    state = {"w1": ([], [])}

    def step(members, gen, now=0):
        res = _core(a, conns, members, gen, now)
        out = {}
        for w, (c, t) in members.items():
            rc, rt = set(res.newly_revoked_connectors[w]), set(res.newly_revoked_tasks[w])
            out[w] = (
                [x for x in c if x not in rc] + res.newly_assigned_connectors[w],
                [x for x in t if x not in rt] + res.newly_assigned_tasks[w],
            )
        return res, out

    _, state = step(state, 1)
    res, state = step({**state, "w2": ([], [])}, 2)
    assert res.has_revocations() and a.delay_ms == 0
    res, state = step({**state, "w3": ([], [])}, 3)
    assert not res.has_revocations() and a.delay_ms == 40
    res, state = step(state, 4, now=20)
    assert a.delay_ms == 20
    res, state = step(state, 5, now=40)
    assert a.delay_ms == 0 and res.has_revocations()
