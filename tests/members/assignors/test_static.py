"""The KIP-987 ``static`` assignor (members/assignors/static.py): the eight steps, the tie
rule, and the KIP's stated properties on scripted multi-round sequences.

:class:`StaticCluster` drives ``perform_assignment`` with real v3 metadata and the member-side
merge, and checks in every round that no job is assigned while it is revoked (from anyone)
and that no job ends up on two members. The Hypothesis versions of the properties are in
test_static_properties.py.
"""

from __future__ import annotations

import pytest
from assignor_helpers import load_vectors, merge

from members.assignors import (
    STATIC_TIE_RULE,
    ConfigSnapshot,
    IncrementalCooperativeAssignor,
    StaticAssignmentRound,
    StaticAssignor,
    StaticClaims,
    create_assignor,
)
from protocol.connect import (
    CONFIG_MISMATCH,
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
    WorkerSubscription,
)
from protocol.connect_codec import decode_assignment, encode_subscription

STATIC = ConnectProtocol.STATIC
SESSIONED = ConnectProtocol.SESSIONED

Task = tuple[str, int]


class StaticCluster:
    """A Connect group as the leader sees it, one rebalance per :meth:`round`.

    ``members`` maps member id → its merged assignment (None = no allocation yet), in
    JoinGroup order; ``claims`` gives static workers their ``static.*`` lists. The first
    member leads. Each round checks the cooperative safety rules (see the module docstring).
    """

    def __init__(
        self,
        max_delay_ms: int = 0,
        protocol: ConnectProtocol = STATIC,
        assignor: object | None = None,
    ) -> None:
        self.protocol = protocol
        self.assignor = assignor if assignor is not None else StaticAssignor(max_delay_ms)
        self.members: dict[str, ConnectAssignment | None] = {}
        self.claims: dict[str, StaticClaims] = {}
        self.connectors: dict[str, int] = {}
        self.offset = 1
        self.generation = 0
        self.now = 0
        self.last: StaticAssignmentRound | None = None
        self.last_decoded: dict[str, ConnectAssignment] = {}

    # -- membership and config
    def join(
        self, member: str, connectors: tuple[str, ...] = (), tasks: tuple[str, ...] = ()
    ) -> None:
        self.members[member] = None
        claims = StaticClaims(
            tuple(connectors), tuple(tuple(ConnectorTaskId.parse(t)) for t in tasks)
        )
        self.claims[member] = claims  # type: ignore[assignment]

    def leave(self, member: str) -> None:
        del self.members[member]
        self.claims.pop(member, None)

    def set_connector(self, name: str, tasks: int) -> None:
        self.connectors[name] = tasks
        self.offset += 1

    def remove_connector(self, name: str) -> None:
        self.connectors.pop(name, None)
        self.offset += 1

    # -- one rebalance
    def metadata(self) -> list[tuple[str, bytes]]:
        out = []
        for m, alloc in self.members.items():
            claims = self.claims.get(m, StaticClaims())
            sub = WorkerSubscription(
                self.protocol.version,
                f"http://{m}:8083",
                self.offset,
                alloc,
                tuple(claims.connectors),
                tuple(ConnectorTaskId(c, n) for c, n in claims.tasks),
            )
            out.append((m, encode_subscription(sub)))
        return out

    def round(self) -> StaticAssignmentRound:
        self.generation += 1
        snap = ConfigSnapshot(self.offset, dict(self.connectors))
        res = self.assignor.perform_assignment(  # type: ignore[attr-defined]
            leader_id=next(iter(self.members)),
            protocol=self.protocol,
            members=self.metadata(),
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=self.generation - 1,
            generation=self.generation,
            now_ms=self.now,
        )
        decoded = {m: decode_assignment(b) for m, b in res.assignments.items()}
        assigned = [x for d in decoded.values() for x in (*d.connectors, *d.tasks)]
        revoked = {x for d in decoded.values() for x in (*d.revoked_connectors, *d.revoked_tasks)}
        assert len(assigned) == len(set(assigned)), "a job assigned twice in one round"
        assert not revoked.intersection(assigned), "a job assigned and revoked in one round"
        for m, d in decoded.items():
            assert d == res.decoded[m]
            assert d.version == self.protocol.version
            self.members[m] = merge(self.members[m], d)
        held = [x for a in self.members.values() if a for x in (*a.connectors, *a.tasks)]
        assert len(held) == len(set(held)), "a job held by two members"
        self.last = res
        self.last_decoded = decoded
        return res

    def settle(self, limit: int = 12) -> int:
        """Rebalance until a round revokes nothing and asks for no delay (time jumps over
        delays, as members rejoin when theirs expires). Returns the number of rounds."""
        for n in range(1, limit + 1):
            res = self.round()
            revoking = any(
                d.revoked_connectors or d.revoked_tasks for d in self.last_decoded.values()
            )
            if revoking:
                continue
            if res.delay_ms:
                self.now += res.delay_ms
                continue
            return n
        raise AssertionError("no convergence")

    # -- views
    def holder(self, job: str | Task) -> list[str]:
        out = []
        for m, a in self.members.items():
            if a is None:
                continue
            if isinstance(job, str) and job in a.connectors:
                out.append(m)
            if isinstance(job, tuple) and ConnectorTaskId(*job) in a.tasks:
                out.append(m)
        return out

    def holds(self, member: str) -> tuple[list[str], list[str]]:
        a = self.members[member]
        if a is None:
            return [], []
        return sorted(a.connectors), sorted(str(t) for t in a.tasks)

    def check_complete(self) -> None:
        """KIP-987 (d): every configured job is on exactly one eligible member when each
        has a live naming worker or a wildcard worker exists; otherwise the rest are
        reported as unassigned static jobs."""
        static = {m for m, c in self.claims.items() if c.is_static and m in self.members}
        wildcard = [m for m in self.members if m not in static]
        jobs: list[str | Task] = [*self.connectors]
        jobs += [(c, i) for c, n in self.connectors.items() for i in range(n)]
        unassigned: list[str | Task] = []
        for job in jobs:
            if isinstance(job, str):
                namers = {m for m in static if job in self.claims[m].connectors}
            else:
                namers = {m for m in static if job in self.claims[m].tasks}
            where = self.holder(job)
            if namers:
                assert len(where) == 1 and where[0] in namers, (job, where, namers)
            elif wildcard:
                assert len(where) == 1 and where[0] in wildcard, (job, where)
            else:
                assert where == [], (job, where)
                unassigned.append(job)
        assert self.last is not None
        rc, rt = self.last.unassigned_static_jobs
        assert rc == sorted(j for j in unassigned if isinstance(j, str))
        assert rt == sorted(j for j in unassigned if isinstance(j, tuple))


