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

from members.assignors.streams import ProcessId, TaskId
from members.assignors.streams._queues import ConstrainedPrioritySet

_CASES = json.loads(
    (Path(__file__).parents[1] / "vectors" / "constrained_priority_set.json").read_text()
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
