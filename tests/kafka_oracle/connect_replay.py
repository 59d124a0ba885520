"""Replays one Connect assignment case through groupsim's assignors and through Kafka's.

A *case* is plain JSON (the regression files under ``regressions/connect/`` are cases)::

    {"assignor": "eager" | "incremental_cooperative",
     "protocol": "default" | "compatible" | "sessioned",     # the JoinGroup protocol name
     "max_delay_ms": 300000,                                 # scheduled.rebalance.max.delay.ms
     "rounds": [
       {"leader": "w1", "generation": 2, "last_completed_generation": 1, "now_ms": 0,
        "snapshot": {"offset": 3, "connectors": {"a": 2}},       # the leader's cached config
        "fresh_snapshot": {"offset": 4, "connectors": {...}},    # optional: configFreshSnapshot
        "members": {"w1": <subscription>, ...}}]}                # JoinGroup order

where ``<subscription>`` is the ``groupsim codec`` JSON of the member's metadata
(:func:`protocol.connect_json.subscription_to_json`: version, url, config_offset and from
v1 the embedded ``allocation``). Each round's metadata bytes are encoded once by groupsim and
the same bytes go to both sides.

Both sides keep one assignor per leader id for the whole case (each Kafka worker's
``WorkerCoordinator`` builds its own), so a worker leading for the first time starts clean and
one that leads again resumes its state. Kafka's side lives in the oracle JVM under a session
name; :func:`compare_case` drops it at the end.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import count
from typing import Any

from members.assignors import ConfigSnapshot, ConnectAssignor, create_assignor
from protocol.connect import ConnectProtocol
from protocol.connect_codec import decode_assignment_v0, decode_assignment_v1, encode_subscription
from protocol.connect_json import assignment_to_json, subscription_from_json
from tests.kafka_oracle.oracle import KafkaOracle, OracleError, b64, unb64

__all__ = ["Mismatch", "compare_case", "RoundOutcome", "run_groupsim_round"]

_sessions = count(1)


class Mismatch(AssertionError):
    """groupsim and Kafka answered one round of a case differently; the message says how and
    carries the case up to that round as JSON (ready to keep as a regression file)."""


class RoundOutcome:
    """What one side answered for a round: ``assignments`` (member → bytes) and the offset of
    the snapshot the leader holds afterwards, or ``error`` (a one-line description)."""

    __slots__ = ("assignments", "snapshot_offset", "error")

    def __init__(
        self,
        assignments: dict[str, bytes] | None = None,
        snapshot_offset: int | None = None,
        error: str | None = None,
    ) -> None:
        self.assignments = assignments
        self.snapshot_offset = snapshot_offset
        self.error = error


def _snapshot(doc: dict[str, Any]) -> ConfigSnapshot:
    return ConfigSnapshot(int(doc["offset"]), {c: int(n) for c, n in doc["connectors"].items()})


def member_bytes(rnd: dict[str, Any]) -> list[tuple[str, bytes]]:
    """The round's ``(member id, metadata bytes)`` in JoinGroup order (encoded by groupsim)."""
    return [(m, encode_subscription(subscription_from_json(s))) for m, s in rnd["members"].items()]


def run_groupsim_round(
    assignors: dict[str, ConnectAssignor],
    case: dict[str, Any],
    rnd: dict[str, Any],
    members: list[tuple[str, bytes]],
    factory: Callable[..., ConnectAssignor] = create_assignor,
) -> RoundOutcome:
    """One round through groupsim's assignor of the round's leader (built on first use)."""
    leader = rnd["leader"]
    assignor = assignors.get(leader)
    if assignor is None:
        assignor = assignors[leader] = factory(case["assignor"], max_delay_ms=case["max_delay_ms"])
    snapshot = _snapshot(rnd["snapshot"])
    fresh = _snapshot(rnd["fresh_snapshot"]) if rnd.get("fresh_snapshot") else snapshot
    try:
        result = assignor.perform_assignment(
            leader_id=leader,
            protocol=ConnectProtocol.from_protocol_name(case["protocol"]),
            members=members,
            snapshot=snapshot,
            refresh_snapshot=lambda: fresh,
            last_completed_generation=rnd["last_completed_generation"],
            generation=rnd["generation"],
            now_ms=rnd["now_ms"],
        )
    except Exception as exc:  # compared with Kafka's exception below
        return RoundOutcome(error=f"{type(exc).__name__}: {exc}")
    held = result.snapshot.offset if result.snapshot is not None else snapshot.offset
    return RoundOutcome(dict(result.assignments), held)


