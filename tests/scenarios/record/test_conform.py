"""``groupsim replay --conform``: a recorded trace replayed through groupsim's coordinator.

``groupsim serve`` (groupsim's own coordinator) stands in for the cluster here, so a faithful
replay must find every answer equal; a coordinator changed with monkeypatch must be caught,
naming the API and the field. The real-cluster traces are in tests/kafka_oracle.
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

from coordinator.config import CoordinatorConfig  # noqa: E402
from scenarios.record.conform import conform_coordinator, read_exchanges  # noqa: E402
from scenarios.record.proxy import Proxy, RecordOptions  # noqa: E402
from scenarios.record.trace import Recording  # noqa: E402
from scenarios.serve import open_broker  # noqa: E402
from tests.scenarios.serve.clients import (  # noqa: E402
    FAST,
    options,
    three_consumers_then_one_leaves,
)

_SETTINGS = [
    f"group.initial.rebalance.delay.ms={FAST.initial_rebalance_delay_ms}",
    f"group.min.session.timeout.ms={FAST.min_session_timeout_ms}",
    f"group.max.session.timeout.ms={FAST.max_session_timeout_ms}",
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace of three kafka-python consumers joining, one leaving, through the proxy."""
    out = tmp_path_factory.mktemp("recorded")

    async def main() -> None:
        async with open_broker(options()) as broker, trio.open_nursery() as nursery:
            recording = Recording(out, int(time.time() * 1000), "serve", "127.0.0.1", 0)
            proxy = Proxy(
                RecordOptions(("127.0.0.1", broker.port)), recording, lambda: time.time() * 1000
            )
            port = await nursery.start(proxy.run)
            await three_consumers_then_one_leaves(port, 30)
            nursery.cancel_scope.cancel()
        recording.close()

    trio.run(main)
    return out


