"""``groupsim chaos --kind streams``: the Streams generator is deterministic and its files load,
clean runs stay clean (a removed client's zombie window is named ``streams-zombie``), planted
Streams bugs are found and shrunk, and the command runs end to end."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scenarios.campaigns.chaos import ChaosConfig, generate, run_one, shrink, spec_to_toml
from scenarios.campaigns.chaos.run import run_spec
from scenarios.cli.main import app
from scenarios.input.streams import loads_streams_scenario
from scenarios.sim.runner import simulate

from .planted import by_name, chaos_config, detect

STREAMS = ChaosConfig(kind="streams", members=(2, 5))


def test_the_generator_is_deterministic_and_every_file_loads() -> None:
    seen = set()
    for index in range(30):
        text = spec_to_toml(generate(STREAMS, 7, index))
        assert text == spec_to_toml(generate(STREAMS, 7, index))
        loaded = loads_streams_scenario(text, f"run-{index}.toml")
        assert 2 <= len(loaded.clients) <= 5 + 1  # + a zombie fault's second process
        assert loaded.settle_ms > 0
        seen.add(text)
    assert len(seen) == 30


def test_generated_settings_span_their_ranges() -> None:
    configs = [generate(STREAMS, 3, i).streams for i in range(60)]
    assert all(c is not None for c in configs)
    standbys = {c["config"]["num.standby.replicas"] for c in configs if c}
    strategies = {c["config"].get("rack.aware.assignment.strategy", "none") for c in configs if c}
    threads = {
        client.get("config", {}).get("num.stream.threads", 1)
        for c in configs
        if c
        for client in c["clients"]
    }
    stateless = [s for c in configs if c for s in c["subtopologies"] if s.get("stateful") is False]
    assert standbys == {0, 1, 2}
    assert strategies == {"none", "min_traffic", "balance_subtopology"}
    assert threads == {1, 2, 3}
    assert stateless


@pytest.mark.parametrize("index", range(4))
def test_clean_streams_runs_have_no_new_violation(index: int) -> None:
    outcome = run_one(STREAMS, 1, index)
    assert not outcome.failed, outcome.first_new
    assert outcome.protocol == "streams"


ZOMBIE = """
kind = "streams"
name = "streams-zombie"
seed = 1
settle_ms = 300000

[config]
"probing.rebalance.interval.ms" = 60000

[[subtopologies]]
id = 0
partitions = 4
stateful = false

[[clients]]
name = "a"

[[clients]]
name = "b"

