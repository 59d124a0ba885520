"""Real Kafka processes for the real-cluster tests: a single-node KRaft broker on loopback.

The broker is Kafka's own (``kafka.Kafka`` from the ``kafka_2.13`` artifact on the harness's
class path, the version pinned in ``pom.xml``), with fresh KRaft storage formatted per run in a
temporary directory, listening on free loopback ports. Every wait is bounded, and the broker is
stopped by its pid (SIGTERM, then SIGKILL) when the ``with`` block ends, also when a test fails.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.kafka_oracle.oracle import build, java_command, requested_version

#: Longest a broker may take to start listening (a loaded 2-core machine needs most of it).
START_TIMEOUT_S = 120


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Broker:
    """A running broker: clients bootstrap from ``127.0.0.1:port``; ``log`` is its output."""

    port: int
    pid: int
    log: Path

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the broker's process group, then SIGKILL it if it has not gone in 20 s."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def kafka_broker(workdir: Path, **settings: str | int) -> Iterator[Broker]:
    """A fresh single-node KRaft broker (``process.roles=broker,controller``) for the block.

    Args:
        workdir: an empty directory for the config, the KRaft storage and the log.
        settings: broker settings on top of the defaults below, with ``.`` written as ``_``
            (``group_initial_rebalance_delay_ms=0``).

    Raises:
        tests.kafka_oracle.oracle.OracleUnavailable: the harness cannot be built.
        RuntimeError: the broker did not start listening within :data:`START_TIMEOUT_S`
            (the end of its log is in the message).
    """
    build(requested_version())
    port, controller = free_port(), free_port()
    values: dict[str, str | int] = {
        "process.roles": "broker,controller",
        "node.id": 1,
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(workdir / "data"),
        "offsets.topic.replication.factor": 1,
        "offsets.topic.num.partitions": 1,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "group.min.session.timeout.ms": 500,
    }
    values.update({k.replace("_", "."): v for k, v in settings.items()})
    config = workdir / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    log = workdir / "broker.log"
    version = requested_version()
    subprocess.run(
        [
            *java_command("kafka.tools.StorageTool", version),
            "format",
            "-t",
            _cluster_id(),
            "-c",
            str(config),
        ],
        check=True,
        capture_output=True,
        timeout=START_TIMEOUT_S,
    )
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*java_command("kafka.Kafka", version, heap="768m"), str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the broker exited ({proc.returncode}): {_tail(log)}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the broker did not listen in time: {_tail(log)}") from None
                time.sleep(0.25)
        yield Broker(port, proc.pid, log)
    finally:
        _stop(proc)


def _cluster_id() -> str:
    """A fresh cluster id as Kafka writes one (``Uuid.randomUuid().toString()``: URL-safe
    base64 of 16 bytes, no padding; Kafka draws again when the text starts with ``-``, which
    the storage tool's command line would read as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def _tail(path: Path) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-5:])
    except OSError:
        return "(no log)"


# --------------------------------------------------------------------------------------------
# Kafka Connect workers (distributed mode)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Worker:
    """A running Connect worker: its REST API at ``url``; ``log`` is its output."""

    name: str
    url: str
    pid: int
    log: Path


@contextmanager
def broker_with_orders(workdir: Path, group_settings: dict[str, int]) -> Iterator[Broker]:
    """:func:`kafka_broker` with the group settings under Kafka's names
    (``group.initial.rebalance.delay.ms``, …) and the topic ``orders`` (6 partitions) the
    consumer tests share."""
    from kafka.admin import KafkaAdminClient, NewTopic

    settings = {k.replace(".", "_"): v for k, v in group_settings.items()}
    with kafka_broker(workdir, **settings) as running:
        admin = KafkaAdminClient(bootstrap_servers=running.bootstrap, request_timeout_ms=60_000)
        try:
            admin.create_topics([NewTopic("orders", 6, 1)])
        finally:
            admin.close()
        yield running


@contextmanager
def connect_worker(
    workdir: Path, bootstrap: str, name: str, **settings: str | int
) -> Iterator[Worker]:
    """A real Connect worker (``ConnectDistributed``) of group ``connect-cluster`` for the
    block, bootstrapping from ``bootstrap`` (the recording proxy, in the tests), with the
    harness's ``IdleSourceConnector`` on its class path.

    Args:
        settings: worker settings on top of the defaults, ``.`` written as ``_``
            (``connect_protocol="eager"``, ``scheduled_rebalance_max_delay_ms=5000``).

    Raises:
        RuntimeError: the REST API did not answer within :data:`START_TIMEOUT_S`.
    """
    rest = free_port()
    values: dict[str, str | int] = {
        "bootstrap.servers": bootstrap,
        "group.id": "connect-cluster",
        "client.id": name,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "config.storage.topic": "connect-configs",
        "offset.storage.topic": "connect-offsets",
        "status.storage.topic": "connect-status",
        "config.storage.replication.factor": 1,
        "offset.storage.replication.factor": 1,
        "status.storage.replication.factor": 1,
        "offset.storage.partitions": 1,
        "status.storage.partitions": 1,
        "listeners": f"http://127.0.0.1:{rest}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": rest,
        "plugin.discovery": "service_load",
        "offset.flush.interval.ms": 60_000,
    }
    values.update({k.replace("_", "."): v for k, v in settings.items()})
    config = workdir / f"{name}.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                *java_command(
                    "org.apache.kafka.connect.cli.ConnectDistributed",
                    requested_version(),
                    heap="384m",
                ),
                str(config),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{rest}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"worker {name} exited ({proc.returncode}): {_tail(log)}")
            try:
                rest_call(url, "GET", "/connectors")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"worker {name} did not start: {_tail(log)}") from None
                time.sleep(0.5)
        yield Worker(name, url, proc.pid, log)
    finally:
        _stop(proc)


