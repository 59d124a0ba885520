"""groupsim report: the HTML of a sweep (read with pyarrow) and of a single run; checked
with html.parser, and in headless Chromium when it is installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from scenarios.campaigns.sweeps import loads_sweep
from scenarios.cli.outputs import write_outputs
from scenarios.cli.report import ReportError, write_report
from scenarios.input.library import resolve_scenario
from scenarios.input.loader import load_scenario
from scenarios.sim.runner import simulate

from .helpers import check_html, write_sweep_with_pyarrow

CHROMIUM = next(
    (p for p in ("/usr/bin/chromium", shutil.which("chromium") or "") if p and Path(p).exists()),
    None,
)

SWEEP = """
name = "mini"
description = "two protocols, two sizes, two delays"
generator = "worker-departure"
seeds = 2
[parameters]
protocol = ["eager", "sessioned"]
workers = [3, 4]
delay_ms = [0, 20000]
down_ms = [15000]
"""


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pyarrow")
    out = tmp_path_factory.mktemp("sweep") / "mini"
    write_sweep_with_pyarrow(loads_sweep(SWEEP, "mini.toml"), out)
    return out


def render_in_chromium(html: Path, tmp: Path) -> None:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (/usr/bin/chromium)")
    shot = tmp / "shot.png"
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1280,2000",
            html.resolve().as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.read_bytes().startswith(b"\x89PNG")


def test_sweep_report(sweep_dir: Path) -> None:
    path = write_report(sweep_dir, engine="pyarrow")
    assert path == sweep_dir / "report.html"
    images, text = check_html(path)
    assert len(images) == 3  # by protocol, vs size, vs delay: all three vary here
    assert "Sweep" in text and "mini" in text and "16 runs" in text
    assert not list(sweep_dir.glob(".report.html.*"))  # no temporary file left


def test_sweep_report_in_chromium(sweep_dir: Path, tmp_path: Path) -> None:
    render_in_chromium(write_report(sweep_dir, engine="pyarrow"), tmp_path)


def test_sweep_report_says_what_is_not_varied(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    sweep = loads_sweep(
        'name = "one"\ngenerator = "rolling-bounce"\nseeds = 2\n'
        '[parameters]\nprotocol = ["eager", "sessioned"]\nworkers = [3]\n',
        "one.toml",
    )
    write_sweep_with_pyarrow(sweep, tmp_path / "one")
    images, text = check_html(write_report(tmp_path / "one", engine="pyarrow"))
    assert len(images) == 1
    assert "the cluster size is not varied" in text
    assert "scheduled.rebalance.max.delay.ms is not varied" in text


def test_run_report(tmp_path: Path) -> None:
    loaded = load_scenario(resolve_scenario("worker-bounce-within-delay"))
    write_outputs(simulate(loaded, 1), tmp_path, plot=False)
    out = tmp_path / "page.html"
    assert write_report(tmp_path, out=out) == out
    images, text = check_html(out)
    assert len(images) == 1
    assert "worker-bounce-within-delay" in text and "all expectations hold" in text
    if CHROMIUM:
        render_in_chromium(out, tmp_path)


def test_run_report_escapes_what_the_run_names(tmp_path: Path) -> None:
    """Autoescaping: a scenario name, an expectation failure and a violation name that hold
    markup are shown as text, never run as script."""
    loaded = load_scenario(resolve_scenario("worker-bounce-within-delay"))
    write_outputs(simulate(loaded, 1), tmp_path, plot=False)
    summary_path = tmp_path / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    summary["scenario"] = "<script>alert('name')</script>"
    summary["expectation_failures"] = ["rebalances <= 2 <b>x</b>"]
    summary["violations"] = {"<img src=x onerror=alert(1)>": 1}
    summary_path.write_text(json.dumps(summary), encoding="utf-8")
    html = write_report(tmp_path).read_text(encoding="utf-8")
    assert "<script" not in html and "<b>x" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#39;name&#39;)&lt;/script&gt;" in html
    assert "rebalances &lt;= 2 &lt;b&gt;x&lt;/b&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    images, text = check_html(tmp_path / "report.html")
    assert len(images) == 1
    assert "<script>alert('name')</script>" in text  # the text a reader sees
    assert "1 expectation(s) failed" in text


def test_sweep_report_escapes_the_description(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    sweep = loads_sweep(
        'name = "esc"\ndescription = "<script>alert(1)</script> & more"\n'
        'generator = "rolling-bounce"\nseeds = 1\n[parameters]\nworkers = [3]\n',
        "esc.toml",
    )
    write_sweep_with_pyarrow(sweep, tmp_path / "esc")
    html = write_report(tmp_path / "esc", engine="pyarrow").read_text(encoding="utf-8")
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in html


def test_run_report_of_a_streams_run_speaks_streams(tmp_path: Path) -> None:
    from scenarios.input.library import load_any
    from scenarios.sim.runner import simulate as simulate_streams

    write_outputs(simulate_streams(load_any("kip-441-scale-out"), 1), tmp_path)
    images, text = check_html(write_report(tmp_path))
    assert len(images) == 1
    assert "Clients at the end" in text and "standby tasks" in text
    assert "active task downtime" in text
    assert "connector" not in text.lower() and "worker" not in text.lower()


def test_run_report_of_a_consumer_run_counts_partitions_only(tmp_path: Path) -> None:
    """A plain consumer group's page gives its own partition downtime and the log's
    kind-neutral counts; no Connect task movement, imbalance or phase downtime (they count
    Connect tasks, and read 0 on a consumer log)."""
    from scenarios.input.library import load_any

    write_outputs(simulate(load_any("dynamic-rolling-restart"), 1), tmp_path)
    _, text = check_html(write_report(tmp_path))
    assert "partition downtime, total (s)" in text and "Consumers at the end" in text
    assert "JoinGroup / SyncGroup rounds" in text
    assert "movements" not in text and "imbalance" not in text
    assert "task downtime" not in text and "worker" not in text.lower()


def test_report_errors(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no such directory"):
        write_report(tmp_path / "missing")
    with pytest.raises(ReportError, match="neither a sweep's output"):
        write_report(tmp_path)
    (tmp_path / "summary.json").write_text("{", encoding="utf-8")
    (tmp_path / "events.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(ReportError, match="summary.json: unreadable"):
        write_report(tmp_path)


def test_report_command_errors(tmp_path: Path) -> None:
    from scenarios.cli.analysis_cmd import report

    app = typer.Typer()
    app.command()(report)
    app.command("noop")(lambda: None)
    result = CliRunner().invoke(app, ["report", str(tmp_path / "missing")])
    assert result.exit_code == 2
    assert result.output.strip().startswith("groupsim: error: ")
    assert "no such directory" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_auto_engine_reads_a_local_sweep_with_pyarrow() -> None:
    """Issue 14: Spark takes a minute to start where pyarrow takes seconds; ``auto`` picks
    pyarrow whenever it is installed."""
    pytest.importorskip("pyarrow")
    from scenarios.analysis.tables import choose_engine

    assert choose_engine("auto") == "pyarrow"
    assert choose_engine("pyarrow") == "pyarrow"
