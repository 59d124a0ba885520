"""Hypothesis properties of the incremental cooperative assignor, driven through
``perform_assignment`` with real metadata bytes and the member-side merge.

* With ``scheduled.rebalance.max.delay.ms = 0``, after any sequence of joins, leaves and
  connector changes, rebalancing until a round has no revocation leaves every configured item
  on exactly one worker with max − min ≤ 1 (connectors and tasks separately).
* In no round is an item assigned to one worker while it is revoked from another.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from members.assignors import ConfigSnapshot, IncrementalCooperativeAssignor
from protocol.connect import ConnectAssignment, ConnectProtocol, WorkerSubscription
from protocol.connect_codec import decode_assignment, encode_subscription

PROTO = ConnectProtocol.SESSIONED
WORKERS = [f"worker{i}" for i in range(8)]
CONNECTORS = [f"conn{i}" for i in range(6)]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.sampled_from(WORKERS)),
        st.tuples(st.just("leave"), st.sampled_from(WORKERS)),
        st.tuples(st.just("set_connector"), st.sampled_from(CONNECTORS), st.integers(0, 7)),
        st.tuples(st.just("remove_connector"), st.sampled_from(CONNECTORS)),
    ),
    max_size=12,
)


class Cluster:
    def __init__(self, max_delay: int) -> None:
        self.assignor = IncrementalCooperativeAssignor(max_delay)
        self.members: dict[str, ConnectAssignment | None] = {"worker0": None}
        self.connectors: dict[str, int] = {"conn0": 3}
        self.offset = 1
        self.generation = 0
        self.now = 0

    def round(self) -> bool:
        """One rebalance; returns whether anything was revoked."""
        self.generation += 1
        leader = next(iter(self.members))
        md = [
            (
                m,
                encode_subscription(
                    WorkerSubscription(PROTO.version, f"http://{m}", self.offset, a)
                ),
            )
            for m, a in self.members.items()
        ]
        snap = ConfigSnapshot(self.offset, dict(self.connectors))
        res = self.assignor.perform_assignment(
            leader_id=leader,
            protocol=PROTO,
            members=md,
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=self.generation - 1,
            generation=self.generation,
            now_ms=self.now,
        )
        assigned_c, assigned_t, revoked_c, revoked_t = set(), set(), set(), set()
        for m, data in res.assignments.items():
            dec = decode_assignment(data)
            assert dec == res.decoded[m]
            assigned_c.update(dec.connectors)
            assigned_t.update(dec.tasks)
            revoked_c.update(dec.revoked_connectors)
            revoked_t.update(dec.revoked_tasks)
            old = self.members[m]
            if old is None:
                self.members[m] = dec
            else:
                rc, rt = set(dec.revoked_connectors), set(dec.revoked_tasks)
                self.members[m] = ConnectAssignment(
                    dec.version,
                    0,
                    dec.leader,
                    dec.leader_url,
                    dec.config_offset,
                    dec.connectors + tuple(c for c in old.connectors if c not in rc),
                    dec.tasks + tuple(t for t in old.tasks if t not in rt),
                )
        assert not (assigned_c & revoked_c), "connector assigned and revoked in one round"
        assert not (assigned_t & revoked_t), "task assigned and revoked in one round"
        self.now += res.delay_ms
        return bool(revoked_c or revoked_t)

    def apply(self, op: tuple) -> None:
        if op[0] == "join":
            self.members.setdefault(op[1], None)
        elif op[0] == "leave":
            if len(self.members) > 1:
                self.members.pop(op[1], None)
        elif op[0] == "set_connector":
            self.connectors[op[1]] = op[2]
            self.offset += 1
        else:
            if self.connectors.pop(op[1], None) is not None:
                self.offset += 1

    def check_balanced_and_complete(self) -> None:
        conns = [list(a.connectors) if a else [] for a in self.members.values()]
        tasks = [list(a.tasks) if a else [] for a in self.members.values()]
        held_c = [c for cs in conns for c in cs]
        held_t = [(t.connector, t.task) for ts in tasks for t in ts]
        assert sorted(held_c) == sorted(self.connectors)
        configured = sorted((c, i) for c, n in self.connectors.items() for i in range(n))
        assert sorted(held_t) == configured
        assert max(map(len, conns)) - min(map(len, conns)) <= 1
        assert max(map(len, tasks)) - min(map(len, tasks)) <= 1


@given(ops)
def test_converges_with_max_delay_zero(sequence) -> None:
    cluster = Cluster(max_delay=0)
    cluster.round()
    for op in sequence:
        cluster.apply(op)
        cluster.round()
    for _ in range(10):
        if not cluster.round():
            break
    else:
        raise AssertionError("still revoking after 10 follow-up rounds")
    cluster.check_balanced_and_complete()


@given(ops, st.sampled_from([1, 40, 300_000]))
def test_never_assigned_and_revoked_in_one_round(sequence, max_delay) -> None:
    cluster = Cluster(max_delay=max_delay)
    cluster.round()
    for op in sequence:
        cluster.apply(op)
        cluster.round()
    for _ in range(4):
        cluster.round()
