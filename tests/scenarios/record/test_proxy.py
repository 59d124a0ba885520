"""``groupsim record``'s proxy, with ``groupsim serve`` standing in for the real cluster.

Real clients (kafka-python) bootstrap from the proxy; the proxy must carry every frame, point
them at itself in Metadata/FindCoordinator answers, and write the group traffic to
``trace.jsonl`` and ``events.jsonl`` — the events judged by ``groupsim check`` like a served log.
Hostile traffic must close only its own connection.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import pytest
import trio

pytest.importorskip("kio")
pytest.importorskip("kafka")

from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.eventlog import read_jsonl  # noqa: E402
from scenarios.record.proxy import Proxy, RecordOptions  # noqa: E402
from scenarios.record.trace import Recording  # noqa: E402
from scenarios.serve import open_broker  # noqa: E402
from tests.scenarios.serve.clients import kafka_python, options, wait_for  # noqa: E402

#: how far the wall clock and trio's monotonic clock may disagree over a few seconds
_CLOCKS_APART_S = 0.05


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def _recorder(nursery: trio.Nursery, upstream_port: int, out: Path) -> tuple[Proxy, int]:
    recording = Recording(
        out, int(time.time() * 1000), f"127.0.0.1:{upstream_port}", "127.0.0.1", 0
    )
    proxy = Proxy(
        RecordOptions(("127.0.0.1", upstream_port)), recording, lambda: time.time() * 1000
    )
    port = await nursery.start(proxy.run)
    return proxy, port


async def test_two_consumers_through_the_proxy_are_recorded_and_checked(tmp_path: Path) -> None:
    async with open_broker(options()) as broker, trio.open_nursery() as nursery:
        proxy, port = await _recorder(nursery, broker.port, tmp_path)
        clients = [kafka_python(port, f"c{i}").start() for i in range(2)]
        try:
            await wait_for(
                lambda: all(c.assignment is not None and len(c.assignment) == 3 for c in clients),
                30,
                "two consumers with 3 partitions each through the proxy",
            )
        finally:
            for c in clients:
                await c.stop()
        nursery.cancel_scope.cancel()
    proxy.recording.close()
    assert not any(c.state["error"] for c in clients)
    trace = _lines(tmp_path / "trace.jsonl")
    apis = {e["api"] for e in trace if "api" in e}
    assert {"Metadata", "FindCoordinator", "JoinGroup", "SyncGroup"} <= apis
    # Every Metadata/FindCoordinator answer sent to the clients names the proxy, not serve.
    for entry in trace:
        if entry.get("dir") == "response" and entry["api"] == "Metadata":
            assert {b["port"] for b in entry["fields"]["brokers"]} == {port}
    joins = [e for e in trace if e.get("api") == "JoinGroup" and e["dir"] == "response"]
    assert joins and all(e["fields"]["member_id"] for e in joins)
    # The same rebalances the served coordinator wrote, as seen on the wire.
    events = read_jsonl(tmp_path / "events.jsonl", validate=True)
    assert events[0]["kind"] == "run_start" and events[0]["mode"] == "record"
    assert events[-1]["kind"] == "run_end"
    recorded = [(r["generation"], r["member_ids"]) for r in events if r["kind"] == "generation"]
    served = [
        (r["generation"], r["member_ids"])
        for r in broker.log.records
        if r["kind"] == "generation" and r["member_ids"]
    ]
    assert recorded and recorded == served
    assert check_log(tmp_path / "events.jsonl") == []


async def _raw_exchange(port: int, payload: bytes) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(payload)
        got = b""
        with trio.move_on_after(5):
            try:
                while True:
                    data = await stream.receive_some(65536)
                    if not data:
                        break
                    got += data
            except trio.BrokenResourceError:  # the proxy reset the connection
                pass
        return got


def _request(
    api_key: int, version: int, correlation_id: int, client_id: bytes, body: bytes
) -> bytes:
    frame = (
        struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + body
    )
    return struct.pack(">i", len(frame)) + frame


async def test_hostile_traffic_closes_only_its_connection(tmp_path: Path) -> None:
    async with open_broker(options()) as broker, trio.open_nursery() as nursery:
        proxy, port = await _recorder(nursery, broker.port, tmp_path)
        # An unknown API key is forwarded untouched (serve closes it, as a broker does).
        await _raw_exchange(port, _request(999, 0, 1, b"odd", b""))
        # A frame cut short: the size promises more than is sent before the client goes.
        await _raw_exchange(port, struct.pack(">i", 100) + b"\x00\x12")
        # TLS and SASL are refused with one line each.
        await _raw_exchange(port, b"\x16\x03\x01\x00\x05hello")
        await _raw_exchange(port, _request(17, 1, 2, b"sasl", b"\x00\x05PLAIN"))
        # A client disconnecting mid-request.
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(struct.pack(">i", 50))
        await stream.aclose()
        # ... and a well-behaved consumer still gets through afterwards.
        client = kafka_python(port, "late").start()
        try:
            await wait_for(lambda: client.assignment == list(range(6)), 60, "the late consumer")
        finally:
            await client.stop()
        nursery.cancel_scope.cancel()
    proxy.recording.close()
    trace = _lines(tmp_path / "trace.jsonl")
    errors = [e["detail"] for e in trace if e.get("event") == "error"]
    assert any("TLS is not supported" in e for e in errors)
    assert any("SASL is not supported" in e for e in errors)
    closes = [e["detail"] for e in trace if e.get("event") == "close"]
    assert any("of a 100-byte frame" in c for c in closes)
    events = read_jsonl(tmp_path / "events.jsonl", validate=True)
    assert [r["error"] for r in events if r["kind"] == "connection_error"] == [e for e in errors]


async def test_the_upstream_going_away_keeps_what_was_written(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        async with open_broker(options()) as broker:
            proxy, port = await _recorder(nursery, broker.port, tmp_path)
            client = kafka_python(port, "c1").start()
            try:
                await wait_for(lambda: client.assignment == list(range(6)), 30, "one consumer")
                written = (tmp_path / "trace.jsonl").stat().st_size
            except BaseException:
                await client.stop()
                raise
        # The broker is gone: the client's connections through the proxy break.
        await trio.sleep(0.5)
        await client.stop()
        # A new connection now finds no upstream: one error line, the proxy stays up.
        await _raw_exchange(port, _request(18, 0, 1, b"x", b""))
        nursery.cancel_scope.cancel()
    proxy.recording.close()
    assert (tmp_path / "trace.jsonl").stat().st_size > written
    trace = _lines(tmp_path / "trace.jsonl")
    assert any(e.get("event") == "error" and "upstream" in e["detail"] for e in trace)
    read_jsonl(tmp_path / "events.jsonl", validate=True)


async def _answer_within(port: int, client_id: bytes, seconds: float) -> bytes:
    """Sends an ApiVersions v0 request as ``client_id``; what came back within ``seconds``."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(_request(18, 0, 1, client_id, b""))
        got = b""
        with trio.move_on_after(seconds):
            while len(got) < 4 or len(got) < 4 + struct.unpack_from(">i", got)[0]:
                data = await stream.receive_some(65536)
                if not data:
                    break
                got += data
        return got


