"""``groupsim`` start-up: CPU and wall time of fresh interpreters (issue 25, target 4).

Run: ``.venv/bin/python benchmarks/bench_startup.py [--runs 7]``. Prints one table.

Rows: ``groupsim --help`` (target ≤ 0.2 s), the flagship ``groupsim run --no-plot`` and
``groupsim run`` with its ``timeline.png`` (target ≤ 1 s including the plot). Each row runs
``--runs`` fresh interpreters one after another (bytecode cached: one untimed run first) and
reports the best and the median of the child's CPU time (user + system,
``RUSAGE_CHILDREN``) and of its wall time. On a shared machine wall time swings with the
load (printed with the table); CPU time is the figure to compare with the targets.

The plotted ``run`` is two processes on Linux (a forked child imports matplotlib and draws
while the parent simulates, ``scenarios.cli.plot_child``): its CPU column is both together,
and its wall time on an idle 2-core machine is the **critical path**, printed below the table
(``--critical-path``, on by default): CPU seconds of the parent until it has handed the
timeline over (series computed and written to the pipe), or of the fork plus the child's
matplotlib import if that is later, plus the child's drawing, plus the parent after the PNG
is written — read from hooks around
``scenarios.cli.plot_child`` in the same fresh processes. On a loaded machine wall time says
little; this is what the wall would be with a free core for each process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = "import sys; sys.argv[0] = 'groupsim'; from scenarios.cli.main import main; main()"
ROWS = (
    ("groupsim --help", ["--help"], "≤ 0.2 s"),
    ("groupsim run --no-plot (flagship)", ["run", "--no-plot", "--out", "out"], ""),
    ("groupsim run (flagship, with timeline.png)", ["run", "--out", "out"], "≤ 1 s"),
)


def measure(args: list[str], runs: int) -> tuple[list[float], list[float]]:
    """(CPU seconds, wall seconds) of ``runs`` fresh ``groupsim <args>`` processes."""
    cpu: list[float] = []
    wall: list[float] = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiling the sources again is not start-up
    with tempfile.TemporaryDirectory() as out:
        for i in range(runs + 1):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", CODE, *args],
                cwd=out,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )
            elapsed = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i == 0:
                continue  # fills the bytecode cache
            cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
            wall.append(elapsed)
    return cpu, wall


# The flagship run with hooks recording each process's CPU clock at the hand-overs.
_CRITICAL = r"""
import json, os, sys, time
sys.argv[0] = "groupsim"
import scenarios.cli.plot_child as pc
out = os.environ["BENCH_STARTUP_MARKS"]
marks = {}
child = pc._child
def _child(data_r, status_w):
    import scenarios.cli.plots as plots
    imported = time.process_time()
    draw = plots.timeline_png
    def timed(*args, **kwargs):
        got = time.process_time()
        png = draw(*args, **kwargs)
        with open(out + ".child", "w") as f:
            json.dump({"import": imported, "draw": time.process_time() - got}, f)
        return png
    plots.timeline_png = timed
    child(data_r, status_w)
pc._child = _child
start = pc.start_plotter
def start_plotter():
    marks["fork"] = time.process_time()
    return start()
pc.start_plotter = start_plotter
submit, wait = pc.ForkedPlotter.submit, pc.ForkedPlotter.wait
def _submit(self, records, path):
    submit(self, records, path)
    marks["submit"] = time.process_time()
def _wait(self):
    wait(self)
    marks["waited"] = time.process_time()
pc.ForkedPlotter.submit, pc.ForkedPlotter.wait = _submit, _wait
import atexit
def _end():
    marks["end"] = time.process_time()
    with open(out + ".parent", "w") as f:
        json.dump(marks, f)
atexit.register(_end)
from scenarios.cli.main import main
main()
"""


def critical_path(runs: int) -> list[tuple[float, float, float, float]]:
    """(critical path, parent until hand-over, fork + child import, child drawing) in CPU
    seconds, for ``runs`` fresh plotted flagship runs (one untimed run first)."""
    found = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as out:
        env["BENCH_STARTUP_MARKS"] = marks = str(Path(out) / "marks")
        for i in range(runs + 1):
            subprocess.run(
                [sys.executable, "-c", _CRITICAL, "run", "--out", "out"],
                cwd=out,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )
            parent = json.loads(Path(marks + ".parent").read_text())
            child = json.loads(Path(marks + ".child").read_text())
            ready = parent["fork"] + child["import"]
            path = max(parent["submit"], ready) + child["draw"] + parent["end"] - parent["waited"]
            if i:
                found.append((path, parent["submit"], ready, child["draw"]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed processes per row")
    parser.add_argument(
        "--no-critical-path", action="store_true", help="skip the plotted run's critical path"
    )
    args = parser.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores, CPython {sys.version.split()[0]}; load average {load}")
    print("| command | CPU best | CPU median | wall best | wall median | target |")
    print("|---|--:|--:|--:|--:|--:|")
    for label, cli_args, target in ROWS:
        cpu, wall = measure(cli_args, args.runs)
        print(
            f"| `{label}` | {min(cpu):.2f} s | {statistics.median(cpu):.2f} s "
            f"| {min(wall):.2f} s | {statistics.median(wall):.2f} s | {target} |",
            flush=True,
        )
    if args.no_critical_path or not sys.platform.startswith("linux"):
        return
    rows = critical_path(args.runs)
    med = [statistics.median(r[k] for r in rows) for k in range(4)]
    print(
        f"\nPlotted run, critical path (CPU s, median of {args.runs}): **{med[0]:.2f} s** = "
        f"max(parent until hand-over {med[1]:.2f}, fork + child's matplotlib import "
        f"{med[2]:.2f}) + child's drawing {med[3]:.2f} (+ the parent after it)"
    )


if __name__ == "__main__":
    main()
