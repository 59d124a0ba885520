"""A real Kafka broker, recorded through ``groupsim record``: consumers rebalance on it, and
groupsim must predict every answer of its group coordinator (``replay --conform``) and find
no violation in the recorded log (``groupsim check``).

The broker is Kafka's own (the version pinned in the harness's pom), single-node KRaft on
loopback, started fresh for this module and stopped by its pid at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

pytest.importorskip("kio")
pytest.importorskip("kafka")

from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.record.conform import conform_coordinator, read_exchanges  # noqa: E402
from scenarios.record.proxy import Proxy, RecordOptions  # noqa: E402
from scenarios.record.trace import Recording  # noqa: E402
from tests.kafka_oracle.cluster import Broker, broker_with_orders  # noqa: E402
from tests.kafka_oracle.oracle import unavailable_reason  # noqa: E402
from tests.scenarios.serve.clients import three_consumers_then_one_leaves  # noqa: E402

pytestmark = pytest.mark.kafka

#: The broker's group settings, given to the replay as they were to the broker.
SETTINGS = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with broker_with_orders(tmp_path_factory.mktemp("broker"), SETTINGS) as running:
        yield running


def _record_three_consumers_one_leaving(broker: Broker, out: Path) -> None:
    async def main() -> None:
        recording = Recording(out, int(time.time() * 1000), broker.bootstrap, "127.0.0.1", 0)
        try:
            async with trio.open_nursery() as nursery:
                proxy = Proxy(
                    RecordOptions(("127.0.0.1", broker.port)),
                    recording,
                    lambda: time.time() * 1000,
                )
                port = await nursery.start(proxy.run)
                config = {
                    "session_timeout_ms": 10_000,
                    "heartbeat_interval_ms": 500,
                    "request_timeout_ms": 30_000,
                }
                clients = await three_consumers_then_one_leaves(port, 120, **config)
                assert not any(c.state["error"] for c in clients)
                nursery.cancel_scope.cancel()
        finally:
            recording.close()

    trio.run(main)


@pytest.fixture(scope="module")
def recorded(broker: Broker, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("recorded")
    _record_three_consumers_one_leaving(broker, out)
    return out


def test_groupsim_check_finds_no_violation_in_the_real_cluster(recorded: Path) -> None:
    assert check_log(recorded / "events.jsonl") == []


def test_groupsim_predicts_every_answer_of_the_real_coordinator(recorded: Path) -> None:
    from coordinator.config import CoordinatorConfig

    config = CoordinatorConfig.from_mapping(SETTINGS)
    verdict = conform_coordinator(read_exchanges(recorded / "trace.jsonl"), config)
    assert verdict.divergences == [], verdict.divergences[:3]
    assert {"JoinGroup", "SyncGroup", "LeaveGroup"} <= set(verdict.compared)
    assert verdict.equal >= sum(verdict.compared.values()) // 2


def test_a_planted_coordinator_divergence_exits_1_naming_the_field(
    recorded: Path, tmp_path: Path
) -> None:
    """The coordinator is changed in a child process (a Heartbeat answered ILLEGAL_GENERATION
    whatever its generation): replay --conform must exit 1 and name Heartbeat.error_code."""
    plant = (
        "import sys, msgspec\n"
        "from coordinator import group as g\n"
        "from protocol import group as pg\n"
        "real = g.GroupCoordinator.handle\n"
        "def handle(self, source, request, now_ms):\n"
        "    effects = real(self, source, request, now_ms)\n"
        "    if isinstance(request, pg.HeartbeatRequest):\n"
        "        effects = [msgspec.structs.replace(e, message=pg.HeartbeatResponse("
        "pg.ErrorCode.ILLEGAL_GENERATION)) if type(e).__name__ == 'Send' else e "
        "for e in effects]\n"
        "    return effects\n"
        "g.GroupCoordinator.handle = handle\n"
        "from scenarios.cli.main import main\n"
        "sys.argv = ['groupsim'] + sys.argv[1:]\n"
        "main()\n"
    )
    settings = [a for k, v in SETTINGS.items() for a in ("--set", f"{k}={v}")]
    done = subprocess.run(
        [sys.executable, "-c", plant, "replay", "--conform", str(recorded), *settings],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((recorded / "conformance.json").read_text())
    first = next(d for d in report["differences"] if d["kind"] == "divergence")
    assert (first["api"], first["field"]) == ("Heartbeat", "error_code")
    assert first["groupsim"] == "illegal_generation"
