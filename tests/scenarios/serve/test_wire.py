"""The wire layer (framing, header versions, kio) and the raw protocol over a socket."""

from __future__ import annotations

import datetime
import io
import struct

import pytest
import trio

pytest.importorskip("kio")

from kio.schema.errors import ErrorCode  # noqa: E402
from kio.serial import entity_reader, entity_writer  # noqa: E402

from scenarios.serve import (
    open_broker,  # noqa: E402
    wire,  # noqa: E402
)
from scenarios.serve.config import CoordinatorFailover  # noqa: E402

from .clients import options  # noqa: E402


def _request_frame(
    api_key: int, version: int, correlation_id: int, client_id: str, **body
) -> bytes:
    cls = wire._payload_class(api_key, version, False)
    header_cls = cls.__header_schema__
    buffer = io.BytesIO()
    entity_writer(header_cls)(
        buffer,
        header_cls(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id=client_id,
        ),
    )
    entity_writer(cls)(buffer, cls(**body))
    return buffer.getvalue()


def _decode_response(api_key: int, version: int, data: bytes):
    """(correlation id, body) of a framed response."""
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4
    cls = wire.response_class(api_key, version)
    # kio readers return (value, bytes read)
    header, header_size = entity_reader(cls.__header_schema__)(data, 4)
    body, body_size = entity_reader(cls)(data, 4 + header_size)
    assert 4 + header_size + body_size == len(data)
    return header.correlation_id, body


def test_a_flexible_request_is_decoded_with_header_v2_and_answered_with_header_v1():
    frame = _request_frame(
        12, 4, 77, "c1", group_id="g", generation_id=3, member_id="m", group_instance_id=None
    )
    request = wire.decode_request(frame)
    assert (request.api_key, request.api_version, request.correlation_id) == (12, 4, 77)
    assert request.client_id == "c1"
    assert (request.body.group_id, request.body.generation_id) == ("g", 3)
    cls = wire.response_class(12, 4)
    data = wire.encode_response(
        12,
        4,
        77,
        cls(throttle_time=datetime.timedelta(0), error_code=ErrorCode.rebalance_in_progress),
    )
    # header v1: correlation id then an empty tagged-field section (one zero byte)
    assert data[4:9] == struct.pack(">i", 77) + b"\x00"
    assert _decode_response(12, 4, data) == (
        77,
        cls(throttle_time=datetime.timedelta(0), error_code=ErrorCode.rebalance_in_progress),
    )


def test_an_apiversions_response_always_has_header_v0():
    cls = wire.response_class(18, 4)
    data = wire.encode_response(
        18, 4, 5, cls(error_code=ErrorCode.none, api_keys=(), throttle_time=datetime.timedelta(0))
    )
    # header v0: just the correlation id; then error_code int16 = 0
    assert data[4:10] == struct.pack(">ih", 5, 0)


def test_unknown_api_keys_and_versions_are_wire_errors_but_apiversions_is_answered():
    with pytest.raises(wire.WireError, match="unsupported API key 0"):
        wire.decode_request(struct.pack(">hhi", 0, 9, 1) + b"\xff\xff")
    with pytest.raises(wire.WireError, match="unsupported JoinGroup version 42"):
        wire.decode_request(struct.pack(">hhi", 11, 42, 1) + b"\xff\xff")
    future = wire.decode_request(struct.pack(">hhih", 18, 9, 4, 2) + b"cx" + b"\x00")
    assert (future.api_version, future.body, future.client_id) == (9, None, "cx")


def test_consumer_assignments_are_decoded_and_other_bytes_are_not():
    from kio.schema.consumer_protocol_assignment.v0.data import (
        ConsumerProtocolAssignment,
        TopicPartition,
    )

    buffer = io.BytesIO()
    buffer.write(struct.pack(">h", 0))
    entity_writer(ConsumerProtocolAssignment)(
        buffer,
        ConsumerProtocolAssignment(
            assigned_partitions=(TopicPartition(topic="orders", partitions=(1, 4)),),
            user_data=None,
        ),
    )
    assert wire.decode_consumer_assignment(buffer.getvalue()) == ["orders-1", "orders-4"]
    assert wire.decode_consumer_assignment(b"") == []
    assert wire.decode_consumer_assignment(b"\x00\x07garbage") is None


