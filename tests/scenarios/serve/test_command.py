"""``groupsim serve`` as a command: input errors, SIGINT leaves complete files, faults."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("kio")

from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.eventlog import read_jsonl  # noqa: E402
from scenarios.serve.config import (  # noqa: E402
    Partition,
    ServeInputError,
    load_serve_scenario,
    parse_fault_command,
    parse_topic,
)

ROOT = Path(__file__).resolve().parents[3]


def _groupsim(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "scenarios.cli.main", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        **kwargs,
    )


def _port(proc: subprocess.Popen) -> int:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
    assert match, f"unexpected first line: {line!r}"
    return int(match.group(1))


def test_topics_settings_and_control_commands_are_parsed():
    assert parse_topic("orders:6") == ("orders", 6)
    for bad in ("orders", "orders:0", "orders:x", ":3"):
        with pytest.raises(ServeInputError, match="NAME:PARTITIONS"):
            parse_topic(bad)
    step = parse_fault_command("partition member=c1 duration_ms=500", 42)
    assert step == Partition(at_ms=42, member="c1", duration_ms=500)
    with pytest.raises(ServeInputError, match="crash"):
        parse_fault_command("crash member=c1", 0)
    with pytest.raises(ServeInputError, match="key=value"):
        parse_fault_command("heal c1", 0)


def test_a_serve_scenario_takes_fault_steps_only(tmp_path: Path):
    good = tmp_path / "good.toml"
    good.write_text(
        'name = "x"\nseed = 3\n[topics]\norders = 6\n[coordinator]\n'
        '"group.initial.rebalance.delay.ms" = 10\n'
        '[[timeline]]\naction = "latency"\nat_ms = 5\nmember = "c1"\nextra_ms = 50\n'
        "duration_ms = 100\n"
    )
    scenario = load_serve_scenario(good)
    assert (scenario.name, scenario.seed, scenario.topics) == ("x", 3, {"orders": 6})
    assert scenario.timeline[0].extra_ms == 50
    bad = tmp_path / "bad.toml"
    bad.write_text('[[timeline]]\naction = "crash"\nat_ms = 5\nmember = "c1"\n')
    with pytest.raises(ServeInputError, match=r"bad\.toml: .*timeline\[0\]"):
        load_serve_scenario(bad)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('[coordinator]\n"group.max.sizes" = 3\n')
    with pytest.raises(ServeInputError, match="group.max.sizes"):
        load_serve_scenario(unknown)


def test_bad_input_is_one_line_and_exit_code_2():
    proc = _groupsim("serve", "--port", "0", "--topic", "orders")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.strip().splitlines() == [
        "groupsim: error: --topic 'orders': expected NAME:PARTITIONS (e.g. orders:6)"
    ]


@pytest.mark.slow
def test_sigint_stops_the_server_and_leaves_a_checkable_log(tmp_path: Path):
    pytest.importorskip("kafka")
    from kafka import KafkaConsumer

    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'name = "cli"\n[coordinator]\n"group.initial.rebalance.delay.ms" = 100\n'
        '[[timeline]]\naction = "coordinator_failover"\nat_ms = 30000\ndown_ms = 10\n'
    )
    out = tmp_path / "out"
    proc = _groupsim(
        "serve",
        "--port",
        "0",
        "--scenario",
        str(scenario),
        "--topic",
        "orders:4",
        "--out",
        str(out),
        "--seed",
        "9",
    )
    try:
        port = _port(proc)
        consumer = KafkaConsumer(
            "orders", bootstrap_servers=f"127.0.0.1:{port}", group_id="g", client_id="cli1"
        )
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) != 4 and time.monotonic() < deadline:
            consumer.poll(timeout_ms=100)
        assert len(consumer.assignment()) == 4
        consumer.close()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert "0 violation(s)" in stdout
    assert "group g: Empty, generation 2, 0 member(s), 2 rebalance(s)" in stdout
    records = read_jsonl(out / "events.jsonl")
    assert records[0]["kind"] == "run_start" and records[0]["seed"] == 9
    assert records[-1]["kind"] == "run_end"
    assert [r["generation"] for r in records if r["kind"] == "generation"] == [1, 2]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["groups"]["g"]["state"] == "Empty"
    assert summary["violations"] == []
    assert check_log(out / "events.jsonl") == []
    check = subprocess.run(
        [sys.executable, "-m", "scenarios.cli.main", "check", str(out / "events.jsonl")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stdout


def test_control_commands_on_stdin_inject_faults_and_stop(tmp_path: Path):
    out = tmp_path / "out"
    proc = _groupsim("serve", "--port", "0", "--control", "--out", str(out), stdin=subprocess.PIPE)
    try:
        _port(proc)
        stdout, stderr = proc.communicate(
            "partition member=c1 duration_ms=50\nbogus x=1\nlatency member=c2 extra_ms=5 "
            "duration_ms=10\nstop\n",
            timeout=30,
        )
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert "bogus" in stderr
    faults = [r for r in read_jsonl(out / "events.jsonl") if r["kind"] == "fault"]
    assert [(f["fault"], f["member"]) for f in faults][:2] == [
        ("partition", "c1"),
        ("latency", "c2"),
    ]


def test_check_takes_the_groups_of_a_served_log_one_at_a_time():
    from scenarios.check.log_check import check_records

    def state(t: int, group: str, old: str, new: str) -> dict:
        return {
            "t_ms": t,
            "seq": t,
            "kind": "group_state",
            "group": group,
            "from": old,
            "to": new,
            "generation": 0,
        }

    start = {"scenario": "serve", "seed": 0, "mode": "serve", "workers": [], "connectors": {}}
    records = [
        {"t_ms": 0, "seq": 0, "kind": "run_start", "log_version": 1, **start},
        state(1, "a", "Empty", "PreparingRebalance"),
        state(2, "b", "Empty", "PreparingRebalance"),
        state(3, "a", "PreparingRebalance", "CompletingRebalance"),
        state(4, "b", "PreparingRebalance", "CompletingRebalance"),
    ]
    assert check_records(records) == []
    broken = [*records, state(5, "b", "PreparingRebalance", "Stable")]
    assert [(v.invariant, v.group) for v in check_records(broken)] == [("illegal_transition", "b")]


def test_a_taken_port_is_one_line_exit_code_2_and_no_files(tmp_path: Path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _groupsim("serve", "--port", str(port), "--out", str(tmp_path / "out"))
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"groupsim: error: cannot serve on 127.0.0.1:{port}: ")
    assert not (tmp_path / "out").exists()
