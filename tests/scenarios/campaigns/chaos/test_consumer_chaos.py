"""``groupsim chaos --kind consumer``: the consumer generator is deterministic and its files
load, it draws assignor mixes, static members and every fault of the shared model, clean runs
stay clean, planted consumer bugs are found and shrunk, and the command runs end to end."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scenarios.campaigns.chaos import ChaosConfig, generate, run_one, shrink, spec_to_toml
from scenarios.campaigns.chaos.generate_consumer import _ROLL, STRATEGY_LISTS
from scenarios.campaigns.chaos.run import run_spec
from scenarios.cli.main import app
from scenarios.input.consumer import loads_consumer_scenario

from .planted import by_name, chaos_config, detect

CONSUMER = ChaosConfig(kind="consumer", members=(2, 6))


def test_the_generator_is_deterministic_and_every_file_loads() -> None:
    seen = set()
    for index in range(30):
        text = spec_to_toml(generate(CONSUMER, 7, index))
        assert text == spec_to_toml(generate(CONSUMER, 7, index))
        loaded = loads_consumer_scenario(text, f"run-{index}.toml")
        assert 2 <= len(loaded.consumers) <= 6
        assert loaded.scenario.settle_ms > 0
        seen.add(text)
    assert len(seen) == 30


def test_static_runs_may_draw_a_zombie_twin_and_the_other_draws_stay_as_they_were() -> None:
    """The zombie fault (KIP-345, shared with Streams campaigns: timeline.add_zombie), drawn
    last from its own stream: a run without it is the run of a campaign without the kind."""
    without = replace(CONSUMER, faults=tuple(k for k in CONSUMER.faults if k != "zombie"))
    twins = sync_variants = parked_variants = 0
    for index in range(60):
        before, after = generate(without, 5, index), generate(CONSUMER, 5, index)
        assert before.consumer is not None and after.consumer is not None
        added = [i for i, k in enumerate(after.kinds) if k == "zombie"]
        assert [s for i, s in enumerate(after.steps) if i not in added] == before.steps
        if not added:
            assert after.consumer == before.consumer
            continue
        twins += 1
        if after.steps[added[0]]["action"] == "subscribe":  # a SyncGroup variant
            cut, *holds, join = (after.steps[i] for i in added)
            assert holds and all(h["action"] == "delay_request" for h in holds)
            if holds[0]["request"] == "any":  # held (add_sync_zombie): its own stream
                sync_variants += 1
                (held,) = holds
                assert held["at_ms"] == cut["at_ms"] + 1 and held["member"] == cut["member"]
            else:  # parked: every other consumer's SyncGroup held, from a stream of its own
                parked_variants += 1
                assert {h["request"] for h in holds} == {"sync_group"}
                assert {h["at_ms"] for h in holds} == {cut["at_ms"]}
                assert cut["member"] not in {h["member"] for h in holds}
                held = holds[0]
            assert 4_000 <= join["at_ms"] - cut["at_ms"] < held["delay_ms"]
        else:
            cut, join = (after.steps[i] for i in added)
            assert cut["action"] in ("partition", "slow")
            assert 1_000 <= join["at_ms"] - cut["at_ms"] <= 10_000
        twin = after.consumer["consumers"][-1]
        old = next(c for c in after.consumer["consumers"] if c["name"] == cut["member"])
        assert join["action"] == "join" and join["member"] == twin["name"] == f"{old['name']}n"
        assert twin["config"] == old["config"] and "group.instance.id" in twin["config"]
        assert twin["autostart"] is False
        assert after.consumer["consumers"][:-1] == before.consumer["consumers"]
        text = spec_to_toml(after)
        assert len(loads_consumer_scenario(text, "z.toml").consumers) == after.members + 1
    assert twins > sync_variants > 0 and parked_variants > 0


def test_generated_groups_span_assignors_static_members_and_faults() -> None:
    specs = [generate(CONSUMER, 3, i) for i in range(80)]
    bodies = [s.consumer for s in specs if s.consumer is not None]
    assert len(bodies) == 80
    bases = {tuple(b["config"]["partition.assignment.strategy"]) for b in bodies}
    assert bases == set(STRATEGY_LISTS)
    mixed = [
        b
        for b in bodies
        if any("partition.assignment.strategy" in c.get("config", {}) for c in b["consumers"])
    ]
    static = [
        b for b in bodies if any("group.instance.id" in c.get("config", {}) for c in b["consumers"])
    ]
    assert mixed and static
    kinds = Counter(k for s in specs for k in s.kinds)
    expected = {"crash", "leave", "partition", "loss", "latency", "slow", "failover", "config"}
    assert expected | {"delay", "join", "zombie"} == set(kinds)
    changes = [
        s["config"]["partition.assignment.strategy"]
        for spec in specs
        for s, k in zip(spec.steps, spec.kinds, strict=True)
        if k == "config" and s["action"] == "restart"
    ]
    assert ["cooperative-sticky"] in changes  # the last step of a KIP-429 upgrade
    subscribed = [s["topics"] for spec in specs for s in spec.steps if s["action"] == "subscribe"]
    assert subscribed and all(s for s in subscribed)


def test_half_the_runs_draw_kip881_racks_of_every_shape() -> None:
    """Racks (KIP-881): most consumers on a rack, some on none; replicas on consumers' racks,
    on a rack no consumer is on, and on brokers without a rack; the file carries them to the
    assignors' cluster view."""
    racked = 0
    shapes: set[str] = set()
    for index in range(60):
        spec = generate(CONSUMER, 3, index)
        assert spec.consumer is not None
        racks = spec.consumer.get("partition_racks")
        if not racks:
            continue
        racked += 1
        consumers = spec.consumer["consumers"]
        if any("client.rack" not in c.get("config", {}) for c in consumers):
            shapes.add("consumer without rack")
        replicas = [r for parts in racks.values() for r in parts]
        if any(r == [] for r in replicas):
            shapes.add("broker without rack")
        if any(r == ["rz"] for r in replicas):
            shapes.add("no consumer's rack")
        loaded = loads_consumer_scenario(spec_to_toml(spec), f"run-{index}.toml")
        for topic, parts in racks.items():
            assert [list(r) for r in loaded.cluster[topic]] == [p or [None] for p in parts]
    assert 15 <= racked <= 45
    assert shapes == {"consumer without rack", "broker without rack", "no consumer's rack"}


