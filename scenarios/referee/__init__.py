"""Kafka as referee: a run's leader assignments replayed through Kafka's own classes.

``groupsim chaos --referee kafka`` and ``groupsim check --referee kafka`` hand every Connect
leader assignment of a run (the ``assignor`` records and the ``inputs`` they carry) to Kafka's
``EagerAssignor`` / ``IncrementalCooperativeAssignor`` in the oracle harness
(``tests/kafka_oracle``, :mod:`.harness`) and compare the answers; a difference is a
``referee_disagrees`` violation (:mod:`.connect`). One harness JVM per process
(:func:`oracle`), started on first use and stopped at exit (or when its parent dies: the JVM
ends when its stdin closes); a run's rounds go to it as one batch.

Runs after the simulation over the finished log, so it sits beside ``check``: it imports only
``eventlog`` (and the pure ``protocol`` codecs).
"""

from __future__ import annotations

import atexit
import os
import tempfile
from pathlib import Path

from scenarios.referee.connect import REFEREE_INVARIANT, RefereeVerdict, judge_connect
from scenarios.referee.harness import (
    KafkaOracle,
    OracleUnavailable,
    build,
    is_built,
    java_command,
    requested_version,
    unavailable_reason,
)

__all__ = [
    "REFEREES",
    "REFEREE_INVARIANT",
    "RefereeVerdict",
    "OracleUnavailable",
    "judge",
    "oracle",
    "prepare",
    "stop",
]

#: The referees ``--referee`` accepts.
REFEREES = ("kafka",)

_MAIN = "groupsim.oracle.Main"
_state: dict[str, KafkaOracle] = {}
_logs: list[Path] = []


def prepare() -> None:
    """Builds the harness once (in the campaign's parent process, before its workers start).

    Raises:
        OracleUnavailable: one line: no Java/Maven, no harness sources, or Maven failed.
    """
    reason = unavailable_reason()
    if reason:
        raise OracleUnavailable(f"the Kafka referee cannot run: {reason}")
    if is_built(requested_version()):
        return
    try:
        build(requested_version())
    except OracleUnavailable as e:
        raise OracleUnavailable(f"the Kafka referee cannot run: {e}") from None


def oracle() -> KafkaOracle:
    """This process's harness JVM (started on first use from the harness :func:`prepare`
    built; builds it if nobody did).

    Raises:
        OracleUnavailable: the harness cannot be built or started.
    """
    running = _state.get("oracle")
    if running is not None:
        return running
    version = requested_version()
    try:
        command = java_command(_MAIN, version)
    except FileNotFoundError:
        prepare()
        command = java_command(_MAIN, version)
    handle, name = tempfile.mkstemp(prefix="groupsim-referee-", suffix=".log")
    os.close(handle)
    _logs.append(Path(name))
    running = _state["oracle"] = KafkaOracle(command, _logs[-1])
    atexit.register(stop)
    return running


def stop() -> None:
    """Stops this process's harness JVM if it runs (also done at exit)."""
    running = _state.pop("oracle", None)
    if running is not None:
        running.close()
    for log in _logs:
        log.unlink(missing_ok=True)


def judge(records: list[dict[str, object]]) -> RefereeVerdict:
    """Kafka's verdict on a finished run's log (Connect runs; a Streams log has nothing to
    judge yet and gets an empty verdict). Violations are returned, not added to the log.

    Raises:
        OracleUnavailable: the harness cannot be built or started, or its JVM died.
    """
    if not any(r.get("kind") == "assignor" for r in records):
        return RefereeVerdict()
    return judge_connect(oracle(), records)
