"""``timeline.png`` drawn by a forked child (``scenarios.cli.plot_child``, Linux only).

The child must write the very PNG the in-process code writes, report a failure to write as
the parent's ``OSError``, and never outlive the command (killed and reaped when the run never
comes to plotting).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from check.test_metrics import two_worker_bounce

from scenarios.cli import plot_child
from scenarios.cli.plots import write_timeline_png

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def test_the_child_writes_the_png_the_parent_would(tmp_path: Path) -> None:
    records = two_worker_bounce().records
    plotter = plot_child.start_plotter()
    assert plotter is not None
    plotter.submit(records, tmp_path / "child.png")
    plotter.wait()
    write_timeline_png(records, tmp_path / "here.png")
    assert (tmp_path / "child.png").read_bytes() == (tmp_path / "here.png").read_bytes()


def test_a_write_error_comes_back_as_the_parents_oserror(tmp_path: Path) -> None:
    plotter = plot_child.start_plotter()
    assert plotter is not None
    plotter.submit(two_worker_bounce().records, tmp_path / "missing" / "timeline.png")
    with pytest.raises(OSError) as caught:
        plotter.wait()
    assert caught.value.errno == errno.ENOENT
    assert not (tmp_path / "missing").exists()


def test_cancel_kills_and_reaps_the_child() -> None:
    plotter = plot_child.start_plotter()
    assert plotter is not None
    pid = plotter._pid
    assert pid is not None
    plotter.cancel()
    with pytest.raises(ChildProcessError):  # reaped: no zombie left
        os.waitpid(pid, os.WNOHANG)
    plotter.cancel()  # twice is harmless


@pytest.mark.parametrize(
    ("argv", "forks"),
    [
        (["run"], True),
        (["run", "kip-415-bounce", "--seed", "3"], True),
        (["run", "--no-plot"], False),
        (["run", "--help"], False),
        (["chaos", "--runs", "1"], False),
        ([], False),
    ],
)
def test_only_a_plotting_run_forks_early(
    argv: list[str], forks: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []
    monkeypatch.setattr(plot_child, "start_plotter", lambda: started.append("fork"))
    monkeypatch.setattr(plot_child, "_early", None)
    plot_child.start_early(argv)
    assert started == (["fork"] if forks else [])


def test_groupsim_run_writes_the_in_process_png_and_leaves_no_child(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # the program path: argv[0] is groupsim before the CLI is imported, as the console script
    code = (
        "import sys\nsys.argv = ['groupsim', 'run', '--out', sys.argv[1]]\n"
        "from scenarios.cli.main import main\nmain()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "events.jsonl").open()]
    write_timeline_png(records, tmp_path / "here.png")
    assert (out / "timeline.png").read_bytes() == (tmp_path / "here.png").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["events.jsonl", "summary.json", "timeline.png"]


def test_the_drawing_imports_neither_the_kinds_nor_the_event_log() -> None:
    # what the child imports to draw (the kinds and scenarios.eventlog cost ~0.25 s CPU there)
    code = (
        "import sys\nimport scenarios.cli.plots\n"
        "print(sorted(m for m in sys.modules if m.startswith(('scenarios.kinds', "
        "'scenarios.eventlog', 'msgspec', 'structlog'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