def _body(data: bytes) -> bytes:
    """Assignment bytes without the INT16 header version."""
    return data[2:]


# ------------------------------------------------------------------------------- the steps


def test_registry_and_protocol_checks() -> None:
    a = create_assignor("static", max_delay_ms=5)
    assert isinstance(a, StaticAssignor) and a.wildcard.max_delay_ms == 5
    with pytest.raises(ValueError, match="max_delay_ms"):
        StaticAssignor(-1)
    snap = ConfigSnapshot(0)
    with pytest.raises(ValueError, match="'default'"):
        a.perform_assignment(
            leader_id="w",
            protocol=ConnectProtocol.EAGER,
            members=[("w", b"")],
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=0,
            generation=1,
            now_ms=0,
        )
    with pytest.raises(ValueError, match="leader"):
        StaticCluster().assignor.perform_assignment(  # type: ignore[attr-defined]
            leader_id="x",
            protocol=STATIC,
            members=[("w", encode_subscription(WorkerSubscription(3, "u", 0)))],
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=0,
            generation=1,
            now_ms=0,
        )


def test_config_mismatch_is_a_v3_error_round_with_no_static_decisions() -> None:
    cl = StaticCluster()
    cl.join("w1", ("c1",))
    cl.set_connector("c1", 1)
    stale = ConfigSnapshot(0, {"c1": 1})
    res = cl.assignor.perform_assignment(  # type: ignore[attr-defined]
        leader_id="w1",
        protocol=STATIC,
        members=cl.metadata(),
        snapshot=stale,
        refresh_snapshot=lambda: stale,
        last_completed_generation=0,
        generation=1,
        now_ms=0,
    )
    assert isinstance(res, StaticAssignmentRound)
    assert res.error == CONFIG_MISMATCH and res.decoded["w1"].version == 3
    assert res.static_workers == [] and res.unassigned_static_jobs == ([], [])
    assert cl.assignor.wildcard.previous_generation_id == -1  # type: ignore[attr-defined]