async def _roundtrip(port: int, api_key: int, version: int, frame: bytes):
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(struct.pack(">i", len(frame)) + frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
            chunk = await stream.receive_some()
            assert chunk, "the broker closed the connection"
            data += chunk
    return _decode_response(api_key, version, data)


async def _rejoin_until_replaced(broker, group: str, frame: bytes, old_member_id: str) -> None:
    """Send a static member's JoinGroup (no member id) and return once the coordinator has
    replaced ``old_member_id`` (KIP-345), whether or not the answer has come: the answer may
    wait on a rebalance. Waiting for the coordinator's state, not a wall-clock deadline, keeps
    the test right on a loaded machine."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_roundtrip, broker.port, 11, 5, frame)
        while broker.snapshot(group).members in ((), (old_member_id,)):
            await trio.sleep(0.01)
        nursery.cancel_scope.cancel()


async def test_the_broker_answers_apiversions_v4_with_every_served_range():
    async with open_broker(options()) as broker:
        frame = _request_frame(
            18, 4, 1, "raw", client_software_name="t", client_software_version="1"
        )
        _, body = await _roundtrip(broker.port, 18, 4, frame)
        assert body.error_code == ErrorCode.none
        served = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        assert served == wire.API_VERSIONS
    # an unknown version: test_kafka_edges.py


async def test_join_group_goes_through_kip394_then_the_initial_delay():
    async with open_broker(options()) as broker:

        def join(member_id: str) -> bytes:
            module = wire.module(11, 5, False)
            return _request_frame(
                11,
                5,
                9,
                "raw",
                group_id="g",
                session_timeout=datetime.timedelta(seconds=3),
                rebalance_timeout=datetime.timedelta(seconds=3),
                member_id=member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocols=(module.JoinGroupRequestProtocol(name="range", metadata=b"\x00"),),
            )

        _, first = await _roundtrip(broker.port, 11, 5, join(""))
        assert first.error_code == ErrorCode.member_id_required
        assert first.member_id.startswith("raw-")
        start = broker.now_ms()
        _, second = await _roundtrip(broker.port, 11, 5, join(first.member_id))
        assert second.error_code == ErrorCode.none
        assert (second.generation_id, second.leader) == (1, first.member_id)
        assert second.protocol_name == "range"
        assert [m.member_id for m in second.members] == [first.member_id]
        # parked for group.initial.rebalance.delay.ms (200) on trio's clock
        assert broker.now_ms() - start >= 200
        broker.inject(CoordinatorFailover(at_ms=0, down_ms=60_000))
        _, refused = await _roundtrip(broker.port, 11, 5, join(first.member_id))
        assert refused.error_code == ErrorCode.not_coordinator
    kinds = [r["kind"] for r in broker.log.records]
    assert kinds[0] == "run_start" and broker.log.records[0]["log_version"] == 1
    assert kinds[-1] == "run_end"
    assert "generation" in kinds and "fault" in kinds


async def test_offset_commits_follow_kafkas_classic_group_checks_and_are_fetched_back():
    async with open_broker(options()) as broker:

        def commit(version: int, generation: int, offset: int) -> bytes:
            module = wire.module(8, version, False)
            partition = wire.build(
                module.OffsetCommitRequestPartition,
                partition_index=2,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata="m",
            )
            topic = module.OffsetCommitRequestTopic(name="orders", partitions=(partition,))
            return _request_frame(
                8,
                version,
                3,
                "raw",
                group_id="simple",
                generation_id_or_member_epoch=generation,
                member_id="",
                group_instance_id=None,
                topics=(topic,),
            )

        async def commit_error(version: int, generation: int, offset: int) -> ErrorCode:
            _, body = await _roundtrip(broker.port, 8, version, commit(version, generation, offset))
            return body.topics[0].partitions[0].error_code

        # OffsetMetadataManager#validateOffsetCommit: an unknown group with a generation
        assert await commit_error(8, 5, 10) == ErrorCode.illegal_generation
        assert await commit_error(9, 5, 10) == ErrorCode.group_id_not_found
        # generation -1: a "simple" commit is accepted
        assert await commit_error(9, -1, 42) == ErrorCode.none
        fetch = wire.module(9, 7, False)
        frame = _request_frame(
            9,
            7,
            4,
            "raw",
            group_id="simple",
            topics=(fetch.OffsetFetchRequestTopic(name="orders", partition_indexes=(2, 3)),),
            require_stable=False,
        )
        _, body = await _roundtrip(broker.port, 9, 7, frame)
        offsets = {p.partition_index: p.committed_offset for p in body.topics[0].partitions}
        assert offsets == {2: 42, 3: -1}


async def test_describe_groups_of_an_unknown_group_is_dead_without_error():
    async with open_broker(options()) as broker:
        frame = _request_frame(
            15, 5, 6, "raw", groups=("nobody",), include_authorized_operations=False
        )
        _, body = await _roundtrip(broker.port, 15, 5, frame)
        (group,) = body.groups
        assert (group.error_code, group.group_state, group.members) == (ErrorCode.none, "Dead", ())


async def test_timeline_faults_fire_on_trios_clock_and_a_lossy_link_drops_answers():
    from scenarios.serve.config import Loss, Partition

    timeline = (Partition(at_ms=50, member="raw", duration_ms=100),)
    async with open_broker(options(timeline=timeline)) as broker:
        await trio.sleep(0.3)
        faults = [(r["fault"], r["member"]) for r in broker.log.records if r["kind"] == "fault"]
        assert faults == [("partition", "raw"), ("heal", "raw")]
        broker.inject(
            Loss(
                at_ms=0,
                member="raw",
                probability=1.0,
                duration_ms=60_000,
                direction="from_coordinator",
            )
        )
        frame = _request_frame(
            18, 3, 8, "raw", client_software_name="t", client_software_version="1"
        )
        with trio.move_on_after(0.5) as timed_out:
            await _roundtrip(broker.port, 18, 3, frame)
        assert timed_out.cancelled_caught, "the answer should have been lost"
        _, body = await _roundtrip(
            broker.port,
            18,
            3,
            _request_frame(
                18, 3, 9, "other", client_software_name="t", client_software_version="1"
            ),
        )
        assert body.error_code == ErrorCode.none  # another client's link is intact


async def test_metadata_advertises_node_0_at_the_advertised_host_leading_every_partition():
    async with open_broker(options(advertised_host="kafka.example")) as broker:
        frame = _request_frame(
            3,
            12,
            2,
            "raw",
            topics=None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        _, body = await _roundtrip(broker.port, 3, 12, frame)
    (node,) = body.brokers
    assert (node.node_id, node.host, node.port) == (0, "kafka.example", broker.port)
    (topic,) = body.topics
    assert topic.name == "orders" and topic.topic_id == broker.topic_ids["orders"]
    assert [(p.partition_index, p.leader_id) for p in topic.partitions] == [
        (i, 0) for i in range(6)
    ]
