"""A consumer group's partition downtime and time to converge (scenarios/check/consumer_summary.py),
on small logs whose figures are worked out by hand, and what ``groupsim chaos --kind consumer``
and ``groupsim run`` make of them."""

from __future__ import annotations

from typing import Any

from scenarios import kinds
from scenarios.check.consumer_summary import partition_downtime, summarize_consumers

#: the fields a kind's records need that these tests do not vary (complete records: the
#: summary decodes them into their Structs)
_REQUIRED: dict[str, dict[str, Any]] = {
    "run_start": {"log_version": 1, "scenario": "t", "seed": 0, "workers": [], "connectors": {}},
    "member_start": {"config": {}},
    "partitions_revoked": {"reason": "rebalance"},
}


def _rec(t: int, kind: str, member: str | None = None, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"t_ms": t, "seq": 0, "kind": kind, **_REQUIRED.get(kind, {})}
    record.update(fields)
    if member is not None:
        record["member"] = member
    return record


def _assignment(t: int, member: str, owned: list[str], generation: int) -> dict[str, Any]:
    return _rec(
        t,
        "consumer_assignment",
        member,
        member_id=f"{member}-1",
        generation=generation,
        protocol="range",
        rebalance_protocol="EAGER",
        leader_id="c1-1",
        assigned=owned,
        added=owned,
        revoked=[],
        owned=owned,
    )


def _eager_crash_log() -> list[dict[str, Any]]:
    """Two consumers of t (2 partitions). c2 crashes at 10,000 ms; c1's eager rebalance
    revokes t-0 at 12,000 and assigns t-0 and t-1 at 12,500; t-1 is back at 12,500 too.

    By hand: t-0 is down 12,000 → 12,500 (500 ms), t-1 10,000 → 12,500 (2,500 ms); total
    3,000, worst 2,500. The last step (the crash at 10,000, no duration) ends at 10,000 and
    the last change of owners is at 12,500: converged 2,500 ms after it.
    """
    return [
        _rec(0, "run_start", topics={"t": 2}),
        _rec(0, "member_start", "c1"),
        _rec(0, "member_start", "c2"),
        _assignment(3_000, "c1", ["t-0"], 1),
        _assignment(3_000, "c2", ["t-1"], 1),
        _rec(10_000, "step", action="crash", member="c2"),
        _rec(10_000, "member_crash", "c2"),
        _rec(12_000, "partitions_revoked", "c1", generation=1, partitions=["t-0"]),
        _assignment(12_500, "c1", ["t-0", "t-1"], 2),
        _rec(20_000, "run_end"),
    ]


def test_partition_downtime_counts_from_loss_to_the_next_owner() -> None:
    replay = partition_downtime(_eager_crash_log())
    assert replay.down_ms == {"t-0": 500, "t-1": 2_500}
    assert replay.last_change_ms == 12_500
    assert replay.last_step_end_ms == 10_000


def test_the_consumer_summary_carries_the_figures() -> None:
    details = summarize_consumers(_eager_crash_log()).consumer
    assert details.partition_downtime_ms_total == 3_000
    assert details.partition_downtime_ms_max == 2_500
    assert details.time_to_converge_ms == 2_500


def test_the_first_assignment_and_an_unwanted_topic_are_not_downtime() -> None:
    """t-0 waits 3,000 ms for its first owner (not counted). c1 subscribes to u only at
    5,000: nobody wants t any more, so its revocation at 6,000 opens no downtime; u-0 never
    had an owner, so it counts nothing either."""
    log = [
        _rec(0, "run_start", topics={"t": 1, "u": 1}),
        _rec(0, "member_start", "c1"),
        _assignment(3_000, "c1", ["t-0"], 1),
        _rec(5_000, "subscription_changed", "c1", topics=["u"]),
        _rec(6_000, "partitions_revoked", "c1", generation=1, partitions=["t-0"]),
        _rec(9_000, "run_end"),
    ]
    assert partition_downtime(log).down_ms == {"t-0": 0}


def test_a_partition_unowned_at_the_end_counts_to_the_end_and_the_run_has_not_converged() -> None:
    """c1 is the only consumer; it crashes at 4,000 and never comes back: t-0 is down
    4,000 → 9,000 (5,000 ms). A crashed consumer still wants its topics."""
    log = [
        _rec(0, "run_start", topics={"t": 1}),
        _rec(0, "member_start", "c1"),
        _assignment(1_000, "c1", ["t-0"], 1),
        _rec(4_000, "member_crash", "c1"),
        _rec(9_000, "run_end"),
    ]
    summary = summarize_consumers(log)
    assert summary.consumer.partition_downtime_ms_total == 5_000
    # no consumer runs at the end: the liveness rule judges nothing
    assert summary.converged is True


def test_a_stopped_consumer_wants_nothing_any_more() -> None:
    """c1 stops cleanly at 4,000 (its partitions revoked first): nobody subscribes to t,
    so t-0's time without an owner is no downtime."""
    log = [
        _rec(0, "run_start", topics={"t": 1}),
        _rec(0, "member_start", "c1"),
        _assignment(1_000, "c1", ["t-0"], 1),
        _rec(4_000, "partitions_revoked", "c1", generation=1, partitions=["t-0"]),
        _rec(4_000, "member_stop", "c1"),
        _rec(9_000, "run_end"),
    ]
    assert partition_downtime(log).down_ms == {"t-0": 0}


def test_the_consumer_kind_headline_and_words() -> None:
    consumer = kinds.get("consumer")
    headline = consumer.headline(summarize_consumers(_eager_crash_log()))
    assert (headline.converged, headline.time_to_converge_ms) == (True, 2_500)
    assert (headline.downtime_total_ms, headline.downtime_max_ms) == (3_000, 2_500)
    assert consumer.words.downtime_of == "partition"
    assert kinds.get("connect").words.downtime_of == "task"