[[timeline]]
at_ms = 60000
action = "partition"
client = "a"
duration_ms = {duration}
"""


def test_a_client_removed_behind_a_partition_is_a_named_zombie_until_it_hears_back() -> None:
    result = simulate(loads_streams_scenario(ZOMBIE.format(duration=90_000), "z.toml"), 1)
    doubles = [
        r
        for r in result.records
        if r.get("kind") == "violation" and r.get("invariant") == "double_ownership"
    ]
    assert doubles and all(r.get("known_issue") == "streams-zombie" for r in doubles)
    assert result.summary.converged


@pytest.mark.slow  # the planted bug keeps the group rebalancing: about a minute
def test_a_zombie_that_never_drops_its_tasks_is_a_new_violation() -> None:
    """The window closes once the client could have heard UNKNOWN_MEMBER_ID: a client that
    keeps its revoked/lost active tasks beyond it is a new violation."""
    bug = by_name("streams-keeps-revoked-active")
    with bug.applied():
        result = simulate(loads_streams_scenario(ZOMBIE.format(duration=90_000), "z.toml"), 1)
    new = [r for r in result.records if r.get("kind") == "violation" and not r.get("known_issue")]
    assert new


def test_a_planted_streams_bug_is_found_and_shrunk() -> None:
    bug = by_name("standby-assignor-beside-active")
    found = detect(bug, 20)
    assert found.found_at is not None and found.invariant == "active_and_standby"
    spec = generate(chaos_config(bug, found.found_at), 1, found.found_at)
    with bug.applied():
        shrunk = shrink(spec)
    assert shrunk.invariant == "active_and_standby"
    assert len(shrunk.spec.steps) <= 5
    assert 'kind = "streams"' in shrunk.text


def test_the_command_runs_a_streams_campaign(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["chaos", "--kind", "streams", "--runs", "3", "--members", "2..3", "--duration", "5m"]
        + ["--jobs", "1", "--out", str(tmp_path), "--json"],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["kind"] == "streams" and doc["runs"] == 3 and doc["failed_runs"] == []
    assert doc["protocols"] == []


def test_zombie_faults_add_a_second_process_and_leave_the_other_draws_unchanged() -> None:
    without = replace(STREAMS, faults=tuple(k for k in STREAMS.faults if k != "zombie"))
    twins = 0
    variants: dict[str, int] = {"held": 0, "parked": 0}
    for index in range(60):  # seed 3: both SyncGroup variants among them
        before, after = generate(without, 3, index), generate(STREAMS, 3, index)
        assert before.streams is not None and after.streams is not None
        added = [i for i, k in enumerate(after.kinds) if k == "zombie"]
        assert [s for i, s in enumerate(after.steps) if i not in added] == before.steps
        if not added:
            assert after.streams == before.streams
            continue
        twins += 1
        *cuts, join = (after.steps[i] for i in added)
        twin = after.streams["clients"][-1]
        assert join["action"] == "join" and join["client"] == twin["name"]
        old = next(c for c in after.streams["clients"] if f"{c['name']}n" == twin["name"])
        assert twin["config"]["group.instance.id"] == old["config"]["group.instance.id"]
        assert twin["autostart"] is False
        if cuts[0]["action"] != "delay_request":
            (cut,) = cuts
            assert cut["action"] in ("partition", "slow") and cut["client"] == old["name"]
            assert 1_000 <= join["at_ms"] - cut["at_ms"] <= 10_000
            continue
        # a SyncGroup variant (add_sync_zombie), at a late client's join (the rebalance)
        rebalance = [s["at_ms"] for s in before.steps if s["action"] == "join"]
        if cuts[0]["client"] == old["name"]:  # held: its SyncGroup, then every request
            variants["held"] += 1
            first, then = cuts
            assert first["request"] == "sync_group" and then["request"] == "any"
            assert then["client"] == old["name"]
            assert then["at_ms"] == first["at_ms"] + 3_000 and first["at_ms"] - 1 in rebalance
        else:  # parked: every other client's SyncGroup held from the join on
            variants["parked"] += 1
            assert {c["request"] for c in cuts} == {"sync_group"}
            assert old["name"] not in {c["client"] for c in cuts}
            assert len({c["at_ms"] for c in cuts}) == 1 and cuts[0]["at_ms"] in rebalance
        start = cuts[0]["at_ms"] - (1 if cuts[0]["client"] == old["name"] else 0)
        assert 4_000 <= join["at_ms"] - start < cuts[0]["delay_ms"]
        assert spec_to_toml(after) and loads_streams_scenario(spec_to_toml(after), "z.toml")
    assert twins > 0 and variants["held"] > 0 and variants["parked"] > 0


@pytest.mark.parametrize(("index", "variant"), [(23, "held"), (3, "parked")])
def test_a_streams_sync_group_variant_is_fenced_on_its_sync_group_and_clean(
    index: int, variant: str
) -> None:
    # seed 3: run 23 draws the held SyncGroup variant, run 3 the parked one; the old process
    # hears FENCED_INSTANCE_ID on its SyncGroup (validateMember / replaceStaticMember)
    spec = generate(STREAMS, 3, index)
    holds = [
        s
        for s, k in zip(spec.steps, spec.kinds, strict=True)
        if k == "zombie" and s["action"] == "delay_request"
    ]
    assert any(s["request"] == "any" for s in holds) == (variant == "held")
    outcome, result = run_spec(spec)
    assert not outcome.failed, outcome.first_new
    fenced = [
        r
        for r in result.records
        if r["kind"] == "sync_group_response" and r["error"] == "FENCED_INSTANCE_ID"
    ]
    twin = spec.steps[[i for i, k in enumerate(spec.kinds) if k == "zombie"][-1]]["client"]
    assert [r["member"] for r in fenced] == [twin[:-1]]
