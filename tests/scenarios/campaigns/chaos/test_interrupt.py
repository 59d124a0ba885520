"""Ctrl-C and SIGTERM during ``groupsim chaos``, as a user sends them: the command is a
subprocess in its own process group (a terminal's foreground job) and gets real signals, any
number of them, at several moments — the worker pool starting, runs under way, failing runs
being shrunk and their reproducers written. Every time it ends within 2 s with one line on
stderr and exit 130 (143 for SIGTERM), keeps the finished runs in
``chaos-<seed>-interrupted.json`` (and every reproducer that file names), and leaves no
process. A parent killed by SIGTERM or SIGKILL leaves no worker. Every wait is bounded."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
RUN_WITH = Path(__file__).resolve().parent / "planted" / "run_with.py"
LINE = re.compile(r"interrupted after (\d+) runs; (results so far in (.+)|nothing written)")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, process groups")


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


def _wait_for(condition: Callable[[], bool], proc: subprocess.Popen[bytes], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert proc.poll() is None, "the command ended before it was interrupted"
        assert time.monotonic() < deadline, "the moment to interrupt never came"
        time.sleep(0.005)


@dataclass
class Stopped:
    returncode: int
    lines: list[str]
    seconds: float  # from the last signal to the exit


def _start(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )


def _signal(proc: subprocess.Popen[bytes], signals: list[tuple[float, int]]) -> Stopped:
    """Send ``(pause before, signal)`` to the whole group, then wait (bounded) for the end."""
    try:
        for pause, signum in signals:
            time.sleep(pause)
            os.killpg(proc.pid, signum)
        sent = time.monotonic()
        _, err = proc.communicate(timeout=20)
        return Stopped(proc.returncode, err.decode().strip().splitlines(), time.monotonic() - sent)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _assert_kept(stopped: Stopped, out: Path, running_in_group: list[int]) -> int:
    """The one line, exit 130, what is on disk, no process left; the runs kept."""
    assert stopped.returncode == 130, stopped
    assert len(stopped.lines) == 1, stopped.lines
    match = LINE.fullmatch(stopped.lines[0])
    assert match is not None, stopped.lines[0]
    assert stopped.seconds < 2.0, stopped
    assert running_in_group == []
    runs = int(match.group(1))
    if match.group(3) is None:  # nothing finished: nothing written
        assert runs == 0
        assert not out.exists()
        return 0
    assert match.group(3) == str(out)
    saved = json.loads((out / "chaos-1-interrupted.json").read_text(encoding="utf-8"))
    assert saved["runs"] == runs >= 1
    for rep in saved["reproducers"]:
        assert Path(rep["path"]).is_file()
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no temporary file
    return runs


def _campaign(out: Path, jobs: int = 2) -> list[str]:
    argv = [sys.executable, "-m", "scenarios.cli.main", "chaos", "--runs", "2000"]
    return argv + ["--jobs", str(jobs), "--out", str(out), "--members", "3..4"]


def _failing_campaign(out: Path, runs: int = 10) -> list[str]:
    """A campaign whose every second run livelocks (planted bug) and is shrunk: most of its
    time is spent shrinking and writing reproducers."""
    argv = [sys.executable, str(RUN_WITH), "worker-reclaims-withheld-task", "chaos"]
    argv += ["--runs", str(runs), "--members", "5", "--protocol", "sessioned", "--duration", "10m"]
    return argv + ["--max-records", "20000", "--out", str(out)]


def test_two_ctrl_c_a_hundredth_apart_keep_the_finished_runs(
    tmp_path: Path, running_in_group: Callable[[int], list[int]]
) -> None:
    out = tmp_path / "chaos"
    proc = _start(_campaign(out))
    _wait_for(lambda: len(_children(proc.pid)) == 2, proc, 60)
    stopped = _signal(proc, [(1.0, signal.SIGINT), (0.01, signal.SIGINT)])
    time.sleep(0.1)
    _assert_kept(stopped, out, running_in_group(proc.pid))


# (moment, signals): where in the campaign, and the Ctrl-Cs sent from there
MOMENTS = [
    ("pool starting", [(0.0, signal.SIGINT)]),
    ("pool starting", [(0.0, signal.SIGINT), (0.01, signal.SIGINT)]),
    ("running", [(0.3, signal.SIGINT)]),
    ("running", [(0.7, signal.SIGINT), (0.01, signal.SIGINT)]),
    ("running", [(1.5, signal.SIGINT)] + [(0.0, signal.SIGINT)] * 4),
    ("running", [(0.5, signal.SIGINT), (0.2, signal.SIGINT), (0.2, signal.SIGINT)]),
    ("running, one process", [(0.5, signal.SIGINT), (0.01, signal.SIGINT)]),
    ("running, one process", [(1.2, signal.SIGINT)]),
    ("shrinking", [(0.0, signal.SIGINT)]),
    ("shrinking", [(1.0, signal.SIGINT), (0.01, signal.SIGINT)]),
    ("writing", [(0.0, signal.SIGINT)]),
    ("writing", [(0.0, signal.SIGINT), (0.0, signal.SIGINT), (0.0, signal.SIGINT)]),
]


@pytest.mark.slow
@pytest.mark.parametrize("moment, signals", MOMENTS * 2)
def test_any_number_of_ctrl_c_at_any_moment(
    tmp_path: Path,
    running_in_group: Callable[[int], list[int]],
    moment: str,
    signals: list[tuple[float, int]],
) -> None:
    """24 tries: each moment twice, one to five Ctrl-Cs."""
    out = tmp_path / "chaos"
    if moment in ("shrinking", "writing"):
        # 10 runs are run and shrunk in about 4.5 s wall on an idle machine: too soon over for
        # the shrinking moment 4 s in, so it shrinks the failures of 40
        proc = _start(_failing_campaign(out, 40 if moment == "shrinking" else 10))
        if moment == "shrinking":  # every run has finished: a failing one is being shrunk
            _wait_for(lambda: len(_children(proc.pid)) >= 1, proc, 60)
            time.sleep(4.0)
        else:  # the first reproducer appears: the parent is writing them as they come
            _wait_for(lambda: any(out.glob("chaos-1-*.toml")), proc, 180)
    else:
        jobs = 1 if moment.endswith("one process") else 2
        proc = _start(_campaign(out, jobs))
        if jobs == 2:
            _wait_for(lambda: bool(_children(proc.pid)), proc, 60)
        else:
            time.sleep(2.0)  # the interpreter has started and imported the command
    stopped = _signal(proc, signals)
    time.sleep(0.1)
    if moment == "writing" and stopped.returncode == 1:
        # the last reproducers came within milliseconds of the first, and the Ctrl-C found
        # the campaign ending with its verdict (exit 1): that end stays clean, with no
        # traceback from a handler that ran as the command gave the old ones back
        assert not [line for line in stopped.lines if "Traceback" in line], stopped.lines
        assert running_in_group(proc.pid) == []
        return
    _assert_kept(stopped, out, running_in_group(proc.pid))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_campaign_leaves_no_worker(
    tmp_path: Path, running_in_group: Callable[[int], list[int]], signum: int
) -> None:
    """``kill -TERM`` / ``kill -KILL`` of the parent alone (not its group): the workers end
    with it (they watch it); SIGTERM is also one line and exit 143."""
    out = tmp_path / "chaos"
    proc = _start(_campaign(out))
    try:
        _wait_for(lambda: len(_children(proc.pid)) == 2, proc, 60)
        workers = _children(proc.pid)
        time.sleep(0.5)
        os.kill(proc.pid, signum)
        _, err = proc.communicate(timeout=20)
        deadline = time.monotonic() + 5
        while running_in_group(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert running_in_group(proc.pid) == [], workers
    if signum == signal.SIGTERM:
        assert proc.returncode == 143
        lines = err.decode().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("stopped by SIGTERM after "), lines
    else:
        assert proc.returncode == -signal.SIGKILL
