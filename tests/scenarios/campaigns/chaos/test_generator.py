"""scenarios.campaigns.chaos: the generator is deterministic, its scenarios load and last the
bound."""

from __future__ import annotations

import importlib
import tomllib

import pytest

from scenarios.campaigns.chaos import (
    ASSIGNOR_OF,
    BOUND_ROUNDS,
    FAULT_KINDS,
    PROTOCOLS,
    ChaosConfig,
    bound_for,
    generate,
    liveness_bound_ms,
    spec_to_toml,
)
from scenarios.campaigns.chaos.render import step_end
from scenarios.input.library import library_dir
from scenarios.input.loader import load_scenario, loads_scenario

CONFIGS = [
    ChaosConfig(),
    ChaosConfig(members=(10, 10), duration_ms=3_600_000),
    ChaosConfig(members=(3, 50), protocols=("static",), duration_ms=600_000),
    ChaosConfig(members=(1, 2), faults=("crash", "leave"), duration_ms=90_000),
    ChaosConfig(members=(3, 5), faults=("config",), duration_ms=500),
    ChaosConfig(members=(4, 4), faults=(), duration_ms=60_000),
    ChaosConfig(members=(2, 4), faults=("delay",), duration_ms=120_000),
]


def test_same_seed_same_toml() -> None:
    config = ChaosConfig(members=(3, 50))
    for index in range(20):
        assert spec_to_toml(generate(config, 42, index)) == spec_to_toml(
            generate(config, 42, index)
        )
    texts = {spec_to_toml(generate(config, 42, i)) for i in range(20)}
    assert len(texts) == 20
    assert spec_to_toml(generate(config, 43, 0)) != spec_to_toml(generate(config, 42, 0))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.members}-{c.duration_ms}")
def test_every_generated_scenario_loads_and_lasts_the_bound(config: ChaosConfig) -> None:
    for index in range(40):
        spec = generate(config, 7, index)
        text = spec_to_toml(spec)
        loaded = loads_scenario(text, f"{spec.name}.toml")
        raw = tomllib.loads(text)
        assert config.members[0] <= spec.members <= config.members[1]
        assert len(loaded.worker_names) == spec.members
        assert spec.protocol in config.protocols
        assert set(spec.kinds) <= set(config.faults)
        # the closing bounce adds at most one restart per worker beyond the limit
        assert len(spec.steps) <= config.fault_limit + spec.members
        times = [s["at_ms"] for s in raw.get("timeline", [])]
        assert times == sorted(times)
        assert all(0 <= t < config.duration_ms for t in times)
        # the quiet tail is the liveness bound, after the last fault has ended
        assert loaded.settle_ms == bound_for(loaded)
        last_end = max((s.end_ms for s in loaded.steps), default=0)
        assert loaded.end_ms == last_end + loaded.settle_ms
        assert loaded.seed == spec.seed


def test_faults_cover_every_kind_and_protocol() -> None:
    config = ChaosConfig(members=(3, 10))
    kinds: set[str] = set()
    actions: set[str] = set()
    protocols: set[str] = set()
    for index in range(60):
        spec = generate(config, 1, index)
        kinds.update(spec.kinds)
        actions.update(s["action"] for s in spec.steps)
        protocols.add(spec.protocol)
    assert kinds == set(FAULT_KINDS) - {"zombie"}  # Connect workers have no instance id
    assert protocols == set(PROTOCOLS)
    assert {
        "restart",
        "partition",
        "loss",
        "latency",
        "slow",
        "coordinator_failover",
        "add_connector",
        "set_tasks",
        "remove_connector",
    } <= actions
    assert set(ASSIGNOR_OF) == set(PROTOCOLS)


def test_static_runs_name_static_workers() -> None:
    config = ChaosConfig(members=(6, 12), protocols=("static",))
    specs = [generate(config, 5, i) for i in range(20)]
    assert any(spec.worker_configs for spec in specs)
    for spec in specs:
        loaded = loads_scenario(spec_to_toml(spec), "s.toml")
        static = [w for w in loaded.workers if w.config.is_static_worker]
        assert len(loaded.workers) - len(static) >= 2  # wildcard workers remain


def test_bound_formula_with_kafka_defaults() -> None:
    bound = liveness_bound_ms(
        max_delay_ms=300_000,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=60_000,
        heartbeat_interval_ms=3_000,
        initial_rebalance_delay_ms=3_000,
    )
    assert bound == 3_000 + 300_000 + 300_000 + BOUND_ROUNDS * (10_000 + 60_000 + 3_000 + 4)
    assert bound == 1_041_024
    # no delay: no scheduled wait and no revocation backoff
    assert (
        liveness_bound_ms(
            max_delay_ms=0,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=60_000,
            heartbeat_interval_ms=3_000,
            initial_rebalance_delay_ms=3_000,
        )
        == 3_000 + BOUND_ROUNDS * 73_004
    )


def test_bound_for_a_library_scenario() -> None:
    loaded = load_scenario(library_dir() / "connect-system-test-bounce.toml")
    # scheduled.rebalance.max.delay.ms = 60000 there
    assert bound_for(loaded) >= 3_000 + 60_000 + 60_000 + BOUND_ROUNDS * 73_000


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        ChaosConfig(members=(5, 3))
    with pytest.raises(ValueError):
        ChaosConfig(protocols=("nope",))
    with pytest.raises(ValueError):
        ChaosConfig(faults=("meteor",))
    with pytest.raises(ValueError):
        ChaosConfig(duration_ms=0)


