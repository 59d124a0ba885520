"""scenarios.input.loader: the fault actions (partition, heal, loss, latency, slow,
coordinator_failover, delay_request), timeline order, and numbers too large for Kafka or for
virtual time."""

from __future__ import annotations

import pytest

from scenarios.input.library import library_dir, library_names
from scenarios.input.loader import ScenarioError, load_scenario, loads_scenario
from scenarios.input.schema import FAULT_ACTIONS, INT64_MAX, INT_MAX


def doc(*steps: str, workers: int = 3, extra: str = "") -> str:
    body = "".join(f"[[timeline]]\n{s}" for s in steps)
    return f'name = "x"\n[cluster]\nsize = {workers}\n{extra}{body}'


def error(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        loads_scenario(text, "t.toml")
    message = str(info.value)
    assert "\n" not in message
    return message


FAULTS = doc(
    'at_ms = 1000\naction = "partition"\nmember = "w2"\nduration_ms = 30000\n',
    'at_ms = 2000\naction = "partition"\nmember = "w3"\n',
    'at_ms = 5000\naction = "heal"\nmember = "w3"\n',
    'at_ms = 6000\naction = "loss"\nmember = "w1"\ndirection = "to_coordinator"\n'
    "probability = 0.3\nduration_ms = 20000\n",
    'at_ms = 7000\naction = "loss"\nmember = "w1"\nprobability = 1\nduration_ms = 10\n',
    'at_ms = 8000\naction = "latency"\nmember = "w2"\nextra_ms = 500\nduration_ms = 20000\n',
    'at_ms = 9000\naction = "slow"\nmember = "w3"\nstall_ms = 70000\n',
    'at_ms = 10000\naction = "coordinator_failover"\ndown_ms = 2000\n',
    'at_ms = 11000\naction = "coordinator_failover"\n',
    'at_ms = 12000\naction = "delay_request"\nmember = "w1"\nrequest = "sync_group"\n'
    "delay_ms = 45000\nduration_ms = 5000\n",
)


def test_fault_steps_load_with_their_fields() -> None:
    loaded = loads_scenario(FAULTS, "t.toml")
    got = [
        (
            s.at_ms,
            s.action,
            s.member,
            s.duration_ms,
            s.direction,
            s.probability,
            s.extra_ms,
            s.stall_ms,
            s.down_ms,
        )
        for s in loaded.steps
    ]
    assert got == [
        (1000, "partition", "w2", 30000, None, None, None, None, None),
        (2000, "partition", "w3", None, None, None, None, None, None),
        (5000, "heal", "w3", None, None, None, None, None, None),
        (6000, "loss", "w1", 20000, "to_coordinator", 0.3, None, None, None),
        (7000, "loss", "w1", 10, "both", 1.0, None, None, None),
        (8000, "latency", "w2", 20000, None, None, 500, None, None),
        (9000, "slow", "w3", None, None, None, None, 70000, None),
        (10000, "coordinator_failover", None, None, None, None, None, None, 2000),
        (11000, "coordinator_failover", None, None, None, None, None, None, 0),
        (12000, "delay_request", "w1", 5000, None, None, None, None, None),
    ]
    assert loaded.steps[-1].end_ms == 12000 + 5000 + 45000  # the last held request arrives
    assert loaded.steps[-1].record_fields() == {
        "action": "delay_request",
        "member": "w1",
        "duration_ms": 5000,
        "request": "sync_group",
        "delay_ms": 45000,
        "origin": "timeline[9]",
    }
    assert set(FAULT_ACTIONS) == {s.action for s in loaded.steps}


def test_fault_step_record_fields() -> None:
    steps = loads_scenario(FAULTS, "t.toml").steps
    assert steps[0].record_fields() == {
        "action": "partition",
        "member": "w2",
        "duration_ms": 30000,
        "origin": "timeline[0]",
    }
    assert steps[3].record_fields() == {
        "action": "loss",
        "member": "w1",
        "duration_ms": 20000,
        "direction": "to_coordinator",
        "probability": 0.3,
        "origin": "timeline[3]",
    }
    assert steps[5].record_fields() == {
        "action": "latency",
        "member": "w2",
        "duration_ms": 20000,
        "extra_ms": 500,
        "origin": "timeline[5]",
    }
    assert steps[6].record_fields() == {
        "action": "slow",
        "member": "w3",
        "stall_ms": 70000,
        "origin": "timeline[6]",
    }
    assert steps[7].record_fields() == {
        "action": "coordinator_failover",
        "down_ms": 2000,
        "origin": "timeline[7]",
    }


def test_the_run_lasts_past_the_last_fault() -> None:
    # the slow step at 9000 stalls 70000 ms: the latest end of any step
    loaded = loads_scenario(FAULTS + "", "t.toml")
    assert loaded.end_ms == 9000 + 70000 + loaded.settle_ms
    assert [s.end_ms for s in loaded.steps][:2] == [31000, 2000]
    partition = loads_scenario(
        doc('at_ms = 5\naction = "partition"\nmember = "w1"\nduration_ms = 100000\n').replace(
            "[cluster]", "settle_ms = 7\n[cluster]"
        ),
        "t.toml",
    )
    assert partition.end_ms == 100005 + 7


def test_faults_apply_to_stopped_and_joined_workers() -> None:
    # a fault is on the member's link or herder: the worker need not be running
    text = doc(
        'at_ms = 1\naction = "crash"\nmember = "w1"\n',
        'at_ms = 2\naction = "partition"\nmember = "w1"\n',
        'at_ms = 3\naction = "join"\nmember = "w9"\n',
        'at_ms = 4\naction = "slow"\nmember = "w9"\nstall_ms = 5\n',
    )
    assert [s.action for s in loads_scenario(text, "t.toml").steps] == [
        "crash",
        "partition",
        "join",
        "slow",
    ]
    # but it must be a worker the scenario knows by then
    early = doc(
        'at_ms = 2\naction = "slow"\nmember = "w9"\nstall_ms = 5\n',
        'at_ms = 3\naction = "join"\nmember = "w9"\n',
    )
    assert error(early) == "t.toml: timeline[0].member: unknown worker 'w9' (workers: w1, w2, w3)"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            'at_ms = 1\naction = "partition"\n',
            "t.toml: timeline[0].member: missing required key for action 'partition'",
        ),
        (
            'at_ms = 1\naction = "partition"\nmember = "w1"\nduration_ms = 0\n',
            "t.toml: timeline[0].duration_ms: expected an integer >= 1, got 0",
        ),
        (
            'at_ms = 1\naction = "partition"\nmember = "w1"\nstall_ms = 3\n',
            "t.toml: timeline[0].stall_ms: not a key of action 'partition' "
            "(its keys: action, at_ms, member, duration_ms)",
        ),
        (
            'at_ms = 1\naction = "heal"\nmember = "w4"\n',
            "t.toml: timeline[0].member: unknown worker 'w4' (workers: w1, w2, w3)",
        ),
        (
            'at_ms = 1\naction = "heal"\nmember = "w1"\nduration_ms = 4\n',
            "t.toml: timeline[0].duration_ms: not a key of action 'heal' "
            "(its keys: action, at_ms, member)",
        ),
        (
            'at_ms = 1\naction = "loss"\nmember = "w1"\nprobability = 0.5\n',
            "t.toml: timeline[0].duration_ms: missing required key for action 'loss'",
        ),
        (
            'at_ms = 1\naction = "loss"\nmember = "w1"\nduration_ms = 5\n',
            "t.toml: timeline[0].probability: missing required key for action 'loss'",
        ),
        (
            'at_ms = 1\naction = "loss"\nmember = "w1"\nduration_ms = 5\nprobability = 0\n',
            "t.toml: timeline[0].probability: expected a number > 0 and <= 1, got 0",
        ),
        (
            'at_ms = 1\naction = "loss"\nmember = "w1"\nduration_ms = 5\nprobability = 1.01\n',
            "t.toml: timeline[0].probability: expected a number > 0 and <= 1, got 1.01",
        ),
        (
            'at_ms = 1\naction = "loss"\nmember = "w1"\nduration_ms = 5\nprobability = nan\n',
            "t.toml: timeline[0].probability: expected a number > 0 and <= 1, got nan",
        ),
        (
            'at_ms = 1\naction = "loss"\nmember = "w1"\nduration_ms = 5\nprobability = "x"\n',
            "t.toml: timeline[0].probability: expected a float, got a string ('x')",
        ),
        (
            'at_ms = 1\naction = "loss"\nmember = "w1"\nduration_ms = 5\nprobability = 0.5\n'
            'direction = "sideways"\n',
            "t.toml: timeline[0].direction: invalid value 'sideways' "
            "(expected one of: both, from_coordinator, to_coordinator)",
        ),
        (
            'at_ms = 1\naction = "latency"\nmember = "w1"\nduration_ms = 5\n',
            "t.toml: timeline[0].extra_ms: missing required key for action 'latency'",
        ),
        (
            'at_ms = 1\naction = "latency"\nmember = "w1"\nextra_ms = 0\nduration_ms = 5\n',
            "t.toml: timeline[0].extra_ms: expected an integer >= 1, got 0",
        ),
        (
            'at_ms = 1\naction = "latency"\nmember = "w1"\nextra_ms = 5\n',
            "t.toml: timeline[0].duration_ms: missing required key for action 'latency'",
        ),
        (
            'at_ms = 1\naction = "slow"\nmember = "w1"\n',
            "t.toml: timeline[0].stall_ms: missing required key for action 'slow'",
        ),
        (
            'at_ms = 1\naction = "slow"\nmember = "w1"\nstall_ms = -70000\n',
            "t.toml: timeline[0].stall_ms: expected an integer >= 1, got -70000",
        ),
        (
            'at_ms = 1\naction = "coordinator_failover"\ndown_ms = -1\n',
            "t.toml: timeline[0].down_ms: expected an integer >= 0, got -1",
        ),
        (
            'at_ms = 1\naction = "coordinator_failover"\nmember = "w1"\n',
            "t.toml: timeline[0].member: not a key of action 'coordinator_failover' "
            "(its keys: action, at_ms, down_ms)",
        ),
    ],
)
def test_fault_step_errors(body: str, expected: str) -> None:
    assert error(doc(body)) == expected