def rest_call(url: str, method: str, path: str, body: object | None = None) -> object:
    """One call to a worker's REST API; the decoded JSON answer (None when empty).

    Raises:
        OSError: the worker did not answer, or answered an HTTP error (urllib's HTTPError).
    """
    import json
    import urllib.request

    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read()
    return json.loads(text) if text else None


# --------------------------------------------------------------------------------------------
# groupsim record, running beside blocking test code
# --------------------------------------------------------------------------------------------


class RecorderThread:
    """``groupsim record``'s proxy in front of ``upstream``, on its own thread (so the test can
    start JVMs and wait on REST calls); :meth:`stop` ends it and closes both files."""

    def __init__(self, upstream: tuple[str, int], out: Path) -> None:
        import threading

        import trio

        from scenarios.record.proxy import Proxy, RecordOptions
        from scenarios.record.trace import Recording

        self.out = out
        self._recording = Recording(
            out, int(time.time() * 1000), f"{upstream[0]}:{upstream[1]}", "127.0.0.1", 0
        )
        self._proxy = Proxy(RecordOptions(upstream), self._recording, lambda: time.time() * 1000)
        self._started = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self.port = 0

        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            with trio.CancelScope() as scope:
                self._scope = scope
                async with trio.open_nursery() as nursery:
                    self.port = await nursery.start(self._proxy.run)
                    self._started.set()

        self._thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
        self._thread.start()
        if not self._started.wait(30):
            raise RuntimeError("the recording proxy did not start")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        import trio

        if self._token is not None and self._scope is not None and self._thread.is_alive():
            trio.from_thread.run_sync(self._scope.cancel, trio_token=self._token)
        self._thread.join(30)
        self._recording.close()


# --------------------------------------------------------------------------------------------
# Kafka Streams applications
# --------------------------------------------------------------------------------------------