def test_classification_and_step_6_placement() -> None:
    cl = StaticCluster()
    cl.set_connector("c1", 3)
    cl.set_connector("c2", 2)
    cl.join("w1")
    # names c1's task 1 without c1, a task and a connector that do not exist
    cl.join("s1", ("nope",), ("c1-1", "c9-0", "c2-5"))
    cl.join("s2", ("c2",))
    res = cl.round()
    assert res.static_workers == ["s1", "s2"]
    assert cl.holds("s1") == ([], ["c1-1"])
    assert cl.holds("s2") == (["c2"], [])
    assert cl.holds("w1") == (["c1"], ["c1-0", "c1-2", "c2-0", "c2-1"])
    assert [p.to_json() for p in res.static_placements] == [
        {"job": "c2", "kind": "connector", "worker": "s2", "candidates": ["s2"],
         "rule": STATIC_TIE_RULE},
        {"job": "c1-1", "kind": "task", "worker": "s1", "candidates": ["s1"],
         "rule": STATIC_TIE_RULE},
    ]  # fmt: skip
    assert res.unassigned_static_jobs == ([], [])
    cl.check_complete()


def test_idle_static_worker_naming_only_missing_jobs_is_not_wildcard() -> None:
    cl = StaticCluster()
    cl.set_connector("c1", 2)
    cl.join("s1", ("ghost",), ("c1-7",))
    res = cl.round()
    assert res.static_workers == ["s1"] and cl.holds("s1") == ([], [])
    assert res.unassigned_static_jobs == (["c1"], [("c1", 0), ("c1", 1)])
    assert cl.assignor.unassigned_static_jobs == res.unassigned_static_jobs  # type: ignore
    cl.check_complete()


def test_steps_3_4_5_revoke_then_place_next_round() -> None:
    cl = StaticCluster()
    cl.set_connector("c1", 2)
    cl.set_connector("c2", 2)
    cl.join("w1")
    cl.join("w2")
    cl.settle()
    before = {m: cl.holds(m) for m in cl.members}
    # s1 comes up naming c1 and c2-1 (held by wildcard workers): step 3
    cl.join("s1", ("c1",), ("c2-1",))
    res = cl.round()
    revoked = {(m, x) for m, d in cl.last_decoded.items() for x in d.revoked_connectors}
    revoked |= {(m, str(t)) for m, d in cl.last_decoded.items() for t in d.revoked_tasks}
    holder_c1 = next(m for m, h in before.items() if "c1" in h[0])
    holder_t = next(m for m, h in before.items() if "c2-1" in h[1])
    assert {(holder_c1, "c1"), (holder_t, "c2-1")} <= revoked
    assert res.static_placements == []  # revoked this round: placed next round
    res = cl.round()
    assert [p.job for p in res.static_placements] == ["c1", "c2-1"]
    assert cl.holds("s1") == (["c1"], ["c2-1"])
    cl.settle()
    cl.check_complete()


