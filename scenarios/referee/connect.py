"""The Connect referee: every leader assignment of a log replayed through Kafka's assignors.

Each ``assignor`` record of an ``eager`` or ``incremental_cooperative`` round carries the
leader's ``inputs`` (``scenarios/eventlog/kinds.py``: ``AssignorInputs``). They go to the
oracle harness's ``connect.assign`` (``GroupsimConnectDriver``: Kafka's ``EagerAssignor`` /
``IncrementalCooperativeAssignor.performAssignment`` with a stand-in ``WorkerCoordinator``) and
Kafka's answer, decoded with groupsim's codec, must equal what the record says groupsim's
leader assigned: per member its connectors, tasks, revoked connectors and revoked tasks (in
order), and the round's error, ``delay`` and config offset.

**Assignor state.** Kafka's ``WorkerCoordinator`` builds its assignors once and keeps them for
the worker's lifetime, across member-id changes; so does groupsim's ``ConnectWorker``. The
replay keeps one pair per worker *incarnation* (a ``member_start`` record starts one): the
harness session is the run, the ``assignor_key`` is ``<worker>#<incarnation>``.

Not judged (counted in :attr:`RefereeVerdict.skipped`): KIP-987 ``static`` rounds (Kafka 4.0
has no such assignor) and records without ``inputs`` (logs written before they existed).
"""

from __future__ import annotations

from itertools import count
from typing import Any

from protocol.connect_codec import decode_assignment_v0, decode_assignment_v1
from scenarios.referee.harness import KafkaOracle, OracleError, unb64
from scenarios.referee.verdict import (
    REFEREE_INVARIANT,
    RefereeVerdict,
    Round,
    leader_rounds,
    replay,
)

__all__ = ["REFEREE_INVARIANT", "RefereeVerdict", "judge_connect"]

#: The assignors Kafka has (the referee judges their rounds).
_JUDGED = ("eager", "incremental_cooperative")

_sessions = count(1)


def _work(assignment: Any) -> tuple[list[str], list[str], list[str], list[str]]:
    return (
        list(assignment.connectors),
        [str(t) for t in assignment.tasks],
        list(assignment.revoked_connectors),
        [str(t) for t in assignment.revoked_tasks],
    )


def _logged(rec: dict[str, Any], member_id: str) -> tuple[list[str], ...]:
    got = rec.get("assigned", {}).get(member_id, {})
    gone = rec.get("revoked", {}).get(member_id, {})
    return (
        list(got.get("connectors", [])),
        list(got.get("tasks", [])),
        list(gone.get("connectors", [])),
        list(gone.get("tasks", [])),
    )


_FIELDS = ("connectors", "tasks", "revoked connectors", "revoked tasks")


def _differences(rec: dict[str, Any], fields: dict[str, Any], answer: Any) -> list[str]:
    """How Kafka's answer differs from the record (empty when equal)."""
    if isinstance(answer, OracleError):
        return [f"Kafka raised {answer.java_class}: {answer.message}"]
    decode = decode_assignment_v0 if fields["protocol"] == "default" else decode_assignment_v1
    out: list[str] = []
    header: tuple[int, int, int] | None = None
    for member_id, data in answer["assignments"].items():
        theirs = decode(unb64(data))
        header = (theirs.error, theirs.delay_ms, theirs.config_offset)
        ours = _logged(rec, member_id)
        for name, a, b in zip(_FIELDS, ours, _work(theirs), strict=True):
            if a != b:
                out.append(f"{member_id} {name}: groupsim {a}, Kafka {b}")
    logged = (rec["error"], rec["delay_ms"], rec["config_offset"])
    if header is not None and header != logged:
        out.append(f"(error, delay, config offset): groupsim {logged}, Kafka {header}")
    extra = set(rec.get("assigned", {})) | set(rec.get("revoked", {}))
    extra -= set(answer["assignments"])
    if extra:
        out.append(f"groupsim assigned to non-members {sorted(extra)}")
    return out


def judge_connect(oracle: KafkaOracle, records: list[dict[str, Any]]) -> RefereeVerdict:
    """Replays every judged ``assignor`` record of ``records`` through Kafka (one batch) and
    returns the verdict.

    Raises:
        scenarios.referee.harness.OracleUnavailable: the JVM died.
    """
    verdict = RefereeVerdict(kafka=oracle.version)
    session = f"referee-{next(_sessions)}"
    rounds: list[Round] = []
    for rec, key in leader_rounds(records, "assignor"):
        if rec.get("assignor") not in _JUDGED:
            verdict.skipped[str(rec.get("assignor"))] += 1
            continue
        inputs = rec.get("inputs")
        if not inputs:
            verdict.skipped["no_inputs"] += 1
            continue
        fields = {
            "session": session,
            "assignor_key": key,
            "leader": inputs["leader_id"],
            "protocol": rec["protocol"],
            "max_delay_ms": inputs["max_delay_ms"],
            "members": inputs["members"],
            "snapshot": inputs["snapshot"],
            "fresh_snapshot": inputs.get("fresh_snapshot"),
            "last_completed_generation": inputs["last_completed_generation"],
            "generation": rec["generation"],
            "now_ms": rec["t_ms"],
        }
        rounds.append((rec, ("connect.assign", fields)))
    return replay(
        oracle,
        verdict,
        rounds,
        _differences,
        lambda rec: f"{rec['assignor']} assignor",
        extra=lambda rec: {"leader_id": rec["inputs"]["leader_id"]},
        after=[("connect.reset", {"session": session})],
    )
