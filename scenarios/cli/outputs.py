"""The files of one run: ``events.jsonl``, ``summary.json`` and ``timeline.png``."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from scenarios.sim.runner import RunResult

__all__ = ["write_outputs"]


def write_outputs(result: RunResult, out_dir: Path, *, plot: bool = True) -> None:
    """Write ``events.jsonl``, ``summary.json`` and ``timeline.png`` into ``out_dir``.

    Each file is written under a temporary name and renamed, so an interrupted run never
    leaves a file that looks complete.
    """
    from scenarios.eventlog import write_records_jsonl

    out_dir.mkdir(parents=True, exist_ok=True)
    write_records_jsonl(result.records, out_dir / "events.jsonl")
    summary = dict(result.summary)
    summary["scenario"] = result.scenario
    summary["seed"] = result.seed
    summary["expectation_failures"] = result.failures
    _atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=2, sort_keys=True))
    if plot:
        from scenarios.cli.plots import write_timeline_png

        write_timeline_png(result.records, out_dir / "timeline.png")


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
