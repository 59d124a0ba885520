"""The Streams referee: every leader's task assignment replayed through Kafka's assignors.

Each ``streams_assignment`` record carries the leader's ``inputs``
(``scenarios/eventlog/kinds_streams.py``: ``StreamsAssignorInputs``): the clients as the
leader's ``ClientState``s held them before the assignor ran (capacity, rack, tags, previous
active and standby tasks), the topology (stateful/stateless tasks, subtopologies, partition
racks) and the assignment configs; the lags are the record's ``lags``. Together they are a
``groupsim assign`` ``high_availability`` document (docs/cli-contracts.md), which goes to the
oracle harness's ``streams.assign`` (``GroupsimStreamsDriver``: Kafka's
``HighAvailabilityTaskAssignor``, with its ``DefaultStandbyTaskAssignor`` /
``ClientTagAwareStandbyTaskAssignor`` and, under KIP-925, its ``RackAwareTaskAssignor``).
Kafka's answer — per client its active and standby tasks, and whether a probing rebalance is
needed — must equal the record's ``clients`` and ``probing_rebalance_needed``; where
rack-aware optimisation ran, also its ``cost``.

**Several optima.** groupsim's rack-aware optimiser solves its min-cost flows with OR-Tools by
default, which may return another optimum than Kafka's cycle-cancelling algorithm
(docs/fidelity.md). Where the leader's answer differs from Kafka's and rack-aware optimisation
ran, the round is replayed through groupsim's own assignor twice: with the leader's solver it
must give the leader's answer back (the inputs are complete), and with Kafka's algorithm
(``solver="cycle_cancelling"``) it must give Kafka's answer; the round then counts as compared
(and in :attr:`RefereeVerdict.skipped` under ``other_optimum``, as information).

Not judged (counted in :attr:`RefereeVerdict.skipped`): version-probing rounds
(``version_probing``: Kafka groups future clients under a random ``FUTURE_ID``, so their
order is not reproducible) and records without ``inputs`` (``no_inputs``: logs written before
they existed). What the leader derived from the subscriptions (previous tasks from owned
partitions and offset sums, lags from the changelog end offsets) is input here, not judged:
the codecs are compared with Kafka's by the differential tests (tests/kafka_oracle).
"""

from __future__ import annotations

from typing import Any

from scenarios.referee.harness import KafkaOracle, OracleError
from scenarios.referee.verdict import RefereeVerdict, Round, replay

__all__ = ["judge_streams", "streams_document"]


def streams_document(rec: dict[str, Any]) -> dict[str, Any]:
    """The ``groupsim assign`` document of a ``streams_assignment`` record with ``inputs``:
    the leader's task-assignor input (shape: docs/cli-contracts.md)."""
    inputs = rec["inputs"]
    lags = rec.get("lags", {})
    return {
        "assignor": "high_availability",
        "config": dict(inputs["config"]),
        "clients": [dict(c, task_lags=dict(lags.get(c["id"], {}))) for c in inputs["clients"]],
        "tasks": inputs["tasks"],
    }


def _logged(rec: dict[str, Any]) -> dict[str, Any]:
    """The record's assignment in the shape of ``streams.assign``'s answer."""
    out: dict[str, Any] = {
        "clients": {
            label: {"active": list(c["active"]), "standby": list(c["standby"])}
            for label, c in sorted(rec["clients"].items())
        },
        "probing_rebalance_needed": rec["probing_rebalance_needed"],
    }
    if "cost" in rec:
        out["cost"] = dict(rec["cost"])
    return out


def _differences(ours: dict[str, Any], theirs: dict[str, Any] | OracleError) -> list[str]:
    """How Kafka's answer differs from the leader's (empty when equal)."""
    if isinstance(theirs, OracleError):
        return [f"Kafka raised {theirs.java_class}: {theirs.message}"]
    out: list[str] = []
    for label in sorted(set(ours["clients"]) | set(theirs["clients"])):
        a = ours["clients"].get(label)
        b = theirs["clients"].get(label)
        if a is None or b is None:
            out.append(f"client {label}: groupsim {a}, Kafka {b}")
            continue
        for role in ("active", "standby"):
            if a[role] != b[role]:
                out.append(f"{label} {role}: groupsim {a[role]}, Kafka {b[role]}")
    for key in ("probing_rebalance_needed", "cost"):
        if ours.get(key) != theirs.get(key):
            out.append(f"{key}: groupsim {ours.get(key)}, Kafka {theirs.get(key)}")
    return out


def _another_optimum(doc: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Whether a rack-aware round's difference is only the optimiser's choice among optima:
    groupsim's assignor on the logged inputs gives the leader's answer back with the leader's
    solver and Kafka's answer with Kafka's algorithm (module doc)."""
    if "cost" not in ours and "cost" not in theirs:
        return False
    from scenarios.assign.streams import run_assign_streams

    try:
        again = run_assign_streams(doc)
        exact = run_assign_streams(doc, solver="cycle_cancelling")
    except ValueError:  # StreamsAssignInputError: the logged inputs are not a valid document
        return False
    return again == ours and exact == theirs


def judge_streams(oracle: KafkaOracle, records: list[dict[str, Any]]) -> RefereeVerdict:
    """Replays every ``streams_assignment`` record of ``records`` that has ``inputs`` through
    Kafka (one batch) and returns the verdict.

    Raises:
        scenarios.referee.harness.OracleUnavailable: the JVM died.
    """
    verdict = RefereeVerdict(kafka=oracle.version)
    rounds: list[Round] = []
    for rec in records:
        if rec.get("kind") != "streams_assignment":
            continue
        if not rec.get("inputs"):
            verdict.skipped["no_inputs"] += 1
            continue
        if rec.get("version_probing"):
            verdict.skipped["version_probing"] += 1
            continue
        rounds.append((rec, ("streams.assign", {"input": streams_document(rec)})))

    def differences(rec: dict[str, Any], fields: dict[str, Any], theirs: Any) -> list[str]:
        ours = _logged(rec)
        diff = _differences(ours, theirs)
        other = diff and not isinstance(theirs, OracleError)
        if other and _another_optimum(fields["input"], ours, theirs):
            verdict.skipped["other_optimum"] += 1
            return []
        return diff

    return replay(oracle, verdict, rounds, differences, lambda rec: "HighAvailabilityTaskAssignor")
