"""The Streams member in isolation: join flow, subscription contents, envelope, invariants,
scenario-file errors."""

from __future__ import annotations

import pytest

from members.assignors.streams import TaskId
from members.streams_client import StreamsClient, StreamsClientConfig
from members.streams_state import (
    CONSUMER_PROTOCOL_VERSION,
    StoreState,
    StreamsTopology,
    Subtopology,
    split_threads,
    with_threads,
)
from protocol import consumer_codec
from protocol.effects import Log, Send
from protocol.group import ErrorCode, JoinGroupRequest, JoinGroupResponse
from protocol.streams_subscription import decode_subscription
from protocol.topic_partitions import TopicPartition
from scenarios.check.invariants import InvariantChecker
from scenarios.input.loader import ScenarioError
from scenarios.input.streams import loads_streams_scenario

TOPO = StreamsTopology(
    [Subtopology(0, 2, True, changelog_records=1000, changelog_rate=10), Subtopology(1, 1, False)]
)


def _client(stores=None) -> StreamsClient:
    config = StreamsClientConfig(
        process_id="PID_7", num_stream_threads=3, client_rack="r1", client_tags={"zone": "z"}
    )
    return StreamsClient("c1", config, TOPO, group_id="app", stores=stores)


def test_join_carries_a_v11_subscription_with_offset_sums_tags_and_threads() -> None:
    client = _client({TaskId(0, 1): StoreState(400, 0)})
    effects = client.start(1000)
    join = next(e.message for e in effects if isinstance(e, Send))
    assert isinstance(join, JoinGroupRequest)
    assert join.protocol_type == "consumer"
    assert [name for name, _ in join.protocols] == ["stream"]
    consumer = consumer_codec.decode_subscription(join.protocols[0][1])
    user, threads = split_threads(consumer.user_data)
    assert threads == 3 and consumer.rack_id == "r1"
    assert consumer.topics == ("input-0", "input-1")
    info = decode_subscription(user)  # the trailer is not part of it
    assert info.version == 11
    assert str(info.process_id) == "00000000-0000-0000-0000-000000000007"
    assert {str(t): s for t, s in info.task_offset_sums.items()} == {"0_1": 400}
    assert info.client_tags == {"zone": "z"}


def test_member_id_required_then_rejoin_with_the_given_id() -> None:
    client = _client()
    client.start(0)
    effects = client.handle(
        JoinGroupResponse(error=ErrorCode.MEMBER_ID_REQUIRED, member_id="c1-abc"), 2
    )
    join = next(e.message for e in effects if isinstance(e, Send))
    assert join.member_id == "c1-abc"


def test_envelope_round_trip() -> None:
    sub = consumer_codec.Subscription(
        topics=("input-0",),
        user_data=with_threads(b"\x00\x01", 2),
        owned_partitions=(TopicPartition("input-0", 1), TopicPartition("input-0", 0)),
        generation_id=4,
        rack_id=None,
    )
    data = consumer_codec.encode_subscription(sub, CONSUMER_PROTOCOL_VERSION)
    assert data[:2] == b"\x00\x03"  # ConsumerProtocolSubscription v3
    back = consumer_codec.decode_subscription(data)
    assert back.owned_partitions == (TopicPartition("input-0", 0), TopicPartition("input-0", 1))
    assert (split_threads(back.user_data), back.generation_id, back.rack_id) == (
        (b"\x00\x01", 2),
        4,
        None,
    )
    assert split_threads(b"\x00\x01") == (b"\x00\x01", None)  # a real Kafka client's
    assert split_threads(None) == (b"", None)


def test_restoring_store_progresses_and_caps_at_the_end() -> None:
    store = StoreState(0, 0, "restoring")
    assert store.offset(1000, end=5000, rate=2000) == 2000
    assert store.offset(10_000, end=5000, rate=2000) == 5000


def test_checker_flags_active_on_two_clients_and_active_with_standby() -> None:
    checker = InvariantChecker()
    checker.feed({"kind": "assignment", "member": "a", "generation": 1, "seq": 1})
    checker.feed({"kind": "assignment", "member": "b", "generation": 1, "seq": 2})
    checker.feed({"kind": "generation", "generation": 1, "seq": 0})
    assert (
        checker.feed(
            {"kind": "active_task_start", "member": "a", "task": "0_0", "generation": 1, "seq": 3}
        )
        == []
    )
    found = checker.feed(
        {"kind": "active_task_start", "member": "b", "task": "0_0", "generation": 1, "seq": 4}
    )
    assert [v.invariant for v in found] == ["double_ownership"]
    found = checker.feed({"kind": "standby_task_start", "member": "a", "task": "0_0", "seq": 5})
    assert [v.invariant for v in found] == ["active_and_standby"]
    checker.feed({"kind": "member_crash", "member": "a", "seq": 6})
    checker.feed({"kind": "active_task_stopped", "member": "b", "task": "0_0", "seq": 7})
    checker.feed({"kind": "assignment", "member": "c", "generation": 1, "seq": 8})
    assert (
        checker.feed(
            {"kind": "active_task_start", "member": "c", "task": "0_0", "generation": 1, "seq": 9}
        )
        == []
    )


def test_client_logs_carry_the_member_name() -> None:
    effects = _client().start(0)
    logs = [e for e in effects if isinstance(e, Log)]
    assert logs[0].kind == "member_start" and logs[0].fields["member"] == "c1"


BASE = """
kind = "streams"
name = "t"
[[subtopologies]]
id = 0
partitions = 2
[[clients]]
name = "a"
"""


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ('[config]\n"probing.rebalance.interval.ms" = 1000\n', "config.probing.rebalance"),
        ('[config]\n"no.such" = 1\n', "config.no.such"),
        ('[[timeline]]\nat_ms = 1\naction = "join"\nclient = "zz"\n', "timeline[0].client"),
        ('[[timeline]]\nat_ms = 1\naction = "fly"\n', "timeline[0]"),
        ('[config]\n"group.instance.id" = ""\n', "config.group.instance.id"),
    ],
)
def test_bad_files_name_the_key(extra: str, where: str) -> None:
    with pytest.raises(ScenarioError) as err:
        loads_streams_scenario(BASE + extra, source="x.toml")
    assert str(err.value).startswith("x.toml: ")
    assert where in str(err.value)


def test_kind_is_required() -> None:
    with pytest.raises(ScenarioError, match="kind"):
        loads_streams_scenario(BASE.replace('kind = "streams"', ""), source="x.toml")