@dataclass
class StreamsInstance:
    """A running instance of the harness's ``groupsim.oracle.streams.StatefulApp``.

    ``log`` holds what it prints: ``STATE <new> <old>`` per KafkaStreams state transition and
    ``ASSIGNMENT active=[0_0, ...] standby=[...]`` per change of its tasks (a warm-up is a
    standby task to its client).
    """

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()

    def state(self) -> str | None:
        """The last KafkaStreams state it printed (``RUNNING``, ``REBALANCING``, ...)."""
        states = [line.split()[1] for line in self.lines() if line.startswith("STATE ")]
        return states[-1] if states else None

    def tasks(self) -> tuple[set[str], set[str]]:
        """Its last printed (active, standby) task ids; empty sets before the first."""
        for line in reversed(self.lines()):
            if line.startswith("ASSIGNMENT "):
                active, _, standby = line[len("ASSIGNMENT active=") :].partition(" standby=")
                return _task_set(active), _task_set(standby)
        return set(), set()

    def held(self) -> set[str]:
        """Every task it has printed as active or standby so far (it keeps their local state
        in its state directory)."""
        out: set[str] = set()
        for line in self.lines():
            if line.startswith("ASSIGNMENT "):
                active, _, standby = line[len("ASSIGNMENT active=") :].partition(" standby=")
                out |= _task_set(active) | _task_set(standby)
        return out

    def crash(self) -> None:
        """kill -9: the process ends without leaving the group or closing anything."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


def _task_set(text: str) -> set[str]:
    inner = text.strip().strip("[]")
    return {t.strip() for t in inner.split(",") if t.strip()}


@contextmanager
def streams_app(
    workdir: Path, bootstrap: str, name: str, **settings: str | int
) -> Iterator[StreamsInstance]:
    """A real Kafka Streams instance (application ``stateful``) for the block, bootstrapping
    from ``bootstrap``, with its own state directory under ``workdir``; stopped by its pid at
    the end (SIGTERM, then SIGKILL), also when the test fails.

    Args:
        settings: Streams settings, ``.`` written as ``_`` (``num_standby_replicas=1``,
            ``client_tag_zone="z1"``), plus ``produce=N`` for N input records first.
    """
    values: dict[str, str | int] = {
        "bootstrap.servers": bootstrap,
        "client.id": name,
        "state.dir": str(workdir / f"{name}-state"),
    }
    values.update({k.replace("_", "."): v for k, v in settings.items()})
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                *java_command(
                    "groupsim.oracle.streams.StatefulApp", requested_version(), heap="256m"
                ),
                *(f"{k}={v}" for k, v in values.items()),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield StreamsInstance(name, proc, log)
    finally:
        _stop(proc)


def write_connect_configs(
    bootstrap: str, out: Path, max_delay_ms: int, topic: str = "connect-configs"
) -> Path:
    """Writes ``out/connect-configs.json`` (what ``replay --conform`` gives Connect leaders,
    :func:`scenarios.record.leaders.read_configs`) from the config topic, read from its start.

    The view is Kafka's ``KafkaConfigBackingStore``'s (values are JSON without schemas): a
    ``connector-<name>`` record adds the connector (a null value removes it) with 0 tasks until
    a ``commit-<name>`` record (``{"tasks": n}``) commits its task configs; the snapshot at
    offset ``o`` has read every record below ``o``. Other records (task configs, target states,
    session keys) do not change a task count.
    """
    import json

    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000
    )
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        end = consumer.end_offsets([partition])[partition]
        counts: dict[str, int] = {}
        snapshots: list[dict[str, object]] = []
        for record in consumer:
            key = record.key.decode() if record.key else ""
            value = json.loads(record.value) if record.value else None
            before = dict(counts)
            if key.startswith("connector-"):
                name = key[len("connector-") :]
                if value is None:
                    counts.pop(name, None)
                else:
                    counts.setdefault(name, 0)
            elif key.startswith("commit-") and isinstance(value, dict):
                name = key[len("commit-") :]
                if name in counts:
                    counts[name] = int(value.get("tasks", 0))
            if counts != before:
                snapshots.append({"offset": record.offset + 1, "connectors": dict(counts)})
            if record.offset + 1 >= end:
                break
    finally:
        consumer.close()
    path = out / "connect-configs.json"
    path.write_text(
        json.dumps(
            {"scheduled.rebalance.max.delay.ms": max_delay_ms, "snapshots": snapshots}, indent=1
        )
        + "\n"
    )
    return path
