"""The engine's fast paths change no event log.

The engine's ``lazy_timers`` pushes a re-armed timer's queue entry only when its earlier entry
comes up (see ``Engine._set_timer``); its ``skip_quiet`` skips whole heartbeat periods of a
quiet group (:mod:`scenarios.sim.fastpath.quiet`) and replays the heartbeat rounds between
other events on a small queue (:mod:`scenarios.sim.fastpath.heartbeats`). These tests run the same
scenarios with both and with neither and require identical records: chaos scenarios with
every fault kind, Kafka Streams library scenarios, stable clusters with changes after long
quiet stretches, heartbeats under faults, with heartbeat records on and off. A change that
reorders any event fails here.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from members.group_client import GroupClient
from members.heartbeat import HeartbeatThread
from scenarios.campaigns.chaos import ChaosConfig, generate, spec_to_toml
from scenarios.input.library import streams_library_dir
from scenarios.input.loader import loads_scenario
from scenarios.input.streams import load_streams_scenario
from scenarios.sim import calibration
from scenarios.sim.engine import Engine
from scenarios.sim.fastpath import heartbeats, quiet
from scenarios.sim.fastpath.quiet import QuietSkipper, QuietTail
from scenarios.sim.runner import simulate
from tests.scenarios.campaigns.chaos.planted import by_name

# Short fault windows keep each run well under a second; every fault kind is enabled.
CHAOS = ChaosConfig(members=(2, 6), duration_ms=600_000)


def _both(
    monkeypatch: pytest.MonkeyPatch, loaded: Any, seed: int, log_heartbeats: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    lazy = simulate(loaded, seed, log_heartbeats=log_heartbeats).records
    eager = simulate(loaded, seed, log_heartbeats=log_heartbeats, reference=True).records
    monkeypatch.undo()
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


STABLE = """
name = "stable-then-changes"
seed = 1
settle_ms = 600000
[cluster]
size = {size}
[cluster.config]
"connect.protocol" = "{protocol}"
[network]
latency_ms = {latency}
[workload.generate]
count = {size}
tasks = 3
prefix = "connector"
[[timeline]]
at_ms = 1200000
action = "leave"
member = "w2"
[[timeline]]
at_ms = 2460000
action = "join"
member = "w2"
[[timeline]]
at_ms = 3300000
action = "partition"
member = "w1"
duration_ms = 40000
"""


@pytest.mark.parametrize("log_heartbeats", [False, True])
@pytest.mark.parametrize(
    ("size", "protocol", "latency"), [(3, "sessioned", 1), (7, "eager", 2), (12, "compatible", 5)]
)
def test_quiet_stretches_are_skipped_without_a_trace(
    monkeypatch: pytest.MonkeyPatch, size: int, protocol: str, latency: int, log_heartbeats: bool
) -> None:
    text = STABLE.format(size=size, protocol=protocol, latency=latency)
    loaded = loads_scenario(text, "stable.toml")
    skipped: list[int] = []
    original = QuietSkipper._shift

    def spy(self: QuietSkipper, dt: int, ds: int) -> None:
        skipped.append(dt)
        original(self, dt, ds)

    monkeypatch.setattr(QuietSkipper, "_shift", spy)
    lazy, eager = _both(monkeypatch, loaded, 5, log_heartbeats)
    # Heartbeat records leave nothing to skip; without them most of the hour is skipped.
    assert (sum(skipped) > 30 * 60_000) is not log_heartbeats
    assert any(r["kind"] == "fault" for r in eager)
    assert lazy == eager


FAULTS = """
name = "heartbeats-under-faults"
seed = 1
settle_ms = 600000
[cluster]
size = 5
[cluster.config]
"connect.protocol" = "sessioned"
[network]
latency_ms = 1
jitter_ms = {jitter}
[workload.generate]
count = 5
tasks = 3
prefix = "connector"
[[timeline]]
at_ms = 600000
action = "loss"
member = "w2"
probability = 0.3
duration_ms = 20000
[[timeline]]
at_ms = 900000
action = "latency"
member = "w3"
extra_ms = 400
duration_ms = 60000
[[timeline]]
at_ms = 1500000
action = "partition"
member = "w4"
duration_ms = 45000
"""


@pytest.mark.parametrize("jitter", [0, 5])
def test_heartbeat_rounds_are_replayed_without_a_trace(
    monkeypatch: pytest.MonkeyPatch, jitter: int
) -> None:
    # forward_heartbeats replays heartbeat rounds while faults are in force too: lost and
    # slow messages, and a partition whose member's session runs out during a replay
    loaded = loads_scenario(FAULTS.format(jitter=jitter), "faults.toml")
    replays: list[tuple[int, int, bool]] = []  # (from, to, partition in force)
    original = heartbeats.forward_heartbeats

    def spy(engine: Engine, until: tuple[int, int]) -> int:
        before, partitioned = engine.now_ms, bool(engine.network.partitioned)
        forwarded = original(engine, until)
        replays.append((before, engine.now_ms, partitioned))
        return forwarded

    monkeypatch.setattr(quiet, "forward_heartbeats", spy)
    lazy, eager = _both(monkeypatch, loaded, 3, False)
    assert lazy == eager
    expired = [r for r in eager if r["kind"] == "timer_fired" and r["member"] == "w4"]
    assert expired and expired[0]["t_ms"] < 1_545_000  # w4's session ran out, partitioned
    assert any(b > a and p for a, b, p in replays)  # replayed with the partition in force
    assert sum(b - a for a, b, _ in replays) > 5 * 60_000 * (jitter > 0)


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


@pytest.mark.parametrize("jitter_ms", [0, 1, 5])
def test_fault_free_arrivals_are_the_networks_arrivals(jitter_ms: int) -> None:
    """``Network.fault_free_arrival`` and a link's ``fault_free_link`` function (the replay's
    paths) give ``arrival_ms``'s times and draws wherever no fault is in force: on every link
    while none was injected, and on another member's link while one member is partitioned or
    loses messages; all three share each link's clock."""
    from members.group_client import COORDINATOR_ADDRESS
    from scenarios.sim.network import Network

    general, steady = (
        Network(2, jitter_ms, random.Random(3)),
        Network(2, jitter_ms, random.Random(3)),
    )
    for network in (general, steady):
        network.partition("w9")
        network.lose("w8", "both", 0.5, 10**9)
    for i in range(3000):
        source, dest = (f"w{i % 3}#1", COORDINATOR_ADDRESS)[:: 1 if i % 2 else -1]
        now = i // 7
        expected = general.arrival_ms(source, dest, now)
        way = i % 5  # (not in step with the link: each link sees all three)
        if way == 0:
            assert steady.arrival_ms(source, dest, now) == expected
        elif way == 1:
            assert steady.fault_free_arrival(source, dest, now) == expected
        else:
            assert steady.fault_free_link(source, dest)(now) == expected
    assert steady.rng.getstate() == general.rng.getstate()