def test_step_4_and_5_static_worker_holding_what_it_does_not_name() -> None:
    cl = StaticCluster()
    cl.set_connector("c1", 2)
    cl.join("s1", ("c1",))
    cl.join("s2", (), ("c1-0",))
    cl.join("w1")
    # s2 reports holding c1 (named by s1: step 4) and c1-1 (a wildcard job: step 5)
    cl.members["s2"] = ConnectAssignment(
        3, 0, "s1", "u", 1, ("c1",), (ConnectorTaskId("c1", 1), ConnectorTaskId("c1", 0))
    )
    res = cl.round()
    d = cl.last_decoded["s2"]
    assert d.revoked_connectors == ("c1",) and list(d.revoked_tasks) == [("c1", 1)]
    assert cl.holds("s2") == ([], ["c1-0"])  # kept: it names c1-0 and holds it alone
    assert res.static_placements == [] and cl.holds("w1") == ([], [])
    cl.round()
    assert cl.holds("s1") == (["c1"], []) and cl.holds("w1") == ([], ["c1-1"])
    cl.check_complete()


def test_wildcard_job_on_static_worker_kept_by_its_wildcard_holder() -> None:
    cl = StaticCluster()
    cl.set_connector("c1", 1)
    cl.join("w1")
    cl.join("s1", ("other",))
    both = ConnectAssignment(3, 0, "w1", "u", 1, ("c1",), (ConnectorTaskId("c1", 0),))
    cl.members["w1"] = both
    cl.members["s1"] = both
    # both report c1 and c1-0 (an undelivered round): s1 loses them (step 5), w1 keeps them
    res = cl.round()
    assert cl.last_decoded["s1"].revoked_connectors == ("c1",)
    assert cl.last_decoded["w1"].revoked_connectors == ()
    assert cl.holds("w1") == (["c1"], ["c1-0"]) and res.static_placements == []


def test_static_job_held_twice_is_revoked_from_both_then_placed_once() -> None:
    cl = StaticCluster()
    cl.set_connector("c1", 0)
    cl.join("s2", ("c1",))
    cl.join("s1", ("c1",))
    a = ConnectAssignment(3, 0, "s2", "u", 1, ("c1",))
    cl.members["s1"] = a
    cl.members["s2"] = a
    cl.round()
    assert all(d.revoked_connectors == ("c1",) for d in cl.last_decoded.values())
    res = cl.round()
    assert res.static_placements[0].worker == "s1"  # first in member-id order
    assert cl.holder("c1") == ["s1"]


def test_duplicate_claims_are_assigned_once_by_the_tie_rule() -> None:
    """(c) a connector and a task both named by several workers: one holder each, the
    naming worker whose id sorts first in Java String order (not JoinGroup order)."""
    cl = StaticCluster()
    cl.set_connector("c1", 2)
    cl.join("sB", ("c1",), ("c1-0", "c1-1"))
    cl.join("sA", ("c1",), ("c1-0",))
    cl.join("s\u00e9", ("c1",), ("c1-1",))
    cl.join("w")
    res = cl.round()
    assert [(p.job, p.worker, p.candidates) for p in res.static_placements] == [
        ("c1", "sA", ("sA", "sB", "s\u00e9")),
        ("c1-0", "sA", ("sA", "sB")),
        ("c1-1", "sB", ("sB", "s\u00e9")),
    ]
    assert cl.holds("w") == ([], [])
    cl.check_complete()
    # the holder stays put when a lower id naming the job joins later
    cl.join("s0", ("c1",))
    cl.round()
    assert cl.holder("c1") == ["sA"]


