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


def _metadata_line(t_ms: int, client: str, topics: dict[str, int]) -> str:
    """A trace line as the proxy writes a Metadata answer (one broker, no rack)."""
    return json.dumps(
        {
            "t_ms": t_ms,
            "conn": 1,
            "client_id": client,
            "dir": "response",
            "api": "Metadata",
            "api_key": 3,
            "version": 12,
            "correlation_id": 1,
            "fields": {
                "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}],
                "topics": [
                    {
                        "error_code": "none",
                        "name": name,
                        "partitions": [
                            {"error_code": "none", "partition_index": p, "replica_nodes": [1]}
                            for p in reversed(range(n))
                        ],
                    }
                    for name, n in topics.items()
                ],
            },
            "raw": "",
        }
    )


def test_a_plain_consumer_leader_is_replayed_with_its_metadata(tmp_path: Path) -> None:
    """range over members with different subscriptions: ``payments`` goes to c2 alone; the
    leader's view is its own client's Metadata answers before its SyncGroup; a planted
    assignment is named by member and topic; a topic no answer names skips the round."""
    from protocol.consumer_codec import (
        Assignment,
        Subscription,
        TopicPartition,
        encode_assignment,
        encode_subscription,
    )
    from scenarios.record.consumer_leaders import NoMetadata, consumer_round, read_metadata

    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        "\n".join(
            [
                _metadata_line(1000, "c1", {"orders": 6}),
                _metadata_line(1500, "c2", {"unrelated": 1}),
                _metadata_line(2000, "c1", {"orders": 6, "payments": 3}),
            ]
        )
        + "\n"
    )
    metadata = read_metadata(trace)
    assert [(t, c, {k: len(v) for k, v in topics.items()}) for t, c, topics in metadata] == [
        (0, "c1", {"orders": 6}),
        (500, "c2", {"unrelated": 1}),
        (1000, "c1", {"orders": 6, "payments": 3}),
    ]
    members = [
        ("c1-a", None, encode_subscription(Subscription(("orders",)))),
        ("c2-b", None, encode_subscription(Subscription(("orders", "payments")))),
    ]

    def tps(topic: str, parts: list[int]) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in parts]

    real = {
        "c1-a": encode_assignment(Assignment(tuple(tps("orders", [0, 1, 2])))),
        "c2-b": encode_assignment(
            Assignment(tuple(tps("orders", [3, 4, 5]) + tps("payments", [0, 1, 2])))
        ),
    }
    assert consumer_round("range", members, "c1", 1100, metadata, real) is None
    planted = {**real, "c1-a": encode_assignment(Assignment(tuple(tps("orders", [0, 1]))))}
    assert consumer_round("range", members, "c1", 1100, metadata, planted) == (
        "c1-a",
        "partitions[orders]",
        [0, 1],
        [0, 1, 2],
    )
    with pytest.raises(NoMetadata, match="payments"):
        consumer_round("range", members, "c1", 800, metadata, real)
