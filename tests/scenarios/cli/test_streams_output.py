"""The timeline plot and the run summary of a Kafka Streams run speak Streams: clients, active
tasks (running vs restoring), standby tasks, restoration and warm-ups — not Connect's workers
and connectors (scenarios.cli.plots, scenarios.cli.summary_view)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from check.test_metrics import two_worker_bounce
from matplotlib.image import imread
from rich.console import Console

from scenarios.check.metrics import summarize
from scenarios.check.summary_types import summary_dict
from scenarios.cli.plots import write_timeline_png
from scenarios.cli.summary_view import render_summary
from scenarios.input.library import load_any
from scenarios.sim.runner import RunResult
from scenarios.sim.runner import simulate as simulate_streams

CONNECT_WORDS = re.compile(r"connector|worker", re.IGNORECASE)


@pytest.fixture(scope="module")
def streams_run() -> RunResult:
    return simulate_streams(load_any("kip-441-scale-out"), 1)


def _pixels(path: Path) -> dict[str, int]:
    """Pixels of each task colour (tab:blue running, tab:orange restoring, tab:green standby,
    drawn at alpha 0.8 over the light grey 'process up' band or white)."""
    rgb = (imread(path)[:, :, :3] * 255).astype(int)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return {
        "running": int(np.sum((b > r + 60) & (b > g + 25))),
        "restoring": int(np.sum((r > 200) & (g > 100) & (g < 190) & (b < 110))),
        "standby": int(np.sum((g > r + 50) & (g > b + 50))),
        "drawn": int(np.sum(rgb.sum(axis=-1) < 3 * 250)),
    }


def _streams_log() -> list[dict[str, Any]]:
    """Two clients: I1 restores task 0_0 for 49 s then runs it; I2 keeps a standby of it."""
    recs: list[dict[str, Any]] = [
        {"kind": "run_start", "t_ms": 0, "app": "streams", "connectors": {},
         "tasks": {"stateful": ["0_0"], "stateless": []}},
        {"kind": "member_start", "t_ms": 0, "member": "I1"},
        {"kind": "member_start", "t_ms": 0, "member": "I2"},
        {"kind": "generation", "t_ms": 900, "generation": 1, "protocol": "stream"},
        {"kind": "active_task_start", "t_ms": 1_000, "member": "I1", "task": "0_0"},
        {"kind": "standby_task_start", "t_ms": 1_000, "member": "I2", "task": "0_0"},
        {"kind": "phase", "t_ms": 40_000, "name": "restored soon"},
        {"kind": "active_task_running", "t_ms": 50_000, "member": "I1", "task": "0_0"},
        {"kind": "run_end", "t_ms": 100_000},
    ]  # fmt: skip
    return [{"seq": i, **r} for i, r in enumerate(recs)]


def test_streams_timeline_draws_running_restoring_and_standby(tmp_path: Path) -> None:
    path = tmp_path / "timeline.png"
    write_timeline_png(_streams_log(), path)
    counts = _pixels(path)
    # I1's row: ~half restoring then running; I2's row: a standby all along (and the legend)
    assert counts["restoring"] > 5_000, counts
    assert counts["running"] > 5_000, counts
    assert counts["standby"] > 10_000, counts


def test_streams_timeline_of_a_simulated_run_is_not_empty(
    streams_run: RunResult, tmp_path: Path
) -> None:
    path = tmp_path / "timeline.png"
    write_timeline_png(streams_run.records, path)
    counts = _pixels(path)
    assert counts["running"] > 20_000, counts
    assert counts["standby"] > 20_000, counts
    assert counts["drawn"] > 100_000, counts


def test_connect_timeline_has_no_streams_colours(tmp_path: Path) -> None:
    path = tmp_path / "timeline.png"
    write_timeline_png(two_worker_bounce().records, path)
    counts = _pixels(path)
    assert counts["running"] > 5_000, counts
    assert counts["restoring"] == 0, counts


def _summary_text(result: RunResult) -> str:
    console = Console(record=True, width=200, color_system=None)
    render_summary(
        summary_dict(result.summary),
        console,
        scenario_name=result.scenario,
        seed=result.seed,
        expectation_failures=result.failures,
    )
    return console.export_text()


def test_streams_summary_speaks_streams(streams_run: RunResult) -> None:
    text = _summary_text(streams_run)
    assert not CONNECT_WORDS.findall(text), text
    for words in ("active task downtime", "restoration:", "warm-up tasks assigned: 8",
                  "probing rebalances: 4 fired of 4", "clients at end (active/standby tasks): "
                  "I1 1/1, I2 1/1, I3 1/1", "active-task imbalance"):  # fmt: skip
        assert words in text, (words, text)


def test_streams_summary_counts_restoration(streams_run: RunResult) -> None:
    restore = streams_run.summary.streams.restoration
    starts = sum(r["kind"] == "active_task_start" for r in streams_run.records)
    assert restore.restored + restore.abandoned + restore.restoring_at_end == starts
    assert 0 < restore.restore_ms_max <= restore.restore_ms_total


def test_connect_summary_keeps_connect_words() -> None:
    log = two_worker_bounce()
    result = RunResult(
        scenario="bounce", seed=1, records=log.records, summary=summarize(log.records), failures=[]
    )
    text = _summary_text(result)
    assert "connector downtime" in text
    assert "workers at end (connectors/tasks)" in text
    assert "restoration" not in text and "standby" not in text
