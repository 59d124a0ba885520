"""Whether the heartbeat replay (:mod:`scenarios.sim.fastpath.heartbeats`) may stand for the
engine's own heartbeat processing: one small calibration run with jitter and faults, run with
the replay and without it, compared once per process.

The engine does not look this up itself: :func:`scenarios.sim.runner.simulate` hands
:func:`replay_holds` to every :class:`~scenarios.sim.engine.Engine` it builds, so this module
builds engines without the engine importing it back (no import cycle: tests/test_layering.py).
"""

from __future__ import annotations

from typing import Any

from coordinator import session as coordinator_session
from coordinator.classic_group import ClassicGroup
from coordinator.group import GroupCoordinator
from members.group_client import GroupClient
from members.heartbeat import HeartbeatThread
from scenarios import kinds
from scenarios.input.loader import loads_scenario
from scenarios.input.steps import LoadedView
from scenarios.sim.engine import Engine
from scenarios.sim.network import Network

__all__ = ["replay_holds"]

# A small run that takes every path the replay models (jitter draws, answers lost, a
# partitioned member whose session runs out, a slow link) and a quiet tail.
_CALIBRATION = """
name = "heartbeat-replay-calibration"
seed = 1
settle_ms = 60000
[cluster]
size = 3
[cluster.config]
"connect.protocol" = "sessioned"
[network]
latency_ms = 1
jitter_ms = 2
[workload.generate]
count = 2
tasks = 2
prefix = "c"
[[timeline]]
at_ms = 40000
action = "loss"
member = "w2"
direction = "from_coordinator"
probability = 0.5
duration_ms = 20000
[[timeline]]
at_ms = 90000
action = "partition"
member = "w3"
duration_ms = 15000
[[timeline]]
at_ms = 140000
action = "latency"
member = "w1"
extra_ms = 300
duration_ms = 10000
"""

_calibrated: dict[tuple[object, ...], bool] = {}


def _modelled_code() -> tuple[object, ...]:
    """The functions whose behaviour the replay (and QuietTail's dropped tail) stands for."""
    return (
        GroupClient.fire,
        GroupClient.handle,
        GroupClient._send_heartbeat,
        GroupClient._on_heartbeat_response,
        GroupClient._arm_heartbeat,
        GroupClient.heartbeat_request,
        GroupClient.heartbeats_steady,
        GroupClient.heartbeat_round,
        GroupClient.heartbeat_answered,
        # the heartbeat thread the client methods above delegate to (members/heartbeat.py)
        HeartbeatThread.arm,
        HeartbeatThread.tick,
        HeartbeatThread.on_response,
        HeartbeatThread.round,
        HeartbeatThread.answered,
        GroupCoordinator.handle,
        GroupCoordinator.fire,
        coordinator_session.heartbeat,
        GroupCoordinator.heartbeat_steady,
        GroupCoordinator.extend_session,
        ClassicGroup.extend_session,
        Network.arrival_ms,
    )


def replay_holds() -> bool:
    """True when replaying heartbeat rounds leaves the same event log as the engine's own
    processing of them, on a small calibration run with jitter and faults; checked once per
    process (and again when one of the functions it stands for is replaced).

    The replay models the group client's, the coordinator's and the network's heartbeat code;
    if that code behaves otherwise (it was changed, or a bug was planted in it), the replay
    and QuietTail's dropped tail stay off and every heartbeat goes through that code, so that
    chaos campaigns still see what it does."""
    key = _modelled_code()
    holds = _calibrated.get(key)
    if holds is None:
        loaded = loads_scenario(_CALIBRATION, "calibration.toml")
        try:
            holds = _run(loaded, skip_quiet=True) == _run(loaded, skip_quiet=False)
        except Exception:  # the heartbeat code fails on its own: let the runs show it
            holds = False
        _calibrated[key] = holds
    return holds


def _run(loaded: LoadedView, *, skip_quiet: bool) -> tuple[int, list[dict[str, Any]]]:
    """The calibration run's end (virtual ms) and event log with seed 1, replaying the quiet
    stretches or not (``skip_quiet``): what :func:`scenarios.sim.runner.simulate` adds after
    the run (its summary, end-of-run checks, ``run_end``) depends on nothing else."""
    kind = kinds.get(loaded.scenario.kind).run_kind(loaded)
    engine = Engine(kind, 1, replay=lambda: True, skip_quiet=skip_quiet)
    engine.run_until()
    return engine.now_ms, engine.log.records
