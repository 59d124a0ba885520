"""``unexplained_removal`` catches a client that stops heartbeating while an answer is missing
(a planted bug): under a loss of the coordinator's answers a correct worker keeps
heartbeating until its own session timer runs out, the buggy one stops at once."""

from __future__ import annotations

from scenarios.input.loader import loads_scenario
from scenarios.sim.runner import simulate

from .planted import by_name

SCENARIO = """
name = "answers-lost"
seed = 1
settle_ms = 0
[cluster]
size = 3
[cluster.config]
"connect.protocol" = "sessioned"
[network]
latency_ms = 1
[workload.generate]
count = 3
tasks = 3
prefix = "connector"
[[timeline]]
at_ms = {at}
action = "loss"
member = "w2"
direction = "from_coordinator"
probability = 1.0
duration_ms = 30000
"""

STARTS = range(120_000, 123_000, 250)  # where the loss begins within a heartbeat interval


def _removals(at: int) -> list[str]:
    result = simulate(loads_scenario(SCENARIO.format(at=at), "answers-lost.toml"), 1)
    return [
        r["invariant"]
        for r in result.records
        if r["kind"] == "violation" and r["invariant"] == "unexplained_removal"
    ]


def test_a_correct_worker_is_never_flagged() -> None:
    assert not any(_removals(at) for at in STARTS)


def test_a_worker_that_waits_for_each_answer_is_caught() -> None:
    with by_name("client-one-heartbeat-in-flight").applied():
        assert any(_removals(at) for at in STARTS)
