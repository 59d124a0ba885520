"""``--out`` that cannot be used is bad input, found before any work starts: exit 2, one line
``groupsim: error: --out: …``, nothing created, nothing overwritten — for ``chaos``, ``sweep``,
``report`` and ``serve`` (which used to serve a whole session, then lose its log). A killed
``groupsim run`` leaves a staging directory; the next run into the directory removes it.
Every command runs as a user runs it: a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def groupsim(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "scenarios.cli.main", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def assert_bad_out(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("groupsim: error: --out: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0]
    assert done.stdout == ""


def _file(tmp_path: Path) -> Path:
    taken = tmp_path / "taken"
    taken.write_text("keep me\n")
    return taken


COMMANDS = {
    "chaos": ["chaos", "--runs", "2", "--members", "3"],
    "sweep": ["sweep", "delay-tuning"],
    "serve": ["serve", "--port", "0"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("where", ["a file", "below a file"])
def test_an_out_that_cannot_be_a_directory(tmp_path: Path, command: str, where: str) -> None:
    taken = _file(tmp_path)
    out = taken if where == "a file" else taken / "sub" / "dir"
    done = groupsim(*COMMANDS[command], "--out", str(out))
    if where == "a file":
        assert_bad_out(done, f"{taken} exists and is not a directory")
    else:
        assert_bad_out(done, f"cannot create {out}: {taken} is not a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert taken.read_text() == "keep me\n"


def test_an_out_on_a_read_only_filesystem(tmp_path: Path) -> None:
    """Tried for real (root may write anywhere the permissions say no; /proc is read-only)."""
    done = groupsim("chaos", "--runs", "2", "--out", "/proc/groupsim-chaos")
    assert_bad_out(done, "cannot create /proc/groupsim-chaos")


@pytest.mark.parametrize("where", ["a directory", "below a file"])
def test_report_checks_its_out_file_first(tmp_path: Path, where: str) -> None:
    run_dir = tmp_path / "run"
    assert groupsim("run", "scale-out", "--out", str(run_dir), "--no-plot").returncode == 0
    taken = _file(tmp_path)
    out = run_dir if where == "a directory" else taken / "report.html"
    done = groupsim("report", str(run_dir), "--out", str(out))
    assert_bad_out(done, "is a directory" if where == "a directory" else "is not a directory")
    assert not (run_dir / "report.html").exists()
    assert taken.read_text() == "keep me\n"


def test_a_killed_runs_staging_directory_is_removed_by_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    scenario = tmp_path / "big.toml"
    scenario.write_text(
        'name = "big"\n[cluster]\nsize = 60\n[workload.generate]\ncount = 20\ntasks = 8\n'
        '[[timeline]]\nat_ms = 60000\naction = "rolling_restart"\ninterval_ms = 20000\n'
    )
    argv = [sys.executable, "-m", "scenarios.cli.main", "run", str(scenario), "--out", str(out)]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob(".groupsim-stage.*")):  # made before the simulation starts
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    (stale,) = out.glob(".groupsim-stage.*")
    legacy = out / ".groupsim-stage.k2j4h1"  # an older groupsim's name, without a pid
    legacy.mkdir()
    alive = out / f".groupsim-stage.{os.getpid()}.x7q"  # a run still in progress (this one)
    alive.mkdir()
    assert groupsim("run", "scale-out", "--out", str(out), "--no-plot").returncode == 0
    assert not stale.exists() and not legacy.exists()
    assert alive.is_dir()
    assert sorted(p.name for p in out.iterdir()) == [alive.name, "events.jsonl", "summary.json"]
