"""``ConstrainedPrioritySet`` against real ``java.util.PriorityQueue`` / ``HashSet`` histories.

Vectors: ``tests/vectors/constrained_priority_set.json`` from
``tests/vectors/gen/ConstrainedPrioritySetReplay.java`` (JDK 17): offers, polls under random
constraints, and weight changes of clients while they sit in the heap; every poll's answer and
the final heap array are compared.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jdk_priority_oracle import OracleConstrainedPrioritySet

from members.assignors.streams import ProcessId, TaskId
from members.assignors.streams._load_set import ReportedLoadSet
from members.assignors.streams._queues import ConstrainedPrioritySet

_CASES = json.loads(
    (Path(__file__).parents[3] / "vectors" / "constrained_priority_set.json").read_text()
)["cases"]
_TASK = TaskId(0, 0)


def test_vectors_cover_stale_heaps_and_rejections() -> None:
    assert len(_CASES) >= 100
    ops = [op[0] for case in _CASES for op in case["ops"]]
    assert ops.count("poll") >= 300 and ops.count("weight") >= 300


@pytest.mark.parametrize("index", range(len(_CASES)))
def test_matches_jdk_priority_queue(index: int) -> None:
    weights: dict[ProcessId, float] = {}
    allowed: set[ProcessId] = set()
    s = ConstrainedPrioritySet(lambda c, _t: c in allowed, weights.__getitem__)
    for op in _CASES[index]["ops"]:
        if op[0] == "weight":
            weights[ProcessId.of(op[1])] = op[2]
        elif op[0] == "offer":
            pid = ProcessId.of(op[1])
            weights.setdefault(pid, 0.0)
            s.offer(pid)
        else:
            allowed.clear()
            allowed.update(ProcessId.of(x) for x in op[1])
            got = s.poll(_TASK)
            assert (None if got is None else got.label) == op[2]
    assert [p.label for p in s.heap()] == _CASES[index]["heap"]


def _int_sort_key(
    weights: dict[ProcessId, float], universe: list[ProcessId], values: list[float]
) -> object:
    # (weight, ProcessId) as one int, as TaskMovement's load key is
    rank = {p: i for i, p in enumerate(sorted(universe))}
    value_rank = {v: i for i, v in enumerate(sorted(set(values)))}
    return lambda c: value_rank[weights[c]] * len(universe) + rank[c]


@pytest.mark.parametrize("index", range(len(_CASES)))
def test_reported_load_set_matches_jdk_priority_queue(index: int) -> None:
    # the TaskMovement variant: one int key per client, every weight change reported
    ops = _CASES[index]["ops"]
    weights: dict[ProcessId, float] = {}
    labels = {op[1] for op in ops if op[0] != "poll"}
    labels |= {x for op in ops if op[0] == "poll" for x in op[1]}
    universe = [ProcessId.of(label) for label in labels]
    values = [0.0] + [float(op[2]) for op in ops if op[0] == "weight"]
    allowed: set[ProcessId] = set()
    s = ReportedLoadSet(
        lambda c, _t: c in allowed,
        _int_sort_key(weights, universe, values),  # type: ignore[arg-type]
        lambda _t: allowed,
    )
    for op in ops:
        if op[0] == "weight":
            pid = ProcessId.of(op[1])
            weights[pid] = op[2]
            s.load_changed(pid)
        elif op[0] == "offer":
            pid = ProcessId.of(op[1])
            weights.setdefault(pid, 0.0)
            s.offer(pid)
        else:
            allowed.clear()
            allowed.update(ProcessId.of(x) for x in op[1])
            got = s.poll(_TASK)
            assert (None if got is None else got.label) == op[2]
    assert [p.label for p in s.heap()] == _CASES[index]["heap"]


_op = st.one_of(
    st.tuples(st.just("weight"), st.integers(0, 9), st.integers(0, 6)),
    st.tuples(st.just("offer"), st.integers(0, 9), st.just(0)),
    st.tuples(st.just("poll"), st.integers(0, 3), st.integers(0, 1)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_op, max_size=60), st.lists(st.sets(st.integers(0, 9)), min_size=4, max_size=4))
def test_candidates_hint_never_changes_a_result(
    ops: list[tuple[str, int, int]], caught_up_ids: list[set[int]]
) -> None:
    # the hint only skips replaying polls that no client satisfies; heaps stay slot-identical,
    # stale ones (weights changed in place) included
    pids = [ProcessId.of(f"PID_{i * 977 + 1}") for i in range(10)]
    weights = {p: 0.0 for p in pids}
    caught = {TaskId(0, t): {pids[i] for i in ids} for t, ids in enumerate(caught_up_ids)}
    plain = ConstrainedPrioritySet(lambda c, t: c in caught[t], weights.__getitem__)
    hinted = ConstrainedPrioritySet(
        lambda c, t: c in caught[t], weights.__getitem__, candidates=caught.__getitem__
    )
    for kind, a, b in ops:
        if kind == "weight":
            weights[pids[a]] = b / 2
        elif kind == "offer":
            plain.offer(pids[a])
            hinted.offer(pids[a])
        else:
            task = TaskId(0, a)
            extra = None if b == 0 else (lambda c: c.key[2] % 2 == 1)
            assert plain.poll(task, extra) == hinted.poll(task, extra)
        assert plain.heap() == hinted.heap()


_fast_op = st.one_of(
    st.tuples(st.just("weight"), st.integers(0, 29), st.integers(0, 8)),
    st.tuples(st.just("offer"), st.integers(0, 29), st.just(0)),
    st.tuples(st.just("poll"), st.integers(0, 3), st.integers(0, 1)),
)


@pytest.mark.parametrize(
    ("cache_weights", "offer_all_first"),
    [(False, False), (True, False), ("reported", False), ("reported", True)],
)
@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(_fast_op, max_size=120),
    caught_up_ids=st.lists(st.sets(st.integers(0, 29)), min_size=4, max_size=4),
    n_clients=st.integers(1, 30),
)
def test_fast_paths_match_straightforward_jdk_replay(
    cache_weights: bool | str,
    offer_all_first: bool,
    ops: list[tuple[str, int, int]],
    caught_up_ids: list[set[int]],
    n_clients: int,
) -> None:
    # every shortcut (cached weights reported by load_changed, candidates hint, cached HashSet
    # bucket masks) against a replay that reads the weight on every comparison; weights
    # change while clients sit in the heap, so heaps go stale exactly as in Kafka
    labels = [f"PID_{i * 977 + 1}" for i in range(n_clients - n_clients // 3)]
    labels += [f"{i:08x}-0000-4000-8000-{i * 31:012x}" for i in range(n_clients // 3)]
    pids = [ProcessId.of(label) for label in labels]
    weights = {p: 0.0 for p in pids}
    caught = {
        TaskId(0, t): {pids[i % n_clients] for i in ids} for t, ids in enumerate(caught_up_ids)
    }
    oracle = OracleConstrainedPrioritySet(lambda c, t: c in caught[t], weights.__getitem__)
    fast: ConstrainedPrioritySet
    if cache_weights == "reported":  # TaskMovement's set: int keys, changes reported
        key = _int_sort_key(weights, pids, [b / 4 for b in range(9)])
        fast = ReportedLoadSet(lambda c, t: c in caught[t], key, caught.__getitem__)  # type: ignore[arg-type]
    else:
        fast = ConstrainedPrioritySet(
            lambda c, t: c in caught[t],
            weights.__getitem__,
            candidates=caught.__getitem__,
            cache_weights=bool(cache_weights),
        )
    if offer_all_first:  # as TaskMovement does: whole-set polls use the cached bucket order
        for pid in pids:
            oracle.offer(pid)
            fast.offer(pid)
    for kind, a, b in ops:
        pid = pids[a % n_clients]
        if kind == "weight":
            weights[pid] = b / 4
            fast.load_changed(pid)
            if offer_all_first:  # and re-offered, as TaskMovement does after each movement
                oracle.offer(pid)
                fast.offer(pid)
        elif kind == "offer":
            oracle.offer(pid)
            fast.offer(pid)
        else:
            task = TaskId(0, a)
            extra = None if b == 0 else (lambda c: c.java_hash % 2 == 1)
            assert fast.poll(task, extra) == oracle.poll(task, extra)
        assert fast.heap() == oracle.queue


_movement_op = st.one_of(
    st.tuples(st.just("move"), st.integers(0, 29), st.integers(0, 8)),
    st.tuples(st.just("poll"), st.integers(0, 3), st.just(0)),
)


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(_movement_op, min_size=10, max_size=60),
    caught_up_ids=st.lists(st.sets(st.integers(0, 29), max_size=3), min_size=4, max_size=4),
    n_clients=st.integers(2, 30),
)
def test_reported_load_set_under_task_movement_pattern(
    ops: list[tuple[str, int, int]], caught_up_ids: list[set[int]], n_clients: int
) -> None:
    # TaskMovement's use: every client offered first, then each movement changes a client's
    # load and re-offers it; polls no client satisfies reorder the whole set from the cached
    # HashSet bucket order (bucket collisions sorted by the current keys)
    labels = [f"PID_{i * 977 + 1}" for i in range(n_clients - n_clients // 3)]
    labels += [f"{i:08x}-0000-4000-8000-{i * 31:012x}" for i in range(n_clients // 3)]
    pids = [ProcessId.of(label) for label in labels]
    weights = {p: 0.0 for p in pids}
    caught = {
        TaskId(0, t): {pids[i % n_clients] for i in ids} for t, ids in enumerate(caught_up_ids)
    }
    oracle = OracleConstrainedPrioritySet(lambda c, t: c in caught[t], weights.__getitem__)
    key = _int_sort_key(weights, pids, [float(b) for b in range(9)])
    fast = ReportedLoadSet(lambda c, t: c in caught[t], key, caught.__getitem__)  # type: ignore[arg-type]
    for pid in pids:
        oracle.offer(pid)
        fast.offer(pid)
    for kind, a, b in ops:
        if kind == "move":
            pid = pids[a % n_clients]
            weights[pid] = float(b)
            fast.load_changed(pid)
            oracle.offer(pid)
            fast.offer(pid)
        else:
            assert fast.poll(TaskId(0, a)) == oracle.poll(TaskId(0, a))
        assert fast.heap() == oracle.queue
