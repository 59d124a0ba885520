"""scenarios.input.loader: happy path, rolling_restart expansion, config merging, every error
kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.connect import ConnectProtocol
from scenarios.input.library import library_dir, library_names, loads_any, resolve_scenario
from scenarios.input.loader import SETTLE_MARGIN_MS, ScenarioError, load_scenario, loads_scenario

FULL = """
name = "worker-bounce"
description = "demo"
seed = 7
log_heartbeats = true
[coordinator]
"group.initial.rebalance.delay.ms" = 0
[network]
latency_ms = 2
jitter_ms = 3
[cluster.config]
"connect.protocol" = "eager"
"groupsim.task.start.ms" = 200
[[cluster.workers]]
name = "w1"
[[cluster.workers]]
name = "w2"
start_ms = 1000
config = { "connect.protocol" = "compatible", "scheduled.rebalance.max.delay.ms" = 10000 }
[[workload.connectors]]
name = "source"
tasks = 3
[workload.generate]
count = 2
tasks = 4
prefix = "gen"
[[timeline]]
at_ms = 10000
action = "phase"
name = "roll"
[[timeline]]
at_ms = 50000
action = "rolling_restart"
interval_ms = 30000
down_ms = 5000
config = { "connect.protocol" = "sessioned" }
[[timeline]]
at_ms = 60000
action = "join"
member = "w3"
config = { "groupsim.task.start.ms" = 50 }
[[timeline]]
at_ms = 80000
action = "restart"
member = "w1"
clean = false
config = { "groupsim.task.stop.ms" = 9 }
[[timeline]]
at_ms = 90000
action = "add_connector"
connector = "sink"
tasks = 2
[[timeline]]
at_ms = 95000
action = "set_tasks"
connector = "sink"
tasks = 5
[[timeline]]
at_ms = 96000
action = "remove_connector"
connector = "gen1"
[[timeline]]
at_ms = 97000
action = "leave"
member = "w3"
[[timeline]]
at_ms = 98000
action = "crash"
member = "w2"
[expect]
converged = true
max_rebalances = 40
expected_violations = ["double_ownership"]
"""


def load(text: str) -> object:
    return loads_scenario(text, "t.toml")


def error(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        loads_scenario(text, "t.toml")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_full_scenario_decodes(tmp_path: Path) -> None:
    path = tmp_path / "full.toml"
    path.write_text(FULL)
    loaded = load_scenario(path)
    assert loaded.source == path
    assert loaded.name == "worker-bounce"
    assert loaded.seed == 7
    assert loaded.scenario.log_heartbeats is True
    assert loaded.coordinator.to_mapping() == {"group.initial.rebalance.delay.ms": 0}
    assert loaded.coordinator_config.initial_rebalance_delay_ms == 0
    assert loaded.coordinator_config.max_size == 2**31 - 1
    assert (loaded.network.latency_ms, loaded.network.jitter_ms) == (2, 3)
    assert [w.name for w in loaded.workers] == ["w1", "w2"]
    assert [w.start_ms for w in loaded.workers] == [0, 1000]
    assert loaded.workers[0].config.connect_protocol is ConnectProtocol.EAGER
    assert loaded.workers[1].config.connect_protocol is ConnectProtocol.COMPATIBLE
    assert loaded.workers[1].raw_config == {
        "connect.protocol": "compatible",
        "groupsim.task.start.ms": 200,
        "scheduled.rebalance.max.delay.ms": 10000,
    }
    assert loaded.connectors == {"source": 3, "gen1": 4, "gen2": 4}
    assert list(loaded.connectors) == ["source", "gen1", "gen2"]
    assert loaded.worker_names == ["w1", "w2", "w3"]
    assert loaded.expect.converged is True
    assert loaded.expect.no_violations is True
    assert loaded.expect.expected_violations == ["double_ownership"]


def test_steps_are_sorted_expanded_and_merged() -> None:
    loaded = load(FULL)
    got = [(s.at_ms, s.action, s.member, s.origin) for s in loaded.steps]
    assert got == [
        (10000, "phase", None, "timeline[0]"),
        (50000, "restart", "w1", "timeline[1].members[0]"),
        (60000, "join", "w3", "timeline[2]"),
        (80000, "restart", "w2", "timeline[1].members[1]"),
        (80000, "restart", "w1", "timeline[3]"),
        (90000, "add_connector", None, "timeline[4]"),
        (95000, "set_tasks", None, "timeline[5]"),
        (96000, "remove_connector", None, "timeline[6]"),
        (97000, "leave", "w3", "timeline[7]"),
        (98000, "crash", "w2", "timeline[8]"),
    ]
    w1_roll, join, w2_roll, w1_restart = loaded.steps[1:5]
    assert (w1_roll.down_ms, w1_roll.clean) == (5000, True)
    assert w1_roll.config.connect_protocol is ConnectProtocol.SESSIONED
    assert w1_roll.overrides == {"connect.protocol": "sessioned"}
    # a new worker: cluster.config + its overrides
    assert join.raw_config == {"connect.protocol": "eager", "groupsim.task.start.ms": 50}
    assert join.config.task_start_ms == 50
    # w2 keeps its own settings under the roll's override
    assert w2_roll.raw_config == {
        "connect.protocol": "sessioned",
        "groupsim.task.start.ms": 200,
        "scheduled.rebalance.max.delay.ms": 10000,
    }
    # later steps see earlier overrides: w1 stays sessioned after the roll
    assert w1_restart.config.connect_protocol is ConnectProtocol.SESSIONED
    assert w1_restart.config.task_stop_ms == 9
    assert (w1_restart.clean, w1_restart.down_ms) == (False, 0)
    assert loaded.steps[0].name == "roll"
    assert (loaded.steps[5].connector, loaded.steps[5].tasks) == ("sink", 2)
    assert (loaded.steps[6].connector, loaded.steps[6].tasks) == ("sink", 5)
    assert loaded.steps[7].connector == "gen1"
    assert loaded.steps[8].config is None


def test_settle_and_end_defaults() -> None:
    loaded = load(FULL)
    # max scheduled.rebalance.max.delay.ms over every config is the default 300000
    assert loaded.settle_ms == 300_000 + SETTLE_MARGIN_MS
    assert loaded.end_ms == 98000 + loaded.settle_ms
    explicit = load('name = "x"\nsettle_ms = 5\n[cluster]\nsize = 1\n')
    assert (explicit.settle_ms, explicit.end_ms) == (5, 5)


def test_record_fields() -> None:
    loaded = load(FULL)
    assert loaded.steps[4].record_fields() == {
        "action": "restart",
        "member": "w1",
        "config": {"groupsim.task.stop.ms": 9},
        "down_ms": 0,
        "clean": False,
        "origin": "timeline[3]",
    }
    assert loaded.steps[0].record_fields() == {
        "action": "phase",
        "name": "roll",
        "origin": "timeline[0]",
    }


def test_cluster_size_and_defaults() -> None:
    loaded = load('name = "x"\n[cluster]\nsize = 3\n')
    assert [w.name for w in loaded.workers] == ["w1", "w2", "w3"]
    assert all(w.start_ms == 0 and w.raw_config == {} for w in loaded.workers)
    assert loaded.workers[0].config.connect_protocol is ConnectProtocol.SESSIONED
    assert loaded.steps == []
    assert loaded.connectors == {}
    assert loaded.scenario.seed == 0
    assert loaded.network.latency_ms == 1
    assert loaded.coordinator.items() == []
    assert loaded.coordinator_config.initial_rebalance_delay_ms == 3000
    assert loaded.expect.no_violations is True
    assert loaded.expect.converged is None


def test_rolling_restart_default_members_skip_departed_workers() -> None:
    text = """
