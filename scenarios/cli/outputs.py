"""The files of one run: ``events.jsonl``, ``summary.json`` and ``timeline.png``.

They replace the previous run's files as a set: :func:`prepare_outputs` checks the output
directory before the simulation (an unusable ``--out`` is bad input, not a traceback after
minutes of work) and makes a hidden staging directory in it; :func:`write_outputs` writes every
file there, then removes the previous run's set (including a ``report.html`` drawn from it) and
moves the new files in. A run killed at any point leaves either the old set, or part of the new
set, never files of two runs side by side (a leftover ``.groupsim-stage.*`` directory is the
only trace of a killed run). Files get the umask's permissions, as a plain ``open`` gives.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from protocol.errors import InputError
from scenarios.eventlog.atomic import atomic_write_text, current_umask
from scenarios.sim.runner import RunResult

__all__ = ["OUTPUT_FILES", "OutputDirError", "prepare_outputs", "write_outputs"]

#: Every file a run (or ``groupsim report`` on it) writes into its output directory.
OUTPUT_FILES = ("events.jsonl", "summary.json", "timeline.png", "report.html")

_STAGE_PREFIX = ".groupsim-stage."


class OutputDirError(InputError):
    """The output directory cannot be used; the text is the one-line error."""


def prepare_outputs(out_dir: Path) -> Path:
    """Create ``out_dir`` (and its parents) if needed and a staging directory inside it.

    Returns the staging directory (``out_dir/.groupsim-stage.<random>``).

    Raises:
        OutputDirError: ``out_dir`` is an existing file, or cannot be created or written.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputDirError(f"--out: {out_dir} exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputDirError(f"--out: cannot create {out_dir}: {exc.strerror or exc}") from None
    try:
        import tempfile

        stage = Path(tempfile.mkdtemp(prefix=_STAGE_PREFIX, dir=out_dir))
        os.chmod(stage, 0o777 & ~current_umask())
    except OSError as exc:
        raise OutputDirError(f"--out: cannot write in {out_dir}: {exc.strerror or exc}") from None
    return stage


def discard_stage(stage: Path) -> None:
    """Remove a staging directory (after a failed or interrupted run)."""
    shutil.rmtree(stage, ignore_errors=True)


def write_outputs(
    result: RunResult, out_dir: Path, *, plot: bool = True, stage: Path | None = None
) -> None:
    """Write ``events.jsonl``, ``summary.json`` and ``timeline.png`` (when ``plot``) into
    ``out_dir``, replacing the previous run's files as a set (see the module doc).

    ``stage``: a directory from :func:`prepare_outputs` (made here when omitted).

    Raises:
        OutputDirError: ``out_dir`` cannot be used.
        OSError: writing failed (the staging directory is removed, ``out_dir`` untouched).
    """
    from scenarios.eventlog import write_records_jsonl

    if stage is None:
        stage = prepare_outputs(out_dir)
    try:
        write_records_jsonl(result.records, stage / "events.jsonl")
        summary = dict(result.summary)
        summary["scenario"] = result.scenario
        summary["seed"] = result.seed
        summary["expectation_failures"] = result.failures
        text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
        atomic_write_text(stage / "summary.json", text)
        if plot:
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
