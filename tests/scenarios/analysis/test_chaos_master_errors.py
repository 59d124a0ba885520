"""``groupsim chaos --master`` without Spark, or with bad Spark options: one line on stderr,
exit 2, nothing run; the default batch and task sizes (no Spark needed for these tests)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from scenarios.analysis import session
from scenarios.analysis.chaos_spark import SparkUnavailable, run_campaign_on_spark
from scenarios.campaigns.chaos import ChaosConfig
from scenarios.cli.chaos_cmd import chaos
from scenarios.cli.choices import OneLineErrors

app = typer.Typer(cls=OneLineErrors)
app.command()(chaos)

NO_PYSPARK = "pyspark is not installed (install the spark extra: pip install -e '.[spark]')"


@app.command()
def _other() -> None:  # a second command keeps `chaos` a subcommand, as in groupsim
    pass


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "spark_problem", lambda: NO_PYSPARK)


def test_master_without_spark_is_one_line_and_exit_2(no_spark: None, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["chaos", "--runs", "3", "--master", "local[2]", "--out", str(out)]
    )
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == f"groupsim: error: --master: campaigns on Spark need Spark: {NO_PYSPARK}"
    )
    assert not out.exists()


def test_the_api_raises_a_typed_error(no_spark: None, tmp_path: Path) -> None:
    with pytest.raises(SparkUnavailable, match="pyspark is not installed"):
        run_campaign_on_spark(ChaosConfig(), 3, 1, tmp_path / "out", master="local[2]")
    assert not (tmp_path / "out").exists()


def test_bad_conf_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["chaos", "--master", "local[2]", "--conf", "novalue", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == "groupsim: error: --conf: expected KEY=VALUE, got 'novalue'"


def test_default_sizes_keep_four_tasks_per_core() -> None:
    from scenarios.analysis.chaos_spark import BATCH_SIZE, MAX_RUNS_PER_TASK, default_sizes

    assert default_sizes(100_000, 2) == (BATCH_SIZE, MAX_RUNS_PER_TASK)
    assert default_sizes(20, 2) == (BATCH_SIZE, 3)  # 7 tasks of up to 3 runs
    assert default_sizes(100_000, 200) == (20_000, 25)  # 800 tasks per batch
    assert default_sizes(1, 8) == (BATCH_SIZE, 1)