def test_a_faithful_coordinator_answers_every_recorded_request_alike(recorded: Path) -> None:
    exchanges = read_exchanges(recorded / "trace.jsonl")
    verdict = conform_coordinator(exchanges, FAST, tolerance_ms=500)
    assert verdict.divergences == []
    assert {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"} <= set(verdict.compared)
    # Every answer is equal, or equal but late/early; a request order other than the proxy's
    # (two connections, two network threads at the broker) is a timing note of its own.
    late = [d for d in verdict.timing if d.field != "order"]
    assert verdict.equal + len(late) == sum(verdict.compared.values())
    assert verdict.equal > 0


def test_a_planted_divergence_is_named_by_api_and_field(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Planted: every JoinGroup answer of groupsim's names the generation one too high.
    import msgspec

    import scenarios.record.conform as conform_mod
    from protocol import group as pg

    real_from = conform_mod.from_group_response

    def bumped(request, req, answer):  # type: ignore[no-untyped-def]
        if isinstance(answer, pg.JoinGroupResponse) and answer.generation_id >= 0:
            answer = msgspec.structs.replace(answer, generation_id=answer.generation_id + 1)
        return real_from(request, req, answer)

    monkeypatch.setattr(conform_mod, "from_group_response", bumped)
    verdict = conform_coordinator(read_exchanges(recorded / "trace.jsonl"), FAST, 500)
    first = verdict.divergences[0]
    assert (first.api, first.field) == ("JoinGroup", "generation_id")
    assert first.groupsim == first.recorded + 1


def test_the_command_exits_1_on_a_divergence_and_0_without(recorded: Path, tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "scenarios.cli.main",
        "replay",
        "--conform",
        str(recorded),
        "--tolerance-ms",
        "500",
    ]
    settings = [arg for s in _SETTINGS for arg in ("--set", s)]
    done = subprocess.run([*command, *settings], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "divergences: 0" in done.stdout
    report = json.loads((recorded / "conformance.json").read_text())
    assert report["divergences"] == 0 and report["total"] > 0
    # The broker's real settings matter: with Kafka's default 3 s initial delay the first
    # JoinGroup answers come later than recorded (a timing difference) or differ.
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    report = json.loads((recorded / "conformance.json").read_text())
    assert report["timing_differences"] + report["divergences"] > 0
    assert done.returncode == (1 if report["divergences"] else 0)


def test_a_bad_trace_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "trace.jsonl").write_text('{"t_ms": 1}\nnot json\n')
    done = subprocess.run(
        [sys.executable, "-m", "scenarios.cli.main", "replay", "--conform", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "trace.jsonl:2: not JSON" in done.stderr and "Traceback" not in done.stderr
    assert CoordinatorConfig()  # Kafka's defaults are what --set overrides


#: A real Kafka 4.0.2 broker's trace (group requests only) of three consumers joining with
#: ``group.initial.rebalance.delay.ms = 0``: the join timer is due when c1 joins (498 ms), but the
#: broker, just started, ran it only after c0 had joined (548 ms) and before c2 had (592 ms); its
#: answers came at 605 ms with two members in generation 1.
_LATE_JOIN_TIMER = Path(__file__).parent / "traces" / "real-broker-join-timer-ran-late.jsonl"
_LATE_JOIN_TIMER_SETTINGS = CoordinatorConfig.from_mapping(
    {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
)


def test_a_join_timer_the_broker_ran_late_fires_with_the_members_the_broker_answered() -> None:
    verdict = conform_coordinator(read_exchanges(_LATE_JOIN_TIMER), _LATE_JOIN_TIMER_SETTINGS)
    assert verdict.divergences == []
    assert verdict.deferred_timers == 1
    assert verdict.equal == sum(verdict.compared.values())


def test_without_deferral_the_late_timer_puts_the_broker_s_members_in_two_generations() -> None:
    verdict = conform_coordinator(
        read_exchanges(_LATE_JOIN_TIMER), _LATE_JOIN_TIMER_SETTINGS, max_lag_ms=0
    )
    # the leader's answer (its request came with the timer, so it counts as timing) and c0's
    # (a generation later than the broker's: a divergence)
    found = {(d.kind, d.field, d.recorded, d.groupsim) for d in verdict.differences}
    assert ("timing", "members.length", 2, 1) in found
    assert ("divergence", "generation_id", 1, 2) in found


def test_a_join_timer_waits_no_longer_than_the_members_the_broker_answered() -> None:
    """Deferring until just before the broker's answer (the rule before the member evidence)
    would take c2 into generation 1 too: three members where the broker answered two."""
    verdict = conform_coordinator(read_exchanges(_LATE_JOIN_TIMER), _LATE_JOIN_TIMER_SETTINGS)
    joins = verdict.compared["JoinGroup"]
    assert joins >= 6 and not [d for d in verdict.differences if d.api == "JoinGroup"]


def test_requests_in_one_millisecond_are_ordered_by_the_leader_the_broker_elected() -> None:
    """``groupsim serve`` recorded c0's and c1's JoinGroups in the same millisecond and handled
    c1's first (c1 became the leader, as the first member to join does in ``ClassicGroup``):
    that shows only in the answers 400 ms later, when the join completes, and the replay must
    take that order (a timing difference, ``order``), not the recorded one."""
    trace = Path(__file__).parent / "traces" / "serve-joins-in-one-millisecond.jsonl"
    verdict = conform_coordinator(read_exchanges(trace), FAST)
    assert verdict.divergences == []
    assert [d.field for d in verdict.timing] == ["order"]


def test_a_group_on_the_kip_848_protocol_is_counted_as_skipped_not_passed_over(
    tmp_path: Path,
) -> None:
    """A consumer with ``group.protocol=consumer`` sends ConsumerGroupHeartbeat (KIP-848), not
    JoinGroup: the replay must say it did not replay those requests."""
    lines = _LATE_JOIN_TIMER.read_text().splitlines()
    start = json.loads(lines[0])["t_ms"]
    heartbeat = {
        "t_ms": start + 10,
        "conn": 99,
        "client_id": "new-protocol",
        "dir": "request",
        "api": "ConsumerGroupHeartbeat",
        "api_key": 68,
        "version": 0,
        "correlation_id": 5,
        "raw": "AEQAAAAAAAU=",
    }
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join([lines[0], json.dumps(heartbeat), *lines[1:]]) + "\n")
    verdict = conform_coordinator(read_exchanges(trace), _LATE_JOIN_TIMER_SETTINGS)
    assert verdict.divergences == []
    new_protocol = {k: n for k, n in verdict.skipped.items() if "new group protocol" in k}
    assert list(new_protocol.values()) == [1]
    assert next(iter(new_protocol)).startswith("ConsumerGroupHeartbeat:")
