"""``groupsim sweep`` and ``groupsim report``: plain typer command functions.

The lead registers them on the app in ``scenarios/cli.py``::

    from scenarios.cli.analysis_cmd import report, sweep
    app.command()(sweep)
    app.command()(report)

Conventions as ``scenarios/cli.py``: bad input is one line ``groupsim: error: ...`` on stderr
and exit code 2; ``sweep`` exits 1 when a run of this invocation failed (the failures are
rows of ``runs/`` and the sweep completed), else 0.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from scenarios.cli.choices import ReportEngine
from scenarios.cli.errors import fail, one_line_errors, parse_conf, stderr

__all__ = ["sweep", "report"]


class _Bar:
    """A rich progress bar of runs on stderr (only when stderr is a terminal)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> _Bar:
        if sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("runs"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=stderr.get(),
                transient=True,
            )
            self.bar.start()
            # Spark takes a while to start: say so until the first run is under way
            self.task = self.bar.add_task(f"{self.label} (starting Spark)", total=None)
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=total, description=self.label)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def sweep(
    sweep_file: Annotated[
        str,
        typer.Argument(
            metavar="SWEEP",
            help="Sweep file, or a built-in sweep (protocol-comparison, delay-tuning).",
        ),
    ],
    master: Annotated[
        str,
        typer.Option(help="Spark master URL: local[N], local[*], spark://host:7077, yarn, …"),
    ] = "local[*]",
    out: Annotated[
        str | None,
        typer.Option(
            help="Output directory or URL (default ./sweep-out/<sweep>); re-running with the "
            "same one resumes, skipping runs already written."
        ),
    ] = None,
    events: Annotated[bool, typer.Option(help="Write every run's event log to events/.")] = True,
    batch_size: Annotated[
        int, typer.Option(min=1, help="Runs per Spark write (what an interruption can lose).")
    ] = 400,
    conf: Annotated[
        list[str] | None,
        typer.Option(help="Extra Spark setting KEY=VALUE (repeatable)."),
    ] = None,
) -> None:
    """Run a sweep (parameter grid × seeds) on Spark; write runs/, events/, aggregates/."""
    options = dict(locals())  # every option, by name, for _sweep
    from scenarios.cli.stopping import stopping

    # Ctrl-C (however many, whenever: Spark starting included) or SIGTERM: one line, exit
    # 130 (143), the finished runs kept, no JVM or Spark worker left
    with stopping() as stop:
        where: list[str] = []  # the output directory, once known
        try:
            _sweep(where=where, **options)
        except KeyboardInterrupt as exc:
            stop.ignore_further()
            from scenarios.analysis.interrupt import stop_jvm

            stop_jvm()
            stderr.print(
                stopped_line(getattr(exc, "written", 0), where[0] if where else None),
                markup=False,
                soft_wrap=True,
            )
            raise typer.Exit(stop.exit_code) from None


def stopped_line(written: int, out: str | None) -> str:
    """The line an interrupted Spark command prints: what is kept, and where."""
    local = out is not None and ("://" not in out or out.startswith("file://"))
    if out is None or (local and not Path(out.removeprefix("file://")).exists()):
        return f"interrupted after {written} runs; nothing written"
    return (
        f"interrupted after {written} runs; results so far in {out} "
        "(run the same command again to resume)"
    )


def _sweep(
    *,
    where: list[str],
    sweep_file: str,
    master: str,
    out: str | None,
    events: bool,
    batch_size: int,
    conf: list[str] | None,
) -> NoReturn:
    """The command's work (see :func:`sweep`); ``where`` gets the output directory."""
    from scenarios.input.sweep_file import SweepError, load_sweep

    with one_line_errors():
        settings = parse_conf(conf or [])
        loaded = load_sweep(sweep_file)
    target = out if out is not None else str(Path("sweep-out") / loaded.name)
    where.append(target)
    if "://" not in target or target.startswith("file://"):
        from scenarios.cli.outputs import OutputDirError, check_out_dir

        try:  # before Spark starts: an unusable --out is one line, not a traceback
            check_out_dir(Path(target.removeprefix("file://")))
        except OutputDirError as exc:
            fail(str(exc))
    from scenarios.analysis.session import spark_problem

    problem = spark_problem()
    if problem is not None:
        fail(f"groupsim sweep needs Spark: {problem}")
    from rich.console import Console

    from scenarios.analysis.pipeline import run_sweep

    console = Console(width=None if sys.stdout.isatty() else 110, highlight=False)
    console.print(
        f"{loaded.name}: {len(loaded.combinations)} combination(s) × {len(loaded.seeds)} "
        f"seed(s) = {len(loaded.runs)} runs on {master}"
    )
    try:
        with _Bar(f"sweep {loaded.name}") as bar:
            result = run_sweep(
                loaded,
                target,
                master=master,
                conf=settings,
                events=events,
                batch_size=batch_size,
                progress=bar,
            )
    except SweepError as exc:
        fail(str(exc))
    except Exception as exc:  # Spark failures: a bad master URL, an unreachable cluster
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            fail(f"Spark: {first}")
        raise
    console.print(
        f"{result.ran} run(s) in {result.seconds:.1f} s"
        + (f", {result.skipped} already in {target} (skipped)" if result.skipped else "")
        + (f", {result.failed} failed" if result.failed else "")
    )
    for run_id, seed, params, error in result.failures[:10]:
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        console.print(f"  failed {run_id} (seed {seed}, {shown}): {error}", markup=False)
    if len(result.failures) > 10:
        console.print(f"  … and {len(result.failures) - 10} more (status = 'failed' in runs/)")
    console.print(f"wrote {target}/runs, events, aggregates (groupsim report {target})")
    raise typer.Exit(1 if result.failed else 0)


def report(
    directory: Annotated[
        Path,
        typer.Argument(help="A sweep's output (runs/…) or a run's (events.jsonl, summary.json)."),
    ],
    out: Annotated[
        Path | None, typer.Option(help="HTML file to write (default DIR/report.html).")
    ] = None,
    engine: Annotated[
        ReportEngine,
        typer.Option(
            help="How to read a sweep's Parquet: auto = pyarrow if installed, else Spark."
        ),
    ] = ReportEngine.AUTO,
) -> None:
    """Write report.html (tables and plots) for a sweep's or a single run's output."""
    from scenarios.cli.report import ReportError, write_report

    try:
        path = write_report(directory, out=out, engine=engine.value)
    except ReportError as exc:
        fail(str(exc))
    typer.echo(f"wrote {path}")
