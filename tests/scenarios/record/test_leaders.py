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


def test_a_streams_app_file_gives_the_assignment_configs(tmp_path: Path) -> None:
    from scenarios.record.streams_leaders import read_app

    path = tmp_path / "streams-app.json"
    path.write_text(
        json.dumps(
            {
                "subtopologies": [
                    {"id": 0, "source_topic": "input", "partitions": 6, "changelog_topic": "c"}
                ],
                "num.standby.replicas": 1,
                "rack.aware.assignment.tags": "zone,cluster",
            }
        )
    )
    app = read_app(path)
    assert app.subtopologies == {0: ("input", 6, "c")}
    assert app.configs.num_standby_replicas == 1
    assert app.configs.rack_aware_assignment_tags == ("zone", "cluster")
    path.write_text('{"subtopologies": [{"id": 0}]}')
    with pytest.raises(TraceError, match="streams-app"):
        read_app(path)
