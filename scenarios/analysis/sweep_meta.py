"""``OUT/sweep.json`` of a sweep's output directory (local paths only): the sweep's name,
fingerprint, grid and file text. An ``OUT`` that holds another sweep is refused before Spark
starts (:func:`check_meta`); the file is written once Spark runs (:func:`write_meta`)."""

from __future__ import annotations

import json
from pathlib import Path

from scenarios.campaigns.sweeps import LoadedSweep, SweepError

__all__ = ["check_meta", "write_meta"]


def _is_local(out: str) -> bool:
    return "://" not in out or out.startswith("file://")


def check_meta(sweep: LoadedSweep, out: str) -> None:
    """Refuse an ``out`` that holds another sweep (local paths only)."""
    if not _is_local(out):
        return
    directory = Path(out.removeprefix("file://"))
    meta_path = directory / "sweep.json"
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SweepError(str(meta_path), None, f"unreadable: {exc}") from None
        if meta.get("name") != sweep.name or meta.get("fingerprint") != sweep.fingerprint:
            raise SweepError(
                str(directory),
                None,
                f"holds results of another sweep ({meta.get('name')!r}, base "
                f"{meta.get('base')!r}) or of another version of this one; use another --out",
            )


def write_meta(sweep: LoadedSweep, out: str) -> None:
    """Write ``sweep.json`` (local paths only), once Spark has started: a sweep that never
    ran (a bad master URL, Ctrl-C while Spark starts) leaves no file behind."""
    if not _is_local(out):
        return
    directory = Path(out.removeprefix("file://"))
    meta_path = directory / "sweep.json"
    directory.mkdir(parents=True, exist_ok=True)
    meta = {
        "name": sweep.name,
        "description": sweep.description,
        "fingerprint": sweep.fingerprint,
        "base": sweep.base,
        "parameters": sweep.parameters,
        "param_types": sweep.param_types,
        "seeds": sweep.seeds,
        "runs": len(sweep.runs),
        "sweep_file": sweep.text,
    }
    from scenarios.eventlog.atomic import atomic_write_text

    atomic_write_text(meta_path, json.dumps(meta, indent=2) + "\n")
