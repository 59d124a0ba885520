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


# seconds after the command starts: Python importing it and probing Java (~1-3 s), the JVM
# launching (~5-9 s on a busy 2-core machine), the SparkSession being built (~8-12 s)
START_MOMENTS = [0.3, 1.0, 3.0, 5.0, 6.5, 8.0, 9.5, 11.0]


@pytest.mark.parametrize("command", ["sweep", "chaos"])
@pytest.mark.parametrize("after_s", START_MOMENTS)
def test_ctrl_c_while_spark_starts_is_one_line(
    tmp_path: Path, running_in_group: Callable[[int], list[int]], command: str, after_s: float
) -> None:
    """Ctrl-C (twice, 0.01 s apart) in the first seconds of ``sweep`` / ``chaos --master``:
    one line, exit 130, no JVM or Python worker left, nothing written (used to print ~45
    lines of py4j tracebacks)."""
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "scenarios.cli.main"]
    if command == "sweep":
        argv += ["sweep", "delay-tuning", "--master", "local[2]", "--out", str(out)]
    else:
        argv += ["chaos", "--runs", "200", "--master", "local[2]", "--out", str(out)]
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        time.sleep(after_s)
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    if proc.returncode in (1, -signal.SIGINT) and after_s < 1:
        # On a loaded machine the Ctrl-C can land in Python's own start-up (site, the .pth
        # files, the editable finder), before groupsim's first line installs its handler:
        # Python prints its KeyboardInterrupt and exits (1 from site, -2 from runpy), as for
        # any program, and nothing of the command ran.
        assert err.decode().rstrip().endswith("KeyboardInterrupt"), err
        assert not out.exists()
        return
    assert proc.returncode == 130
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1, lines
    # (while Python imports the command: "groupsim: interrupted")
    line = r"groupsim: interrupted|interrupted after (\d+) runs; (nothing written|results so .*)"
    match = re.fullmatch(line, lines[0])
    assert match is not None, lines[0]
    if not (match.group(2) or "").startswith("results"):
        assert not out.exists()
    deadline = time.monotonic() + 5
    while running_in_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running_in_group(proc.pid) == []
