"""A Connect run and ``groupsim --help`` do not import what only other commands need (issue 25).

Start-up time is part of the CLI's contract (docs/benchmarks.md): numpy and OR-Tools serve the
Streams assignors, matplotlib the plots, PySpark the sweeps, kio the serve/record commands.
Each check runs in a fresh interpreter, so modules imported by earlier tests do not count.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = ("numpy", "ortools", "matplotlib", "pyspark", "kio")


def _imported_by(args: list[str]) -> set[str]:
    """Top-level packages imported by ``groupsim ARGS`` (run in a fresh interpreter)."""
    probe = (
        "import sys\n"
        "from scenarios.cli.main import main\n"
        f"sys.argv = ['groupsim', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('MODULES', *sorted({m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
    line = out.strip().splitlines()[-1]
    assert line.startswith("MODULES"), out
    return set(line.split()[1:])


def test_flagship_run_without_plot_imports_nothing_heavy(tmp_path: Path) -> None:
    got = _imported_by(["run", "--no-plot", "--out", str(tmp_path / "out")])
    assert (tmp_path / "out" / "events.jsonl").exists()
    assert not got & set(HEAVY)


def test_flagship_run_with_plot_imports_only_matplotlib(tmp_path: Path) -> None:
    got = _imported_by(["run", "--out", str(tmp_path / "out")])
    assert (tmp_path / "out" / "timeline.png").exists()
    assert got & set(HEAVY) == {"matplotlib", "numpy"}  # matplotlib needs numpy


def test_help_imports_nothing_heavy() -> None:
    assert not _imported_by(["--help"]) & set(HEAVY)
