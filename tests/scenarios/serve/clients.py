"""Helpers for the serve tests: a broker on an ephemeral loopback port and real clients.

Real clients are blocking libraries: each runs in its own thread (or a subprocess when the
test must kill it) while the trio broker keeps serving in the test's event loop. Waits are
bounded (``trio.fail_after``) and poll the broker's own view of the group.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import trio

from coordinator.config import CoordinatorConfig
from scenarios.serve.config import ServeOptions

TOPIC = "orders"
GROUP = "g"

#: Small timeouts so that rebalances and session expiries take well under a second.
FAST = CoordinatorConfig(
    initial_rebalance_delay_ms=200, min_session_timeout_ms=500, max_session_timeout_ms=60_000
)


def options(**overrides: Any) -> ServeOptions:
    """Loopback, ephemeral port, topic ``orders`` with 6 partitions, fast coordinator."""
    values: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": 0,
        "topics": {TOPIC: 6},
        "coordinator": FAST,
        "seed": 1,
        "fetch_wait_cap_ms": 100,
    }
    values.update(overrides)
    return ServeOptions(**values)


async def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll ``predicate`` every 50 ms; fail the test after ``timeout_s`` seconds."""
    try:
        with trio.fail_after(timeout_s):
            while not predicate():
                await trio.sleep(0.05)
    except trio.TooSlowError:
        raise AssertionError(f"timed out after {timeout_s} s waiting for {what}") from None


def assert_clean(broker: Any) -> None:
    """No connection was closed for a frame groupsim could not serve or an internal error."""
    errors = [r for r in broker.log.records if r["kind"] == "connection_error"]
    assert errors == []


def partition_counts(broker: Any, group: str = GROUP) -> dict[str, int]:
    """client.id -> number of partitions the coordinator's stored assignment gives it."""
    snap = broker.snapshot(group)
    if snap.state != "Stable":
        return {}
    return {snap.clients[m]: len(snap.assignments[m] or []) for m in snap.members}


class ThreadClient:
    """A client polling in a thread. ``body(stop, state)`` runs there until ``stop`` is set;
    it keeps ``state["assignment"]`` (a sorted list of partitions) up to date."""

    def __init__(self, body: Callable[[threading.Event, dict[str, Any]], None]) -> None:
        self.stop_event = threading.Event()
        self.state: dict[str, Any] = {"assignment": None, "error": None}
        self._body = body
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self._body(self.stop_event, self.state)
        except BaseException as exc:  # reported by the test through state["error"]
            self.state["error"] = repr(exc)

    def start(self) -> ThreadClient:
        self.thread.start()
        return self

    @property
    def assignment(self) -> list[int] | None:
        return self.state["assignment"]

    async def stop(self) -> None:
        self.stop_event.set()
        await trio.to_thread.run_sync(self.thread.join, 30)
        assert not self.thread.is_alive(), "client thread did not stop"


def kafka_python(port: int, client_id: str, **config: Any) -> ThreadClient:
    """A kafka-python ``KafkaConsumer`` on ``orders`` in group ``g`` (closed on stop)."""
    from kafka import KafkaConsumer

    settings: dict[str, Any] = {
        "bootstrap_servers": f"127.0.0.1:{port}",
        "group_id": GROUP,
        "client_id": client_id,
        "session_timeout_ms": 3000,
        "heartbeat_interval_ms": 200,
        "fetch_max_wait_ms": 100,
        "request_timeout_ms": 5000,
    }
    settings.update(config)

    def body(stop: threading.Event, state: dict[str, Any]) -> None:
        consumer = KafkaConsumer(TOPIC, **settings)
        try:
            while not stop.is_set():
                consumer.poll(timeout_ms=50)
                state["assignment"] = sorted(tp.partition for tp in consumer.assignment())
        finally:
            consumer.close()

    return ThreadClient(body)


def confluent(port: int, client_id: str, **config: Any) -> ThreadClient:
    """A confluent-kafka (librdkafka) ``Consumer`` on ``orders`` in group ``g``."""
    from confluent_kafka import Consumer

    settings: dict[str, Any] = {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "group.id": GROUP,
        "client.id": client_id,
        "session.timeout.ms": 3000,
        "heartbeat.interval.ms": 200,
        "fetch.wait.max.ms": 100,
    }
    settings.update(config)

    def body(stop: threading.Event, state: dict[str, Any]) -> None:
        consumer = Consumer(settings)
        consumer.subscribe([TOPIC])
        try:
            while not stop.is_set():
                consumer.poll(0.05)
                state["assignment"] = sorted(tp.partition for tp in consumer.assignment())
        finally:
            consumer.close()

    return ThreadClient(body)


_KILLABLE = """
import sys
from kafka import KafkaConsumer
c = KafkaConsumer("orders", bootstrap_servers=sys.argv[1], group_id="g", client_id=sys.argv[2],
                  session_timeout_ms=int(sys.argv[3]), heartbeat_interval_ms=200,
                  fetch_max_wait_ms=100)
while True:
    c.poll(timeout_ms=100)
"""


def killable_kafka_python(port: int, client_id: str, session_timeout_ms: int) -> subprocess.Popen:
    """A kafka-python consumer in a subprocess (so that the test can SIGKILL it)."""
    return subprocess.Popen(
        [sys.executable, "-c", _KILLABLE, f"127.0.0.1:{port}", client_id, str(session_timeout_ms)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