name = "x"
[cluster]
size = 3
[[timeline]]
at_ms = 10
action = "leave"
member = "w2"
[[timeline]]
at_ms = 20
action = "join"
member = "w4"
[[timeline]]
at_ms = 100
action = "rolling_restart"
interval_ms = 7
"""
    loaded = load(text)
    rolls = [(s.at_ms, s.member) for s in loaded.steps if s.action == "restart"]
    assert rolls == [(100, "w1"), (107, "w3"), (114, "w4")]


def test_join_step_makes_worker_known_and_may_be_only_worker() -> None:
    text = """
name = "x"
[[timeline]]
at_ms = 5
action = "join"
member = "solo"
[[timeline]]
at_ms = 6
action = "crash"
member = "solo"
[[timeline]]
at_ms = 7
action = "join"
member = "solo"
config = { "connect.protocol" = "eager" }
"""
    loaded = load(text)
    assert loaded.workers == []
    assert [s.action for s in loaded.steps] == ["join", "crash", "join"]
    assert loaded.steps[2].config.connect_protocol is ConnectProtocol.EAGER


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('name = "x"\nseed = = 3\n', "t.toml: invalid TOML: Invalid value (at line 2, column 8)"),
        ("seed = 1\n[cluster]\nsize = 1\n", "t.toml: name: missing required key"),
        (
            'name = "x"\nfoo = 1\n[cluster]\nsize = 1\n',
            "t.toml: foo: unknown key (known: kind, name, description, seed, settle_ms, "
            "max_records, log_heartbeats, coordinator, network, cluster, workload, timeline, "
            "expect)",
        ),
        (
            'name = "x"\n[coordinator]\n"group.foo" = 1\n[cluster]\nsize = 1\n',
            't.toml: coordinator."group.foo": unknown key (known: '
            "group.initial.rebalance.delay.ms, group.min.session.timeout.ms, "
            "group.max.session.timeout.ms, group.max.size, groupsim.new.member.join.timeout.ms, "
            "groupsim.protocol.tie.break)",
        ),
        (
            'name = "x"\n[coordinator]\n"group.initial.rebalance.delay.ms" = -1\n'
            "[cluster]\nsize = 1\n",
            't.toml: coordinator."group.initial.rebalance.delay.ms": '
            "expected an integer >= 0, got -1",
        ),
        (
            'name = "x"\n[coordinator]\n"group.max.size" = 2147483648\n[cluster]\nsize = 1\n',
            't.toml: coordinator."group.max.size": '
            "expected an integer <= 2147483647 (a Java int), got 2147483648",
        ),
        (
            'name = "x"\nseed = "a"\n[cluster]\nsize = 1\n',
            "t.toml: seed: expected an integer, got a string ('a')",
        ),
        (
            'name = "x"\nlog_heartbeats = 1\n[cluster]\nsize = 1\n',
            "t.toml: log_heartbeats: expected a boolean, got an integer (1)",
        ),
        (
            'name = "x"\n[network]\nlatency_ms = -1\n[cluster]\nsize = 1\n',
            "t.toml: network.latency_ms: expected an integer >= 0, got -1",
        ),
        (
            'name = "x"\n[cluster]\nsize = 1\nconfig = 3\n',
            "t.toml: cluster.config: expected a table, got an integer (3)",
        ),
        (
            'name = "x"\n[cluster]\nsize = 2\n[[cluster.workers]]\nname = "a"\n',
            "t.toml: cluster.size: size = 2 but cluster.workers lists 1 workers",
        ),
        (
            'name = "x"\n[[cluster.workers]]\nname = "a"\n[[cluster.workers]]\nname = "a"\n',
            "t.toml: cluster.workers[1].name: duplicate worker 'a' (also cluster.workers[0])",
        ),
        (
            'name = "x"\n[[cluster.workers]]\nname = "a b"\n',
            "t.toml: cluster.workers[0].name: invalid name 'a b' (use letters, digits, '.', "
            "'_' and '-', starting with a letter or digit)",
        ),
        (
            'name = "x"\n',
            "t.toml: cluster: no workers (set cluster.size, list cluster.workers, "
            "or join one in the timeline)",
        ),
        (
            'name = "x"\n[cluster]\nsize = 1\n[[workload.connectors]]\nname = "c"\ntasks = -1\n',
            "t.toml: workload.connectors[0].tasks: expected an integer >= 0, got -1",
        ),
        (
            'name = "x"\n[cluster]\nsize = 1\n[[workload.connectors]]\nname = "c"\n'
            "tasks = 3000000000\n",
            "t.toml: workload.connectors[0].tasks: expected an integer <= 2147483647 "
            "(a Java int), got 3000000000",
        ),
        (
            'name = "x"\n[cluster]\nsize = 1\n[[workload.connectors]]\nname = "c"\ntasks = 1\n'
            '[[workload.connectors]]\nname = "c"\ntasks = 2\n',
            "t.toml: workload.connectors[1].name: duplicate connector 'c'",
        ),
        (
            'name = "x"\n[cluster]\nsize = 1\n[[workload.connectors]]\nname = "connector1"\n'
            "tasks = 1\n[workload.generate]\ncount = 1\ntasks = 1\n",
            "t.toml: workload.generate: generates connector 'connector1', which "
            "workload.connectors already has",
        ),
        (
            'name = "x"\n[cluster]\nsize = 1\n[expect]\nfinal_protocol = "x"\n',
            "t.toml: expect.final_protocol: invalid value 'x' (expected one of: compatible, "
            "default, eager, sessioned, static)",
        ),
        (
            'name = "x"\n[cluster]\nsize = 1\n[expect]\nmax_rebalances = -2\n',
            "t.toml: expect.max_rebalances: expected an integer >= 0, got -2",
        ),
    ],
)
def test_document_errors(text: str, expected: str) -> None:
    assert error(text) == expected


def step(body: str, workers: int = 3, extra: str = "") -> str:
    return f'name = "x"\n[cluster]\nsize = {workers}\n{extra}[[timeline]]\n{body}'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            'at_ms = 1\naction = "crash"\nmember = "w9"\n',
            "t.toml: timeline[0].member: unknown worker 'w9' (workers: w1, w2, w3)",
        ),
        (
            'at_ms = 1\naction = "explode"\n',
            "t.toml: timeline[0].action: unknown action 'explode' (actions: join, leave, "
            "crash, restart, rolling_restart, add_connector, remove_connector, set_tasks, "
            "phase, partition, heal, loss, latency, slow, coordinator_failover, delay_request)",
        ),
        (
            "at_ms = 1\n",
            "t.toml: timeline[0].action: missing required key (actions: join, leave, "
            "crash, restart, rolling_restart, add_connector, remove_connector, set_tasks, "
            "phase, partition, heal, loss, latency, slow, coordinator_failover, delay_request)",
        ),
        (
            'action = "leave"\nmember = "w1"\n',
            "t.toml: timeline[0].at_ms: missing required key for action 'leave'",
        ),
        (
            'at_ms = 1\naction = "restart"\n',
            "t.toml: timeline[0].member: missing required key for action 'restart'",
        ),
        (
            'at_ms = 1\naction = "rolling_restart"\n',
            "t.toml: timeline[0].interval_ms: missing required key for action 'rolling_restart'",
        ),
        (
            'at_ms = 1\naction = "leave"\nmember = "w1"\ntasks = 3\n',
            "t.toml: timeline[0].tasks: not a key of action 'leave' "
            "(its keys: action, at_ms, member)",
        ),
        (
            'at_ms = -5\naction = "leave"\nmember = "w1"\n',
            "t.toml: timeline[0].at_ms: expected an integer >= 0, got -5",
        ),
        (
            'at_ms = 1\naction = "restart"\nmember = "w1"\ndown_ms = -1\n',
            "t.toml: timeline[0].down_ms: expected an integer >= 0, got -1",
        ),
        (
            'at_ms = 1\naction = "restart"\nmember = "w1"\nclean = "yes"\n',
            "t.toml: timeline[0].clean: expected a boolean, got a string ('yes')",
        ),
        (
            'at_ms = 1\naction = "restart"\nmember = "w1"\nconfig = { "connect.protocol" = 3 }\n',
            't.toml: timeline[0].config."connect.protocol": expected a string, got int',
        ),
        (
            'at_ms = 1\naction = "join"\nmember = "w4"\nconfig = { "connect.protocol" = "x" }\n',
            "t.toml: timeline[0].config.\"connect.protocol\": unknown value 'x' "
            "(expected one of eager, compatible, sessioned, static)",
        ),
        (
            'at_ms = 1\naction = "join"\nmember = "w1"\n',
            "t.toml: timeline[0].member: worker 'w1' is already running at 1 ms",
        ),
        (
            'at_ms = 1\naction = "rolling_restart"\ninterval_ms = 5\nmembers = ["w1", "w7"]\n',
            "t.toml: timeline[0].members[1]: unknown worker 'w7' (workers: w1, w2, w3)",
        ),
        (
            'at_ms = 1\naction = "rolling_restart"\ninterval_ms = 5\nmembers = ["w1", "w1"]\n',
            "t.toml: timeline[0].members[1]: worker 'w1' listed twice",
        ),
        (
            'at_ms = 1\naction = "remove_connector"\nconnector = "c"\n',
            "t.toml: timeline[0].connector: unknown connector 'c' at 1 ms (connectors: none)",
        ),
        (
            'at_ms = 1\naction = "set_tasks"\nconnector = "c"\ntasks = 2\n',
            "t.toml: timeline[0].connector: unknown connector 'c' at 1 ms (connectors: none)",
        ),
        (
            'at_ms = 1\naction = "add_connector"\nconnector = "c"\ntasks = -2\n',
            "t.toml: timeline[0].tasks: expected an integer >= 0, got -2",
        ),
        (
            'at_ms = 1\naction = "phase"\nname = ""\n',
            "t.toml: timeline[0].name: must not be empty",
        ),
    ],
)
def test_step_errors(body: str, expected: str) -> None:
    assert error(step(body)) == expected


def test_add_existing_connector() -> None:
    text = step(
        'at_ms = 5\naction = "add_connector"\nconnector = "c"\ntasks = 2\n',
        extra='[[workload.connectors]]\nname = "c"\ntasks = 1\n',
    )
    assert error(text) == "t.toml: timeline[0].connector: connector 'c' already exists"


def test_connector_state_follows_time_order() -> None:
    # removed at 10, re-added at 20: fine; set_tasks at 15 (after the removal) is not
    ok = step(
        'at_ms = 10\naction = "remove_connector"\nconnector = "c"\n'
        '[[timeline]]\nat_ms = 20\naction = "add_connector"\nconnector = "c"\ntasks = 2\n',
        extra='[[workload.connectors]]\nname = "c"\ntasks = 1\n',
    )
    assert [s.action for s in load(ok).steps] == ["remove_connector", "add_connector"]
    bad = step(
        'at_ms = 10\naction = "remove_connector"\nconnector = "c"\n'
        '[[timeline]]\nat_ms = 15\naction = "set_tasks"\nconnector = "c"\ntasks = 4\n'
        '[[timeline]]\nat_ms = 20\naction = "add_connector"\nconnector = "c"\ntasks = 2\n',
        extra='[[workload.connectors]]\nname = "c"\ntasks = 1\n',
    )
    assert error(bad) == (
        "t.toml: timeline[1].connector: unknown connector 'c' at 15 ms (connectors: none)"
    )


def test_steps_on_stopped_workers() -> None:
    left = step(
        'at_ms = 5\naction = "leave"\nmember = "w1"\n'
        '[[timeline]]\nat_ms = 6\naction = "crash"\nmember = "w1"\n'
    )
    assert (
        error(left)
        == "t.toml: timeline[1].member: worker 'w1' is not running at 6 ms (it left at 5 ms)"
    )
    during_restart = step(
        'at_ms = 5\naction = "restart"\nmember = "w1"\ndown_ms = 100\n'
        '[[timeline]]\nat_ms = 50\naction = "leave"\nmember = "w1"\n'
    )
    assert error(during_restart) == (
        "t.toml: timeline[1].member: worker 'w1' is not running at 50 ms (it starts at 105 ms)"
    )
    late = 'name = "x"\n[[cluster.workers]]\nname = "a"\nstart_ms = 100\n[[timeline]]\n'
    late += 'at_ms = 50\naction = "crash"\nmember = "a"\n'
    assert (
        error(late)
        == "t.toml: timeline[0].member: worker 'a' is not running at 50 ms (it starts at 100 ms)"
    )


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (
            '[cluster.config]\n"connect.protocol" = "foo"\n',
            "t.toml: cluster.config.\"connect.protocol\": unknown value 'foo' "
            "(expected one of eager, compatible, sessioned, static)",
        ),
        (
            '[[cluster.workers]]\nname = "a"\nconfig = { "session.timeout.ms" = -3 }\n',
            't.toml: cluster.workers[0].config."session.timeout.ms": must be >= 0, got -3',
        ),
        (
            '[[cluster.workers]]\nname = "a"\nconfig = { "heartbeat.interval.ms" = 30000 }\n',
            "t.toml: cluster.workers[0].config: heartbeat.interval.ms (30000) must be lower "
            "than session.timeout.ms (10000)",
        ),
        (
            '[[cluster.workers]]\nname = "a"\nconfig = { "rebalance.timeout.ms" = 2147483648 }\n',
            't.toml: cluster.workers[0].config."rebalance.timeout.ms": must be <= 2147483647 '
            "(a Java int), got 2147483648",
        ),
    ],
)
def test_worker_config_errors(table: str, expected: str) -> None:
    text = 'name = "x"\n' + table
    if "cluster.workers" not in table:
        text = 'name = "x"\n[cluster]\nsize = 1\n' + table
    assert error(text) == expected


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (
            '"group.min.session.timeout.ms" = 9000\n"group.max.session.timeout.ms" = 100\n',
            't.toml: coordinator."group.min.session.timeout.ms": 9000 is above '
            "group.max.session.timeout.ms (100)",
        ),
        (
            '"group.min.session.timeout.ms" = 2000000\n',
            't.toml: coordinator."group.min.session.timeout.ms": 2000000 is above '
            "group.max.session.timeout.ms (1800000)",
        ),
        ('"group.max.size" = 0\n', 't.toml: coordinator."group.max.size": must be >= 1, got 0'),
        (
            '"groupsim.protocol.tie.break" = "x"\n',
            "t.toml: coordinator.\"groupsim.protocol.tie.break\": invalid value 'x' "
            "(expected one of: first_listed, java)",
        ),
    ],
)
def test_coordinator_errors(table: str, expected: str) -> None:
    assert error(f'name = "x"\n[coordinator]\n{table}[cluster]\nsize = 1\n') == expected


def test_coordinator_settings_read_as_a_mapping() -> None:
    from coordinator.config import CoordinatorConfig

    loaded = load(
        'name = "x"\n[coordinator]\n"group.max.size" = 4\n'
        '"groupsim.protocol.tie.break" = "first_listed"\n[cluster]\nsize = 1\n'
    )
    assert loaded.coordinator.items() == [
        ("group.max.size", 4),
        ("groupsim.protocol.tie.break", "first_listed"),
    ]
    assert CoordinatorConfig.from_mapping(loaded.coordinator) == loaded.coordinator_config
    assert (loaded.coordinator_config.max_size, loaded.coordinator_config.protocol_tie_break) == (
        4,
        "first_listed",
    )


def test_unknown_worker_setting_lists_known_keys() -> None:
    message = error('name = "x"\n[[cluster.workers]]\nname = "a"\nconfig = { bogus = 1 }\n')
    assert message.startswith(
        "t.toml: cluster.workers[0].config.bogus: unknown worker setting (known: connect.protocol, "
    )


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "missing.toml")
    assert str(info.value) == "missing.toml: cannot read: No such file or directory"
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'name = "\xff"\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(bad)
    assert str(info.value) == "bad.toml: not UTF-8 text: invalid start byte at byte 8"
    assert info.value.file == "bad.toml"
    assert info.value.key_path is None


def test_error_attributes() -> None:
    with pytest.raises(ScenarioError) as info:
        loads_scenario('name = "x"\n[network]\njitter_ms = -4\n[cluster]\nsize = 1\n', "f.toml")
    assert (info.value.file, info.value.key_path) == ("f.toml", "network.jitter_ms")
    assert info.value.problem == "expected an integer >= 0, got -4"


def test_library_and_resolve(tmp_path: Path) -> None:
    assert library_dir() == Path(__file__).resolve().parents[3] / "scenarios" / "library"
    names = library_names("connect")
    assert names == sorted(p.stem for p in library_dir().glob("*.toml"))
    if "rolling-upgrade-eager-to-sessioned" in names:
        path = resolve_scenario("rolling-upgrade-eager-to-sessioned")
        assert path == library_dir() / "rolling-upgrade-eager-to-sessioned.toml"
        assert resolve_scenario("rolling-upgrade-eager-to-sessioned.toml") == path
    own = tmp_path / "own.toml"
    own.write_text('name = "x"\n[cluster]\nsize = 1\n')
    assert resolve_scenario(own) == own
    assert resolve_scenario(str(own)) == own
    with pytest.raises(ScenarioError) as info:
        resolve_scenario("no-such-scenario")
    listed = ", ".join(names) or "none"
    streams = ", ".join(library_names("streams"))
    consumer = ", ".join(library_names("consumer"))
    assert str(info.value) == (
        "no-such-scenario: no such file and no such library scenario "
        f"(Connect: {listed}; Streams: {streams}; consumer: {consumer})"
    )
    assert "kip-441-scale-out" in streams


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ('"stream"', "t.toml: kind: must be connect, streams or consumer, got 'stream'"),
        ("1", "t.toml: kind: must be connect, streams or consumer, got 1"),
    ],
)
def test_an_unknown_kind_is_named(kind: str, expected: str) -> None:
    with pytest.raises(ScenarioError) as info:
        loads_any(f'kind = {kind}\nname = "x"\n[cluster]\nsize = 1\n', "t.toml")
    assert str(info.value) == expected


def test_kind_connect_may_be_written() -> None:
    loaded = loads_any('kind = "connect"\nname = "x"\n[cluster]\nsize = 1\n', "t.toml")
    assert loaded.scenario.kind == "connect"


@pytest.mark.parametrize("name", library_names("connect"))
def test_library_scenarios_load(name: str) -> None:
    loaded = load_scenario(resolve_scenario(name))
    assert loaded.name
    assert loaded.steps == sorted(loaded.steps, key=lambda s: s.at_ms)


def test_documented_example_loads() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "scenario-format.md").read_text()
    example = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    loaded = loads_scenario(example, "example.toml")
    assert loaded.name == "worker-bounce"
    assert list(loaded.connectors)[:2] == ["connector1", "gen1"]
    assert len(loaded.connectors) == 11
    assert [(s.at_ms, s.action, s.member) for s in loaded.steps] == [
        (0, "phase", None),
        (60000, "phase", None),
        (60000, "restart", "w1"),
        (90000, "restart", "w2"),
        (120000, "restart", "w3"),
        (200000, "add_connector", None),
    ]
    assert loaded.end_ms == 200000 + 400000
