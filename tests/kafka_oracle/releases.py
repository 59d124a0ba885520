"""JVMs of OLDER Kafka releases for real-cluster runs that mix releases (a rolling upgrade).

The harness (``tests/kafka_oracle/pom.xml``) is built against one release (4.0.2 or 4.4.0) and
its code needs that API. A process of an older release runs a small module of its own under
``tests/kafka_oracle/releases/<module>/`` (a ``pom.xml`` taking ``-Dkafka.version`` and the
code that compiles against that release's API), built with Maven into
``releases/<module>/target/<release>/`` (``classes`` and the runtime ``classpath.txt``, one
directory per release, side by side), so each JVM has that release's jars alone on its class
path. This is the one place that knows that layout: ``java_command(module, release, main)``.

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