def test_static_job_falls_back_to_wildcard_workers_and_back() -> None:
    """(b) with wildcard workers: the job migrates to them when its static worker goes
    (at once: the lost-work delay covers wildcard workers only) and back when it returns."""
    cl = StaticCluster(max_delay_ms=60_000)
    cl.set_connector("c1", 2)
    cl.set_connector("c2", 2)
    cl.join("w1")
    cl.join("w2")
    cl.join("s1", ("c1",), ("c1-0", "c1-1"))
    cl.settle()
    assert cl.holds("s1") == (["c1"], ["c1-0", "c1-1"])
    cl.leave("s1")
    res = cl.round()
    assert res.delay_ms == 0 and res.unassigned_static_jobs == ([], [])
    placed = {x for m in ("w1", "w2") for x in (*cl.holds(m)[0], *cl.holds(m)[1]) if "c1" in x}
    assert placed == {"c1", "c1-0", "c1-1"}
    cl.check_complete()
    cl.join("s1", ("c1",), ("c1-0", "c1-1"))
    cl.settle()
    assert cl.holds("s1") == (["c1"], ["c1-0", "c1-1"])
    cl.check_complete()


def test_static_job_without_any_eligible_worker_is_reported() -> None:
    """(b) without wildcard workers the job stays unassigned and is reported until a
    worker naming it comes back."""
    cl = StaticCluster(max_delay_ms=60_000)
    cl.set_connector("c1", 1)
    cl.set_connector("c2", 1)
    cl.join("s1", ("c1",), ("c1-0",))
    cl.join("s2", ("c2",), ("c2-0",))
    cl.settle()
    assert cl.last is not None and cl.last.unassigned_static_jobs == ([], [])
    cl.leave("s2")
    res = cl.round()
    assert res.unassigned_static_jobs == (["c2"], [("c2", 0)]) and res.delay_ms == 0
    assert cl.holds("s1") == (["c1"], ["c1-0"])
    cl.check_complete()
    res = cl.round()
    assert res.unassigned_static_jobs == (["c2"], [("c2", 0)])
    cl.join("s3", ("c2",), ("c2-0",))
    res = cl.round()
    assert res.unassigned_static_jobs == ([], []) and cl.holds("s3") == (["c2"], ["c2-0"])
    cl.check_complete()


def test_wildcard_worker_departure_still_uses_the_delay() -> None:
    cl = StaticCluster(max_delay_ms=10_000)
    cl.set_connector("c1", 4)
    cl.join("s1", (), ("c1-0",))
    cl.join("w1")
    cl.join("w2")
    cl.settle()
    cl.leave("w2")
    res = cl.round()
    assert res.delay_ms == 10_000
    assert cl.last_decoded["s1"].delay_ms == 10_000  # the delay is the same for everyone
    cl.now += 10_000
    cl.round()
    cl.settle()
    cl.check_complete()


def test_under_sessioned_static_claims_do_not_exist() -> None:
    """The KIP's mixed cluster: the group elected ``sessioned``, the subscriptions are v2,
    every worker is wildcard, and the result is the incremental assignor's."""
    s = StaticCluster(protocol=SESSIONED)
    i = StaticCluster(protocol=SESSIONED, assignor=IncrementalCooperativeAssignor(0))
    for cl in (s, i):
        cl.set_connector("c1", 3)
        cl.join("w1", ("c1",))
        cl.join("w2")
    a, b = s.round(), i.round()
    assert a.assignments == b.assignments and a.static_workers == []


# -------------------------------------------------------- (a) no static workers = sessioned


def _twins(max_delay_ms: int) -> tuple[StaticCluster, StaticCluster]:
    return (
        StaticCluster(max_delay_ms),
        StaticCluster(protocol=SESSIONED, assignor=IncrementalCooperativeAssignor(max_delay_ms)),
    )


def _same(st: StaticCluster, ss: StaticCluster) -> None:
    a, b = st.round(), ss.round()
    assert list(a.assignments) == list(b.assignments)
    for m in a.assignments:
        assert a.assignments[m][:2] == b"\x00\x03" and b.assignments[m][:2] == b"\x00\x02"
        assert _body(a.assignments[m]) == _body(b.assignments[m]), m
    assert a.delay_ms == b.delay_ms
    assert a.static_workers == [] and a.static_placements == []