def test_static_runs_may_roll_a_new_strategy_list_through_every_consumer() -> None:
    """KIP-345 with KIP-429's lists: a rolling restart, consumer after consumer in file order
    and 20-60 s apart, each with the same new ``partition.assignment.strategy``."""
    rolled = 0
    for index in range(80):
        spec = generate(CONSUMER, 3, index)
        assert spec.consumer is not None
        base = tuple(spec.consumer["config"]["partition.assignment.strategy"])
        steps = [
            s
            for s, k in zip(spec.steps, spec.kinds, strict=True)
            if k == "config"
            and s["action"] == "restart"
            and s.get("config", {}).get("partition.assignment.strategy") == list(_ROLL[base])
        ]
        names = [c["name"] for c in spec.consumer["consumers"]]
        ordered = [s for s in steps if s["member"] in names]
        if len(ordered) < 2:
            continue
        gaps = [b["at_ms"] - a["at_ms"] for a, b in zip(ordered, ordered[1:], strict=False)]
        if all(g >= 20_000 for g in gaps) and [s["member"] for s in ordered] == sorted(
            (s["member"] for s in ordered), key=names.index
        ):
            rolled += 1
    assert rolled >= 5


def test_a_third_of_the_dynamic_runs_grow_a_topic_and_the_file_carries_it() -> None:
    """``add_partitions`` steps (counted as ``config``), in runs without static members only:
    each grows a topic of the run beyond what it had then, with racks for its new partitions
    when the run has racks."""
    grown = 0
    for index in range(60):
        spec = generate(CONSUMER, 3, index)
        assert spec.consumer is not None
        counts = dict(spec.consumer["topics"])
        steps = [
            (s, k)
            for s, k in zip(spec.steps, spec.kinds, strict=True)
            if s["action"] == "add_partitions"
        ]
        grown += bool(steps)
        static = any("group.instance.id" in c.get("config", {}) for c in spec.consumer["consumers"])
        assert not (steps and static)
        for step, kind in steps:
            assert kind == "config"
            assert 1 <= step["count"] - counts[step["topic"]] <= 4
            assert ("racks" in step) == bool(spec.consumer.get("partition_racks"))
            counts[step["topic"]] = step["count"]
        loads_consumer_scenario(spec_to_toml(spec), f"run-{index}.toml")
    assert 5 <= grown <= 25


