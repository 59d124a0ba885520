"""``groupsim record`` as a user runs it: bad options are one line and exit 2; Ctrl-C leaves
both files complete and exits 130."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("kio")

from scenarios.eventlog import read_jsonl  # noqa: E402

GROUPSIM = [sys.executable, "-m", "scenarios.cli.main"]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GROUPSIM, "record", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--upstream", "nohost"], "expected HOST:PORT"),
        (["--upstream", "h:70000"], "outside 1..65535"),
        (["--upstream", "h:9092", "--listen", "99999"], "a port is 0..65535"),
    ],
)
def test_bad_options_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    done = _run(*args, "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and message in done.stderr


def test_an_out_that_is_a_file_is_refused_before_listening(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    done = _run(
        "--upstream", "127.0.0.1:9", "--listen", "0", "--out", str(tmp_path / "f"), cwd=tmp_path
    )
    assert done.returncode == 2
    assert "not a directory" in done.stderr and "Traceback" not in done.stderr


def test_ctrl_c_closes_both_files_and_exits_130(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    with socket.socket() as s:  # a port nobody listens on: the upstream is "away"
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            *GROUPSIM,
            "record",
            "--upstream",
            f"127.0.0.1:{dead}",
            "--listen",
            "0",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert "listening on 127.0.0.1:" in line
        port = int(line.split("127.0.0.1:")[1].split()[0])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.settimeout(5)
            assert c.recv(10) == b""  # no upstream: the proxy closes this connection
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    events = read_jsonl(out / "events.jsonl", validate=True)
    assert [r["kind"] for r in events][0] == "run_start" and events[-1]["kind"] == "run_end"
    assert [r["kind"] for r in events].count("connection_error") == 1
    trace = [json.loads(x) for x in (out / "trace.jsonl").read_text().splitlines()]
    assert [e["event"] for e in trace if "event" in e][:3] == ["listening", "open", "error"]
    assert "0 violation(s)" in stdout