def test_delay_faults_leave_the_other_draws_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    # delay_request steps come from their own generator: without the "delay" kind a run is
    # what it was before the kind existed, and with it only delay_request steps are added.
    # (The closing bounce starts after every other step ends, delays included: left out.)
    generate_module = importlib.import_module("scenarios.campaigns.chaos.generate")
    monkeypatch.setattr(generate_module, "_add_bounce", lambda gen, config, rng: None)
    without = ChaosConfig(faults=tuple(k for k in FAULT_KINDS if k != "delay"))
    with_delay = ChaosConfig()
    added = holds = 0
    for index in range(40):
        before, after = generate(without, 3, index), generate(with_delay, 3, index)
        assert "delay" not in before.kinds
        assert (before.seed, before.protocol, before.members) == (
            after.seed,
            after.protocol,
            after.members,
        )
        assert [s for s in after.steps if s["action"] != "delay_request"] == before.steps
        delays = [s for s in after.steps if s["action"] == "delay_request"]
        assert len(after.steps) <= with_delay.fault_limit + after.members
        assert [s["at_ms"] for s in after.steps] == sorted(s["at_ms"] for s in after.steps)
        for step in delays:
            assert step["request"] in ("heartbeat", "sync_group", "join_group", "any")
            assert 1 <= step["delay_ms"] <= 70_000
            if step["duration_ms"] > 30_000:  # the SyncGroup hold: past the rebalance timeout
                assert step["request"] == "sync_group" and step["delay_ms"] > 60_000
                assert step["duration_ms"] <= 120_000
                holds += 1
            else:
                assert step["duration_ms"] >= 1_000
        added += len(delays)
    assert added > 0 and 0 < holds < added


TIMING_KEYS = (
    "groupsim.connector.start.ms",
    "groupsim.connector.stop.ms",
    "groupsim.config.read.lag.ms",
    "inter.worker.key.ttl.ms",
)


def test_worker_timings_leave_the_other_draws_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker timings branch coverage found undrawn come from their own generator: with the
    # draw switched off, every run is what it was before (only those cluster keys differ), and
    # across runs each key is drawn with every value, and half the runs keep Kafka's defaults.
    generate_module = importlib.import_module("scenarios.campaigns.chaos.generate")
    config = ChaosConfig()
    drawn = [generate(config, 5, index) for index in range(60)]
    monkeypatch.setattr(generate_module, "_draw_worker_timings", lambda rng, cluster: None)
    seen: dict[str, set[object]] = {k: set() for k in TIMING_KEYS}
    untouched = 0
    for index, after in enumerate(drawn):
        before = generate(config, 5, index)
        assert not set(TIMING_KEYS) & set(before.cluster_config)
        extra = {k: v for k, v in after.cluster_config.items() if k in TIMING_KEYS}
        rest = {k: v for k, v in after.cluster_config.items() if k not in TIMING_KEYS}
        assert rest == before.cluster_config
        assert (after.seed, after.steps, after.connectors) == (
            before.seed,
            before.steps,
            before.connectors,
        )
        for key, value in extra.items():
            seen[key].add(value)
        untouched += not extra
        loaded = loads_scenario(spec_to_toml(after), f"{after.name}.toml")
        assert loaded.settle_ms == bound_for(loaded)
    assert seen["groupsim.config.read.lag.ms"] == {100, 1_000, 5_000}
    assert seen["inter.worker.key.ttl.ms"] == {600_000, 60_000}
    assert seen["groupsim.connector.start.ms"] == {10, 50}
    assert 10 <= untouched <= 50


def test_bounce_leaves_the_other_draws_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    # The closing bounce (several workers, or the whole group, restarted near each other
    # after every other fault) comes from its own generator: with it switched off every run is
    # what it was, and with it only restarts after every other step's end are added.
    generate_module = importlib.import_module("scenarios.campaigns.chaos.generate")
    config = ChaosConfig(members=(5, 5), duration_ms=600_000)
    drawn = [generate(config, 1, index) for index in range(100)]
    monkeypatch.setattr(generate_module, "_add_bounce", lambda gen, config, rng: None)
    bounces = outages = 0
    for index, after in enumerate(drawn):
        before = generate(config, 1, index)
        assert (after.seed, after.connectors, after.cluster_config) == (
            before.seed,
            before.connectors,
            before.cluster_config,
        )
        added = [s for s in after.steps if s not in before.steps]
        assert [s for s in after.steps if s not in added] == before.steps
        if not added:
            continue
        last_end = max((step_end(s) for s in before.steps), default=0)
        assert len(added) >= 2 and all(s["action"] == "restart" for s in added)
        assert all(last_end < s["at_ms"] < config.duration_ms for s in added)
        assert len({s["member"] for s in added}) == len(added)
        if len({s["at_ms"] for s in added}) == 1 and len(added) == after.members:
            outages += 1
        else:
            assert max(s["at_ms"] for s in added) - min(s["at_ms"] for s in added) <= 5_000
        bounces += 1
        loaded = loads_scenario(spec_to_toml(after), f"{after.name}.toml")
        assert loaded.settle_ms == bound_for(loaded)
    assert 15 <= bounces <= 45 and 0 < outages < bounces
