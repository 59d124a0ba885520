"""The rows of a chaos campaign on Spark, without Spark: what an executor computes for a run
(:func:`chaos_row`, with a planted bug so that runs fail and are shrunk), the reproducers the
driver writes from them, and the campaign built back from the rows — the same as the pool
campaign's, field for field, reproducer files included."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from scenarios.analysis.chaos_rows import (
    CHAOS_RUN_COLUMNS,
    chaos_row,
    config_fingerprint,
    result_from_rows,
    same_campaign,
    write_row_reproducers,
)
from scenarios.campaigns.chaos import ChaosConfig, run_campaign
from tests.scenarios.campaigns.chaos.planted import by_name

CONFIG = ChaosConfig(members=(3, 4), protocols=("eager",), duration_ms=120_000)
SEED = 3
RUNS = 3
BUDGET = 12

#: to_json keys that measure this machine, not the campaign
TIMING = {"wall_s", "runs_per_minute", "cpu_s_per_run", "cpu_bound_runs_per_minute_2_cores"}


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pool_out = tmp_path_factory.mktemp("pool")
    spark_out = tmp_path_factory.mktemp("rows")
    with by_name("eager-assignor-skips-last-task").applied():
        pool = run_campaign(CONFIG, RUNS, SEED, jobs=1, out_dir=pool_out, shrink_budget=BUDGET)
        rows = [
            chaos_row(
                CONFIG,
                SEED,
                index,
                batch="b1",
                shrink=True,
                shrink_budget=BUDGET,
                local_out=str(spark_out),
            )
            for index in reversed(range(RUNS))  # executors finish in any order
        ]
    return {"pool": pool, "pool_out": pool_out, "rows": rows, "out": spark_out}


def test_rows_have_the_table_columns(both: dict[str, Any]) -> None:
    names = [name for name, _ in CHAOS_RUN_COLUMNS]
    for row in both["rows"]:
        assert list(row) == names
    failed = [row for row in both["rows"] if row["failed"]]
    assert failed, "the planted bug makes runs fail"
    for row in failed:
        assert row["first_new_invariant"] == "liveness"
        assert row["new_violations_total"] >= 1
        assert row["reproducer"] == str(both["out"] / f"chaos-{SEED}-{row['run_index']}.toml")
        assert row["reproducer_toml"].startswith("#") and row["reproducer_verified"] is True
    assert [r["run_id"] for r in both["rows"]] == [f"chaos-3-{i}" for i in (2, 1, 0)]


def test_driver_writes_the_reproducers_the_pool_writes(both: dict[str, Any]) -> None:
    written = write_row_reproducers(both["rows"])
    pool_files = sorted(p.name for p in both["pool_out"].glob("chaos-*.toml"))
    assert written == len(pool_files) > 0
    for name in pool_files:
        assert (both["out"] / name).read_text() == (both["pool_out"] / name).read_text()


def test_result_from_rows_equals_the_pool_campaign(both: dict[str, Any]) -> None:
    pool = both["pool"]
    result = result_from_rows(
        CONFIG, SEED, RUNS, both["rows"], out_dir=both["pool_out"], wall_s=1.0, jobs=2
    )
    strip = ("wall_s", "cpu_s")
    assert [{**o.__dict__, **dict.fromkeys(strip)} for o in result.outcomes] == [
        {**o.__dict__, **dict.fromkeys(strip)} for o in pool.outcomes
    ]
    mine = {k: v for k, v in result.to_json().items() if k not in TIMING}
    theirs = {k: v for k, v in pool.to_json().items() if k not in TIMING}
    assert mine == theirs
    assert [r.text for r in result.reproducers] == [
        Path(str(r.path)).read_text() for r in pool.reproducers
    ]


def test_rows_beyond_runs_and_repeats_are_ignored(both: dict[str, Any]) -> None:
    rows = both["rows"] + [both["rows"][0]]
    result = result_from_rows(CONFIG, SEED, 2, rows, out_dir=None, wall_s=0.0, jobs=1)
    assert [o.index for o in result.outcomes] == [0, 1]
    assert all(r.path is None for r in result.reproducers)


def test_fingerprint_names_every_config_field() -> None:
    doc = config_fingerprint(CONFIG, 7)
    assert doc["seed"] == 7
    assert doc["config"]["members"] == [3, 4] and doc["config"]["protocols"] == ["eager"]
    assert config_fingerprint(ChaosConfig(members=(3, 5)), 7) != config_fingerprint(
        ChaosConfig(members=(3, 4)), 7
    )


def test_a_campaign_json_from_before_a_config_field_counts_it_as_its_default() -> None:
    """A ``campaign.json`` written before ``kind`` existed is the same Connect campaign (a
    resume goes on), never a Streams one or one with other members."""
    old = config_fingerprint(CONFIG, 7)
    del old["config"]["kind"]
    assert same_campaign(old, config_fingerprint(CONFIG, 7))
    streams = dataclasses.replace(CONFIG, kind="streams")
    assert not same_campaign(old, config_fingerprint(streams, 7))
    wider = dataclasses.replace(CONFIG, members=(3, 5))
    assert not same_campaign(old, config_fingerprint(wider, 7))
    assert not same_campaign(old, config_fingerprint(CONFIG, 8))