async def test_a_cut_client_is_partitioned_until_the_cut_ends(tmp_path: Path) -> None:
    """``Proxy.cut``: frames of the client (and of its ``<client.id>-…`` clients, a Streams
    app's consumers and admin) are held both ways for the duration, then delivered; others
    pass; nothing is closed or dropped; the cut is written as a ``fault`` record."""
    async with open_broker(options()) as broker, trio.open_nursery() as nursery:
        proxy, port = await _recorder(nursery, broker.port, tmp_path)
        start = trio.current_time()
        proxy.cut("I2", 3000)
        assert await _answer_within(port, b"I2", 0.6) == b""
        assert await _answer_within(port, b"I2-StreamThread-1-consumer", 0.6) == b""
        assert await _answer_within(port, b"I3", 5) != b""
        assert await _answer_within(port, b"I22", 5) != b""  # another client
        # a request sent during the cut on a connection kept open is answered after it heals
        assert await _answer_within(port, b"I2", 10) != b""
        # the proxy times a cut by the wall clock it is given, the test by trio's monotonic
        # clock: the two may disagree by a few ms (a CI run saw the answer 2.5 ms "early")
        assert trio.current_time() >= start + 3.0 - _CLOCKS_APART_S
        assert await _answer_within(port, b"I2", 5) != b""  # the cut is over
        nursery.cancel_scope.cancel()
    proxy.recording.close()
    trace = _lines(tmp_path / "trace.jsonl")
    assert [e["detail"] for e in trace if e.get("event") == "cut"] == [
        "partition of I2 for 3000 ms"
    ]
    events = read_jsonl(tmp_path / "events.jsonl", validate=True)
    faults = [r for r in events if r["kind"] == "fault"]
    assert [(r["fault"], r["member"], r["duration_ms"]) for r in faults] == [
        ("partition", "I2", 3000)
    ]
