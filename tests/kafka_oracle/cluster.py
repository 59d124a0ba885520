"""Real Kafka processes for the real-cluster tests: a single-node KRaft broker on loopback,
or a cluster of several (:func:`kafka_cluster`, whose group coordinator can be stopped).

The broker is Kafka's own (``kafka.Kafka`` from the ``kafka_2.13`` artifact on the harness's
class path, the version pinned in ``pom.xml``), with fresh KRaft storage formatted per run in a
temporary directory, listening on free loopback ports. Every wait is bounded, and the broker is
stopped by its pid (SIGTERM, then SIGKILL) when the ``with`` block ends, also when a test fails.
"""

from __future__ import annotations

import base64
import contextlib
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

from tests.kafka_oracle import releases
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


# --------------------------------------------------------------------------------------------
# A cluster of several KRaft nodes
# --------------------------------------------------------------------------------------------


@dataclass
class Node:
    """One node of a :class:`Cluster`: its ``node.id``, client port, config and log; ``proc`` is
    None while it is stopped."""

    node_id: int
    port: int
    config: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class Cluster:
    """A running cluster of :func:`kafka_cluster`: ``nodes`` by ``node.id`` (1, 2, 3, ...)."""

    nodes: dict[int, Node]
    version: str

    @property
    def bootstrap(self) -> str:
        """Every running node, comma-separated (what ``bootstrap.servers`` takes)."""
        return ",".join(n.address for n in self.nodes.values() if n.running)

    def node_at(self, port: int) -> Node:
        """The node listening for clients on ``port``."""
        return next(n for n in self.nodes.values() if n.port == port)

    def coordinator(self, group_id: str, timeout_s: float = 60) -> Node:
        """The node that coordinates ``group_id`` now (``FindCoordinator`` v1, key type 0, to
        each running node in turn until one answers without error naming a running node: after
        a node stops, the others keep naming it until the controller has fenced it).

        Raises:
            RuntimeError: no running node named a coordinator within ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        last = ""
        while True:
            for node in self.nodes.values():
                if not node.running:
                    continue
                try:
                    error, node_id = find_coordinator(node.port, group_id)
                except OSError as exc:
                    last = f"node {node.node_id}: {exc}"
                    continue
                if error == 0 and node_id in self.nodes and self.nodes[node_id].running:
                    return self.nodes[node_id]
                last = f"node {node.node_id} answered error {error}"
            if time.monotonic() > deadline:
                raise RuntimeError(f"no coordinator for {group_id!r} in time: {last}")
            time.sleep(0.25)

    def stop(self, node_id: int, clean: bool = False) -> None:
        """Stops one node by its pid: SIGKILL (a crash: no controlled shutdown, its partitions'
        leadership moves when the controller fences it after ``broker.session.timeout.ms``), or
        with ``clean`` SIGTERM (controlled shutdown: leadership moves at once), then SIGKILL if it
        has not gone in 20 s."""
        node = self.nodes[node_id]
        if node.proc is None:
            return
        if clean:
            _stop(node.proc)
        elif node.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.proc.pid, signal.SIGKILL)
            node.proc.wait(timeout=30)
        node.proc = None

    def start(self, node_id: int) -> None:
        """(Re)starts one node on its existing storage and waits until it listens.

        Raises:
            RuntimeError: it exited or did not listen within :data:`START_TIMEOUT_S`.
        """
        node = self.nodes[node_id]
        if node.running:
            return
        with node.log.open("ab") as out:
            node.proc = subprocess.Popen(
                [*java_command("kafka.Kafka", self.version, heap="512m"), str(node.config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _wait_listening(node.proc, node.port, node.log, f"node {node_id}")

    def stop_all(self) -> None:
        """Stops every node by its pid with SIGKILL (the storage is thrown away, and a
        controlled shutdown with the quorum going away can wait for minutes)."""
        for node_id in self.nodes:
            self.stop(node_id)


def find_coordinator(port: int, group_id: str, timeout_s: float = 10) -> tuple[int, int]:
    """Asks the broker at ``127.0.0.1:port`` which node coordinates ``group_id``:
    ``(error code, node id)`` of its ``FindCoordinator`` v1 answer (kio's codecs).

    Raises:
        OSError: the broker did not answer.
    """
    import io

    from kio.schema.find_coordinator.v1.request import FindCoordinatorRequest
    from kio.schema.request_header.v1.header import RequestHeader
    from kio.serial import entity_writer
    from kio.static.primitive import i16, i32

    from scenarios.record.frames import decode_response

    body = io.BytesIO()
    entity_writer(RequestHeader)(
        body,
        RequestHeader(
            request_api_key=i16(10),
            request_api_version=i16(1),
            correlation_id=i32(1),
            client_id="groupsim-test",
        ),
    )
    entity_writer(FindCoordinatorRequest)(body, FindCoordinatorRequest(key=group_id))
    frame = body.getvalue()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(len(frame).to_bytes(4, "big") + frame)
        answer = _receive(sock, int.from_bytes(_receive(sock, 4), "big"))
    _, response = decode_response(answer, 10, 1)
    if response is None:
        raise OSError("the FindCoordinator answer did not decode")
    return int(response.error_code.value), int(response.node_id)


def _receive(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("the broker closed the connection")
        data += chunk
    return data


def _wait_listening(proc: subprocess.Popen[bytes], port: int, log: Path, what: str) -> None:
    """Waits (at most :data:`START_TIMEOUT_S`) until ``port`` accepts connections.

    Raises:
        RuntimeError: the process exited, or did not listen in time (its log's end in the text).
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}): {_tail(log)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not listen in time: {_tail(log)}") from None
            time.sleep(0.25)


@contextmanager
def kafka_cluster(
    workdir: Path, size: int = 3, racks: tuple[str, ...] = (), **settings: str | int
) -> Iterator[Cluster]:
    """A fresh KRaft cluster of ``size`` nodes on loopback for the block, every node in the
    combined ``broker,controller`` role (a ``size``-voter quorum: it keeps a controller while a
    majority runs), node ``i`` in rack ``r<i>`` (``broker.rack``), or in ``racks[i - 1]`` when
    ``racks`` is given.

    ``__consumer_offsets`` has one partition replicated to every node
    (``offsets.topic.replication.factor = size``, ``min.insync.replicas = size - 1``): one
    coordinator for every group, which moves to another replica when its node stops, and group
    records are still written with one node down. The controller fences a node that stopped
    heartbeating after ``broker.session.timeout.ms`` (6 s here, Kafka's default 9 s).

    Every node is stopped by its pid when the block ends, also on failure; storage is formatted
    fresh under ``workdir``.

    Args:
        workdir: an empty directory (one subdirectory per node).
        size: the number of nodes (at least 3 for a coordinator to move with the group kept).
        racks: each node's ``broker.rack`` (node ``i`` in ``racks[i - 1]``; as many as ``size``).
        settings: broker settings for every node on top of the defaults, ``.`` written as ``_``.

    Raises:
        ValueError: ``racks`` given, not one per node.
        tests.kafka_oracle.oracle.OracleUnavailable: the harness cannot be built.
        RuntimeError: a node did not start listening within :data:`START_TIMEOUT_S`.
    """
    if racks and len(racks) != size:
        raise ValueError(f"{len(racks)} racks for {size} nodes")
    version = requested_version()
    build(version)
    ports = {i: (free_port(), free_port()) for i in range(1, size + 1)}
    voters = ",".join(f"{i}@127.0.0.1:{c}" for i, (_, c) in ports.items())
    cluster_id = _cluster_id()
    cluster = Cluster({}, version)
    try:
        for i, (port, controller) in ports.items():
            home = workdir / f"node{i}"
            home.mkdir(parents=True, exist_ok=True)
            values: dict[str, str | int] = {
                "process.roles": "broker,controller",
                "node.id": i,
                "broker.rack": racks[i - 1] if racks else f"r{i}",
                "controller.quorum.voters": voters,
                "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
                "log.dirs": str(home / "data"),
                "offsets.topic.replication.factor": size,
                "offsets.topic.num.partitions": 1,
                "min.insync.replicas": max(1, size - 1),
                "default.replication.factor": size,
                "transaction.state.log.replication.factor": size,
                "transaction.state.log.min.isr": max(1, size - 1),
                "group.min.session.timeout.ms": 500,
                "broker.heartbeat.interval.ms": 1000,
                "broker.session.timeout.ms": 6000,
            }
            values.update({k.replace("_", "."): v for k, v in settings.items()})
            config = home / "server.properties"
            config.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
            subprocess.run(
                [
                    *java_command("kafka.tools.StorageTool", version),
                    "format",
                    "-t",
                    cluster_id,
                    "-c",
                    str(config),
                ],
                check=True,
                capture_output=True,
                timeout=START_TIMEOUT_S,
            )
            cluster.nodes[i] = Node(i, port, config, home / "broker.log")
        for i in cluster.nodes:  # all at once: a quorum needs a majority of voters up
            node = cluster.nodes[i]
            with node.log.open("ab") as out:
                node.proc = subprocess.Popen(
                    [*java_command("kafka.Kafka", version, heap="512m"), str(node.config)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        for node in cluster.nodes.values():
            assert node.proc is not None
            _wait_listening(node.proc, node.port, node.log, f"node {node.node_id}")
        yield cluster
    finally:
        cluster.stop_all()


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
    workdir: Path, bootstrap: str, name: str, release: str | None = None, **settings: str | int
) -> Iterator[Worker]:
    """A real Connect worker (``ConnectDistributed``) of group ``connect-cluster`` for the
    block, bootstrapping from ``bootstrap`` (the recording proxy, in the tests), with the
    harness's ``IdleSourceConnector`` on its class path.

    Args:
        release: a Kafka release to run instead of the harness's (``"2.3.1"``): its
            ``connect-runtime`` (:func:`releases.dependency_classpath`) with the harness's
            classes, logging through log4j 1 at INFO to the worker's log.
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
    for n in range(2, 100):  # a restarted client's new process while the old one closes
        if not log.exists():
            break
        log = workdir / f"{name}-{n}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*_connect_command(workdir, release), str(config)],
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


def _connect_command(workdir: Path, release: str | None) -> list[str]:
    """``java ... ConnectDistributed`` of the harness's Kafka, or of ``release`` (see
    :func:`connect_worker`)."""
    main = "org.apache.kafka.connect.cli.ConnectDistributed"
    command = java_command(main, requested_version(), heap="384m")
    if release is None:
        return command
    log4j = workdir / "log4j-release.properties"
    log4j.write_text(
        "log4j.rootLogger=INFO, out\n"
        "log4j.appender.out=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
    )
    harness = command[command.index("-cp") + 1].split(os.pathsep)[0]  # the harness's classes
    classpath = f"{harness}{os.pathsep}{releases.dependency_classpath('connect-runtime', release)}"
    return [
        "java",
        "-Xss8m",
        "-Xmx384m",
        f"-Dlog4j.configuration=file:{log4j}",
        "-cp",
        classpath,
        main,
    ]


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

    def cut(self, client_id: str, duration_ms: int) -> None:
        """:meth:`scenarios.record.proxy.Proxy.cut` on the proxy's own thread: every connection
        of ``client_id`` (and of ``client_id-*``) is cut off for ``duration_ms`` (wall ms)."""
        import trio

        trio.from_thread.run_sync(self._proxy.cut, client_id, duration_ms, trio_token=self._token)

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
    workdir: Path,
    bootstrap: str,
    name: str,
    release: str | None = None,
    **settings: str | int,
) -> Iterator[StreamsInstance]:
    """A real Kafka Streams instance (application ``stateful``) for the block, bootstrapping
    from ``bootstrap``, with its own state directory under ``workdir``; stopped by its pid at
    the end (SIGTERM, then SIGKILL), also when the test fails.

    Args:
        release: an older Kafka release to run instead of the harness's
            (:mod:`tests.kafka_oracle.releases`' ``streams`` module: ``produce`` and
            ``partitions`` only of the app's own arguments).
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
    for n in range(2, 100):  # a restarted client's new process while the old one closes
        if not log.exists():
            break
        log = workdir / f"{name}-{n}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                *(
                    releases.java_command(
                        "streams", release, "groupsim.oracle.release.StatefulApp", heap="256m"
                    )
                    if release
                    else java_command(
                        "groupsim.oracle.streams.StatefulApp", requested_version(), heap="256m"
                    )
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
