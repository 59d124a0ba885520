"""Kafka as referee: a run's leader assignments replayed through Kafka's own classes.

``groupsim chaos --referee kafka`` and ``groupsim check --referee kafka`` hand every leader
assignment of a run to Kafka's own assignors in the oracle harness (``tests/kafka_oracle``,
:mod:`.harness`) and compare the answers; a difference is a ``referee_disagrees`` violation.
Connect (:mod:`.connect`): the ``assignor`` records and the ``inputs`` they carry go to
``EagerAssignor`` / ``IncrementalCooperativeAssignor``. Streams (:mod:`.streams`): the
``streams_assignment`` records and their ``inputs`` go to ``HighAvailabilityTaskAssignor``.
Plain consumers (:mod:`.consumer`): the ``consumer_assignor`` records and their ``inputs`` go
to ``RangeAssignor`` / ``RoundRobinAssignor`` / ``StickyAssignor`` /
``CooperativeStickyAssignor``. The coordinator (:mod:`.coordinator`): in runs that log its
traffic (``coordinator_request`` / ``coordinator_response`` ..., which chaos with a referee
turns on), every answer is replayed through Kafka's ``GroupMetadataManager``.
:func:`judge` dispatches by record kind, so one function serves ``check`` and every
``chaos`` kind.
One harness JVM per process (:func:`oracle`), started on first use and stopped at exit (or
when its parent dies: the JVM ends when its stdin closes); a run's rounds go to it as one
batch.

Runs after the simulation over the finished log, so it sits beside ``check``: it imports
``eventlog`` records, the pure ``protocol`` codecs, and (Streams, where two optimisers may pick
different optima) groupsim's ``assign`` engine.
"""

from __future__ import annotations

import atexit
import os
import tempfile
from pathlib import Path

from scenarios.referee.connect import judge_connect
from scenarios.referee.consumer import judge_consumer
from scenarios.referee.coordinator import judge_coordinator
from scenarios.referee.harness import (
    KafkaOracle,
    OracleUnavailable,
    build,
    is_built,
    java_command,
    requested_version,
    unavailable_reason,
)
from scenarios.referee.streams import judge_streams
from scenarios.referee.verdict import REFEREE_INVARIANT, RefereeVerdict

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
#: ``kafka``: leader rounds and coordinator answers; ``kafka-leaders``: leader rounds only.
REFEREES = ("kafka", "kafka-leaders")

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


#: Record kind of a leader round → the referee that judges it.
_JUDGES = {
    "assignor": judge_connect,
    "streams_assignment": judge_streams,
    "consumer_assignor": judge_consumer,
    # the coordinator's answers, in runs that log its traffic (scenarios/sim/coordinator_io)
    "coordinator_opened": judge_coordinator,
}


def judge(records: list[dict[str, object]], *, coordinator: bool = True) -> RefereeVerdict:
    """Kafka's verdict on a finished run's log: its Connect ``assignor``, Streams
    ``streams_assignment`` and consumer ``consumer_assignor`` rounds, and, when the run
    logged its coordinator's traffic (``coordinator_opened`` ...), every coordinator answer.
    Violations are returned, not added to the log. ``coordinator=False`` leaves the
    coordinator's answers unjudged (``--referee kafka-leaders``).

    Raises:
        OracleUnavailable: the harness cannot be built or started, or its JVM died.
    """
    kinds = {r.get("kind") for r in records}
    verdict = RefereeVerdict()
    for present, judge_one in _JUDGES.items():
        if present not in kinds or (present == "coordinator_opened" and not coordinator):
            continue
        part = judge_one(oracle(), records)
        verdict.compared += part.compared
        verdict.answers += part.answers
        verdict.skipped.update(part.skipped)
        verdict.notes.update(part.notes)
        verdict.violations.extend(part.violations)
        verdict.kafka = part.kafka
    verdict.violations.sort(key=lambda d: int(d.cause_seq or 0))
    return verdict
