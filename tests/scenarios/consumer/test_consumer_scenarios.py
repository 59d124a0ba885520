"""Consumer-group scenarios (``kind = "consumer"``): loading, running, ``groupsim run`` and
``groupsim check``, and the ownership rules on their logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from members.consumer import RebalanceProtocol
from scenarios.check.log_check import check_log, check_records
from scenarios.cli.main import app
from scenarios.input.consumer import loads_consumer_scenario
from scenarios.input.errors import ScenarioError
from scenarios.input.library import consumer_library_dir, load_any
from scenarios.sim.runner import simulate

HERE = Path(__file__).parent


def _run(name: str) -> Any:
    """A scenario of this folder, or else of the consumer library, at seed 1."""
    path = HERE / f"{name}.toml"
    return simulate(load_any(path if path.is_file() else name), 1)


def _of(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == kind]


def test_two_bounce_upgrade_ends_cooperative_with_no_violation() -> None:
    result = _run("kip-429-two-bounce-upgrade")
    assert result.failures == []
    assert not _of(result.records, "violation")
    assignments = _of(result.records, "consumer_assignment")
    # first bounce: range keeps winning the vote and every member is EAGER
    first = [a for a in assignments if a["t_ms"] < 110_000]
    assert {a["protocol"] for a in first} == {"range"}
    assert {a["rebalance_protocol"] for a in first} == {"EAGER"}
    last = assignments[-3:]
    assert {a["protocol"] for a in last} == {"cooperative-sticky"}
    assert {a["rebalance_protocol"] for a in last} == {RebalanceProtocol.COOPERATIVE.name}
    assert result.summary.consumer.final_protocol == "cooperative-sticky"
    owned = result.summary.consumer.owned
    assert sorted(p for parts in owned.values() for p in parts) == sorted(
        [f"orders-{p}" for p in range(6)] + [f"payments-{p}" for p in range(3)]
    )


def test_one_bounce_upgrade_kills_the_bounced_consumers() -> None:
    result = _run("kip-429-one-bounce-upgrade")
    assert result.failures == []
    fatal = _of(result.records, "member_fatal")
    # c1 dies twice (its supervisor's restart fails too), c2 once; c3 survives
    assert [(r["member"], r["error"]) for r in fatal] == [
        ("c1", "INCONSISTENT_GROUP_PROTOCOL"),
        ("c1", "INCONSISTENT_GROUP_PROTOCOL"),
        ("c2", "INCONSISTENT_GROUP_PROTOCOL"),
    ]
    generations = _of(result.records, "generation")
    # while a [range] member is in the group, range wins; c3 alone forms cooperative-sticky
    assert [(g["protocol"], sorted(g["members"])) for g in generations if g["protocol"]] == [
        ("range", ["c1", "c2", "c3"]),
        ("range", ["c2", "c3"]),
        ("range", ["c3"]),
        ("cooperative-sticky", ["c3"]),
        ("cooperative-sticky", ["c1", "c2", "c3"]),
        ("cooperative-sticky", ["c1", "c2", "c3"]),
    ]
    alone = next(a for a in _of(result.records, "consumer_assignment") if a["t_ms"] > 80_000)
    assert (alone["member"], len(alone["owned"])) == ("c3", 6)
    assert not _of(result.records, "violation")
    assert sorted(result.summary.consumer.owned) == ["c1", "c2", "c3"]


def test_one_bounce_from_the_default_mixes_eager_and_cooperative_members() -> None:
    """From Kafka's default [range, cooperative-sticky] one bounce is enough: the vote moves
    to cooperative-sticky at the first bounce, the un-bounced members stay EAGER."""
    result = _run("kip-429-one-bounce-from-default")
    assert result.failures == []
    by_generation: dict[int, dict[str, str]] = {}
    for a in _of(result.records, "consumer_assignment"):
        by_generation.setdefault(a["generation"], {})[a["member"]] = a["rebalance_protocol"]
    assert by_generation == {
        1: {"c1": "EAGER", "c2": "EAGER", "c3": "EAGER"},
        2: {"c1": "COOPERATIVE", "c2": "EAGER", "c3": "EAGER"},
        3: {"c1": "COOPERATIVE", "c2": "COOPERATIVE", "c3": "EAGER"},
        4: {"c1": "COOPERATIVE", "c2": "COOPERATIVE", "c3": "COOPERATIVE"},
    }
    protocols = [g["protocol"] for g in _of(result.records, "generation")]
    assert protocols == ["range", "cooperative-sticky", "cooperative-sticky", "cooperative-sticky"]
    # the eager members still revoke everything before each JoinGroup
    eager_revokes = [
        r["member"]
        for r in _of(result.records, "partitions_revoked")
        if r["reason"].startswith("eager rebalance")
    ]
    assert eager_revokes == ["c2", "c3", "c3"]
    assert not _of(result.records, "violation")


def _generations(result: Any) -> list[int]:
    return [g["generation"] for g in _of(result.records, "generation") if g["protocol"]]


def test_static_rolling_restart_within_the_session_costs_no_rebalance() -> None:
    result = _run("static-rolling-restart")
    assert result.failures == []
    assert _generations(result) == [1]
    replaced = _of(result.records, "member_replaced")
    assert [r["member"] for r in replaced] == ["c1", "c2", "c3"]
    # each new incarnation gets its predecessor's partitions back in generation 1
    first = {a["member"]: a["assigned"] for a in _of(result.records, "consumer_assignment")[:3]}
    again = {a["member"]: a["assigned"] for a in _of(result.records, "consumer_assignment")[3:]}
    assert again == first


def test_dynamic_rolling_restart_rebalances_at_every_bounce() -> None:
    result = _run("dynamic-rolling-restart")
    assert result.failures == []
    removed = _of(result.records, "member_removed")
    assert [(r["member"], r["reason"]) for r in removed] == [
        ("c1", "leave"),
        ("c2", "leave"),
        ("c3", "leave"),
    ]
    # per bounce: the leave, the join, the cooperative follow-up
    assert _generations(result) == list(range(1, 11))


def test_static_member_down_past_its_session_is_removed() -> None:
    result = _run("static-restart-beyond-session")
    assert result.failures == []
    removed = _of(result.records, "member_removed")
    assert [(r["member"], r["reason"]) for r in removed] == [("c2", "session_timeout")]
    assert [r["member"] for r in _of(result.records, "member_replaced")] == ["c1", "c3"]
    assert _generations(result) == [1, 2, 3, 4]


def test_a_poll_loop_stalled_past_max_poll_interval_leaves_the_group() -> None:
    """KIP-62: the heartbeat thread leaves after max.poll.interval.ms; the partitions are
    lost when poll() runs again (onJoinPrepare), and the consumer rejoins as a new member."""
    result = _run("slow-consumer-poll-timeout")
    assert result.failures == []
    stalls = _of(result.records, "poll_stall")
    assert [(r["member"], r["t_ms"], r["stall_ms"]) for r in stalls] == [
        ("c2", 20_000, 20_000),
        ("c3", 60_000, 90_000),
    ]
    [leave] = _of(result.records, "leave_group")
    assert (leave["member"], leave["t_ms"], leave["reason"]) == (
        "c3",
        120_000,
        "poll timeout expired",
    )
    [lost] = _of(result.records, "partitions_lost")
    assert (lost["member"], lost["t_ms"]) == ("c3", 150_000)
    # c2's 20 s stall changed nothing; c3 is back in the group's last generation
    removed = _of(result.records, "member_removed")
    assert [(r["member"], r["reason"]) for r in removed] == [("c3", "leave")]
    assert sorted(result.summary.consumer.owned) == ["c1", "c2", "c3"]
    assert result.summary.converged


def test_a_static_member_that_missed_a_rebalance_is_a_named_zombie() -> None:
    """KIP-345 + KIP-429: the kept static member's stale subscription claims nothing, so the
    leader hands its partitions out while it still consumes them (consumer-zombie)."""
    result = _run("static-member-cut-off-zombie")
    assert result.failures == []
    found = _of(result.records, "violation")
    assert {(v["invariant"], v.get("known_issue")) for v in found} == {
        ("cooperative_move_without_revocation", "consumer-zombie")
    }
    assert all("c1 did not join generation 2" in v["detail"] for v in found)
    # once it hears the coordinator again it loses them and the group settles
    assert [r["member"] for r in _of(result.records, "partitions_lost")] == ["c1"]
    assert result.summary.converged


def test_a_subscription_change_rejoins_and_revokes_the_dropped_topics_first() -> None:
    result = _run("subscription-change")
    assert result.failures == []
    changed = _of(result.records, "subscription_changed")
    assert [(r["member"], r["topics"]) for r in changed] == [
        ("c3", ["payments"]),
        ("c3", ["orders", "payments"]),
    ]
    first = _of(result.records, "partitions_revoked")[0]
    assert (first["member"], first["reason"]) == ("c3", "no longer subscribed")
    assert all(p.startswith("orders-") for p in first["partitions"])
    joins = [r for r in _of(result.records, "join_group_request") if r["member"] == "c3"]
    assert [r["reason"] for r in joins].count("subscription has changed") == 2
    owned = result.summary.consumer.owned
    assert owned["c3"] == ["payments-0", "payments-1", "payments-2"]
    assert result.summary.converged and not _of(result.records, "violation")


def test_an_assignment_that_no_longer_matches_the_subscription_is_not_taken() -> None:
    """checkAssignmentMatchedSubscription: the subscription changed while the rebalance ran."""
    from members.consumer import ConsumerClient, ConsumerClientConfig
    from members.member_state import MemberState
    from protocol.consumer_codec import Assignment, TopicPartition

    config = ConsumerClientConfig(topics=("orders", "payments"), strategies=("range",))
    client = ConsumerClient("c1", config, {"orders": ((None,),)}, group_id="g")
    # joined with both topics; subscribe(["payments"]) before the SyncGroup answer
    client.transition(MemberState.PREPARING_REBALANCE)
    client.transition(MemberState.COMPLETING_REBALANCE)
    client.config = ConsumerClientConfig(topics=("payments",), strategies=("range",))
    client.on_join_complete(Assignment((TopicPartition("orders", 0),)), "range", 0)
    assert client.owned == []
    assert client.rejoin_needed
    assert client.rejoin_reason == "received assignment does not match the current subscription"


@pytest.mark.parametrize("strategy", ["cooperative-sticky", "range"])
def test_added_partitions_make_the_leader_rejoin_and_are_assigned(strategy: str) -> None:
    """ConsumerCoordinator#rejoinNeededOrPending: the leader's assignmentSnapshot no longer
    matches the metadata, so it rejoins ("cached metadata has changed"); a follower does not
    watch it (onJoinComplete drops its snapshot)."""
    text = (HERE / "partitions-added.toml").read_text(encoding="utf-8")
    text = text.replace('["cooperative-sticky"]', f'["{strategy}"]')
    result = simulate(loads_consumer_scenario(text, "partitions-added.toml"), 1)
    assert result.failures == []
    added = _of(result.records, "partitions_added")
    assert [(r["t_ms"], r["topic"], r["partitions"]) for r in added] == [
        (30_000, "orders", 6),
        (90_000, "payments", 3),
    ]
    leader = _of(result.records, "generation")[0]["leader"]
    rejoins = [
        (r["t_ms"], r["member"])
        for r in _of(result.records, "join_group_request")
        if r["reason"] == "cached metadata has changed"
    ]
    assert rejoins == [(30_000, leader), (90_000, leader)]
    last = _of(result.records, "consumer_assignor")[-1]
    assert last["inputs"]["topics"]["payments"] == [[None], [None], ["rb"]]
    owned = result.summary.consumer.owned
    assert sorted(p for parts in owned.values() for p in parts) == sorted(
        [f"orders-{p}" for p in range(6)] + [f"payments-{p}" for p in range(3)]
    )
    assert result.summary.converged and not _of(result.records, "violation")


@pytest.mark.parametrize(
    ("step", "key", "problem"),
    [
        ('topic = "nope"\ncount = 3', "timeline[0].topic", "no such topic"),
        ('topic = "t"\ncount = 2', "timeline[0].count", "count must be more"),
        ('topic = "t"\ncount = 3\nracks = [["ra"], ["rb"]]', "timeline[0].racks", "1 new"),
    ],
)
def test_an_add_partitions_step_must_grow_a_known_topic(step: str, key: str, problem: str) -> None:
    text = (
        'kind = "consumer"\nname = "x"\n[topics]\nt = 2\n[[consumers]]\nname = "c1"\n'
        f'[[timeline]]\naction = "add_partitions"\nat_ms = 1\n{step}\n'
    )
    with pytest.raises(ScenarioError) as info:
        loads_consumer_scenario(text, "x.toml")
    assert key in str(info.value) and problem in str(info.value)


def test_a_subscribe_step_names_an_unknown_topic() -> None:
    text = (
        'kind = "consumer"\nname = "x"\n[topics]\nt = 1\n[[consumers]]\nname = "c1"\n'
        '[[timeline]]\naction = "subscribe"\nat_ms = 1\nmember = "c1"\ntopics = ["u"]\n'
    )
    with pytest.raises(ScenarioError) as info:
        loads_consumer_scenario(text, "x.toml")
    assert "timeline[0].topics" in str(info.value)


def test_partition_racks_reach_the_cluster_view_and_are_checked() -> None:
    base = 'kind = "consumer"\nname = "x"\n[topics]\nt = 2\nu = 1\n[[consumers]]\nname = "c1"\n'
    loaded = loads_consumer_scenario(base + '[partition_racks]\nt = [["ra", "rb"], []]\n')
    # KIP-881: each partition's replica racks; [] and a topic left out: one rackless replica
    assert loaded.cluster == {"t": (("ra", "rb"), (None,)), "u": ((None,),)}
    for racks, where in (
        ('v = [["ra"]]', "partition_racks.v"),
        ('t = [["ra"]]', "partition_racks.t"),
    ):
        with pytest.raises(ScenarioError) as info:
            loads_consumer_scenario(base + "[partition_racks]\n" + racks + "\n", "x.toml")
        assert where in str(info.value)


def test_the_library_lists_the_consumer_scenarios() -> None:
    from scenarios.input.library import library_names

    assert library_names("consumer") == [
        "dynamic-rolling-restart",
        "kip-429-one-bounce-from-default",
        "kip-429-one-bounce-upgrade",
        "kip-429-two-bounce-upgrade",
        "slow-consumer-poll-timeout",
        "static-restart-beyond-session",
        "static-rolling-restart",
        "subscription-change",
    ]
    listed = CliRunner().invoke(app, ["scenarios"])
    assert listed.exit_code == 0, listed.output
    assert "static-rolling-restart" in listed.output


def test_an_unmet_consumer_expectation_fails_the_run() -> None:
    source = (consumer_library_dir() / "static-rolling-restart.toml").read_text()
    loaded = loads_consumer_scenario(
        source.replace("max_rebalances = 1", 'max_rebalances = 0\nfatal_members = ["c1"]'),
        "x.toml",
    )
    assert simulate(loaded, 1).failures == [
        "max_rebalances: expected <= 0, got 1",
        "fatal_members: expected ['c1'], got []",
    ]


def test_a_crashed_consumer_is_evicted_and_its_partitions_move() -> None:
    result = _run("cooperative-member-crash")
    assert result.failures == []
    removed = _of(result.records, "member_removed")
    assert [(r["member"], r["reason"]) for r in removed] == [("c2", "session_timeout")]
    assert removed[0]["t_ms"] >= 20_000 + 45_000 - 3_000
    assert sorted(result.summary.consumer.owned) == ["c1", "c3"]


def test_a_fenced_consumer_loses_its_partitions_and_rejoins() -> None:
    result = _run("partitioned-consumer-fenced")
    lost = _of(result.records, "partitions_lost")
    assert [r["member"] for r in lost] == ["c3"]
    assert lost[0]["reason"] == "heartbeat failed: UNKNOWN_MEMBER_ID"
    assert not _of(result.records, "violation")
    assert sorted(result.summary.consumer.owned) == ["c1", "c2", "c3"]


def test_groupsim_run_and_check(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["run", "kip-429-two-bounce-upgrade", "--out", str(out), "--no-plot"]
    )
    assert result.exit_code == 0, result.output
    assert "final protocol: cooperative-sticky (COOPERATIVE)" in result.output
    checked = runner.invoke(app, ["check", str(out / "events.jsonl")])
    assert checked.exit_code == 0, checked.output
    assert "0 violation(s)" in checked.output
    assert check_log(out / "events.jsonl") == []


def test_check_finds_a_partition_given_twice_in_one_generation(tmp_path: Path) -> None:
    records = _run("kip-429-two-bounce-upgrade").records
    assignment = next(r for r in records if r["kind"] == "consumer_assignment")
    other = next(
        r
        for r in records
        if r["kind"] == "consumer_assignment"
        and r["generation"] == assignment["generation"]
        and r["member"] != assignment["member"]
    )
    stolen = assignment["owned"][0]
    planted = dict(other, assigned=[*other["assigned"], stolen], owned=[*other["owned"], stolen])
    records = [planted if r is other else r for r in records]
    found = check_records(records)
    assert [v.invariant for v in found] == ["double_ownership"]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert [v.invariant for v in check_log(path)] == ["double_ownership"]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('kind = "consumer"\nname = "x"\n[[consumers]]\nname = "c1"\n', "topics"),
        ('kind = "consumer"\nname = "x"\n[topics]\nt = 1\n', "consumers"),
        (
            'kind = "consumer"\nname = "x"\n[topics]\nt = 1\n[[consumers]]\nname = "c1"\n'
            '[consumers.config]\n"partition.assignment.strategy" = ["nope"]\n',
            "consumers[0].config",
        ),
        (
            'kind = "consumer"\nname = "x"\n[topics]\nt = 1\n[[consumers]]\nname = "c1"\n'
            '[consumers.config]\n"fetch.min.bytes" = 1\n',
            "consumers[0].config",
        ),
        (
            'kind = "consumer"\nname = "x"\n[topics]\nt = 1\n[[consumers]]\nname = "c1"\n'
            '[[timeline]]\naction = "crash"\nat_ms = 1\nmember = "c9"\n',
            "timeline[0].member",
        ),
    ],
)
def test_a_bad_scenario_names_its_key(text: str, key: str) -> None:
    with pytest.raises(ScenarioError) as info:
        loads_consumer_scenario(text, "x.toml")
    assert key in str(info.value)


def test_a_zombie_twin_fences_the_old_consumer_which_loses_its_partitions() -> None:
    """KIP-345's zombie: the twin takes the instance (and its assignment) over without a
    rebalance; FENCED_INSTANCE_ID on the old process's next Heartbeat is fatal, thrown at once
    (c2, cut off) or when the stalled poll loop calls poll() again (c1)."""
    result = _run("static-member-zombie-twin")
    assert result.failures == [] and not _of(result.records, "violation")
    replaced = _of(result.records, "member_replaced")
    assert [(r["member"], r["t_ms"]) for r in replaced] == [("c1n", 35_001), ("c2n", 105_001)]
    told = _of(result.records, "heartbeat_response")  # logged without log_heartbeats
    assert [(r["member"], r["error"]) for r in told] == [
        ("c1", "FENCED_INSTANCE_ID"),
        ("c2", "FENCED_INSTANCE_ID"),
    ]
    lost = _of(result.records, "partitions_lost")
    fatal = _of(result.records, "member_fatal")
    # c1 heard it at 36 s, during its stall: closed when the stall ends at 60 s
    assert [(r["member"], r["t_ms"]) for r in lost] == [("c1", 60_000), ("c2", 120_004)]
    assert [(r["member"], r["t_ms"], r["error"]) for r in fatal] == [
        ("c1", 60_000, "FENCED_INSTANCE_ID"),
        ("c2", 120_004, "FENCED_INSTANCE_ID"),
    ]
    # each twin owns what its predecessor owned; no generation was added
    assert result.summary.consumer.owned == {
        "c1n": lost[0]["partitions"],
        "c2n": lost[1]["partitions"],
        "c3": ["t1-2", "t1-5"],
    }
    assert {r["generation"] for r in _of(result.records, "consumer_assignment")} == {1}
    assert result.summary.converged
