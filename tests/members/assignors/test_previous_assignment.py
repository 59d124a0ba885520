"""The incremental leader's ``previous_assignment`` after each round (the end of
``IncrementalCooperativeAssignor#performTaskAssignment``): what every member holds after the
round, plus lost items still waiting for their worker. The fast paths derive it from what was
dealt instead of from every member's list."""

from __future__ import annotations

from members.assignors import ConfigSnapshot, IncrementalCooperativeAssignor

Held = dict[str, tuple[list[str], list[tuple[str, int]]]]


def _round(
    assignor: IncrementalCooperativeAssignor, snap: ConfigSnapshot, held: Held, gen: int
) -> Held:
    res = assignor.perform_task_assignment(snap, gen - 1, gen, held, now_ms=0)
    return {w: (res.all_assigned_connectors[w], res.all_assigned_tasks[w]) for w in held}


def _union(held: Held) -> tuple[list[str], list[tuple[str, int]]]:
    conns = sorted({c for cs, _ in held.values() for c in cs})
    tasks = sorted({t for _, ts in held.values() for t in ts})
    return conns, tasks


def test_initial_round_remembers_everything_dealt() -> None:
    snap = ConfigSnapshot(1, {"a": 3, "b": 2})
    a = IncrementalCooperativeAssignor(0)
    held = _round(a, snap, {"w1": ([], []), "w2": ([], [])}, 1)
    assert a.previous_assignment == _union(held)
    assert a.previous_assignment[1] == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]


def test_a_new_connector_dealt_to_a_settled_group_is_remembered() -> None:
    a = IncrementalCooperativeAssignor(0)
    held = _round(a, ConfigSnapshot(1, {"a": 4}), {"w1": ([], []), "w2": ([], [])}, 1)
    held = _round(a, ConfigSnapshot(2, {"a": 4, "new": 2}), held, 2)
    assert "new" in a.previous_assignment[0]
    assert {("new", 0), ("new", 1)} <= set(a.previous_assignment[1])
    assert a.previous_assignment == _union(held)


def test_work_of_a_worker_that_left_stays_remembered_while_delayed() -> None:
    snap = ConfigSnapshot(1, {"a": 4})
    a = IncrementalCooperativeAssignor(60_000)
    held = _round(a, snap, {"w1": ([], []), "w2": ([], [])}, 1)
    gone = held.pop("w2")
    _round(a, snap, held, 2)  # w2's work is lost; the leader waits for it
    assert a.delay_ms > 0
    assert set(a.previous_assignment[1]) == {("a", n) for n in range(4)}
    assert set(gone[1]) <= set(a.previous_assignment[1])
