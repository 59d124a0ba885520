"""The chaos generators draw the broker's ``[coordinator]`` settings
(scenarios/campaigns/chaos/coordinator_draw.py): in a share of the runs of every kind, from a
stream of their own after every other draw (a run that draws none is the scenario it was),
only settings a broker starts with, and the scenario file carries them."""

from __future__ import annotations

import importlib
import random
import tomllib
from collections import Counter

import pytest

from coordinator.config import CoordinatorConfig
from scenarios.campaigns.chaos import ChaosConfig, generate, spec_to_toml
from scenarios.campaigns.chaos.coordinator_draw import draw_coordinator, draw_for_members
from scenarios.input.library import loads_any

KINDS = ("connect", "streams", "consumer")
_DRAW_MODULES = {
    "connect": "scenarios.campaigns.chaos.generate",
    "streams": "scenarios.campaigns.chaos.generate_streams",
    "consumer": "scenarios.campaigns.chaos.generate_consumer",
}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_draws_coordinator_settings_in_a_share_of_its_runs(kind: str) -> None:
    config = ChaosConfig(kind=kind)
    seen: Counter[str] = Counter()
    for index in range(200):
        spec = generate(config, 5, index)
        assert generate(config, 5, index) == spec  # deterministic
        if not spec.coordinator:
            continue
        seen["runs"] += 1
        seen.update(spec.coordinator)
        CoordinatorConfig.from_mapping(spec.coordinator)  # a broker starts with it
        text = spec_to_toml(spec)
        assert tomllib.loads(text)["coordinator"] == spec.coordinator
        loaded = loads_any(text, f"{spec.name}.toml")
        assert loaded.coordinator_config == CoordinatorConfig.from_mapping(spec.coordinator)
        low = spec.coordinator.get("group.min.session.timeout.ms")
        high = spec.coordinator.get("group.max.session.timeout.ms")
        if low is not None:
            assert low <= high
        size = spec.coordinator.get("group.max.size")
        if size is not None:  # every member the run may start: a zombie's pair too
            listed = (spec.streams or {}).get("clients") or (spec.consumer or {}).get("consumers")
            n = len(listed or ()) or spec.members
            assert max(2, n - 2) <= size <= n + 1
    assert 40 <= seen["runs"] <= 80, seen
    for key in (
        "group.initial.rebalance.delay.ms",
        "group.max.size",
        "group.min.session.timeout.ms",
        "group.max.session.timeout.ms",
    ):
        assert seen[key] >= 10, (key, seen)


@pytest.mark.parametrize("kind", KINDS)
def test_runs_without_coordinator_settings_are_the_runs_they_were(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # drawn last, from its own stream: with the draw switched off every run that drew nothing
    # is byte for byte the same scenario, and a run that drew settings differs only in them
    # (and in the one member's raised session.timeout.ms, and the description)
    config = ChaosConfig(kind=kind)
    drawn = [generate(config, 1, index) for index in range(60)]
    module = importlib.import_module(_DRAW_MODULES[kind])
    if kind == "connect":
        monkeypatch.setattr(module, "draw_coordinator", lambda *a, **k: ({}, {}))
    else:
        monkeypatch.setattr(module, "draw_for_members", lambda *a, **k: None)
    changed = 0
    for index, after in enumerate(drawn):
        before = generate(config, 1, index)
        if after.coordinator is None:
            assert spec_to_toml(after) == spec_to_toml(before)
            continue
        changed += 1
        assert (after.seed, after.steps, after.kinds, after.members) == (
            before.seed,
            before.steps,
            before.kinds,
            before.members,
        )
    assert changed > 5


def test_session_bounds_take_the_lowest_and_highest_or_refuse_one_member() -> None:
    sessions = {"c1": 45_000, "c2": 45_000, "c3": 120_000, "c4": 300_000}
    inclusive = refusing = 0
    for seed in range(400):
        table, raised = draw_coordinator(random.Random(seed), sessions, refusable=["c1", "c3"])
        if "group.min.session.timeout.ms" not in table:
            assert not raised
            continue
        low = table["group.min.session.timeout.ms"]
        high = table["group.max.session.timeout.ms"]
        effective = {**sessions, **raised}
        outside = [m for m, s in effective.items() if not low <= s <= high]
        assert outside == sorted(raised)  # only a raised member is refused
        assert len(raised) <= 1 and set(raised) <= {"c1", "c3"}
        if raised:
            refusing += 1
        if (low, high) == (min(effective.values()), max(effective.values())) or (
            raised and high == max(sessions[m] for m in sessions if m not in raised)
        ):
            inclusive += 1
    assert refusing > 10 and inclusive > 20


def test_a_pair_sharing_an_instance_id_is_never_refused() -> None:
    for seed in range(300):
        entries = [
            {"name": "s1", "config": {"group.instance.id": "s1-static"}},
            {"name": "s2"},
            {"name": "s3"},
            {"name": "s1n", "config": {"group.instance.id": "s1-static"}},
        ]
        draw_for_members(random.Random(seed), entries, gone=(), default_session_ms=45_000)
        for entry in entries[0], entries[3]:
            assert "session.timeout.ms" not in entry["config"]


def test_nobody_is_refused_when_fewer_than_three_members_stay() -> None:
    for seed in range(300):
        entries = [{"name": f"c{i}"} for i in range(1, 5)]
        draw_for_members(random.Random(seed), entries, gone=("c1", "c2"), default_session_ms=45_000)
        assert all("config" not in e for e in entries)
