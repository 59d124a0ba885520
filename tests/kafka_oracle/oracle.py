"""The differential tests' handle on the Kafka oracle: the product's one harness client
(:mod:`scenarios.referee.harness`, shared with ``groupsim chaos --referee kafka``) under the
names the tests import, and the skip line the ``kafka`` tests print.

One JVM serves a whole test session (``kafka_oracle`` fixture in ``tests/conftest.py``), so JVM
start-up is paid once.
"""

from __future__ import annotations

from scenarios.referee import harness
from scenarios.referee.harness import (
    BUILD_TIMEOUT_S,
    CALL_TIMEOUT_S,
    HARNESS,
    VERSION_ENV,
    KafkaOracle,
    OracleError,
    OracleUnavailable,
    _pinned_version,
    b64,
    build,
    java_command,
    requested_version,
    start,
    unb64,
)

__all__ = [
    "BUILD_TIMEOUT_S",
    "CALL_TIMEOUT_S",
    "HARNESS",
    "VERSION_ENV",
    "KafkaOracle",
    "OracleError",
    "OracleUnavailable",
    "_pinned_version",
    "b64",
    "build",
    "java_command",
    "requested_version",
    "start",
    "unavailable_reason",
    "unb64",
]


def unavailable_reason() -> str | None:
    """One line saying why the ``kafka`` tests skip on this machine, or None when they run."""
    reason = harness.unavailable_reason()
    return f"Kafka oracle tests skipped: {reason}" if reason else None
