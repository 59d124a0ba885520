"""scenarios.cli.plots, scenarios.cli.summary_view and scenarios.check.log_check on hand-written
logs."""

from __future__ import annotations

import os
from pathlib import Path

from check.logs import Log, complete
from check.test_metrics import two_worker_bounce
from rich.console import Console

from scenarios.check.log_check import check_log, check_records
from scenarios.check.metrics import summarize
from scenarios.check.summary_types import summary_dict
from scenarios.cli.plots import _figure, write_timeline_png
from scenarios.cli.summary_view import render_summary
from scenarios.cli.timeline_series import TimelineWords, streams_series
from scenarios.eventlog import write_jsonl


def big_eager_log(workers: int = 5, tasks: int = 80, rounds: int = 100) -> list[dict]:
    names = [f"w{i}" for i in range(1, workers + 1)]
    log = Log().start({"c": tasks}, names)
    t = 0
    owner: dict[str, str] = {}
    for gen in range(1, rounds + 1):
        t += 3000
        log.generation(t, gen, protocol="default")
        for task, w in owner.items():
            log.stop_task(t, w, task, stop_ms=10)
        t += 100
        for i in range(tasks):
            w = names[(i + gen) % workers]
            log.run_task(t, w, f"c-{i}", gen, start_ms=200)
            owner[f"c-{i}"] = w
    log.add(t + 500, "violation", invariant="double_ownership", member="w2", detail="x")
    log.add(t + 1000, "run_end")
    return log.records


def test_plot_of_a_big_log_is_a_png(tmp_path: Path) -> None:
    records = big_eager_log()
    path = tmp_path / "timeline.png"
    write_timeline_png(records, path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000
    assert os.listdir(tmp_path) == ["timeline.png"]


def test_plot_of_tiny_and_empty_logs(tmp_path: Path) -> None:
    write_timeline_png(two_worker_bounce().records, tmp_path / "a.png")
    write_timeline_png([], tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"


def test_summary_view_renders_phases_and_expectations() -> None:
    log = two_worker_bounce()
    log.records.insert(1, {"t_ms": 0, "seq": -1, "kind": "phase", "name": "warm-up"})
    summary = summary_dict(summarize(log.records))
    console = Console(record=True, width=140, color_system=None)
    render_summary(
        summary,
        console,
        scenario_name="bounce",
        seed=7,
        expectation_failures=["max_rebalances: expected <= 1, got 2"],
    )
    text = console.export_text()
    assert "bounce (seed 7)" in text
    assert "warm-up" in text
    assert "sessioned" in text
    assert "2.5 s" in text  # task downtime
    assert "total" in text
    assert "converged: yes (2.5 s after the last step)" in text
    assert "1 expectation(s) failed:" in text
    assert "✗ max_rebalances: expected <= 1, got 2" in text
    ok = Console(record=True, width=140, color_system=None)
    render_summary(summary, ok, scenario_name="bounce", seed=7, expectation_failures=[])
    assert "✓ all expectations hold" in ok.export_text()


def test_check_finds_violations_again_and_ignores_recorded_ones(tmp_path: Path) -> None:
    log = Log().start({"c": 1}, ["w1", "w2"])
    log.generation(1, 1)
    log.assignment(2, "w1", 1)
    log.assignment(2, "w2", 1)
    log.run_connector(2, "w1", "c", 1)
    log.run_task(3, "w1", "c-0", 1)
    log.run_task(4, "w2", "c-0", 1)  # double ownership
    log.add(4, "violation", invariant="foreign_assignment", detail="recorded, not re-found")
    log.add(10, "run_end")
    path = tmp_path / "events.jsonl"
    write_jsonl(log.records, path)
    found = check_log(path)
    assert [(v.invariant, v.t_ms) for v in found] == [
        ("double_ownership", 4),
        ("liveness", 10),
    ]
    assert found[0].cause_seq == log.records[-4]["seq"]  # task_start on w2
    assert found[1].tasks == ["c-0"]  # running on two members at the end


def test_check_clean_log() -> None:
    assert check_records(complete(two_worker_bounce().records)) == []


def test_fixed_margins_keep_long_row_labels_and_the_title_inside_the_picture() -> None:
    # no tight_layout: the left margin comes from the widest row label, measured
    log = Log().start({"c": 3}, ["a-client-with-a-rather-long-name-1", "I2"])
    log.add(100, "active_task_start", member="a-client-with-a-rather-long-name-1", task="0_1")
    log.add(200, "standby_task_start", member="I2", task="0_1")
    log.add(300, "phase", name="first phase")
    log.add(400, "run_end")
    fig = _figure(
        streams_series(log.records),
        streams=True,
        words=TimelineWords(app="Kafka Streams", member="client"),
    )
    fig.canvas.draw()  # type: ignore[attr-defined]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    width, height = fig.bbox.width, fig.bbox.height
    top = fig.axes[0]
    labels = [t.get_text() for t in top.get_yticklabels()]
    assert labels[0] == "a-client-with-a-rather-long-name-1 (1 active, 1 restoring, 0 standby)"
    texts = [*top.get_yticklabels(), top.yaxis.label, fig.axes[1].xaxis.label]
    texts += [t for t in fig.texts]  # the title
    for text in texts:
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= width and box.y0 >= 0 and box.y1 <= height, text
