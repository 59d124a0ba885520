"""The pure parts of ``tests/kafka_oracle/compare.py`` (no JVM): the timeline a real run
applies, the simulated scenario with the real run's step times, and task downtime and
revocations from the members' SyncGroup answers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kio")

from tests.kafka_oracle.compare import (  # noqa: E402
    EAGER,
    Applied,
    Event,
    Step,
    holdings,
    run_simulation,
    scenario_text,
    simulated_text,
    timeline_steps,
)
from tests.kafka_oracle.compare import _toml as toml  # noqa: E402


def test_the_flagship_roll_is_ten_restarts_one_worker_at_a_time() -> None:
    steps = timeline_steps(toml(scenario_text("rolling-upgrade-eager-to-sessioned")))
    assert [s.member for s in steps] == ["w1", "w2", "w3", "w4", "w5"] * 2
    assert {s.action for s in steps} == {"restart"} and all(s.clean for s in steps)
    assert [dict(s.config)["connect.protocol"] for s in steps] == ["compatible"] * 5 + [
        "sessioned"
    ] * 5
    assert [s.at_ms for s in steps[:2]] == [60_000, 120_000]


def test_the_bounce_is_a_hard_restart() -> None:
    (step,) = timeline_steps(toml(scenario_text("worker-bounce-within-delay")))
    assert step == Step("restart", "w2", 60_000, clean=False, down_ms=20_000)


def test_the_simulation_takes_the_real_step_times_and_down_times() -> None:
    (step,) = timeline_steps(toml(scenario_text("worker-bounce-within-delay")))
    text = simulated_text("worker-bounce-within-delay", [Applied(step, 12_345, 9_876)])
    rewritten = toml(text)
    assert rewritten["timeline"] == [
        {"at_ms": 60_000, "action": "restart", "member": "w2", "down_ms": 9_876, "clean": False}
    ]
    assert rewritten["cluster"]["config"]["scheduled.rebalance.max.delay.ms"] == 20_000
    measures, _, start = run_simulation("worker-bounce-within-delay", [Applied(step, 0, 9_876)])
    # back within the delay: the leader gives w2 its own tasks back, nothing moves
    assert start == 60_000 and measures.tasks_moved == 0 and measures.rebalances >= 2


def _sync(t: int, worker: str, protocol: str, tasks: str, revoked: str = "") -> Event:
    return Event(t, worker, "sync", protocol, tuple(tasks.split()), tuple(revoked.split()))


def test_downtime_counts_unheld_task_time_in_the_window() -> None:
    events = [
        _sync(0, "w1", "sessioned", "a b"),
        _sync(0, "w2", "sessioned", "c"),
        Event(100, "w2", "gone"),
        _sync(400, "w1", "sessioned", "c"),
    ]
    # c is unheld from 100 to 400; the window starts at 50 and ends at 1000
    assert holdings(events, 50, 1000) == (300, 0)
    # a window ending at 250 sees 150 ms of it
    assert holdings(events, 50, 250) == (150, 0)


def test_an_eager_join_stops_everything_and_a_revocation_counts_per_task() -> None:
    events = [
        _sync(0, "w1", EAGER, "a b"),
        _sync(0, "w2", EAGER, "c"),
        Event(10, "w1", "join"),  # eager: w1 stops a and b (2 revocations)
        Event(12, "w2", "join"),  # and w2 stops c (1)
        _sync(20, "w1", EAGER, "a c"),
        _sync(21, "w2", EAGER, "b"),
    ]
    # a, b unheld 10..20 / 10..21; c 12..20
    assert holdings(events, 0, 100) == (10 + 11 + 8, 3)


def test_the_first_incremental_answer_after_eager_restarts_the_snapshot() -> None:
    events = [
        _sync(0, "w1", EAGER, "a b"),
        Event(10, "w1", "join"),
        # compatible generation: the delta is empty and nothing revoked; WorkerCoordinator
        # adds its snapshot (a, b) back, so they run again from here
        _sync(30, "w1", "compatible", ""),
        _sync(50, "w1", "compatible", "c", revoked="a"),
    ]
    downtime, revocations = holdings(events, 0, 100)
    # a, b: 10..30; c never held before 50 (it exists: it is assigned at 50); a from 50 on
    assert downtime == 20 + 20 + 50 + 50
    assert revocations == 2 + 1


def test_rounds_are_the_same_when_as_many_workers_get_and_lose_as_many() -> None:
    from tests.kafka_oracle.compare import Round, equal_rounds

    real = [
        Round(10, 5, {"w1": {"tasks": ["c-0", "c-1"]}, "w2": {"tasks": [], "connectors": []}}),
        Round(20, 6, {"w1": {"revoked_tasks": ["c-0"]}}),
        Round(90, 7, {"w2": {"tasks": ["c-0"]}}),  # after the run's end: not compared
    ]
    sim = [
        Round(60_010, 2, {"w1": {"tasks": ["c-2", "c-3"]}}),  # other names, same shape
        Round(60_020, 3, {"w2": {"revoked_tasks": ["c-0", "c-1"]}}),  # revokes 2, not 1
    ]
    assert equal_rounds(real, sim, (10, 60_000), real_end_ms=50) == 1
    # another worker, the same numbers: the same round (member-id order decides which)
    renamed = [sim[0], Round(60_020, 3, {"w2": {"revoked_tasks": ["c-0"]}})]
    assert equal_rounds(real, renamed, (10, 60_000), real_end_ms=50) == 2


def test_a_scenarios_own_delay_is_scaled_by_the_same_factor() -> None:
    """connect-system-test-bounce sets 60 s (Kafka's system-test template): 4 s in both runs,
    written over its own line (not a second key, which TOML refuses)."""
    from tests.kafka_oracle.compare import DELAY_MS, delay_ms

    assert delay_ms("connect-system-test-bounce") == 4_000
    assert delay_ms("worker-bounce-within-delay") == DELAY_MS
    raw = toml(scenario_text("connect-system-test-bounce"))
    assert raw["cluster"]["config"]["scheduled.rebalance.max.delay.ms"] == 4_000
    steps = timeline_steps(raw)
    assert len(steps) == 18 and [s.clean for s in steps] == [True] * 9 + [False] * 9


def _round(t_ms: int, **given: tuple[list[str], list[str], int | None]):  # type: ignore[no-untyped-def]
    from tests.kafka_oracle.compare_streams import Given, StreamsRound

    return StreamsRound(
        t_ms, t_ms, {c: Given(tuple(a), tuple(s), n) for c, (a, s, n) in given.items()}
    )


def test_streams_measures_count_probes_follow_ups_moves_and_downtime() -> None:
    """A scale-out as KIP-441 tells it: warm-ups with a probe scheduled, the probe revokes
    0_2 from I1 and asks I3 to rejoin at once, the follow-up gives it 0_2: one probing
    rebalance, one follow-up, one active task moved, down from the probe to the follow-up."""
    from tests.kafka_oracle.compare_streams import equal_rounds, measure

    rounds = [
        _round(0, I1=(["0_0", "0_2"], ["0_1"], None), I2=(["0_1"], ["0_0", "0_2"], None)),
        _round(
            100,
            I1=(["0_0", "0_2"], ["0_1"], 60_100),
            I2=(["0_1"], ["0_0", "0_2"], None),
            I3=([], ["0_1", "0_2"], None),
        ),
        _round(
            60_100,
            I1=(["0_0"], ["0_2"], None),
            I2=(["0_1"], ["0_0"], None),
            I3=([], ["0_1", "0_2"], 0),
        ),
        _round(
            60_400,
            I1=(["0_0"], ["0_2"], None),
            I2=(["0_1"], ["0_0"], None),
            I3=(["0_2"], ["0_1"], None),
        ),
    ]
    m = measure(rounds, 50, 70_000)
    assert (m.rebalances, m.probing_rebalances, m.followups, m.tasks_moved) == (3, 1, 1, 1)
    assert m.downtime_ms == 300
    assert m.actives_at_end == {"I1": 1, "I2": 1, "I3": 1}
    assert [r.probing for r in rounds] == [False, True, False, False]
    assert [r.followup for r in rounds] == [False, False, True, False]
    # shapes only: the same rounds with I1 and I2 swapped are equal, a missing follow-up is not
    swapped = [
        type(r)(
            r.t_ms,
            r.generation,
            {"I2" if c == "I1" else "I1" if c == "I2" else c: g for c, g in r.given.items()},
        )
        for r in rounds
    ]
    assert equal_rounds(rounds, swapped, (50, 50), 70_000) == 3
    assert equal_rounds(rounds, [rounds[0], rounds[1], rounds[3]], (50, 50), 70_000) == 1


def test_the_streams_simulation_takes_the_real_changelog_size() -> None:
    """With the real run's 20,000 records per changelog and no new input, groupsim's warm-ups
    are caught up by the first probe: one probing rebalance moves one active task (the
    library's 1,000,000 records each, restored one after the other by I3's one stream thread
    at 10,000 records/s, need three more probes)."""
    from tests.kafka_oracle.compare_streams import run_simulation, simulated_text

    text = simulated_text("streams/kip-441-scale-out", 20_000)
    assert "changelog_records = 20000" in text and "changelog_rate = 0" in text
    real_like, _, _ = run_simulation("streams/kip-441-scale-out", 20_000)
    library, _, _ = run_simulation("streams/kip-441-scale-out", None)
    assert (real_like.probing_rebalances, library.probing_rebalances) == (1, 4)
    assert real_like.tasks_moved == library.tasks_moved == 1
    assert real_like.actives_at_end == {"I1": 1, "I2": 1, "I3": 1}


def test_a_simulated_crash_is_placed_at_the_real_heartbeat_phase() -> None:
    """The real w2 died 12 ms after its last request to the coordinator: groupsim's w2 crashes
    12 ms after its own (its session expires 10 s after that request), down as long as the
    real one; the other steps keep their times."""
    from tests.kafka_oracle.compare import LIBRARY, loads_any, place_crashes, simulate

    name = "worker-bounce-within-delay"
    (step,) = timeline_steps(toml(scenario_text(name)))
    (placed,) = place_crashes(name, [Applied(step, 134_381, 17_906, phase_ms=12)])
    assert placed.shift_ms > 0
    records = simulate(*_loaded(loads_any, simulated_text(name, [placed]), name)).records
    crash = next(r["t_ms"] for r in records if r["kind"] == "member_crash")
    removed = next(r for r in records if r["kind"] == "member_removed")
    assert crash == step.at_ms - placed.shift_ms
    assert crash - (removed["t_ms"] - removed["session_timeout_ms"]) == 12
    start = next(r for r in records if r["kind"] == "member_start" and r["t_ms"] > crash)
    assert start["t_ms"] - crash == 17_906
    # an unknown phase, or one beyond a heartbeat interval, leaves the crash where it was
    for phase in (None, 5_000):
        assert place_crashes(name, [Applied(step, 0, 17_906, phase_ms=phase)])[0].shift_ms == 0
    assert LIBRARY.is_dir()


def test_a_streams_crash_counts_its_tasks_down_from_the_kill() -> None:
    """I3 is killed at 1,000 ms and still in the group until its session expires: its two
    active tasks are down from the kill to the round at 46,000 ms that gives them to the
    standby holders (2 × 45 s), and they count as moved."""
    from tests.kafka_oracle.compare_streams import measure

    rounds = [
        _round(
            0,
            I1=(["0_0"], ["0_1"], None),
            I2=(["0_1"], ["0_2"], None),
            I3=(["0_2", "0_3"], [], None),
        ),
        _round(46_000, I1=(["0_0", "0_2"], ["0_1"], None), I2=(["0_1", "0_3"], ["0_2"], None)),
    ]
    m = measure(rounds, 1_000, 50_000, frozenset({"I3"}))
    assert (m.rebalances, m.tasks_moved, m.downtime_ms) == (1, 2, 90_000)
    # without the crash, the same window counts from the round on: nothing is down
    assert measure(rounds, 1_000, 50_000).downtime_ms == 0


def test_a_simulated_streams_crash_is_placed_at_the_real_heartbeat_phase() -> None:
    """The real I3 was killed 700 ms after its last request to the coordinator: groupsim's I3
    crashes 700 ms after its own (its session expires 45 s after that request); a phase
    beyond the heartbeat interval leaves the crash where it was."""
    from tests.kafka_oracle.compare_streams import place_crash, simulated_text

    name = "streams/client-crash-with-standbys"
    text = simulated_text(name, None)
    placed = place_crash(text, name, "I3", 700)
    assert placed != text
    records = simulate_text(placed, name)
    crash = next(r["t_ms"] for r in records if r["kind"] == "member_crash")
    removed = next(r for r in records if r["kind"] == "member_removed")
    assert crash - (removed["t_ms"] - removed["session_timeout_ms"]) == 700
    assert place_crash(text, name, "I3", 5_000) == text


def simulate_text(text: str, name: str) -> list[dict]:  # type: ignore[type-arg]
    from tests.kafka_oracle.compare import loads_any, simulate

    return simulate(*_loaded(loads_any, text, name)).records


def _loaded(loads_any, text: str, name: str):  # type: ignore[no-untyped-def]
    loaded = loads_any(text, f"{name}.toml")
    return loaded, loaded.scenario.seed


def test_the_streams_simulation_takes_the_real_clients_state_at_the_step() -> None:
    """A scale-in's clients hold the stores the real run's placement gave them (it follows
    random process ids): the file's ``state`` lines are replaced, the client whose state is
    not given keeps the file's, and the run then starts from that placement. Here the real
    one of a 4.0.2 run (I2 and I3 also kept stores of tasks they ran at the start, far
    behind); groupsim makes the real run's rounds: the leave's round with one revocation and
    a follow-up, the probing rebalance 60 s later, and its follow-up."""
    from tests.kafka_oracle.compare_streams import run_simulation, simulated_text

    name = "streams/kip-441-scale-in-in-sync"
    states = {
        "I2": {"0_0": 0, "0_1": 0, "0_2": 19_000, "0_3": 0},
        "I3": {"0_0": 17_000, "0_1": 0, "0_2": 0, "0_3": 4_000},
    }
    text = simulated_text(name, 14_750, None, states)
    assert 'state = { "0_0" = 0, "0_1" = 0, "0_2" = 19000, "0_3" = 0 }' in text
    assert 'state = { "0_0" = 0, "0_3" = 0, "0_2" = 0 }' in text  # I1's, the file's
    with pytest.raises(ValueError, match="I9"):
        simulated_text(name, 14_750, None, {"I9": {}})
    # a joining client whose first JoinGroup names no store keeps the file's (no state line)
    joined = simulated_text("streams/kip-441-scale-out", 20_000, None, {"I3": {}})
    assert 'name = "I3"\nprocess_id = "PID_3"\nautostart = false' in joined
    # each changelog's own size (the input's keys hash unevenly over the partitions)
    sizes = {"0_0": 17_000, "0_1": 20_000, "0_2": 19_000, "0_3": 4_000}
    sized = simulated_text(name, 15_000, None, states, sizes)
    assert '[changelog_overrides]\n"0_0" = { records = 17000, rate = 0 }' in sized
    assert '"0_3" = { records = 4000, rate = 0 }' in sized
    # a file's own overrides give way to the real sizes
    lagging = simulated_text("streams/kip-441-scale-in-lagging", 15_000, None, None, sizes)
    assert lagging.count("[changelog_overrides]") == 1 and "records = 100000" not in lagging
    m, rounds, start = run_simulation(name, 15_000, None, states, sizes)
    assert (m.rebalances, m.probing_rebalances, m.followups, m.tasks_moved) == (4, 1, 2, 4)
    assert [(r.followup, r.probing) for r in rounds if r.t_ms >= start] == [
        (True, False),
        (False, True),
        (True, False),
        (False, False),
    ]


def test_the_simulation_starts_workers_in_the_real_order_with_the_real_member_ids() -> None:
    """Given a real run's order (w3 added first, so it led; its member ids), groupsim's
    workers start 50 ms apart in that order instead of all at 0, w3 leads the first
    generation, and every worker joins under the real id."""
    from tests.kafka_oracle.compare import JOIN_SPACING_MS, RealOrder, loads_any, simulate

    name = "worker-leaves-for-good"
    ids = {f"w{i}": [f"w{i}-00000000-0000-4000-8000-00000000000{i}"] for i in range(1, 5)}
    order = RealOrder(ids, ["w3", "w1"])
    text = simulated_text(name, None, order)
    starts = re.findall(r'name = "(w\d)"\nstart_ms = (\d+)', text)
    assert starts == [
        ("w3", "0"),
        ("w1", str(JOIN_SPACING_MS)),
        ("w2", str(2 * JOIN_SPACING_MS)),
        ("w4", str(3 * JOIN_SPACING_MS)),
    ]
    loaded = loads_any(text, f"{name}.toml")
    records = simulate(loaded, loaded.scenario.seed, member_ids=order.member_ids).records
    first = next(r for r in records if r["kind"] == "generation")
    assert first["leader"] == "w3"
    assert sorted(first["member_ids"]) == sorted(i for v in ids.values() for i in v)
    assert simulated_text(name) == scenario_text(name)  # no order: the file's start


def test_client_names_may_hold_hyphens() -> None:
    """KIP-708's clients are ``Node-1`` … ``Node-9``: the name is what precedes the stream
    thread (real member and client ids) or the member id's UUID (groupsim)."""
    from tests.kafka_oracle.compare_streams import client_name

    assert client_name("Node-1-StreamThread-1-consumer-5b0c9e1e-0a0b-4c4d-8e8f-000000000001") == (
        "Node-1"
    )
    assert client_name("Node-1-StreamThread-1-consumer") == "Node-1"
    assert client_name("Node-7-b2221a58-008a-45a6-8464-7159c324c985") == "Node-7"
    assert client_name("I1-cd613e30-d8f1-4adf-91b7-584a2265b1f5") == "I1"


def test_the_lagging_scale_in_is_written_in_two_parts_a_hundredth_of_the_records() -> None:
    """The changelogs' records less the standbys' lags before the standbys are paused, the
    lags while they are: 1,000,000 (0_3: 100,000) and 200,000 (0_3: 50,000) over 100."""
    from tests.kafka_oracle.compare_streams import SCALES, app_file, lagging_inputs, scenario_raw

    name = "streams/kip-441-scale-in-lagging"
    raw = scenario_raw(name)
    before, during = lagging_inputs(raw, SCALES[name])
    assert before == {0: 8_000, 1: 8_000, 2: 8_000, 3: 500}
    assert during == {0: 2_000, 1: 2_000, 2: 2_000, 3: 500}
    assert SCALES[name].settings(raw["config"]) == {
        "acceptable.recovery.lag": 100,
        "groupsim.restore.records.per.sec": 100,
    }
    # the leaders' replay is given the lag the real clients ran with, not Kafka's default
    assert app_file(raw, SCALES[name])["acceptable.recovery.lag"] == 100


def test_a_scaled_simulation_takes_the_scaled_settings_and_the_real_sizes() -> None:
    """The scaled scenario's acceptable.recovery.lag and restore rate are in groupsim's file,
    and the real changelog sizes replace the file's own ``[changelog_overrides]``; given the
    library's lags scaled, groupsim keeps the lagging tasks on I2 and ends balanced."""
    from tests.kafka_oracle.compare_streams import run_simulation, simulated_text

    name = "streams/kip-441-scale-in-lagging"
    sizes = {"0_0": 10_000, "0_1": 10_000, "0_2": 10_000, "0_3": 1_000}
    states = {
        "I1": {"0_0": 0, "0_3": 0, "0_2": 2_000},
        "I2": {"0_1": 0, "0_0": 2_000, "0_3": 500},
        "I3": {"0_2": 0, "0_1": 2_000},
    }
    text = simulated_text(name, 7_750, None, states, sizes)
    parsed = toml(text)
    assert parsed["config"]["acceptable.recovery.lag"] == 100
    assert parsed["config"]["groupsim.restore.records.per.sec"] == 100
    assert parsed["changelog_overrides"]["0_3"] == {"records": 1_000, "rate": 0}
    assert text.count("[changelog_overrides]") == 1
    measures, rounds, start = run_simulation(name, 7_750, None, states, sizes)
    first = next(r for r in rounds if r.t_ms >= start)
    assert set(first.given["I2"].active) == {"0_0", "0_1", "0_3"}
    assert measures.actives_at_end == {"I2": 2, "I3": 2}
    assert measures.probing_rebalances >= 2


def test_nine_nodes_run_two_sub_topologies_joining_together() -> None:
    """KIP-708's nine nodes: the app's stateful sub-topology 0 and stateless 1, the client
    tags joined for the leaders' replay, and Kafka's default initial delay for a scenario
    without steps (its clients join together); groupsim's one round from the start."""
    from tests.kafka_oracle.compare_streams import (
        BROKER,
        app_file,
        broker_settings,
        run_simulation,
        scenario_raw,
        topology,
    )

    raw = scenario_raw("streams/kip-708-nine-nodes")
    assert topology(raw) == (9, 9)
    app = app_file(raw)
    assert [s.get("changelog_topic") for s in app["subtopologies"]] == [
        "stateful-counts-changelog",
        None,
    ]
    assert app["rack.aware.assignment.tags"] == "zone,cluster"
    assert broker_settings(raw)["group.initial.rebalance.delay.ms"] == 3_000
    assert broker_settings(scenario_raw("streams/kip-441-scale-out")) == BROKER
    measures, _, start = run_simulation(
        "streams/kip-708-nine-nodes", 6_667, None, None, {f"0_{p}": 6_667 for p in range(9)}
    )
    assert start == 0 and measures.rebalances == 1
    assert measures.actives_at_end == {f"Node-{i}": 2 for i in range(1, 10)}


def test_rack_aware_min_traffic_runs_one_broker_per_rack(tmp_path: Path) -> None:
    """KIP-925's scenario: a broker per rack (r0, r1, r2 → nodes 1, 2, 3), each partition's
    one replica where the file's racks say (entry p modulo the list's length), and the racks
    handed to the leaders' replay with the strategy; groupsim's one round puts every active
    task on the instance in its source partition's rack (what the real 4.0.2 leader gave)."""
    from scenarios.record.streams_leaders import read_app
    from tests.kafka_oracle.compare_streams import (
        app_file,
        placements,
        run_simulation,
        scenario_racks,
    )

    raw = scenario_raw_of("streams/rack-aware-min-traffic")
    racks = scenario_racks(raw)
    assert racks == ("r0", "r1", "r2")
    placed = placements(raw, racks)
    assert placed["input"] == {0: [2], 1: [3], 2: [1], 3: [2], 4: [3], 5: [1]}
    assert placed["stateful-counts-changelog"] == {0: [3], 1: [1], 2: [2], 3: [3], 4: [1], 5: [2]}
    assert placed["stateless-input"] == {0: [2], 1: [3], 2: [1]}
    assert scenario_racks(scenario_raw_of("streams/kip-441-scale-out")) == ()
    path = tmp_path / "streams-app.json"
    path.write_text(json.dumps(app_file(raw)))
    app = read_app(path)
    assert app.configs.rack_aware_assignment_strategy == "min_traffic"
    assert app.racks[0][0][:3] == (frozenset({"r1"}), frozenset({"r2"}), frozenset({"r0"}))
    assert len(app.racks[0][1]) == 6 and app.racks[1][1] == ()
    _, rounds, _ = run_simulation("streams/rack-aware-min-traffic", 0, None, None, None)
    (first,) = rounds
    assert set(first.given["app-0"].active) == {"0_2", "0_5", "1_2"}
    assert set(first.given["app-1"].active) == {"0_0", "0_3", "1_0"}


def test_a_cluster_takes_one_rack_per_node(tmp_path: Path) -> None:
    from tests.kafka_oracle.cluster import kafka_cluster

    with (
        pytest.raises(ValueError, match="2 racks for 3 nodes"),
        kafka_cluster(tmp_path, 3, racks=("r0", "r1")),
    ):
        pass


def test_fault_steps_are_played_at_the_real_times_with_the_real_down_time() -> None:
    """The faults scenario's failover and partition come as long after I3's join as they did
    in the real run (their phase labels with them), and the coordinator is down as long as
    the real one was (from the broker's kill to the new coordinator's first answer)."""
    from tests.kafka_oracle.compare_streams import place_steps, run_simulation, simulated_text

    name = "streams/kip-441-scale-out-with-faults"
    text = place_steps(simulated_text(name, None), [0, 30_400, 62_900], {1: 8_100})
    timeline = toml(text)["timeline"]
    assert [(s["at_ms"], s["action"]) for s in timeline] == [
        (60_000, "phase"),
        (60_000, "join"),
        (90_400, "phase"),
        (90_400, "coordinator_failover"),
        (122_900, "phase"),
        (122_900, "partition"),
    ]
    assert timeline[3]["down_ms"] == 8_100 and timeline[5]["duration_ms"] == 20_000
    assert place_steps(text, [], {}) == text
    # a fiftieth of the records, restored a fiftieth as fast: I3's warm-ups still take 100 s
    from tests.kafka_oracle.compare_streams import SCALES, lagging_inputs, scenario_raw

    raw = scenario_raw(name)
    assert SCALES[name].settings(raw["config"]) == {
        "acceptable.recovery.lag": 200,
        "groupsim.restore.records.per.sec": 200,
    }
    assert lagging_inputs(raw, SCALES[name]) == (
        dict.fromkeys(range(3), 20_000),
        dict.fromkeys(range(3), 0),
    )
    measures, _, start = run_simulation(name, 20_000, None, None, None, None, [0, 30_400], {1: 100})
    assert start == 60_000 and measures.actives_at_end == {"I1": 1, "I2": 1, "I3": 1}


def scenario_raw_of(name: str) -> dict[str, Any]:
    from tests.kafka_oracle.compare_streams import scenario_raw

    return scenario_raw(name)


def test_old_workers_join_as_the_releases_of_their_protocols() -> None:
    """mixed-versions' joiners run the last Connect release whose newest protocol their
    ``connect.protocol`` is (2.3 for compatible, 2.2 for eager); leaves start nothing, and a
    restart with a protocol (the flagship's roll) is the same 4.x worker reconfigured."""
    from tests.kafka_oracle.compare import worker_release

    steps = timeline_steps(toml(scenario_text("mixed-versions")))
    assert [(s.action, s.member) for s in steps] == [
        ("join", "old-compatible"),
        ("join", "old-eager"),
        ("leave", "old-eager"),
        ("leave", "old-compatible"),
    ]
    assert [worker_release(s) for s in steps] == ["2.3.1", "2.2.2", None, None]
    roll = timeline_steps(toml(scenario_text("rolling-upgrade-eager-to-sessioned")))
    assert {worker_release(s) for s in roll} == {None}
    assert (
        worker_release(Step("join", "w4", 0, config=(("connect.protocol", "sessioned"),))) is None
    )


def test_worker_names_keep_their_hyphens() -> None:
    """``old-compatible`` and ``old-eager`` are two workers: only the member id's UUID goes."""
    from tests.kafka_oracle.compare import worker_name

    assert worker_name("old-eager-b2221a58-008a-45a6-8464-7159c324c985") == "old-eager"
    assert worker_name("old-compatible-cd613e30-d8f1-4adf-91b7-584a2265b1f5") == "old-compatible"
    assert worker_name("w1-00000000-0000-4000-8000-000000000001") == "w1"
    assert worker_name("old-eager") == "old-eager"  # a client id


def test_the_generations_protocol_comes_from_the_join_answers() -> None:
    """A 2.x worker's SyncGroup (v3) answer does not name the protocol: each generation's is
    read from the JoinGroup answers without error (v5 as Kafka 2.3 sends, v9 as 4.x)."""
    from scenarios.record.exchanges import Exchange
    from scenarios.serve import wire
    from tests.kafka_oracle.compare import generation_protocols

    def join(generation: int, protocol: str, version: int, error: int = 0) -> Exchange:
        body = wire.build(
            wire.response_class(11, version),
            throttle_time=wire.td(0),
            error_code=wire.kio_error(error),
            generation_id=generation,
            protocol_name=protocol,
            leader="w1",
            member_id="w1",
            members=(),
        )
        raw = wire.encode_response(11, version, 1, body)[4:]  # no size prefix, as recorded
        return Exchange(1, 0, 11, version, 1, b"", 0, raw)

    exchanges = [join(4, "compatible", 5), join(5, "default", 9), join(-1, "", 5, 79)]
    assert generation_protocols(exchanges) == {4: "compatible", 5: "default"}


def test_a_task_refused_because_its_worker_still_runs_it_counts_as_running() -> None:
    """KAFKA-13816's leftover: a worker given back a task it never stopped reports it FAILED
    ("Task already exists in this worker") while the first instance runs on."""
    from tests.kafka_oracle.compare import _orphan_restart

    trace = (
        "org.apache.kafka.connect.errors.ConnectException: Task already exists in this worker: c-1"
    )
    assert _orphan_restart({"state": "FAILED", "trace": trace})
    assert not _orphan_restart({"state": "FAILED", "trace": "ConnectException: boom"})
    assert not _orphan_restart({"state": "UNASSIGNED"})


def test_a_release_class_path_is_resolved_once_from_a_one_dependency_pom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dependency_classpath`` asks Maven once per artifact and release (a pom naming that one
    artifact), then reads the cached answer."""
    import subprocess

    from tests.kafka_oracle import releases

    calls: list[Path] = []

    def fake_mvn(command: list[str], cwd: Path, **_: Any) -> None:
        assert command[:2] == ["mvn", "-q"] and "dependency:build-classpath" in command
        calls.append(cwd)
        (cwd / "part.txt").write_text("/m2/connect-runtime-2.3.1.jar:/m2/kafka-clients-2.3.1.jar\n")

    monkeypatch.setattr(releases, "RESOLVED", tmp_path)
    monkeypatch.setattr(subprocess, "run", fake_mvn)
    first = releases.dependency_classpath("connect-runtime", "2.3.1")
    again = releases.dependency_classpath("connect-runtime", "2.3.1")
    assert first == again == "/m2/connect-runtime-2.3.1.jar:/m2/kafka-clients-2.3.1.jar"
    assert calls == [tmp_path / "connect-runtime-2.3.1"]
    pom = (calls[0] / "pom.xml").read_text()
    assert "<artifactId>connect-runtime</artifactId><version>2.3.1</version>" in pom


def test_a_client_playing_an_older_release_runs_that_releases_jars() -> None:
    from tests.kafka_oracle.compare_streams import (
        release_of,
        scenario_raw,
        scenario_releases,
        start_releases,
    )

    # StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION: 8 in 2.6.x/2.7.x, 11 in 4.x
    assert release_of(8) == "2.7.2"
    assert release_of(11) is None and release_of(None) is None
    with pytest.raises(ValueError, match="latest supported version 9"):
        release_of(9)
    raw = scenario_raw("streams/version-probing-rolling-upgrade")
    assert start_releases(raw) == dict.fromkeys(("I1", "I2", "I3"), "2.7.2")
    assert scenario_releases(raw) == ["2.7.2"]
    assert scenario_releases(scenario_raw("streams/kip-441-scale-out")) == []


def test_a_file_without_process_ids_is_given_the_real_ones() -> None:
    from tests.kafka_oracle.compare_streams import simulated_text

    pid = "11111111-2222-3333-4444-555555555555"
    text = simulated_text(
        "streams/version-probing-rolling-upgrade",
        9000,
        {"I2": pid},
        {"I2": {"0_2": 0, "0_3": 5}},
    )
    assert f'name = "I2"\nprocess_id = "{pid}"\nstate = {{ "0_2" = 0, "0_3" = 5 }}\n' in text
    assert 'name = "I1"\nstate = ' in text  # the others as the file says


def test_the_rounds_version_sequence() -> None:
    from tests.kafka_oracle.compare_streams import StreamsRound, version_sequence

    rounds = [
        StreamsRound(300, 3, {}, (11, 11)),
        StreamsRound(100, 1, {}, (8, 8)),
        StreamsRound(200, 2, {}, (8, 11)),
        StreamsRound(50, 0, {}, (8, 8)),
    ]
    assert version_sequence(rounds, 100, 300) == ["8/8", "8/11", "11/11"]


def test_an_upgrade_row_names_both_releases() -> None:
    from tests.kafka_oracle.compare_streams import table

    measures = {
        "rebalances": 1,
        "probing_rebalances": 0,
        "followups": 0,
        "tasks_moved": 0,
        "downtime_ms": 0,
        "actives_at_end": {"I1": 6},
    }
    conformance = {
        "answers": 1,
        "answer_divergences": 0,
        "answer_timing": 0,
        "rounds": 1,
        "round_divergences": 0,
        "round_timing": 0,
        "violations": 0,
    }
    row = {
        "scenario": "streams/version-probing-rolling-upgrade",
        "kafka": "4.0.2",
        "from_kafka": "2.7.2",
        "real": measures,
        "groupsim": measures,
        "rounds_equal": 1,
        "rounds_compared": 1,
        "conformance": conformance,
    }
    assert "| streams/version-probing-rolling-upgrade | 2.7.2 → 4.0.2 | 1 / 1 |" in table([row])


def test_clients_start_in_the_real_order_of_first_joins() -> None:
    from tests.kafka_oracle.compare_streams import simulated_text, start_in_order

    text = start_in_order(
        simulated_text("streams/version-probing-rolling-upgrade", None), ["I3", "I2", "I1"]
    )
    starts = re.findall(r'(?m)^name = "(I\d)"\nstart_ms = (\d+)$', text)
    assert starts == [("I1", "100"), ("I2", "50"), ("I3", "0")]
    # a client that joins later (autostart = false) keeps its own start
    joiner = simulated_text("streams/kip-441-scale-out", None)
    assert start_in_order(joiner, ["I3", "I1", "I2"]).count("start_ms = ") == 2


def test_a_restart_is_back_as_long_after_the_old_members_last_request_as_the_real_one() -> None:
    from scenarios.input.library import loads_any
    from scenarios.sim.runner import simulate
    from tests.kafka_oracle.compare_streams import place_restarts, simulated_text

    name = "streams/version-probing-rolling-upgrade"
    text = simulated_text(name, None)
    placed = place_restarts(text, name, [12_000, -1, 4_000])
    downs = re.findall(r'(?m)^action = "restart"\nclient = "(I\d)"\ndown_ms = (\d+)$', placed)
    # I2's gap unknown (-1): as the file says; the others less their heartbeat phase at the step
    assert [c for c, _ in downs] == ["I1", "I3"]
    records = simulate(loads_any(placed, "x.toml"), 1).records
    for client, gap in (("I1", 12_000), ("I3", 4_000)):
        step = next(r for r in records if r.get("kind") == "step" and r.get("member") == client)
        removed = next(
            r
            for r in records
            if r.get("kind") == "member_removed"
            and r.get("member") == client
            and r["t_ms"] >= step["t_ms"]
        )
        last = removed["t_ms"] - removed["session_timeout_ms"]
        started = next(
            r
            for r in records
            if r.get("kind") == "member_start"
            and r.get("member") == client
            and r["t_ms"] >= step["t_ms"]
        )
        assert started["t_ms"] - last == gap


def test_the_version_probing_upgrade_runs_with_kafkas_minimum_probing_interval() -> None:
    from tests.kafka_oracle.compare_streams import app_file, run_raw, simulated_text

    name = "streams/version-probing-rolling-upgrade"
    assert app_file(run_raw(name))["probing.rebalance.interval.ms"] == 60_000
    assert '"probing.rebalance.interval.ms" = 60000\n' in simulated_text(name, None)


def test_the_streams_simulation_names_the_real_changelog_topic() -> None:
    """groupsim's side of a Streams comparison names sub-topology 0's changelog as the real
    ``StatefulApp``'s (application ``stateful``, store ``counts``), so its restore order is the
    real restore consumer's; a scenario whose sub-topology 0 is stateless is left alone."""
    from scenarios.input.library import loads_any
    from tests.kafka_oracle.compare_streams import CHANGELOG, name_changelog, simulated_text

    assert CHANGELOG == "stateful-counts-changelog"
    name = "streams/kip-441-scale-in-lagging"
    loaded = loads_any(simulated_text(name, None), f"{name}.toml")
    assert loaded.topology.named_changelog_topic(0) == CHANGELOG  # type: ignore[attr-defined]
    stateless = "[[subtopologies]]\nid = 0\npartitions = 2\nstateful = false\n"
    assert name_changelog(stateless) == stateless
    named = name_changelog("[[subtopologies]]\nid = 0\npartitions = 2\n")
    assert name_changelog(named) == named