# ----------------------------------------------------------------------------- time order


def test_steps_out_of_time_order_are_rejected_naming_both() -> None:
    text = doc(
        'at_ms = 100\naction = "phase"\nname = "a"\n',
        'at_ms = 5000\naction = "crash"\nmember = "w1"\n',
        'at_ms = 1000\naction = "crash"\nmember = "w2"\n',
    )
    assert error(text) == (
        "t.toml: timeline[2].at_ms: 1000 ms is earlier than timeline[1].at_ms (5000 ms): "
        "write the steps in time order"
    )


def test_equal_times_keep_file_order() -> None:
    text = doc(
        'at_ms = 10\naction = "partition"\nmember = "w2"\n',
        'at_ms = 10\naction = "heal"\nmember = "w2"\n',
        'at_ms = 10\naction = "crash"\nmember = "w1"\n',
    )
    assert [s.action for s in loads_scenario(text, "t.toml").steps] == [
        "partition",
        "heal",
        "crash",
    ]


def test_rolling_restart_members_interleave_with_later_steps() -> None:
    # the order rule is on the file's at_ms; a rolling restart's members still spread out
    text = doc(
        'at_ms = 10\naction = "rolling_restart"\ninterval_ms = 100\n',
        'at_ms = 150\naction = "slow"\nmember = "w1"\nstall_ms = 5\n',
    )
    got = [(s.at_ms, s.action, s.member) for s in loads_scenario(text, "t.toml").steps]
    assert got == [
        (10, "restart", "w1"),
        (110, "restart", "w2"),
        (150, "slow", "w1"),
        (210, "restart", "w3"),
    ]


