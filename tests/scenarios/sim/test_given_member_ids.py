"""``simulate(..., member_ids=...)``: the coordinator hands out given member ids (a recorded
run's) instead of drawing them, and nothing else of the run's randomness changes."""

from __future__ import annotations

from typing import Any

from scenarios.input.library import load_any
from scenarios.sim.runner import simulate


def _ids(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in records:
        if r.get("kind") == "member_added":
            out.setdefault(r["member"], []).append(r["member_id"])
    return out


def test_given_member_ids_are_handed_out_in_order_then_drawn() -> None:
    """w1's first id is the given one and w2's its own drawn one, unchanged: the engine still
    draws every id (the run's random stream, and so its jitter, stay as they were). The
    given id changes the coordinator's member order (a ``HashMap`` of ids), so which member
    the leader's JoinGroup answer lists first."""
    loaded = load_any("worker-leaves-for-good")
    drawn = simulate(loaded, 1).records
    given_id = "w1-00000000-0000-4000-8000-000000000001"
    given = simulate(loaded, 1, member_ids={"w1": [given_id]}).records
    ids, base = _ids(given), _ids(drawn)
    assert ids["w1"] == [given_id]
    assert ids["w2"] == base["w2"] and ids["w3"] == base["w3"] and ids["w4"] == base["w4"]
    first = next(r for r in given if r.get("kind") == "generation")
    assert given_id in first["member_ids"]
