"""The engine's lazy timer re-arming changes no event log.

``Engine.LAZY_TIMERS`` pushes a re-armed timer's queue entry only when its earlier entry
comes up (see ``Engine._set_timer``). These tests run the same scenarios with and without it
and require identical records: chaos scenarios with every fault kind, Kafka Streams library
scenarios, with heartbeat records on and off. A change that reorders any event fails here.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scenarios.campaigns.chaos import ChaosConfig, generate, spec_to_toml
from scenarios.input.library import streams_library_dir
from scenarios.input.loader import loads_scenario
from scenarios.input.streams import load_streams_scenario
from scenarios.sim.engine import Engine
from scenarios.sim.runner import simulate

# Short fault windows keep each run well under a second; every fault kind is enabled.
CHAOS = ChaosConfig(members=(2, 6), duration_ms=600_000)


def _both(
    monkeypatch: pytest.MonkeyPatch, loaded: Any, seed: int, log_heartbeats: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    lazy = simulate(loaded, seed, log_heartbeats=log_heartbeats).records
    monkeypatch.setattr(Engine, "LAZY_TIMERS", False)
    eager = simulate(loaded, seed, log_heartbeats=log_heartbeats).records
    monkeypatch.setattr(Engine, "LAZY_TIMERS", True)
    return lazy, eager


@pytest.mark.parametrize("log_heartbeats", [False, True])
@pytest.mark.parametrize("index", range(4))
def test_chaos_logs_are_unchanged(
    monkeypatch: pytest.MonkeyPatch, index: int, log_heartbeats: bool
) -> None:
    spec = generate(CHAOS, 13, index)
    loaded = loads_scenario(spec_to_toml(spec), f"{spec.name}.toml")
    lazy, eager = _both(monkeypatch, loaded, index, log_heartbeats)
    assert any(r["kind"] == "step" for r in eager)  # the faults and config changes
    assert any(r["kind"] == "heartbeat_request" for r in eager) is log_heartbeats
    assert lazy == eager


@pytest.mark.parametrize("log_heartbeats", [False, True])
def test_streams_logs_are_unchanged(monkeypatch: pytest.MonkeyPatch, log_heartbeats: bool) -> None:
    path = streams_library_dir() / "kip-441-scale-out-with-faults.toml"
    loaded = load_streams_scenario(path)
    lazy, eager = _both(monkeypatch, loaded, 3, log_heartbeats)
    assert lazy == eager


@pytest.mark.slow
@pytest.mark.parametrize("log_heartbeats", [False, True])
@pytest.mark.parametrize("index", range(4, 40))
def test_more_chaos_logs_are_unchanged(
    monkeypatch: pytest.MonkeyPatch, index: int, log_heartbeats: bool
) -> None:
    spec = generate(ChaosConfig(members=(2, 12)), 29, index)
    loaded = loads_scenario(spec_to_toml(spec), f"{spec.name}.toml")
    lazy, eager = _both(monkeypatch, loaded, index, log_heartbeats)
    assert lazy == eager


@pytest.mark.parametrize("jitter_ms", [1, 5, 8, 100])
def test_jitter_draws_are_random_randint(jitter_ms: int) -> None:
    """The network's inlined jitter draw gives ``randint(0, jitter_ms)``'s numbers and leaves
    the generator in the same state (later draws, member ids, stay the same)."""
    from members.group_client import COORDINATOR_ADDRESS
    from scenarios.sim.network import Network

    rng, reference = random.Random(5), random.Random(5)
    network = Network(10, jitter_ms, rng)
    for i in range(2000):  # a fresh link per message: no FIFO clamping
        at = network.arrival_ms(f"w{i}#1", COORDINATOR_ADDRESS, 0)
        assert at == 10 + reference.randint(0, jitter_ms)
    assert rng.getstate() == reference.getstate()
