"""Real Kafka Streams applications on a real broker, recorded through ``groupsim record``.

Three instances of the harness's ``StatefulApp`` (``input`` → groupByKey → count, six stateful
tasks, ``num.standby.replicas=1``, one zone tag each with ``rack.aware.assignment.tags=zone``)
go through the two Streams stories of the library:

* **scale-out with warm-ups** (KIP-441): two instances run the six tasks; a third, with no
  state, joins. Its restore lag exceeds ``acceptable.recovery.lag``, so the
  HighAvailabilityTaskAssignor gives it warm-up replicas (standby tasks to it) and no active
  task, and schedules a probing rebalance; at the probe the warm-ups have caught up and take
  over two active tasks. Kafka refuses ``probing.rebalance.interval.ms`` below 60 000
  (StreamsConfig's validator), so this test keeps Kafka's minimum and waits the real minute.
* **client crash with standbys**: one instance is killed with SIGKILL; after its session
  timeout the group rebalances and its active tasks move to caught-up survivors (those with
  their state: the standby holders, or an instance that held the task earlier — with no new
  input both are within acceptable.recovery.lag); the test stops at that assignment (a later
  probing rebalance may balance further).

groupsim must predict every answer of Kafka's group coordinator (``replay --conform``) and
find no violation in the recorded log (``groupsim check``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytest.importorskip("kio")

from coordinator.config import CoordinatorConfig  # noqa: E402
from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.record.conform import conform_coordinator, read_exchanges  # noqa: E402
from scenarios.record.leaders import conform_leaders  # noqa: E402
from scenarios.record.streams_leaders import read_app, read_end_offsets  # noqa: E402
from tests.kafka_oracle.cluster import (  # noqa: E402
    RecorderThread,
    StreamsInstance,
    kafka_broker,
    streams_app,
)
from tests.kafka_oracle.oracle import unavailable_reason  # noqa: E402

pytestmark = pytest.mark.kafka

BROKER = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
#: Streams settings of every instance (probing.rebalance.interval.ms: Kafka's minimum).
STREAMS = {
    "num_standby_replicas": 1,
    "rack_aware_assignment_tags": "zone",
    "acceptable_recovery_lag": 10,
    "max_warmup_replicas": 2,
    "probing_rebalance_interval_ms": 60_000,
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 1000,
}
TASKS = {f"0_{p}" for p in range(6)}
#: StatefulApp as its leader's assignor sees it (``scenarios.record.streams_leaders.read_app``).
APP = {
    "subtopologies": [
        {
            "id": 0,
            "source_topic": "input",
            "partitions": 6,
            "changelog_topic": "stateful-counts-changelog",
        }
    ],
    **{
        k.replace("_", "."): v
        for k, v in STREAMS.items()
        if "timeout" not in k and "heartbeat" not in k
    },
}


def _wait(predicate, timeout_s: float, what: str, apps: list[StreamsInstance]) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            seen = {a.name: (a.state(), a.tasks()) for a in apps}
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}: {seen}")
        time.sleep(0.5)


def _actives(apps: list[StreamsInstance]) -> list[set[str]]:
    return [a.tasks()[0] for a in apps]


def _settled(apps: list[StreamsInstance], per_app: int) -> bool:
    actives = _actives(apps)
    return (
        all(a.state() == "RUNNING" for a in apps)
        and all(len(t) == per_app for t in actives)
        and set().union(*actives) == TASKS
    )


@dataclass
class Story:
    """What the instances printed (active, standby tasks) at the moments the test asserts on."""

    warmup: tuple[set[str], set[str]] = (set(), set())
    before_crash: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)
    held_before_crash: dict[str, set[str]] = field(default_factory=dict)
    after_crash: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)
    crashed: str = ""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Story]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("streams")
    out = work / "recorded"
    story = Story()
    with kafka_broker(work, **{k.replace(".", "_"): v for k, v in BROKER.items()}) as broker:
        recorder = RecorderThread(("127.0.0.1", broker.port), out)
        try:
            with (
                streams_app(
                    work, recorder.bootstrap, "s1", client_tag_zone="z1", produce=600, **STREAMS
                ) as s1,
                streams_app(work, recorder.bootstrap, "s2", client_tag_zone="z2", **STREAMS) as s2,
            ):
                _wait(
                    lambda: _settled([s1, s2], 3), 180, "two instances with 3 tasks each", [s1, s2]
                )
                time.sleep(3)  # the 600 input records counted into the changelog
                with streams_app(
                    work, recorder.bootstrap, "s3", client_tag_zone="z3", **STREAMS
                ) as s3:
                    apps = [s1, s2, s3]
                    _wait(
                        lambda: not s3.tasks()[0] and bool(s3.tasks()[1]),
                        120,
                        "warm-ups (standby tasks, no active) on the new instance",
                        apps,
                    )
                    story.warmup = s3.tasks()
                    _wait(
                        lambda: _settled(apps, 2),
                        150,
                        "the probing rebalance moving 2 active tasks to the new instance",
                        apps,
                    )
                    story.before_crash = {a.name: a.tasks() for a in apps}
                    story.held_before_crash = {a.name: a.held() for a in apps}
                    story.crashed = "s1"
                    s1.crash()
                    survivors = [s2, s3]
                    # The first assignment after the crash that runs every task (Kafka may
                    # balance further at a later probing rebalance; that is not waited for).
                    _wait(
                        lambda: (
                            all(a.state() == "RUNNING" for a in survivors)
                            and set().union(*_actives(survivors)) == TASKS
                        ),
                        120,
                        "the crashed instance's tasks on the two others",
                        survivors,
                    )
                    story.after_crash = {a.name: a.tasks() for a in survivors}
        finally:
            recorder.stop()
    # What the leaders' assignor reads besides the trace: the topology and the settings.
    (out / "streams-app.json").write_text(json.dumps(APP))
    return out, story


def test_new_instance_warms_up_before_taking_active_tasks(recorded: tuple[Path, Story]) -> None:
    _, story = recorded
    active, standby = story.warmup
    assert active == set() and standby, story.warmup
    assert len(story.before_crash["s3"][0]) == 2


def test_crashed_instance_tasks_move_to_caught_up_instances(recorded: tuple[Path, Story]) -> None:
    """Each task of the killed instance becomes active on a survivor with its state: one that
    held it as a standby, or held it earlier (its state directory keeps the store, and with no
    new input its lag is within acceptable.recovery.lag — HATA treats both as caught up)."""
    _, story = recorded
    lost = story.before_crash[story.crashed][0]
    assert len(lost) == 2
    for task in lost:
        holder = next(n for n, (active, _) in story.after_crash.items() if task in active)
        assert task in story.held_before_crash[holder], (task, holder, story.held_before_crash)
    standbys = set().union(*(story.before_crash[n][1] for n in story.after_crash))
    assert lost <= standbys  # num.standby.replicas=1: every lost task had a standby


def test_groupsim_check_finds_no_violation_in_real_streams_apps(
    recorded: tuple[Path, Story],
) -> None:
    out, _ = recorded
    assert check_log(out / "events.jsonl") == []


def test_groupsim_predicts_every_answer_to_real_streams_apps(
    recorded: tuple[Path, Story],
) -> None:
    out, _ = recorded
    verdict = conform_coordinator(
        read_exchanges(out / "trace.jsonl"), CoordinatorConfig.from_mapping(BROKER)
    )
    assert verdict.divergences == [], verdict.divergences[:3]
    assert verdict.compared.get("JoinGroup", 0) >= 6  # start, scale-out, probe, crash
    assert {"SyncGroup", "Heartbeat"} <= set(verdict.compared)


def test_groupsim_assignor_gives_every_client_the_real_leaders_tasks(
    recorded: tuple[Path, Story],
) -> None:
    """Every completed round: groupsim's StreamsPartitionAssignor, given the subscriptions of
    the leader's JoinGroup answer, the changelog end offsets its admin client read and the
    application, hands every member the active and standby tasks the real leader did."""
    out, _ = recorded
    trace = out / "trace.jsonl"
    verdict = conform_leaders(
        read_exchanges(trace),
        None,
        app=read_app(out / "streams-app.json"),
        end_offsets=read_end_offsets(trace),
    )
    assert verdict.divergences == [], verdict.divergences[:3]
    assert verdict.compared >= 5  # start, scale-out (with its follow-up), probe, crash
    assert verdict.equal == verdict.compared
