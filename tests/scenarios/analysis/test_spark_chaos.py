"""A chaos campaign on Spark local[2]: 20 runs of 3–4 members, first 12 then all 20 (resume),
against the same campaign on the process pool; the ``runs`` Parquet table's schema; another
campaign's output directory refused; Ctrl-C of ``groupsim chaos --master`` (one line, exit
130, nothing left running, the finished runs kept)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scenarios.campaigns.chaos import ChaosConfig, run_campaign

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ChaosConfig(members=(3, 4), duration_ms=600_000)
SEED = 4
RUNS = 20
TIMING = {"wall_s", "runs_per_minute", "cpu_s_per_run", "cpu_bound_runs_per_minute_2_cores"}


@pytest.fixture(scope="module")
def campaign(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from scenarios.analysis.chaos_spark import run_campaign_on_spark

    out = tmp_path_factory.mktemp("chaos") / "out"
    seen: list[tuple[int, int]] = []
    first = run_campaign_on_spark(CONFIG, 12, SEED, out, spark=spark, batch_size=8)
    second = run_campaign_on_spark(
        CONFIG,
        RUNS,
        SEED,
        out,
        spark=spark,
        batch_size=8,
        on_progress=lambda d, t: seen.append((d, t)),
    )
    pool = run_campaign(CONFIG, RUNS, SEED, jobs=1, out_dir=tmp_path_factory.mktemp("pool"))
    return {"out": out, "first": first, "second": second, "pool": pool, "progress": seen}


def test_same_runs_as_the_pool_campaign(campaign: dict[str, Any]) -> None:
    spark_result, pool = campaign["second"].result, campaign["pool"]
    assert [o.index for o in spark_result.outcomes] == list(range(RUNS))

    def per_run(result: Any) -> list[tuple[Any, ...]]:
        return [
            (o.index, o.seed, o.protocol, o.members, o.faults, o.violations, o.new_violations)
            + (o.first_new, o.converged, o.task_downtime_max_ms, o.converge_ms)
            for o in result.outcomes
        ]

    assert per_run(spark_result) == per_run(pool)
    assert sum(sum(o.faults.values()) for o in pool.outcomes) > RUNS
    mine = {k: v for k, v in spark_result.to_json().items() if k not in TIMING}
    assert mine == {k: v for k, v in pool.to_json().items() if k not in TIMING}


def test_resume_skips_the_runs_already_written(campaign: dict[str, Any]) -> None:
    first, second = campaign["first"], campaign["second"]
    assert (first.skipped, first.ran, first.result.runs) == (0, 12, 12)
    assert (second.skipped, second.ran, second.result.runs) == (12, 8, RUNS)
    assert campaign["progress"][0] == (12, RUNS) and campaign["progress"][-1] == (RUNS, RUNS)
    # wall time: the Spark jobs that ran the runs, summed over both invocations
    assert 0 < first.result.wall_s < second.result.wall_s


def test_runs_table_schema_and_reproducers(campaign: dict[str, Any]) -> None:
    import pyarrow.dataset as ds

    from scenarios.analysis.arrow import arrow_type
    from scenarios.analysis.chaos_rows import CHAOS_RUN_COLUMNS

    out = campaign["out"]
    table = ds.dataset(str(out / "runs"), format="parquet", ignore_prefixes=["_", "."]).to_table()
    assert [(f.name, f.type) for f in table.schema] == [
        (name, arrow_type(kind)) for name, kind in CHAOS_RUN_COLUMNS
    ]
    rows = table.to_pylist()
    assert sorted(r["run_index"] for r in rows) == list(range(RUNS))
    assert {r["campaign_seed"] for r in rows} == {SEED}
    assert len({r["batch"] for r in rows}) == 3  # 12 runs in batches of 8, then 8
    for row in rows:
        assert row["run_id"] == f"chaos-{SEED}-{row['run_index']}"
        assert sum(json.loads(row["violations"]).values()) == row["violations_total"]
        assert row["cpu_s"] > 0
        if row["failed"]:  # shrunk on the executor, written by the driver
            assert Path(row["reproducer"]).read_text() == row["reproducer_toml"]
        else:
            assert row["reproducer"] is None and row["reproducer_toml"] is None
    meta = json.loads((out / "campaign.json").read_text())
    assert meta["seed"] == SEED and meta["config"]["members"] == [3, 4]


def test_another_campaign_is_refused(campaign: dict[str, Any], spark: Any) -> None:
    from scenarios.analysis.chaos_spark import CampaignOutError, run_campaign_on_spark

    with pytest.raises(CampaignOutError, match="another chaos campaign"):
        run_campaign_on_spark(CONFIG, RUNS, SEED + 1, campaign["out"], spark=spark)


def _spark_python_workers(pgid: int) -> list[int]:
    found = subprocess.run(
        ["pgrep", "-g", str(pgid), "-f", r"pyspark\.(daemon|worker)"], capture_output=True
    )
    return [int(p) for p in found.stdout.split()]


def test_sigint_stops_a_spark_campaign(
    tmp_path: Path, running_in_group: Callable[[int], list[int]]
) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "chaos"
    argv = [sys.executable, "-m", "scenarios.cli.main", "chaos", "--runs", "2000"]
    argv += ["--members", "3..4", "--master", "local[2]", "--out", str(out)]
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 300
        # under way: Spark's Python workers run the campaign's tasks
        while time.monotonic() < deadline and not _spark_python_workers(proc.pid):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        time.sleep(4.0)  # some runs finish
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1, lines
    match = re.fullmatch(r"interrupted after (\d+) runs; results so far in (\S+) .*", lines[0])
    assert match is not None and match.group(2) == str(out), lines[0]
    written = int(match.group(1))
    time.sleep(0.5)
    assert running_in_group(proc.pid) == []
    if written:
        assert pq.read_table(out / "runs").num_rows == written
        assert (out / "campaign.json").is_file()
    else:
        assert not (out / "campaign.json").exists()
