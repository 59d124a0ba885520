"""JVMs of OLDER Kafka releases for real-cluster runs that mix releases (a rolling upgrade).

The harness (``tests/kafka_oracle/pom.xml``) is built against one release (4.0.2 or 4.4.0) and
its code needs that API. A process of an older release runs a small module of its own under
``tests/kafka_oracle/releases/<module>/`` (a ``pom.xml`` taking ``-Dkafka.version`` and the
code that compiles against that release's API), built with Maven into
``releases/<module>/target/<release>/`` (``classes`` and the runtime ``classpath.txt``, one
directory per release, side by side), so each JVM has that release's jars alone on its class
path. This is the one place that knows that layout: ``java_command(module, release, main)``;
and, for a release whose jars run as they are, ``dependency_classpath(artifact, release)``.

Modules: ``streams`` (``groupsim.oracle.release.StatefulApp``, the harness's Streams app for
2.7.x, whose ``StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION`` is 8).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from scenarios.referee.harness import OracleUnavailable, unavailable_reason

#: The directory of the per-release modules.
RELEASES = Path(__file__).resolve().parent / "releases"
#: Where :func:`dependency_classpath` keeps the class paths Maven resolved.
RESOLVED = RELEASES / "resolved"
#: Longest a module's Maven build may take (s; the first fetches the release's jars).
BUILD_TIMEOUT_S = 900


def target_dir(module: str, release: str) -> Path:
    """``releases/<module>/target/<release>``: the module's build for that Kafka release."""
    return RELEASES / module / "target" / release


def is_built(module: str, release: str) -> bool:
    """Whether the module is built for ``release`` and newer than its sources."""
    target = target_dir(module, release)
    marker = target / "classpath.txt"
    if not marker.is_file() or not (target / "classes").is_dir():
        return False
    built = marker.stat().st_mtime
    sources = [RELEASES / module / "pom.xml", *(RELEASES / module / "src").rglob("*")]
    return all(p.stat().st_mtime <= built for p in sources if p.is_file())


def build(module: str, release: str) -> None:
    """Builds the module against Kafka ``release`` unless it already is (offline first,
    then online, as the harness's own build).

    Raises:
        OracleUnavailable: Java or Maven missing, an unknown module, or Maven failed.
    """
    reason = unavailable_reason()
    if reason:
        raise OracleUnavailable(reason)
    if not (RELEASES / module / "pom.xml").is_file():
        raise OracleUnavailable(f"no release module {module!r} under {RELEASES}")
    if is_built(module, release):
        return
    base = ["mvn", "-q", "-B", "package", "-DskipTests", f"-Dkafka.version={release}"]
    failure = ""
    for offline in (["-o"], []):
        done = subprocess.run(
            [*base, *offline],
            cwd=RELEASES / module,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        if done.returncode == 0:
            (target_dir(module, release) / "classpath.txt").touch()
            return
        failure = " | ".join((done.stdout + done.stderr).strip().splitlines()[-5:])
    raise OracleUnavailable(f"Maven could not build {module} for Kafka {release}: {failure}")


def java_command(module: str, release: str, main_class: str, heap: str = "") -> list[str]:
    """``java -cp <module classes and release's jars> main_class``, building the module for
    ``release`` first if needed. ``heap``: an ``-Xmx`` value (``"256m"``).

    Raises:
        OracleUnavailable: see :func:`build`.
    """
    build(module, release)
    target = target_dir(module, release)
    classpath = (target / "classpath.txt").read_text().strip()
    return [
        "java",
        *([f"-Xmx{heap}"] if heap else []),
        "-cp",
        f"{target / 'classes'}{os.pathsep}{classpath}",
        main_class,
    ]


def dependency_classpath(artifact: str, version: str) -> str:
    """The class path of ``org.apache.kafka:<artifact>:<version>`` and its dependencies, for a
    JVM of another Kafka release than the harness's (an old Connect worker, an old Streams
    client): ``mvn dependency:build-classpath`` on a pom of that one dependency (plus
    ``slf4j-log4j12``, the logging binding the 2.x scripts put on the class path), written
    once under ``releases/resolved/<artifact>-<version>/`` (:data:`RESOLVED`) and read from
    there afterwards. For a release whose own jars run as they are (an old Connect worker with
    the harness's connector classes); :func:`java_command` is for code built against a release.

    Raises:
        subprocess.CalledProcessError: Maven could not resolve the artifact (e.g. offline).
    """
    where = RESOLVED / f"{artifact}-{version}"
    done = where / "classpath.txt"
    if not done.exists():
        where.mkdir(parents=True, exist_ok=True)
        (where / "pom.xml").write_text(
            '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0'
            "</modelVersion><groupId>groupsim</groupId><artifactId>release</artifactId>"
            "<version>1</version><dependencies>"
            f"<dependency><groupId>org.apache.kafka</groupId><artifactId>{artifact}"
            f"</artifactId><version>{version}</version></dependency>"
            "<dependency><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId>"
            "<version>1.7.26</version></dependency></dependencies></project>\n"
        )
        subprocess.run(
            ["mvn", "-q", "-B", "dependency:build-classpath", "-Dmdep.outputFile=part.txt"],
            cwd=where,
            check=True,
            capture_output=True,
            timeout=600,
        )
        (where / "part.txt").rename(done)
    return done.read_text().strip()
