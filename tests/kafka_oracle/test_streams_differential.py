"""groupsim's Kafka Streams assignors and codecs against Kafka's own classes.

The same ``groupsim assign`` document (docs/cli-contracts.md) goes to groupsim
(:func:`scenarios.assign.streams.run_assign_streams`) and to Kafka's classes through the oracle
(``GroupsimStreamsDriver``: ``HighAvailabilityTaskAssignor``, ``DefaultStandbyTaskAssignor``,
``ClientTagAwareStandbyTaskAssignor``, ``RackAwareTaskAssignor``). What must agree:

* no rack-aware optimisation ran: every client's active and standby sets and
  ``probing_rebalance_needed``, exactly;
* rack-aware optimisation ran: the cost before and after each optimiser call and the probing
  flag; then the whole assignment once more with groupsim's optimiser on Kafka's own algorithm
  (``solver="cycle_cancelling"``), which must reproduce Kafka's pick among equal optima. The
  default OR-Tools solver may pick another optimum (docs/fidelity.md, "Kafka as the oracle:
  Streams"): for ``rack_aware`` it must reach the same minimum cost, for
  ``high_availability`` nothing more is asked of it, since the standby and stateless steps
  after a different optimum start from a different placement;
* an input one side rejects, the other rejects too.

Codecs: ``SubscriptionInfo`` and ``AssignmentInfo`` bytes for every version 1-11 (Kafka 4.0 and
4.4 both stop at 11), each side decoding the other's bytes to the same fields.

Every example found equal is counted in ``kafka_oracle.compared`` (printed at the end of the
run). ``GROUPSIM_ORACLE_EXAMPLES`` sets the examples per assignor (default 500).
"""

from __future__ import annotations

import copy
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from members.assignors.streams.rack_aware import Solver
from protocol.primitives import EncodeError
from protocol.streams_assignment import decode_assignment, encode_assignment
from protocol.streams_subscription import decode_subscription, encode_subscription
from protocol.streams_types import StreamsAssignment, StreamsSubscription, StreamsTaskId
from protocol.streams_versions import LATEST_SUPPORTED_VERSION
from protocol.topic_partitions import TopicPartition
from scenarios.assign.streams import StreamsAssignInputError, run_assign_streams
from tests.kafka_oracle.oracle import KafkaOracle, OracleError, b64, unb64
from tests.kafka_oracle.streams_inputs import (
    high_availability_inputs,
    rack_aware_inputs,
    standby_inputs,
)
from tests.protocol.test_streams_codec_properties import assignments, subscriptions

pytestmark = pytest.mark.kafka

EXAMPLES = int(os.environ.get("GROUPSIM_ORACLE_EXAMPLES", "500"))
REGRESSIONS = Path(__file__).resolve().parent / "regressions" / "streams"


