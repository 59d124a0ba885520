"""Helpers for the serve tests: a broker on an ephemeral loopback port and real clients.

Real clients are blocking libraries: each runs in its own thread (or a subprocess when the
test must kill it) while the trio broker keeps serving in the test's event loop. Waits are
bounded (``trio.fail_after``) and poll the broker's own view of the group.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
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


class JavaConsumer:
    """Kafka's own ``KafkaConsumer`` (classic protocol) in a JVM: the harness's
    ``groupsim.oracle.JavaConsumerClient`` (``tests/kafka_oracle``), on ``topics`` (comma
    separated; default ``orders``) in group ``group`` (default ``g``).

    ``events`` collects its JSON lines (``started``, ``revoked`` / ``assigned`` / ``lost`` with
    ``partitions``, ``generation``, ``member_id``, ``stalled``, ``closed``) as they arrive, read
    by a thread. Its stderr (Kafka's own output) goes to ``log_path``. The JVM lives at most
    ``life_ms`` (it halts itself), and :meth:`kill` stops it by its pid. ``config`` adds the
    consumer settings the client takes by name (``client.rack``, ``metadata.max.age.ms``).
    """

    def __init__(
        self,
        command: list[str],
        port: int,
        client_id: str,
        log_path: Path,
        *,
        assignor: str = "range",
        group_instance_id: str | None = None,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 300,
        max_poll_interval_ms: int = 10_000,
        life_ms: int = 120_000,
        topics: str = TOPIC,
        group: str = GROUP,
        config: Mapping[str, str | int] | None = None,
    ) -> None:
        args = [
            f"bootstrap=127.0.0.1:{port}",
            f"group={group}",
            f"topics={topics}",
            f"client.id={client_id}",
            f"assignor={assignor}",
            f"session.timeout.ms={session_timeout_ms}",
            f"heartbeat.interval.ms={heartbeat_interval_ms}",
            f"max.poll.interval.ms={max_poll_interval_ms}",
            f"life.ms={life_ms}",
        ]
        if group_instance_id is not None:
            args.append(f"group.instance.id={group_instance_id}")
        args += [f"{key}={value}" for key, value in (config or {}).items()]
        self.client_id = client_id
        self.events: list[dict[str, Any]] = []
        self._stderr = log_path.open("ab")
        self.proc = subprocess.Popen(
            [*command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.events.append(json.loads(line))

    def callbacks(self) -> list[dict[str, Any]]:
        """The rebalance callbacks so far, in order."""
        return [e for e in self.events if e["event"] in ("revoked", "assigned", "lost")]

    @property
    def assignment(self) -> list[int] | None:
        """The partitions it owns after its callbacks so far (None before its first
        ``assigned``): each ``assigned`` adds, ``revoked`` and ``lost`` remove (an eager
        consumer revokes everything first; a cooperative one only what moves, KIP-429)."""
        owned: set[int] | None = None
        for e in self.callbacks():
            parts = {int(p.rsplit("-", 1)[1]) for p in e["partitions"]}
            if e["event"] == "assigned":
                owned = (owned or set()) | parts
            elif owned is not None:
                owned -= parts
        return None if owned is None else sorted(owned)

    @property
    def owned(self) -> set[str]:
        """The ``topic-partition`` names it owns after its callbacks so far (:attr:`assignment`
        by name: several topics)."""
        out: set[str] = set()
        for e in self.callbacks():
            if e["event"] == "assigned":
                out |= set(e["partitions"])
            else:
                out -= set(e["partitions"])
        return out

    def send(self, command: str) -> None:
        """One stdin command: ``close``, ``stall <ms>``, ``exit-without-leave`` or
        ``subscribe <topic,topic>``."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()

    async def close(self, timeout_s: float = 30) -> int:
        """``close`` and wait for the JVM to exit (killed by pid if it does not); its code."""
        if self.proc.poll() is None:
            self.send("close")
            try:
                await trio.to_thread.run_sync(self.proc.wait, timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.finish()

    def kill(self) -> None:
        """SIGKILL by pid (no-op once it has exited)."""
        if self.proc.poll() is None:
            self.proc.kill()

    def finish(self) -> int:
        """Reaps the JVM (killing it first if it still runs) and closes its pipes."""
        self.kill()
        code = self.proc.wait(30)
        self._reader.join(10)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        self._stderr.close()
        return code


async def three_consumers_then_one_leaves(
    port: int, timeout_s: float, **config: Any
) -> list[ThreadClient]:
    """Three kafka-python consumers share ``orders``' 6 partitions (2 each), then one closes
    (LeaveGroup) and the other two take 3 each; every client is stopped on return. Returns the
    clients, whose ``state["error"]`` the caller may check."""
    clients = [kafka_python(port, f"c{i}", **config).start() for i in range(3)]
    try:
        for count, what in ((2, "three consumers with 2"), (3, "two consumers with 3")):
            await wait_for(
                lambda n=count: all(  # type: ignore[misc]
                    c.assignment is not None and len(c.assignment) == n for c in clients
                ),
                timeout_s,
                f"{what} partitions each",
            )
            if count == 2:
                await clients.pop().stop()
    finally:
        for c in clients:
            await c.stop()
    return clients