SEQUENCES = {
    "initial-join-leave-expiry": [
        ("conn", "c1", 4), ("conn", "c2", 4), ("join", "w1"), ("join", "w2"), ("join", "w3"),
        ("round",), ("round",), ("join", "w4"), ("round",), ("round",), ("round",),
        ("leave", "w2"), ("round",), ("time", 150), ("round",), ("join", "w5"), ("round",),
        ("time", 200), ("round",), ("round",), ("round",),
    ],
    "returns-during-countdown": [
        ("conn", "c1", 6), ("join", "w1"), ("join", "w2"), ("round",), ("round",),
        ("leave", "w1"), ("round",), ("time", 100), ("join", "w1"), ("round",),
        ("time", 300), ("round",), ("round",),
    ],
    "connectors-added-and-removed": [
        ("join", "w1"), ("join", "w2"), ("round",), ("conn", "a", 3), ("round",),
        ("conn", "b", 5), ("round",), ("join", "w3"), ("round",), ("round",),
        ("conn", "b", 2), ("round",), ("drop", "a"), ("round",), ("round",),
    ],
    "successive-revocations-backoff": [
        ("conn", "c1", 4), ("conn", "c2", 4), ("conn", "c3", 4), ("join", "w1"), ("round",),
        ("join", "w2"), ("round",), ("join", "w3"), ("round",), ("time", 40), ("round",),
        ("join", "w4"), ("round",), ("round",), ("time", 2000), ("round",), ("round",),
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", list(SEQUENCES))
@pytest.mark.parametrize("max_delay_ms", [0, 1, 300])
def test_no_static_workers_assigns_exactly_as_sessioned(name: str, max_delay_ms: int) -> None:
    st, ss = _twins(max_delay_ms)
    for step in SEQUENCES[name]:
        for cl in (st, ss):
            match step:
                case ("conn", c, n):
                    cl.set_connector(c, n)
                case ("drop", c):
                    cl.remove_connector(c)
                case ("join", m):
                    cl.join(m)
                case ("leave", m):
                    cl.leave(m)
                case ("time", dt):
                    cl.now += dt
        if step == ("round",):
            _same(st, ss)


FULL = load_vectors("connect_assignor_sequences_examples.json")["sequences_incremental_core"]


@pytest.mark.parametrize("seq", FULL, ids=[s["name"] for s in FULL])
def test_no_static_workers_reproduces_kafka_core_sequences(seq: dict) -> None:
    """Kafka's own IncrementalCooperativeAssignorTest rounds, through the static core."""
    assignor = StaticAssignor(seq["max_delay_ms"])
    state: dict[str, tuple[list, list]] = {}
    for rnd in seq["rounds"]:
        state = {m: state.get(m, ([], [])) for m in rnd["members"]}
        snap = ConfigSnapshot(0, rnd["configured_connectors"])
        res = assignor.perform_task_assignment(
            snap, rnd["generation"] - 1, rnd["generation"], state, {}, rnd["time_ms"]
        )
        for w, exp in rnd["workers"].items():
            assert res.newly_assigned_connectors[w] == exp["assigned_connectors"]
            assert [list(t) for t in res.newly_assigned_tasks[w]] == exp["assigned_tasks"]
            assert res.newly_revoked_connectors[w] == exp["revoked_connectors"]
            assert [list(t) for t in res.newly_revoked_tasks[w]] == exp["revoked_tasks"]
            conns, tasks = state[w]
            conns = [c for c in conns if c not in res.newly_revoked_connectors[w]]
            tasks = [t for t in tasks if t not in res.newly_revoked_tasks[w]]
            state[w] = (
                conns + res.newly_assigned_connectors[w],
                tasks + res.newly_assigned_tasks[w],
            )
        assert assignor.delay_ms == rnd["delay"]
