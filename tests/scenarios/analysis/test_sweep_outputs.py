"""What ``groupsim sweep`` leaves on disk, run as a user runs it (a subprocess): the Parquet
files Spark writes get the umask's permissions like every other output, and a sweep that
never started (a bad ``--master``) leaves no ``sweep.json`` and no directory."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# one JVM each: slow tests (`pytest -m slow`)
pytestmark = [pytest.mark.spark, pytest.mark.slow]

SWEEP = """
name = "umask-test"
generator = "rolling-bounce"
seeds = 1
[parameters]
protocol = ["sessioned"]
workers = [3]
interval_ms = [10000]
delay_ms = [20000]
"""


def _sweep(tmp_path: Path, *args: str, umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    sweep_file = tmp_path / "umask-test.toml"
    sweep_file.write_text(SWEEP)
    argv = [sys.executable, "-m", "scenarios.cli.main", "sweep", str(sweep_file), *args]
    return subprocess.run(
        argv,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=lambda: os.umask(umask),  # noqa: PLW1509 - the child's umask, set at fork
    )


def test_every_file_a_sweep_writes_has_the_umasks_permissions(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _sweep(tmp_path, "--master", "local[1]", "--out", str(out), umask=0o027)
    assert done.returncode == 0, done.stderr
    modes = {
        str(path.relative_to(out)): stat.S_IMODE(path.stat().st_mode)
        for path in [out, *out.rglob("*")]
    }
    for table in ("runs", "aggregates", "events"):
        assert any(name.startswith(f"{table}/") for name in modes), table
    wrong = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o750 if (out / name).is_dir() else 0o640)
    }
    assert wrong == {}


def test_a_bad_master_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _sweep(tmp_path, "--master", "bogus", "--out", str(out))
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("groupsim: error: "), lines
    assert not out.exists()
