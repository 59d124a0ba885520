"""The files of one run: ``events.jsonl``, ``summary.json`` and ``timeline.png``.

They replace the previous run's files as a set: :func:`prepare_outputs` checks the output
directory before the simulation (an unusable ``--out`` is bad input, not a traceback after
minutes of work) and makes a hidden staging directory in it; :func:`write_outputs` writes every
file there, then removes the previous run's set (including a ``report.html`` drawn from it) and
moves the new files in. A run killed at any point leaves either the old set, or part of the new
set, never files of two runs side by side (a leftover ``.groupsim-stage.<pid>.*`` directory is
the only trace of a killed run, and the next run into the directory removes it once that
process is gone). Files get the umask's permissions, as a plain ``open`` gives.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.errors import InputError
from scenarios.eventlog.atomic import atomic_write_text, current_umask
from scenarios.sim.runner import RunResult

if TYPE_CHECKING:
    from scenarios.cli.plot_child import ForkedPlotter

__all__ = [
    "OUTPUT_FILES",
    "OutputDirError",
    "check_out_dir",
    "check_out_file",
    "prepare_outputs",
    "write_outputs",
]

#: Every file a run (or ``groupsim report`` on it) writes into its output directory.
OUTPUT_FILES = ("events.jsonl", "summary.json", "timeline.png", "report.html")

_STAGE_PREFIX = ".groupsim-stage."


class OutputDirError(InputError):
    """The output directory cannot be used; the text is the one-line error."""


def check_out_dir(out_dir: Path, option: str = "--out") -> None:
    """Check, before any work, that ``out_dir`` can be used as an output directory, creating
    nothing: it is a directory this process can write in, or it does not exist and its
    nearest existing ancestor is one (then the command creates it when it writes). Tried for
    real (a temporary directory made and removed), so a read-only filesystem counts too.

    Raises:
        OutputDirError: one line naming ``option``, the path and why.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputDirError(f"{option}: {out_dir} exists and is not a directory")
    ancestor = out_dir
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputDirError(f"{option}: cannot create {out_dir}: {ancestor} is not a directory")
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=_own_prefix(), dir=ancestor))
    except OSError as exc:
        what = f"write in {out_dir}" if ancestor == out_dir else f"create {out_dir}"
        raise OutputDirError(f"{option}: cannot {what}: {exc.strerror or exc}") from None


def check_out_file(path: Path, option: str = "--out") -> None:
    """:func:`check_out_dir` for a file to be written: ``path`` is not a directory and its
    directory can be used.

    Raises:
        OutputDirError: one line naming ``option``, the path and why.
    """
    if path.is_dir():
        raise OutputDirError(f"{option}: {path} is a directory")
    check_out_dir(path.parent if str(path.parent) else Path("."), option)


def prepare_outputs(out_dir: Path) -> Path:
    """Create ``out_dir`` (and its parents) if needed and a staging directory inside it.

    Returns the staging directory (``out_dir/.groupsim-stage.<pid>.<random>``). Staging
    directories of runs that were killed (their process is gone) are removed first.

    Raises:
        OutputDirError: ``out_dir`` is an existing file, or cannot be created or written.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputDirError(f"--out: {out_dir} exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputDirError(f"--out: cannot create {out_dir}: {exc.strerror or exc}") from None
    remove_stale_stages(out_dir)
    try:
        import tempfile

        stage = Path(tempfile.mkdtemp(prefix=_own_prefix(), dir=out_dir))
        os.chmod(stage, 0o777 & ~current_umask())
    except OSError as exc:
        raise OutputDirError(f"--out: cannot write in {out_dir}: {exc.strerror or exc}") from None
    return stage


def _own_prefix() -> str:
    return f"{_STAGE_PREFIX}{os.getpid()}."


def remove_stale_stages(out_dir: Path) -> list[Path]:
    """Remove the staging directories in ``out_dir`` whose process is gone (a run killed
    before it moved its files in); a running process's are kept. Returns those removed."""
    removed = []
    for entry in out_dir.glob(f"{_STAGE_PREFIX}*"):
        owner = entry.name[len(_STAGE_PREFIX) :].split(".", 1)[0]
        if entry.is_dir() and not _running(owner):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _running(pid_text: str) -> bool:
    """Whether the process ``pid_text`` names runs (a name without a pid, from an older
    groupsim, belongs to no running process)."""
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid() or os.name == "nt":  # Windows: os.kill(pid, 0) is no probe there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def discard_stage(stage: Path) -> None:
    """Remove a staging directory (after a failed or interrupted run)."""
    shutil.rmtree(stage, ignore_errors=True)


def write_outputs(
    result: RunResult,
    out_dir: Path,
    *,
    plot: bool = True,
    stage: Path | None = None,
    plotter: ForkedPlotter | None = None,
) -> None:
    """Write ``events.jsonl``, ``summary.json`` and ``timeline.png`` (when ``plot``) into
    ``out_dir``, replacing the previous run's files as a set (see the module doc).

    ``stage``: a directory from :func:`prepare_outputs` (made here when omitted).
    ``plotter``: a child started by :func:`scenarios.cli.plot_child.start_plotter` draws the
    PNG (the same file; waited for before the set moves in), else it is drawn here.

    Raises:
        OutputDirError: ``out_dir`` cannot be used.
        OSError: writing failed (the staging directory is removed, ``out_dir`` untouched).
    """
    from scenarios.check.summary_types import summary_dict
    from scenarios.eventlog import write_records_jsonl

    if stage is None:
        stage = prepare_outputs(out_dir)
    try:
        write_records_jsonl(result.records, stage / "events.jsonl")
        summary = summary_dict(result.summary)
        summary["scenario"] = result.scenario
        summary["seed"] = result.seed
        summary["expectation_failures"] = result.failures
        text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
        atomic_write_text(stage / "summary.json", text)
        if plot and plotter is not None:
            plotter.submit(result.records, stage / "timeline.png")
            plotter.wait()
        elif plot:
            from scenarios.cli.plots import write_timeline_png

            write_timeline_png(result.records, stage / "timeline.png")
        # All new files exist: drop the old set first, then move the new one in.
        for name in OUTPUT_FILES:
            (out_dir / name).unlink(missing_ok=True)
        for name in OUTPUT_FILES:
            staged = stage / name
            if staged.exists():
                os.replace(staged, out_dir / name)
    finally:
        discard_stage(stage)
