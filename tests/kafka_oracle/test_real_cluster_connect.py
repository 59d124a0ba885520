"""Real Kafka Connect workers on a real broker, recorded through ``groupsim record``.

Two workers (``connect.protocol=sessioned``, KIP-415) run a connector of 6 idle tasks; a third
joins (scale-out) and then leaves for good, so the leader's scheduled delay runs and expires.
groupsim must predict every answer of Kafka's group coordinator along the way (``replay
--conform``) and find no violation in the recorded log (``groupsim check``).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("kio")

from coordinator.config import CoordinatorConfig  # noqa: E402
from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.record.conform import conform_coordinator, read_exchanges  # noqa: E402
from scenarios.record.leaders import conform_leaders, read_configs  # noqa: E402
from tests.kafka_oracle.cluster import (  # noqa: E402
    RecorderThread,
    connect_worker,
    kafka_broker,
    rest_call,
    write_connect_configs,
)
from tests.kafka_oracle.oracle import unavailable_reason  # noqa: E402

pytestmark = pytest.mark.kafka

BROKER = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
WORKER: dict[str, str | int] = {
    "connect_protocol": "sessioned",
    "scheduled_rebalance_max_delay_ms": 8000,
}


def _tasks_per_worker(url: str) -> Counter[str]:
    status = rest_call(url, "GET", "/connectors/c1/status")
    assert isinstance(status, dict)
    return Counter(t["worker_id"] for t in status["tasks"] if t["state"] == "RUNNING")


def _wait(predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if predicate():
                return
        except OSError:
            pass  # a worker rebalancing answers 409 for a while
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("connect")
    out = work / "recorded"
    settings = {k.replace(".", "_"): v for k, v in BROKER.items()}
    with kafka_broker(work, **settings) as broker:
        recorder = RecorderThread(("127.0.0.1", broker.port), out)
        try:
            with (
                connect_worker(work, recorder.bootstrap, "w1", **WORKER) as w1,
                connect_worker(work, recorder.bootstrap, "w2", **WORKER),
            ):
                rest_call(
                    w1.url,
                    "POST",
                    "/connectors",
                    {
                        "name": "c1",
                        "config": {
                            "connector.class": "groupsim.oracle.connect.IdleSourceConnector",
                            "tasks.max": "6",
                        },
                    },
                )
                _wait(
                    lambda: sorted(_tasks_per_worker(w1.url).values()) == [3, 3],
                    180,
                    "6 tasks running, 3 on each of two workers",
                )
                with connect_worker(work, recorder.bootstrap, "w3", **WORKER):
                    _wait(
                        lambda: sorted(_tasks_per_worker(w1.url).values()) == [2, 2, 2],
                        180,
                        "the scale-out to three workers with 2 tasks each",
                    )
                # w3 has left for good: its tasks come back after the scheduled delay.
                _wait(
                    lambda: sorted(_tasks_per_worker(w1.url).values()) == [3, 3],
                    180,
                    "w3's tasks back on w1 and w2 after the scheduled delay",
                )
        finally:
            recorder.stop()
        # What the leaders read from the config topic, for replay --conform's leaders.
        write_connect_configs(broker.bootstrap, out, WORKER["scheduled_rebalance_max_delay_ms"])
    return out


def test_groupsim_check_finds_no_violation_in_real_connect_workers(recorded: Path) -> None:
    assert check_log(recorded / "events.jsonl") == []


def test_groupsim_predicts_every_answer_to_real_connect_workers(recorded: Path) -> None:
    verdict = conform_coordinator(
        read_exchanges(recorded / "trace.jsonl"), CoordinatorConfig.from_mapping(BROKER)
    )
    assert verdict.divergences == [], verdict.divergences[:3]
    assert verdict.compared.get("JoinGroup", 0) >= 5  # at least the rounds above
    assert {"SyncGroup", "Heartbeat"} <= set(verdict.compared)
    # w3 left for good with a LeaveGroup; its answer may go unread when the worker closes its
    # connection first (then there is nothing recorded to compare it with)
    exchanges = read_exchanges(recorded / "trace.jsonl")
    assert any(ex.api == "LeaveGroup" for ex in exchanges)


def test_groupsim_assignor_makes_every_real_leaders_assignment(recorded: Path) -> None:
    """Every completed round: groupsim's incremental assignor, given the members' metadata of
    the leader's JoinGroup answer and the config snapshot it read, sends the same bytes."""
    verdict = conform_leaders(
        read_exchanges(recorded / "trace.jsonl"), read_configs(recorded / "connect-configs.json")
    )
    assert verdict.divergences == [], verdict.divergences[:3]
    assert verdict.compared >= 4  # the connector, scale-out (2 rounds), the leave, the delay
    assert verdict.equal + len(verdict.timing) == verdict.compared


def test_a_planted_assignor_divergence_exits_1_naming_round_and_field(
    recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The incremental assignor deals tasks to the workers in reverse id order on ties:
    replay --conform must exit 1 and name the first round it changes and the field."""
    import json
    import shutil

    from typer.testing import CliRunner

    from members.assignors import incremental_cooperative as ica
    from members.assignors.incremental_balance import water_fill
    from scenarios.cli.main import app

    def assign_tasks(self, workers, tasks):  # type: ignore[no-untyped-def]
        workers.sort(key=lambda w: (len(w.tasks), [-ord(ch) for ch in w.worker]))
        water_fill([w.tasks for w in workers], list(tasks))

    monkeypatch.setattr(ica.IncrementalCooperativeAssignor, "assign_tasks", assign_tasks)
    copy = tmp_path / "recorded"
    shutil.copytree(recorded, copy)
    settings = [a for k, v in BROKER.items() for a in ("--set", f"{k}={v}")]
    done = CliRunner().invoke(app, ["replay", "--conform", str(copy), *settings])
    assert done.exit_code == 1, done.output
    leaders = json.loads((copy / "conformance.json").read_text())["leaders"]
    first = next(d for d in leaders["differences"] if d["kind"] == "divergence")
    assert first["field"].startswith("tasks"), first
    assert f"round {first['generation']}" in done.output