@pytest.mark.parametrize("index", range(6))
def test_jittered_chaos_logs_are_unchanged_when_the_quiet_tail_is_dropped(
    monkeypatch: pytest.MonkeyPatch, index: int
) -> None:
    # QuietTail: a jittered run ends early once only heartbeats are left
    spec = generate(CHAOS, 29, index)
    text = spec_to_toml(spec).replace("jitter_ms = 0", "jitter_ms = 5")
    loaded = loads_scenario(text, f"{spec.name}.toml")
    assert loaded.scenario.network.jitter_ms == 5
    ended: list[int] = []
    original = QuietTail.after_heartbeat

    def spy(self: QuietTail, owner: str) -> None:
        original(self, owner)
        ended.append(self.skipped_ms)

    monkeypatch.setattr(QuietTail, "after_heartbeat", spy)
    fast = simulate(loaded, index, log_heartbeats=False).records
    monkeypatch.undo()
    slow = simulate(loaded, index, log_heartbeats=False, reference=True).records
    assert fast == slow
    assert max(ended, default=0) > 0  # the tail was dropped


def test_the_replay_stays_off_when_the_coordinators_heartbeat_handler_is_planted() -> None:
    # The coordinator's Heartbeat handler lives in coordinator/session.py (``heartbeat``):
    # the calibration keys on it, so a bug planted there (here: a Heartbeat no longer pushes
    # the session deadline back) is calibrated afresh and turns the replay off
    assert calibration.replay_holds()
    with by_name("coordinator-heartbeat-keeps-deadline").applied():
        assert not calibration.replay_holds()
    assert calibration.replay_holds()


def test_the_replay_stays_off_when_the_heartbeat_code_behaves_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a bug planted in the code the replay stands for (here: an answer no longer pushes the
    # member's session timer back) must reach the run, not be replayed away
    assert calibration.replay_holds()
    correct = GroupClient._on_heartbeat_response

    def forgets_session(self: GroupClient, response: Any, now_ms: int) -> None:
        if response.error.name == "NONE":
            self.heartbeat_answered(response.correlation_id)
            return
        correct(self, response, now_ms)

    monkeypatch.setattr(GroupClient, "_on_heartbeat_response", forgets_session)
    assert not calibration.replay_holds()
    loaded = loads_scenario(FAULTS.format(jitter=5), "faults.toml")
    lazy, eager = _both(monkeypatch, loaded, 3, False)
    assert lazy == eager  # every heartbeat went through the (buggy) client
    assert any(r["kind"] == "coordinator_unknown" for r in eager)


def test_the_calibration_keys_on_the_heartbeat_thread_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GroupClient's heartbeat methods delegate to members/heartbeat.py: a bug planted in the
    # HeartbeatThread (not in the client) is calibrated afresh too and turns the replay off
    assert calibration.replay_holds()
    correct = HeartbeatThread.on_response

    def forgets_session(self: HeartbeatThread, response: Any, now_ms: int) -> None:
        if response.error.name == "NONE":
            self.answered(response.correlation_id)
            return
        correct(self, response, now_ms)

    monkeypatch.setattr(HeartbeatThread, "on_response", forgets_session)
    assert not calibration.replay_holds()
