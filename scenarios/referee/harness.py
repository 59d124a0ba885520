"""The one client of the Kafka oracle harness: builds the Maven harness and talks to its JVM.

The harness (``tests/kafka_oracle/pom.xml`` and ``src/``) drives Kafka's released classes —
Connect's assignors and codecs, Streams' assignors and codecs, the classic group coordinator,
the consumer's assignors — and answers JSON lines ``{"id", "op": "<area>.<verb>", ...}`` on
stdin/stdout. Two users share this module: the differential tests (``tests/kafka_oracle/
oracle.py`` re-exports it; one JVM per pytest session) and the chaos referee
(:mod:`scenarios.referee`; one JVM per campaign worker process). The harness sources ship with
a source checkout only: an installed groupsim without ``tests/kafka_oracle`` has no referee
(:func:`unavailable_reason` says so).

The Kafka version is pinned in ``pom.xml`` (property ``kafka.version``) and nowhere else;
``GROUPSIM_KAFKA_VERSION=4.4.0`` builds and runs the harness against another release.

A machine without Java or Maven cannot run the oracle: :func:`unavailable_reason` says why in
one line.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The harness sources (a source checkout's ``tests/kafka_oracle``).
HARNESS = Path(__file__).resolve().parents[2] / "tests" / "kafka_oracle"
#: Environment variable naming another Kafka release to build against (e.g. ``4.4.0``).
VERSION_ENV = "GROUPSIM_KAFKA_VERSION"
#: Longest a build may take (the first one downloads Kafka's jars from Maven Central).
BUILD_TIMEOUT_S = 900
#: Longest one request may take before the oracle is declared hung.
CALL_TIMEOUT_S = 600


class OracleUnavailable(RuntimeError):
    """The harness could not be built or started (no Java/Maven, no network for Maven, …)."""


class OracleError(RuntimeError):
    """Kafka's classes raised for a request: ``java_class`` and ``message`` say what.

    Differential tests compare this with groupsim's own error where Kafka rejects an input.
    """

    def __init__(self, op: str, error: str, trace: str) -> None:
        super().__init__(f"{op}: {error}")
        self.op = op
        self.java_class, _, self.message = error.partition(": ")
        self.trace = trace


def unavailable_reason() -> str | None:
    """One line saying why the oracle cannot run on this machine, or None when it can."""
    if not (HARNESS / "pom.xml").is_file():
        return f"the Kafka oracle harness is not here ({HARNESS}: a source checkout has it)"
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        return f"no {' or '.join(missing)} on PATH (the Kafka oracle needs a JDK and Maven)"
    return None


def requested_version() -> str | None:
    """The Kafka version asked for through ``GROUPSIM_KAFKA_VERSION``, or None for the pin."""
    return os.environ.get(VERSION_ENV) or None


def build(version: str | None = None) -> list[str]:
    """Builds the harness with Maven and returns the command that starts its JVM.

    Tries offline first (every jar already in ``~/.m2``), then online. The build directory is
    ``target/<version>``, so builds for two Kafka releases sit side by side.

    Raises:
        OracleUnavailable: Java or Maven missing, or Maven failed (its last lines are included).
    """
    reason = unavailable_reason()
    if reason:
        raise OracleUnavailable(reason)
    props = [f"-Dkafka.version={version}"] if version else []
    base = ["mvn", "-q", "-B", "package", "-DskipTests", *props]
    failure = ""
    for offline in (["-o"], []):
        done = subprocess.run(
            [*base, *offline],
            cwd=HARNESS,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        if done.returncode == 0:
            break
        failure = " | ".join((done.stdout + done.stderr).strip().splitlines()[-5:])
    else:
        raise OracleUnavailable(f"Maven could not build the Kafka oracle: {failure}")
    # Maven leaves an unchanged classpath.txt as it was: touch it, so is_built sees this build
    (_target_dir(version) / "classpath.txt").touch()
    return java_command("groupsim.oracle.Main", version)


def is_built(version: str | None = None) -> bool:
    """Whether the harness for ``version`` (or the pin) is built and newer than its sources
    (``pom.xml`` and ``src/``), so :func:`build` can be skipped."""
    target = _target_dir(version)
    marker = target / "classpath.txt"
    if not marker.is_file() or not (target / "classes").is_dir():
        return False
    built = marker.stat().st_mtime
    sources = [HARNESS / "pom.xml", *(HARNESS / "src").rglob("*")]
    return all(p.stat().st_mtime <= built for p in sources if p.is_file())


def java_command(main_class: str, version: str | None = None, heap: str = "") -> list[str]:
    """``java -cp <harness classes and Kafka's jars> main_class`` for a built harness
    (:func:`build` first). ``heap`` is an ``-Xmx`` value, e.g. ``"512m"``."""
    target = _target_dir(version)
    classpath = (target / "classpath.txt").read_text().strip()
    memory = [f"-Xmx{heap}"] if heap else []
    return [
        "java",
        "-Xss8m",
        *memory,
        "-cp",
        f"{target / 'classes'}{os.pathsep}{classpath}",
        main_class,
    ]


def _target_dir(version: str | None) -> Path:
    return HARNESS / "target" / (version or _pinned_version())


def _pinned_version() -> str:
    """``kafka.version`` from ``pom.xml`` (read, not copied, so the pin stays in one place)."""
    import xml.etree.ElementTree as ET

    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = ET.parse(HARNESS / "pom.xml").getroot().find("m:properties/m:kafka.version", ns)
    if node is None or not node.text:
        raise OracleUnavailable("pom.xml has no kafka.version property")
    return node.text.strip()


def b64(data: bytes) -> str:
    """Bytes as the oracle's JSON carries them (base64, Jackson's ``byte[]`` form)."""
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    """The inverse of :func:`b64`."""
    return base64.b64decode(text)


class KafkaOracle:
    """One running harness JVM.

    ``call(op, **fields)`` sends ``{"op": op, **fields}`` and returns the ``result``; Kafka's
    exceptions come back as :class:`OracleError`. ``compared`` counts, per label, the examples
    a differential test found equal (printed at the end of the pytest run).

    Not thread-safe: one caller at a time (a batch of :meth:`call_many` counts as one).
    """

    def __init__(self, command: list[str], log_path: Path) -> None:
        self._log = log_path.open("wb")
        self._proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            start_new_session=True,
        )
        self._next_id = 0
        self.compared: Counter[str] = Counter()
        info = self.call("version")
        self.version: str = info["kafka"]
        self.commit: str = info["commit"]

    @property
    def pid(self) -> int:
        """The JVM's process id (the fixture stops it by this pid)."""
        return self._proc.pid

    def call(self, op: str, **fields: Any) -> Any:
        """Sends one request and waits for its answer.

        Raises:
            OracleError: Kafka's classes threw (``java_class``, ``message``).
            OracleUnavailable: the JVM died or answered out of turn.
        """
        answer = self.call_many([(op, fields)])[0]
        if isinstance(answer, OracleError):
            raise answer
        return answer

    def call_many(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Sends a batch of ``(op, fields)`` requests at once and returns their answers in
        order: each a ``result``, or the :class:`OracleError` Kafka's classes raised for it
        (returned, not raised, so one failing request does not hide the others' answers).

        The requests are written by a helper thread while this one reads the answers, so a
        batch larger than the pipes' buffers cannot deadlock; the JVM answers in order.

        Raises:
            OracleUnavailable: the JVM died or answered out of turn.
        """
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        first = self._next_id + 1
        self._next_id += len(requests)
        lines = [
            json.dumps({"id": first + i, "op": op, **fields}).encode() + b"\n"
            for i, (op, fields) in enumerate(requests)
        ]
        failed: list[BaseException] = []

        def write() -> None:
            try:
                assert proc.stdin is not None
                for line in lines:
                    proc.stdin.write(line)
                proc.stdin.flush()
            except (BrokenPipeError, OSError) as e:  # read below notices the dead JVM
                failed.append(e)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        answers: list[Any] = []
        try:
            for i, (op, _) in enumerate(requests):
                line = proc.stdout.readline()
                if not line:
                    raise OracleUnavailable(f"the oracle JVM exited (see {self._log.name})")
                answer = json.loads(line)
                if answer.get("id") != first + i:
                    raise OracleUnavailable(f"answer out of turn: {line[:200]!r}")
                if answer["ok"]:
                    answers.append(answer["result"])
                else:
                    answers.append(OracleError(op, answer["error"], answer.get("trace", "")))
        finally:
            writer.join()
        return answers

    def close(self) -> None:
        """Stops the JVM (closing stdin ends it; a kill by pid if it does not go)."""
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait(timeout=10)
        self._log.close()


def start(log_dir: Path) -> KafkaOracle:
    """Builds the harness for :func:`requested_version` (or the pin) and starts its JVM."""
    command = build(requested_version())
    return KafkaOracle(command, log_dir / "kafka-oracle.log")
