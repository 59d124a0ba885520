"""Ctrl-C during ``groupsim chaos``: the campaign stops promptly (its worker processes are
terminated, none is left), prints one line, keeps what finished and exits 130."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_sigint_stops_the_campaign(
    tmp_path: Path, jobs: int, running_in_group: Callable[[int], list[int]]
) -> None:
    out = tmp_path / "chaos"
    argv = [sys.executable, "-m", "scenarios.cli.main", "chaos", "--runs", "2000"]
    argv += ["--jobs", str(jobs), "--out", str(out), "--members", "3..4"]
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + 60
        # started: the worker pool exists (jobs 2) or the interpreter has loaded the command
        while time.monotonic() < deadline and (jobs > 1 and not _children(proc.pid)):
            time.sleep(0.1)
        time.sleep(3.0)
        assert proc.poll() is None, "the campaign ended before it was interrupted"
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: the whole group
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1, lines
    match = re.fullmatch(r"interrupted after (\d+) runs; results so far in (.+)", lines[0])
    assert match is not None, lines[0]
    assert match.group(2) == str(out)
    saved = json.loads((out / "chaos-1-interrupted.json").read_text(encoding="utf-8"))
    assert saved["runs"] == int(match.group(1))
    time.sleep(0.2)
    assert running_in_group(proc.pid) == []
