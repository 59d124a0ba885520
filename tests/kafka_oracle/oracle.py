"""The Python end of the Kafka oracle: builds the Maven harness once and talks to its JVM.

The harness (``tests/kafka_oracle/pom.xml`` and ``src/``) drives Kafka's released classes —
Connect's assignors and codecs, Streams' assignors and codecs, the classic group coordinator,
the consumer's assignors — and answers JSON lines on stdin/stdout. One JVM serves a whole test
session (``kafka_oracle`` fixture in ``tests/conftest.py``), so JVM start-up is paid once.

The Kafka version is pinned in ``pom.xml`` (property ``kafka.version``) and nowhere else;
``GROUPSIM_KAFKA_VERSION=4.4.0`` builds and runs the harness against another release.

A machine without Java or Maven cannot run the oracle: :func:`unavailable_reason` says why in
one line and the ``kafka`` tests skip with it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

HARNESS = Path(__file__).resolve().parent
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
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        return f"Kafka oracle tests skipped: no {' or '.join(missing)} on PATH"
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
    return command("groupsim.oracle.Main", version)


def command(main_class: str, version: str | None = None) -> list[str]:
    """The JVM command running ``main_class`` on the built harness's class path (after
    :func:`build` for the same ``version``; e.g. ``groupsim.oracle.JavaConsumerClient``)."""
    target = _target_dir(version)
    classpath = (target / "classpath.txt").read_text().strip()
    return ["java", "-Xss8m", "-cp", f"{target / 'classes'}{os.pathsep}{classpath}", main_class]


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

    Not thread-safe: one request at a time, as the tests make them.
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
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._next_id += 1
        request = {"id": self._next_id, "op": op, **fields}
        try:
            self._proc.stdin.write(json.dumps(request).encode() + b"\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except BrokenPipeError as e:
            raise OracleUnavailable(f"the oracle JVM exited (see {self._log.name})") from e
        if not line:
            raise OracleUnavailable(f"the oracle JVM exited (see {self._log.name})")
        answer = json.loads(line)
        if answer.get("id") != self._next_id:
            raise OracleUnavailable(f"answer out of turn: {line[:200]!r}")
        if not answer["ok"]:
            raise OracleError(op, answer["error"], answer.get("trace", ""))
        return answer["result"]

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