@pytest.mark.parametrize("name", library_names("connect"))
def test_library_is_in_time_order(name: str) -> None:
    load_scenario(library_dir() / f"{name}.toml")


# ----------------------------------------------------------------------------- huge numbers

BIG64 = INT64_MAX + 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            doc(f'at_ms = {BIG64}\naction = "crash"\nmember = "w1"\n'),
            f"t.toml: timeline[0].at_ms: expected an integer <= {INT64_MAX} "
            f"(2^63 - 1, the largest TOML integer), got {BIG64}",
        ),
        (
            doc(f'at_ms = 1\naction = "slow"\nmember = "w1"\nstall_ms = {10**30}\n'),
            f"t.toml: timeline[0].stall_ms: expected an integer <= {INT64_MAX} "
            f"(2^63 - 1, the largest TOML integer), got {10**30}",
        ),
        (
            doc(f'at_ms = {INT64_MAX}\naction = "coordinator_failover"\ndown_ms = 1\n'),
            "t.toml: timeline[0].down_ms: the step ends at 9223372036854775808 ms, after "
            "2^63 - 1 ms (the largest virtual time)",
        ),
        (
            doc(
                f'at_ms = {INT64_MAX - 5}\naction = "partition"\nmember = "w1"\nduration_ms = 10\n'
            ),
            "t.toml: timeline[0].duration_ms: the step ends at 9223372036854775812 ms, after "
            "2^63 - 1 ms (the largest virtual time)",
        ),
        (
            doc(f'at_ms = {INT64_MAX}\naction = "crash"\nmember = "w1"\n'),
            f"t.toml: settle_ms: the run would end at {INT64_MAX} + 420000 ms (the default "
            "settle_ms), after 2^63 - 1 ms (the largest virtual time)",
        ),
        (
            f'name = "x"\nsettle_ms = {INT64_MAX}\n[cluster]\nsize = 1\n[[timeline]]\n'
            'at_ms = 1\naction = "leave"\nmember = "w1"\n',
            f"t.toml: settle_ms: the run would end at 1 + {INT64_MAX} ms, after 2^63 - 1 ms "
            "(the largest virtual time)",
        ),
        (
            f'name = "x"\nseed = {BIG64}\n[cluster]\nsize = 1\n',
            f"t.toml: seed: expected an integer <= {INT64_MAX} "
            f"(2^63 - 1, the largest TOML integer), got {BIG64}",
        ),
        (
            f'name = "x"\n[network]\nlatency_ms = {BIG64}\n[cluster]\nsize = 1\n',
            f"t.toml: network.latency_ms: expected an integer <= {INT64_MAX} "
            f"(2^63 - 1, the largest TOML integer), got {BIG64}",
        ),
        (
            doc(f'at_ms = 1\naction = "add_connector"\nconnector = "c"\ntasks = {INT_MAX + 1}\n'),
            f"t.toml: timeline[0].tasks: expected an integer <= {INT_MAX} (a Java int), "
            f"got {INT_MAX + 1}",
        ),
        (
            f'name = "x"\n[cluster]\nsize = {INT_MAX + 1}\n',
            f"t.toml: cluster.size: expected an integer <= {INT_MAX} (a Java int), "
            f"got {INT_MAX + 1}",
        ),
        (
            f'name = "x"\n[cluster]\nsize = 1\n[cluster.config]\n'
            f'"rebalance.timeout.ms" = {BIG64}\n',
            f't.toml: cluster.config."rebalance.timeout.ms": must be <= {INT_MAX} '
            f"(a Java int), got {BIG64}",
        ),
        (
            f'name = "x"\n[coordinator]\n"group.max.size" = {INT_MAX + 1}\n[cluster]\nsize = 1\n',
            f't.toml: coordinator."group.max.size": expected an integer <= {INT_MAX} '
            f"(a Java int), got {INT_MAX + 1}",
        ),
        (
            f'name = "x"\n[cluster]\nsize = 1\n[expect]\nmax_task_downtime_ms = {BIG64}\n',
            f"t.toml: expect.max_task_downtime_ms: expected an integer <= {INT64_MAX} "
            f"(2^63 - 1, the largest TOML integer), got {BIG64}",
        ),
    ],
)
def test_huge_numbers_are_one_clear_error(text: str, expected: str) -> None:
    assert error(text) == expected


def test_largest_values_still_load() -> None:
    # exactly 2^63 - 1 as an end time is fine
    text = (
        f'name = "x"\nsettle_ms = 0\n[cluster]\nsize = 1\n[[timeline]]\n'
        f'at_ms = {INT64_MAX - 10}\naction = "slow"\nmember = "w1"\nstall_ms = 10\n'
    )
    assert loads_scenario(text, "t.toml").end_ms == INT64_MAX


def test_every_known_issue_can_be_expected() -> None:
    from scenarios.check.invariants import KNOWN_ISSUES
    from scenarios.input.schema import INVARIANTS

    assert set(KNOWN_ISSUES) <= set(INVARIANTS)
    text = 'name = "x"\n[cluster]\nsize = 1\n[expect]\nexpected_violations = ["KAFKA-16056"]\n'
    assert loads_scenario(text, "t.toml").expect.expected_violations == ["KAFKA-16056"]
