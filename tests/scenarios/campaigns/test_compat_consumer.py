"""``groupsim compat --kind consumer``: the consumer assignor matrix shows Kafka's vote, each
consumer's rebalance protocol and KIP-429's one-bounce outage."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from scenarios.campaigns.compat_consumer import LISTS, PATHS, run_matrix
from scenarios.cli.main import app


def test_the_matrix_has_every_pair_and_path_and_kafkas_answers() -> None:
    rows = {row.case: row for row in run_matrix(1)}
    assert len(rows) == len(LISTS) * (len(LISTS) + 1) // 2 + len(PATHS)
    assert all(not row.unsafe(allow_known=False) and row.converged for row in rows.values())
    # no common protocol: the second consumer to join dies
    no_common = rows["[range] + [cooperative-sticky]"]
    assert no_common.fatal == ["c2: INCONSISTENT_GROUP_PROTOCOL"]
    # cooperative-sticky elected, but a consumer that also lists range stays EAGER
    assert rows["[cooperative-sticky,range] + [cooperative-sticky,range]"].rebalance == ["EAGER"]
    assert rows["[cooperative-sticky] + [range,cooperative-sticky]"].rebalance == ["mixed"]
    two = rows["[range] → [range,cooperative-sticky] → [cooperative-sticky]"]
    assert (two.protocols, two.rebalance, two.fatal) == (
        ["range", "cooperative-sticky"],
        ["EAGER", "mixed", "COOPERATIVE"],
        [],
    )
    one = rows["[range] → [cooperative-sticky]"]
    assert one.fatal == ["c1: INCONSISTENT_GROUP_PROTOCOL", "c2: INCONSISTENT_GROUP_PROTOCOL"]
    assert one.max_partition_downtime_ms > two.max_partition_downtime_ms


def test_the_command_prints_the_consumer_matrix() -> None:
    result = CliRunner().invoke(app, ["compat", "--kind", "consumer", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert {row["kind"] for row in rows} == {"mix", "path"}
    assert all(row["safe"] for row in rows)
