"""Hypothesis versions of KIP-987's stated properties for the ``static`` assignor.

* (a) A ``static`` group without static workers assigns exactly as ``sessioned`` does: after
  any sequence of joins, leaves, time steps and connector changes, every round's assignment
  bytes are equal apart from the INT16 header (3 vs 2), and the delays are equal.
* (d) In any group of static and wildcard workers, no round assigns a job that it revokes, no
  job is held twice (both checked by :class:`StaticCluster` in every round), and once the
  group settles every configured job is on exactly one member: a worker naming it when one is
  live, else a wildcard worker; with neither it stays unassigned and is reported (b).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_static import StaticCluster, _twins

WORKERS = [f"w{i}" for i in range(6)]
CONNECTORS = ["a", "b", "c", "d"]

plain_ops = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.sampled_from(WORKERS)),
        st.tuples(st.just("leave"), st.sampled_from(WORKERS)),
        st.tuples(st.just("conn"), st.sampled_from(CONNECTORS), st.integers(0, 5)),
        st.tuples(st.just("drop"), st.sampled_from(CONNECTORS)),
        st.tuples(st.just("time"), st.sampled_from([1, 40, 150, 400])),
        st.just(("round",)),
    ),
    max_size=25,
)


@settings(deadline=None)
@given(st.sampled_from([0, 1, 300]), plain_ops)
def test_no_static_workers_is_sessioned(max_delay_ms: int, ops: list[tuple]) -> None:
    static, sessioned = _twins(max_delay_ms)
    for cl in (static, sessioned):
        cl.join("w0")
        cl.set_connector("a", 2)
    for op in [*ops, ("round",)]:
        for cl in (static, sessioned):
            match op:
                case ("join", m) if m not in cl.members:
                    cl.join(m)
                case ("leave", m) if m in cl.members and len(cl.members) > 1:
                    cl.leave(m)
                case ("conn", c, n):
                    cl.set_connector(c, n)
                case ("drop", c):
                    cl.remove_connector(c)
                case ("time", dt):
                    cl.now += dt
        if op == ("round",):
            a, b = static.round(), sessioned.round()
            assert a.delay_ms == b.delay_ms
            assert {m: x[2:] for m, x in a.assignments.items()} == {
                m: x[2:] for m, x in b.assignments.items()
            }
            assert all(x[:2] == b"\x00\x03" for x in a.assignments.values())


JOBS = [*CONNECTORS, "z"] + [f"{c}-{i}" for c in [*CONNECTORS, "z"] for i in range(4)]
claims = st.lists(st.sampled_from(JOBS), max_size=4)

mixed_ops = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.sampled_from(WORKERS), claims),
        st.tuples(st.just("leave"), st.sampled_from(WORKERS)),
        st.tuples(st.just("conn"), st.sampled_from(CONNECTORS), st.integers(0, 4)),
        st.tuples(st.just("drop"), st.sampled_from(CONNECTORS)),
        st.tuples(st.just("time"), st.sampled_from([1, 100, 1000])),
        st.just(("round",)),
    ),
    max_size=20,
)


@settings(deadline=None)
@given(st.sampled_from([0, 500]), mixed_ops)
def test_static_groups_stay_safe_and_settle_complete(max_delay_ms: int, ops: list) -> None:
    cl = StaticCluster(max_delay_ms)
    cl.join("w0")
    cl.set_connector("a", 2)
    for op in ops:
        match op:
            case ("join", m, named) if m not in cl.members:
                conns = tuple(j for j in named if "-" not in j)
                tasks = tuple(j for j in named if "-" in j)
                cl.join(m, conns, tasks)
            case ("leave", m) if m in cl.members and len(cl.members) > 1:
                cl.leave(m)
            case ("conn", c, n):
                cl.set_connector(c, n)
            case ("drop", c):
                cl.remove_connector(c)
            case ("time", dt):
                cl.now += dt
            case ("round",):
                cl.round()
    cl.settle(limit=20)
    cl.check_complete()