def run_kafka_round(
    oracle: KafkaOracle,
    session: str,
    case: dict[str, Any],
    rnd: dict[str, Any],
    members: list[tuple[str, bytes]],
) -> RoundOutcome:
    """One round through Kafka's assignor of the round's leader (in the oracle's session)."""
    try:
        out = oracle.call(
            "connect.assign",
            session=session,
            leader=rnd["leader"],
            protocol=case["protocol"],
            max_delay_ms=case["max_delay_ms"],
            members=[[m, b64(md)] for m, md in members],
            snapshot=rnd["snapshot"],
            fresh_snapshot=rnd.get("fresh_snapshot"),
            last_completed_generation=rnd["last_completed_generation"],
            generation=rnd["generation"],
            now_ms=rnd["now_ms"],
        )
    except OracleError as exc:
        return RoundOutcome(error=f"{exc.java_class}: {exc.message}")
    assignments = {m: unb64(v) for m, v in out["assignments"].items()}
    return RoundOutcome(assignments, out["snapshot_offset"])


def decoded(data: bytes, protocol: str) -> dict[str, Any]:
    """An assignment's bytes as ``groupsim codec`` JSON (for failure messages)."""
    reader = decode_assignment_v0 if protocol == "default" else decode_assignment_v1
    return assignment_to_json(reader(data))


def differences(ours: RoundOutcome, kafka: RoundOutcome, protocol: str) -> list[str]:
    """Human-readable differences between the two outcomes of a round (empty when equal).

    Errors are equal when both sides raised (the exception classes differ by language; each
    side's message is shown when only one raised).
    """
    if ours.error is not None or kafka.error is not None:
        if ours.error is not None and kafka.error is not None:
            return []
        return [f"groupsim: {ours.error or 'assignments'}; Kafka: {kafka.error or 'assignments'}"]
    assert ours.assignments is not None and kafka.assignments is not None
    out: list[str] = []
    if set(ours.assignments) != set(kafka.assignments):
        out.append(
            f"members differ: groupsim {sorted(ours.assignments)}, "
            f"Kafka {sorted(kafka.assignments)}"
        )
    for m in ours.assignments:
        theirs = kafka.assignments.get(m)
        if theirs is not None and theirs != ours.assignments[m]:
            out.append(
                f"member {m!r}:\n  groupsim {json.dumps(decoded(ours.assignments[m], protocol))}"
                f"\n  Kafka    {json.dumps(decoded(theirs, protocol))}"
            )
    if ours.snapshot_offset != kafka.snapshot_offset:
        out.append(
            f"leader snapshot afterwards: groupsim offset {ours.snapshot_offset}, "
            f"Kafka {kafka.snapshot_offset}"
        )
    return out


def compare_case(
    oracle: KafkaOracle,
    case: dict[str, Any],
    factory: Callable[..., ConnectAssignor] = create_assignor,
) -> list[RoundOutcome]:
    """Runs every round of ``case`` through both sides and returns groupsim's outcomes.

    ``factory`` builds groupsim's assignors (``create_assignor``; the planted-bug test passes
    a broken one).

    Raises:
        Mismatch: the first round where the two sides differ, with the case so far as JSON.
    """
    session = f"case-{next(_sessions)}"
    ours_by_leader: dict[str, ConnectAssignor] = {}
    outcomes = []
    try:
        for i, rnd in enumerate(case["rounds"]):
            members = member_bytes(rnd)
            ours = run_groupsim_round(ours_by_leader, case, rnd, members, factory)
            kafka = run_kafka_round(oracle, session, case, rnd, members)
            diff = differences(ours, kafka, case["protocol"])
            if diff:
                so_far = dict(case, rounds=case["rounds"][: i + 1])
                raise Mismatch(
                    f"groupsim and Kafka {oracle.version} differ in round {i} "
                    f"(leader {rnd['leader']!r}):\n"
                    + "\n".join(diff)
                    + "\ncase:\n"
                    + json.dumps(so_far, indent=1, ensure_ascii=False)
                )
            outcomes.append(ours)
    finally:
        oracle.call("connect.reset", session=session)
    return outcomes
