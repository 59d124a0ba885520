"""Ctrl-C during ``groupsim sweep``: one line, exit 130, no JVM or Spark worker left, the
finished runs kept in ``runs/`` (resuming skips them), no tracebacks."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_sigint_stops_a_sweep_and_keeps_the_finished_runs(
    tmp_path: Path, running_in_group: Callable[[int], list[int]]
) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "sweep"
    argv = [sys.executable, "-m", "scenarios.cli.main", "sweep", "delay-tuning"]
    argv += ["--master", "local[2]", "--out", str(out)]
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 300
        # under way: a run's events file exists (executors write it before its row)
        while time.monotonic() < deadline and not list(out.glob("events/**/run-*.parquet")):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1, lines
    match = re.fullmatch(r"interrupted after (\d+) runs; results so far in (\S+) .*", lines[0])
    assert match is not None and match.group(2) == str(out), lines[0]
    written = int(match.group(1))
    time.sleep(0.5)
    assert running_in_group(proc.pid) == []
    if written:
        assert pq.read_table(out / "runs").num_rows == written
        assert (out / "sweep.json").is_file()
    else:
        assert not (out / "sweep.json").exists()
