"""A Streams client's restoration in a simulated run: one restore stream per stream thread
(members.restore), the client's tasks spread over its threads."""

from __future__ import annotations

import pytest

from scenarios.input.streams import loads_streams_scenario
from scenarios.sim.runner import simulate


def _restore_ms(threads: int) -> dict[str, int]:
    text = f"""
kind = "streams"
name = "restore"
settle_ms = 60000
[config]
"num.stream.threads" = {threads}
"groupsim.restore.records.per.sec" = 10000
"groupsim.changelog.record.bytes" = 100
[[subtopologies]]
id = 0
partitions = 2
changelog_records = 10000
[[clients]]
name = "c"
process_id = "PID_1"
"""
    result = simulate(loads_streams_scenario(text, source="restore.toml"), 1)
    return {
        r["task"]: r["restore_ms"] for r in result.records if r["kind"] == "active_task_running"
    }


@pytest.mark.parametrize(
    ("threads", "expected"), [(1, {"0_0": 1000, "0_1": 2000}), (2, {"0_0": 1000, "0_1": 1000})]
)
def test_one_thread_restores_its_changelogs_one_after_the_other(
    threads: int, expected: dict[str, int]
) -> None:
    # two changelogs of 10,000 records (under one 10,485-record chunk) at 10,000 records/s per
    # thread: one thread restores 0_0 whole, then 0_1; two threads (one task each) at once
    got = _restore_ms(threads)
    assert {t: pytest.approx(ms, abs=5) for t, ms in expected.items()} == got