def test_a_quarter_of_the_runs_draw_a_long_poll_straggler() -> None:
    """One consumer with a longer ``max.poll.interval.ms`` (its rebalance timeout, KIP-62)
    stalls for longer than the others' and shorter than its own, and another consumer's clean
    restart 1-10 s later rebalances the group while it is stalled."""
    drawn = stalled = 0
    for index in range(80):
        spec = generate(CONSUMER, 3, index)
        assert spec.consumer is not None
        long = {
            c["name"]: c["config"]["max.poll.interval.ms"]
            for c in spec.consumer["consumers"]
            if "max.poll.interval.ms" in c.get("config", {})
        }
        if not long:
            continue
        drawn += 1
        ((name, max_poll),) = long.items()
        assert 120_000 <= max_poll <= 240_000
        for i, step in enumerate(spec.steps):
            stall = step.get("stall_ms", 0)
            if step["action"] != "slow" or step["member"] != name or stall < 70_000:
                continue
            after = [
                s
                for s in spec.steps[i + 1 :]
                if s["action"] == "restart"
                and s.get("clean")
                and s["member"] != name
                and 1_000 <= s["at_ms"] - step["at_ms"] <= 10_000
            ]
            if stall <= max_poll - 10_000 and after:
                stalled += 1
                break
    assert 10 <= drawn <= 35
    assert stalled >= 5


@pytest.mark.parametrize("index", range(4))
def test_clean_consumer_runs_have_no_new_violation(index: int) -> None:
    outcome = run_one(CONSUMER, 1, index)
    assert not outcome.failed, outcome.first_new
    assert outcome.converged


def test_a_chaos_run_with_a_zombie_twin_is_clean() -> None:
    # run 3 of seed 1 draws the zombie fault: the twin takes the instance over, the old
    # process is fenced and closed, and no rule is broken
    outcome, result = run_spec(generate(CONSUMER, 1, 3))
    assert outcome.faults["zombie"] == 2  # the cut-off or stall, and the twin's join
    assert not outcome.failed and not outcome.violations, outcome.first_new
    assert outcome.converged
    seen = [
        (r["kind"], r["member"])
        for r in result.records
        if r["kind"] in ("member_replaced", "member_fatal") and r["member"] in ("c1", "c1n")
    ]
    # c1's twin replaces it; c1's next Heartbeat is fenced and the consumer closed
    assert seen[seen.index(("member_replaced", "c1n")) + 1] == ("member_fatal", "c1")


def test_a_planted_consumer_bug_is_found_and_shrunk() -> None:
    bug = by_name("cooperative-sticky-skips-adjust")
    found = detect(bug, 20)
    assert found.found_at is not None
    assert found.invariant == "cooperative_move_without_revocation"
    spec = generate(chaos_config(bug, found.found_at), 1, found.found_at)
    with bug.applied():
        shrunk = shrink(spec)
    assert shrunk.invariant == "cooperative_move_without_revocation"
    assert len(shrunk.spec.steps) <= len(spec.steps)
    assert 'kind = "consumer"' in shrunk.text


def test_the_command_runs_a_consumer_campaign(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["chaos", "--kind", "consumer", "--runs", "3", "--members", "2..3", "--duration", "5m"]
        + ["--jobs", "1", "--out", str(tmp_path), "--json"],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["kind"] == "consumer" and doc["runs"] == 3 and doc["failed_runs"] == []
    refused = CliRunner().invoke(app, ["chaos", "--kind", "consumer", "--protocol", "eager"])
    assert refused.exit_code != 0
    assert "Connect only" in refused.output
