"""The leaders' side of ``replay --conform`` without a cluster: the config snapshots a leader
is given, and a round whose SyncGroup groupsim's assignor would make otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios.record.conform import TraceError
from scenarios.record.leaders import ConnectConfigs, conform_leaders, read_configs


def test_a_snapshot_is_the_last_view_at_or_below_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "connect-configs.json"
    path.write_text(
        json.dumps(
            {
                "scheduled.rebalance.max.delay.ms": 8000,
                "snapshots": [
                    {"offset": 9, "connectors": {"c1": 6}},
                    {"offset": 2, "connectors": {"c1": 0}},
                ],
            }
        )
    )
    configs = read_configs(path)
    assert configs.max_delay_ms == 8000
    assert configs.at(0).connectors == {}
    assert configs.at(5).connectors == {"c1": 0} and configs.at(5).offset == 5
    assert configs.at(9).connectors == {"c1": 6}


@pytest.mark.parametrize("text", ["[]", '{"snapshots": [{"offset": "x"}]}', "nope"])
def test_a_malformed_configs_file_is_a_trace_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "connect-configs.json"
    path.write_text(text)
    with pytest.raises(TraceError, match="connect-configs"):
        read_configs(path)


def test_no_exchanges_no_rounds() -> None:
    verdict = conform_leaders([], ConnectConfigs(()))
    assert (verdict.compared, verdict.divergences, verdict.skipped) == (0, [], {})