def _settings(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ----------------------------------------------------------------------------------------------
# The comparison


def groupsim(doc: dict[str, Any], solver: Solver = "ortools") -> dict[str, Any] | Exception:
    """groupsim's answer, or the input error it raised; ``solver`` is the rack-aware
    optimiser's (``"ortools"``, what a Streams leader runs; ``"cycle_cancelling"``, Kafka's
    algorithm)."""
    try:
        return run_assign_streams(copy.deepcopy(doc), solver=solver)
    except StreamsAssignInputError as exc:
        return exc


def kafka(oracle: KafkaOracle, doc: dict[str, Any]) -> dict[str, Any] | Exception:
    """Kafka's answer, or the exception its classes threw."""
    try:
        result: dict[str, Any] = oracle.call("streams.assign", input=doc)
        return result
    except OracleError as exc:
        return exc


def label(doc: dict[str, Any]) -> str:
    """The ``compared`` counter of a document: ``streams <assignor>[ <optimize>]``."""
    return " ".join(["streams", doc["assignor"], *([doc["optimize"]] if "optimize" in doc else [])])


def _rack_aware_may_run(doc: dict[str, Any]) -> bool:
    strategy = doc.get("config", {}).get("rack.aware.assignment.strategy", "none")
    return doc["assignor"] == "rack_aware" or (
        doc["assignor"] == "high_availability" and strategy != "none"
    )


def _same(ours: dict[str, Any] | Exception, theirs: dict[str, Any] | Exception) -> bool:
    if isinstance(ours, Exception) or isinstance(theirs, Exception):
        return isinstance(ours, Exception) and isinstance(theirs, Exception)
    return ours == theirs


def differences(
    oracle: KafkaOracle, doc: dict[str, Any], theirs: dict[str, Any] | Exception | None = None
) -> str | None:
    """Why groupsim and Kafka disagree on ``doc``, or None when they agree (module doc);
    ``theirs`` is Kafka's answer if already asked."""
    ours = groupsim(doc)
    if theirs is None:
        theirs = kafka(oracle, doc)
    if not _rack_aware_may_run(doc):
        if _same(ours, theirs):
            return None
        return f"assignments differ:\ngroupsim {ours!r}\nKafka    {theirs!r}"
    exact = groupsim(doc, solver="cycle_cancelling")
    if not _same(exact, theirs):
        return (
            "groupsim on Kafka's own min-cost-flow algorithm differs:\n"
            f"groupsim {exact!r}\nKafka    {theirs!r}"
        )
    # The default solver may pick another optimum, never another minimum. (Where it rejects
    # instead, its optimum put an active on the client holding that task's standby, which
    # Kafka's ClientState refuses as well when its own pick does so.)
    if (
        doc["assignor"] == "rack_aware"
        and isinstance(ours, dict)
        and isinstance(theirs, dict)
        and ours.get("cost") != theirs.get("cost")
    ):
        return f"optimal costs differ: groupsim {ours.get('cost')}, Kafka {theirs.get('cost')}"
    return None


def check(oracle: KafkaOracle, doc: dict[str, Any]) -> None:
    """Asserts agreement on ``doc`` and counts it (``both reject`` separately)."""
    theirs = kafka(oracle, doc)
    why = differences(oracle, doc, theirs)
    assert why is None, why + "\ninput: " + json.dumps(doc)
    rejected = isinstance(theirs, Exception)
    oracle.compared[label(doc) + (" (both reject)" if rejected else "")] += 1


# ----------------------------------------------------------------------------------------------
# Assignors


@_settings(EXAMPLES)
@given(doc=high_availability_inputs())
def test_high_availability(kafka_oracle: KafkaOracle, doc: dict[str, Any]) -> None:
    check(kafka_oracle, doc)


@_settings(EXAMPLES)
@given(doc=standby_inputs("default_standby"))
def test_default_standby(kafka_oracle: KafkaOracle, doc: dict[str, Any]) -> None:
    check(kafka_oracle, doc)


@_settings(EXAMPLES)
@given(doc=standby_inputs("client_tag_standby"))
def test_client_tag_standby(kafka_oracle: KafkaOracle, doc: dict[str, Any]) -> None:
    check(kafka_oracle, doc)


@_settings(EXAMPLES)
@given(doc=rack_aware_inputs("active_tasks"))
def test_rack_aware_active(kafka_oracle: KafkaOracle, doc: dict[str, Any]) -> None:
    check(kafka_oracle, doc)


@_settings(EXAMPLES)
@given(doc=rack_aware_inputs("standby_tasks"))
def test_rack_aware_standby(kafka_oracle: KafkaOracle, doc: dict[str, Any]) -> None:
    check(kafka_oracle, doc)


def _regressions() -> list[Path]:
    return sorted(REGRESSIONS.glob("*.json"))


@pytest.mark.parametrize("path", _regressions(), ids=lambda p: p.stem)
def test_regression(kafka_oracle: KafkaOracle, path: Path) -> None:
    """Each kept case (a shrunk disagreement) replayed through both. Two shapes:

    * ``{"why", "input": <groupsim assign document>, "kafka": <Kafka's answer then>}``: Kafka
      still answers so, and groupsim agrees (:func:`differences`);
    * ``{"why", "encode_subscription": <driver request>, "kafka_hex"}``: Kafka still writes
      those bytes, and so does groupsim.
    """
    case = json.loads(path.read_text())
    if "input" in case:
        theirs = kafka(kafka_oracle, case["input"])
        assert theirs == case["kafka"], f"{path.name}: Kafka no longer answers as recorded"
        check(kafka_oracle, case["input"])
        return
    request = case["encode_subscription"]
    written = unb64(kafka_oracle.call("streams.encode_subscription", **request))
    assert written.hex() == case["kafka_hex"], f"{path.name}: Kafka no longer writes these bytes"
    sums = {StreamsTaskId(s, p, t): v for s, p, t, v in request["task_offset_sums"]}
    ours = StreamsSubscription(
        version=LATEST_SUPPORTED_VERSION,
        latest_supported_version=request["latest_supported_version"],
        process_id=uuid.UUID(request["process_id"]),
        user_endpoint=request["user_endpoint"],
        task_offset_sums=sums,
        unique_field=request["unique_field"],
        error_code=request["error_code"],
        client_tags=dict(request["client_tags"]),
    )
    assert encode_subscription(ours, request["version"]).hex() == case["kafka_hex"]
    kafka_oracle.compared[f"streams SubscriptionInfo v{request['version']}"] += 1


def test_a_planted_ha_bug_is_caught(
    kafka_oracle: KafkaOracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """groupsim with a bug planted in its HighAvailabilityTaskAssignor — warm-ups skipped (a
    movement to a caught-up client is then never paired with a warm-up standby on the lagging
    destination) — must disagree with Kafka on some input the strategy draws."""
    from members.assignors.streams import task_movement

    honest = task_movement.assign_active_task_movements

    def no_warmups(caught_up: Any, by_lag: Any, clients: Any, warmups: Any, budget: Any) -> int:
        from members.assignors.streams.task_movement import WarmupBudget

        return honest(caught_up, by_lag, clients, warmups, WarmupBudget(0))

    import members.assignors.streams.high_availability as ha

    monkeypatch.setattr(ha, "assign_active_task_movements", no_warmups)
    found: list[str] = []

    @settings(
        max_examples=300,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        phases=[Phase.generate],  # stop at the first disagreement: no shrinking needed
    )
    @given(doc=high_availability_inputs())
    def hunt(doc: dict[str, Any]) -> None:
        why = differences(kafka_oracle, doc)
        if why is not None:
            found.append(why)
        assert why is None

    with pytest.raises(AssertionError):
        hunt()
    assert found, "the planted bug went unnoticed"


# ----------------------------------------------------------------------------------------------
# Codecs


def _wire_task(t: StreamsTaskId) -> list[Any]:
    return [t.subtopology, t.partition, t.topology or None]


def _subscription_request(s: StreamsSubscription, version: int) -> dict[str, Any]:
    return {
        "version": version,
        "latest_supported_version": s.latest_supported_version,
        "process_id": str(s.process_id),
        "user_endpoint": s.user_endpoint,
        # the HashMap a member fills, in the same order groupsim's encoder assumes
        "task_offset_sums": [[*_wire_task(t), v] for t, v in s.offset_sums().items()],
        "unique_field": s.unique_field,
        "error_code": s.error_code,
        "client_tags": [[k, v] for k, v in s.client_tags.items()],
    }


def _task_key(t: list[Any]) -> tuple[Any, ...]:
    return (t[0], t[1], t[2] or "", *t[3:])


def _subscription_view(s: StreamsSubscription) -> dict[str, Any]:
    """What Kafka's accessors give for a decoded subscription (the driver's decode shape)."""
    return {
        "version": s.version,
        "latest_supported_version": s.latest_supported_version,
        "process_id": str(s.process_id),
        "prev_tasks": sorted((_wire_task(t) for t in s.prev_active_tasks()), key=_task_key),
        "standby_tasks": sorted((_wire_task(t) for t in s.prev_standby_tasks()), key=_task_key),
        "task_offset_sums": sorted(
            ([*_wire_task(t), v] for t, v in s.offset_sums().items()), key=_task_key
        ),
        "user_endpoint": s.user_endpoint or None,
        **({"error_code": s.error_code} if s.version >= 9 else {}),
        "client_tags": dict(sorted(s.client_tags.items())),
    }


def _kafka_subscription_view(answer: dict[str, Any]) -> dict[str, Any]:
    answer = dict(answer)
    for field in ("prev_tasks", "standby_tasks", "task_offset_sums"):
        answer[field] = sorted(answer[field], key=_task_key)
    return answer


@_settings(EXAMPLES)
@given(case=subscriptions())
def test_subscription_codec(
    kafka_oracle: KafkaOracle, case: tuple[StreamsSubscription, int]
) -> None:
    s, version = case
    request = _subscription_request(s, version)
    try:
        ours = encode_subscription(s, version)
    except EncodeError:
        with pytest.raises(OracleError):
            kafka_oracle.call("streams.encode_subscription", **request)
        return
    theirs = unb64(kafka_oracle.call("streams.encode_subscription", **request))
    assert ours == theirs, f"v{version}: {ours.hex()} != Kafka {theirs.hex()}"
    seen = kafka_oracle.call("streams.decode_subscription", bytes=b64(ours))
    assert _subscription_view(decode_subscription(theirs)) == _kafka_subscription_view(seen)
    kafka_oracle.compared[f"streams SubscriptionInfo v{version}"] += 1


def _dedup(parts: tuple[TopicPartition, ...]) -> tuple[TopicPartition, ...]:
    """Kafka holds partitions in a Set: no duplicates."""
    return tuple(dict.fromkeys(parts))


def _assignment_request(a: StreamsAssignment, version: int) -> dict[str, Any]:
    def hosts(m: dict[Any, tuple[TopicPartition, ...]]) -> list[Any]:
        return [[h.host, h.port, [list(p) for p in parts]] for h, parts in m.items()]

    return {
        "version": version,
        "commonly_supported_version": a.commonly_supported_version,
        "active_tasks": [_wire_task(t) for t in a.active_tasks],
        "standby_tasks": [
            [_wire_task(t), [list(p) for p in parts]] for t, parts in a.standby_tasks.items()
        ],
        "partitions_by_host": hosts(a.partitions_by_host),
        "standby_partitions_by_host": hosts(a.standby_partitions_by_host),
        "error_code": a.error_code,
        "next_rebalance_ms": a.next_rebalance_ms,
    }


def _assignment_view(a: dict[str, Any]) -> dict[str, Any]:
    """Order-free view of the driver's decode shape (Kafka decodes into HashMaps/HashSets)."""

    def text(t: str) -> str:
        # the oracle's answer line is UTF-8: a lone surrogate arrives as "?" (bytes compared
        # above are exact; this is only the transport of Kafka's decoded strings)
        return t.encode("utf-8", "replace").decode("utf-8")

    def parts(ps: list[Any]) -> list[Any]:
        return sorted([text(topic), p] for topic, p in ps)

    def hosts(m: list[Any]) -> list[Any]:
        return sorted([text(h), p, parts(ps)] for h, p, ps in m)

    def task(t: list[Any]) -> list[Any]:
        return [t[0], t[1], text(t[2]) if t[2] else None]

    return {
        "version": a["version"],
        "commonly_supported_version": a["commonly_supported_version"],
        "active_tasks": [task(t) for t in a["active_tasks"]],
        "standby_tasks": sorted(
            ([task(t), parts(ps)] for t, ps in a["standby_tasks"]),
            key=lambda e: (e[0][0], e[0][1], e[0][2] or ""),
        ),
        "partitions_by_host": hosts(a["partitions_by_host"]),
        "standby_partitions_by_host": hosts(a["standby_partitions_by_host"]),
        "error_code": a["error_code"],
        "next_rebalance_ms": a["next_rebalance_ms"],
    }


@_settings(EXAMPLES)
@given(case=assignments())
def test_assignment_codec(kafka_oracle: KafkaOracle, case: tuple[StreamsAssignment, int]) -> None:
    a, version = case
    a = StreamsAssignment(
        version=a.version,
        commonly_supported_version=a.commonly_supported_version,
        active_tasks=a.active_tasks,
        standby_tasks={t: _dedup(p) for t, p in a.standby_tasks.items()},
        partitions_by_host={h: _dedup(p) for h, p in a.partitions_by_host.items()},
        standby_partitions_by_host={h: _dedup(p) for h, p in a.standby_partitions_by_host.items()},
        error_code=a.error_code,
        next_rebalance_ms=a.next_rebalance_ms,
    )
    request = _assignment_request(a, version)
    try:
        ours = encode_assignment(a, version)
    except EncodeError:
        with pytest.raises(OracleError):
            kafka_oracle.call("streams.encode_assignment", **request)
        return
    theirs = unb64(kafka_oracle.call("streams.encode_assignment", **request))
    assert ours == theirs, f"v{version}: {ours.hex()} != Kafka {theirs.hex()}"
    decoded = decode_assignment(theirs)
    mine = _assignment_view(
        {
            **_assignment_request(decoded, decoded.version),
            "commonly_supported_version": decoded.commonly_supported_version,
        }
    )
    seen = _assignment_view(kafka_oracle.call("streams.decode_assignment", bytes=b64(ours)))
    assert mine == seen
    kafka_oracle.compared[f"streams AssignmentInfo v{version}"] += 1


def test_codecs_cover_every_version(kafka_oracle: KafkaOracle) -> None:
    """Runs after the codec properties (file order): every version 1-11 was compared."""
    for message in ("SubscriptionInfo", "AssignmentInfo"):
        missing = [
            v
            for v in range(1, LATEST_SUPPORTED_VERSION + 1)
            if kafka_oracle.compared[f"streams {message} v{v}"] == 0
        ]
        assert not missing, f"{message}: no example compared for versions {missing}"


def test_process_ids_match_kafkas_order(kafka_oracle: KafkaOracle) -> None:
    """``PID_n`` is ``UUID(0, n)`` and UUID strings keep their value on both sides: clients
    whose ids straddle the signed-long boundary are dealt tasks in the same order."""
    ids = ["PID_3", str(uuid.UUID(int=(1 << 127) | 5)), str(uuid.UUID(int=(1 << 64) | 1)), "PID_1"]
    doc = {
        "assignor": "high_availability",
        "clients": [{"id": i, "task_lags": {"0_0": 0, "0_1": 0, "0_2": 0, "0_3": 0}} for i in ids],
        "tasks": {"stateful": ["0_0", "0_1", "0_2", "0_3"]},
    }
    check(kafka_oracle, doc)
    ours = groupsim(doc)
    assert not isinstance(ours, Exception)
    # UUID.compareTo is signed: the 1<<127 id sorts first and gets 0_0
    assert ours["clients"][ids[1]]["active"] == ["0_0"]


def test_negative_host_count_by_version(kafka_oracle: KafkaOracle) -> None:
    """A v2 AssignmentInfo whose host-map count is -1: Kafka 4.0 runs its ``for`` loop zero
    times (an empty map), as groupsim does; Kafka 4.4 checks counts up front and throws
    ``TaskAssignmentException("Corrupted user data byte[].")``. groupsim follows 4.0
    (docs/fidelity.md, version table)."""
    data = bytes.fromhex("000000020000000000000000ffffffff")
    assert decode_assignment(data).partitions_by_host == {}
    major_minor = tuple(int(x) for x in kafka_oracle.version.split(".")[:2])
    if major_minor < (4, 4):
        assert (
            kafka_oracle.call("streams.decode_assignment", bytes=b64(data))["partitions_by_host"]
            == []
        )
    else:
        with pytest.raises(OracleError, match="Corrupted user data"):
            kafka_oracle.call("streams.decode_assignment", bytes=b64(data))
