"""The referee's parts that need no JVM: where its violations go in a log, what it says when
Kafka's harness cannot run, which campaigns accept it, and the Streams
round's document."""

from __future__ import annotations

import shutil

import pytest

from scenarios import referee
from scenarios.campaigns.chaos import ChaosConfig
from scenarios.campaigns.chaos.run import _inserted


def test_a_disagreement_goes_right_after_its_assignor_record_and_seqs_follow() -> None:
    records = [
        {"t_ms": 0, "seq": 5, "kind": "step"},
        {"t_ms": 10, "seq": 6, "kind": "assignor"},
        {"t_ms": 20, "seq": 7, "kind": "assignment"},
        {"t_ms": 30, "seq": 8, "kind": "violation", "invariant": "balance", "cause_seq": 7},
    ]
    extra = [{"t_ms": 10, "kind": "violation", "invariant": "referee_disagrees", "cause_seq": 6}]
    out = _inserted(records, extra)
    assert [r["seq"] for r in out] == [5, 6, 7, 8, 9]
    assert [r.get("invariant") for r in out] == [None, None, "referee_disagrees", None, "balance"]
    assert out[2]["cause_seq"] == 6  # the assignor record
    assert out[4]["cause_seq"] == 8  # still the assignment record, renumbered
    assert list(out[2])[:3] == ["t_ms", "seq", "kind"]


def test_a_log_without_leader_rounds_needs_no_jvm() -> None:
    verdict = referee.judge([{"t_ms": 0, "seq": 1, "kind": "step"}])
    assert (verdict.compared, verdict.violations, verdict.kafka) == (0, [], None)


def test_without_java_the_referee_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda tool: None)
    with pytest.raises(referee.OracleUnavailable) as caught:
        referee.prepare()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("the Kafka referee cannot run: no java or mvn on PATH")


def test_campaigns_accept_the_kafka_referee_for_connect_and_streams() -> None:
    assert ChaosConfig(referee="kafka").referee == "kafka"
    assert ChaosConfig(kind="streams", referee="kafka").referee == "kafka"
    with pytest.raises(ValueError, match="expected kafka"):
        ChaosConfig(referee="zookeeper")


def _streams_round(**extra: object) -> dict[str, object]:
    inputs = {
        "config": {"acceptable.recovery.lag": 100, "num.standby.replicas": 0},
        "clients": [
            {
                "id": "PID_1",
                "capacity": 1,
                "rack": None,
                "tags": {},
                "prev_active": ["0_0"],
                "prev_standby": [],
            },
            {
                "id": "PID_2",
                "capacity": 1,
                "rack": None,
                "tags": {},
                "prev_active": [],
                "prev_standby": [],
            },
        ],
        "tasks": {
            "stateful": ["0_0", "0_1"],
            "stateless": [],
            "subtopologies": {"0": ["0_0", "0_1"]},
            "task_source_partition_racks": {},
            "task_changelog_partition_racks": {},
        },
    }
    client = {"member_id": "m", "standby": [], "warmups": [], "withheld": []}
    return {
        "t_ms": 7,
        "seq": 3,
        "kind": "streams_assignment",
        "generation": 2,
        "version_probing": False,
        "clients": {
            "PID_1": {**client, "active": ["0_0"]},
            "PID_2": {**client, "active": ["0_1"]},
        },
        "lags": {"PID_1": {"0_0": -2, "0_1": 0}, "PID_2": {"0_0": 500, "0_1": 0}},
        "probing_rebalance_needed": False,
        "inputs": inputs,
        "member": "s1",
        **extra,
    }


class _FakeOracle:
    """Answers ``streams.assign`` with groupsim's own assignor (``answer`` edits it)."""

    version = "fake"

    def __init__(self, answer=lambda out: out) -> None:  # type: ignore[no-untyped-def]
        self.answer = answer
        self.docs: list[dict[str, object]] = []

    def call_many(self, requests):  # type: ignore[no-untyped-def]
        from scenarios.assign.streams import run_assign_streams

        out = []
        for op, fields in requests:
            assert op == "streams.assign"
            self.docs.append(fields["input"])
            out.append(self.answer(run_assign_streams(fields["input"])))
        return out


def test_a_streams_round_is_a_high_availability_document_with_the_records_lags() -> None:
    from scenarios.referee.streams import streams_document

    doc = streams_document(_streams_round())
    assert doc["assignor"] == "high_availability"
    assert [c["task_lags"] for c in doc["clients"]] == [
        {"0_0": -2, "0_1": 0},
        {"0_0": 500, "0_1": 0},
    ]


def test_the_streams_referee_agrees_with_itself_and_reports_a_difference() -> None:
    from scenarios.referee.streams import judge_streams

    same = judge_streams(_FakeOracle(), [_streams_round()])  # type: ignore[arg-type]
    assert (same.compared, same.violations) == (1, [])

    def swapped(out: dict) -> dict:  # type: ignore[type-arg]
        a, b = out["clients"]["PID_1"], out["clients"]["PID_2"]
        out["clients"]["PID_1"], out["clients"]["PID_2"] = b, a
        return out

    other = judge_streams(_FakeOracle(swapped), [_streams_round()])  # type: ignore[arg-type]
    assert [d.invariant for d in other.violations] == ["referee_disagrees"]
    assert other.violations[0].cause_seq == 3
    assert "PID_1 active: groupsim ['0_0'], Kafka ['0_1']" in other.violations[0].detail


def test_version_probing_and_old_streams_rounds_are_skipped() -> None:
    from scenarios.referee.streams import judge_streams

    old = _streams_round()
    del old["inputs"]
    verdict = judge_streams(
        _FakeOracle(),  # type: ignore[arg-type]
        [old, _streams_round(version_probing=True)],
    )
    assert verdict.compared == 0
    assert dict(verdict.skipped) == {"no_inputs": 1, "version_probing": 1}


class _OwnConsumerAssignors:
    """Answers ``consumer.replay`` with groupsim's own stateless assignors on the logged
    inputs (so the inputs alone must give the logged assignment back); ``answer`` edits it."""

    version = "own"

    def __init__(self, answer=lambda out: out) -> None:  # type: ignore[no-untyped-def]
        self.answer = answer
        self.requests: list[tuple[str, dict[str, object]]] = []

    def call_many(self, requests):  # type: ignore[no-untyped-def]
        import base64

        from members.assignors.consumer import ASSIGNORS, ConsumerMember
        from protocol.consumer_codec import decode_subscription

        self.requests.extend(requests)
        out = []
        for op, fields in requests:
            if op == "consumer.reset":
                out.append(None)
                continue
            assert op == "consumer.replay"
            members = [
                ConsumerMember(
                    m["id"], decode_subscription(base64.b64decode(m["metadata"])), m["instance"]
                )
                for m in fields["members"]
            ]
            cluster = {t: tuple(tuple(r) for r in racks) for t, racks in fields["topics"].items()}
            got = ASSIGNORS[fields["assignor"]](members, cluster)
            answer = {
                m: {"partitions": [[t, p] for t, p in parts], "user_data": None}
                for m, parts in got.items()
            }
            out.append(self.answer(answer))
        return out


def _consumer_log() -> list[dict[str, object]]:
    from scenarios.input.consumer import loads_consumer_scenario
    from scenarios.sim.runner import simulate

    text = """kind = "consumer"
name = "rr"
seed = 1
[topics]
orders = 5
[config]
"partition.assignment.strategy" = ["roundrobin"]
[[consumers]]
name = "c1"
config = { "group.instance.id" = "zeta" }
[[consumers]]
name = "c2"
[[timeline]]
action = "restart"
at_ms = 20000
member = "c2"
"""
    return simulate(loads_consumer_scenario(text, "rr.toml"), 1).records


def test_a_consumer_round_carries_every_input_its_assignor_read() -> None:
    from scenarios.referee.consumer import judge_consumer

    records = _consumer_log()
    rounds = [r for r in records if r["kind"] == "consumer_assignor"]
    fake = _OwnConsumerAssignors()
    verdict = judge_consumer(fake, records)  # type: ignore[arg-type]
    assert (verdict.compared, verdict.violations) == (len(rounds), [])
    assert len(rounds) >= 2
    replays = [f for op, f in fake.requests if op == "consumer.replay"]
    assert [op for op, _ in fake.requests][-1] == "consumer.reset"
    # one assignor instance per leader incarnation
    keys = [f["assignor_key"] for f in replays]
    assert keys[0] == f"{rounds[0]['member']}#1"
    assert all(f["session"] == replays[0]["session"] for f in replays)
    assert [m["instance"] for m in rounds[0]["inputs"]["members"]].count("zeta") == 1  # type: ignore[index]


def test_the_consumer_referee_reports_a_moved_partition_after_its_round() -> None:
    from scenarios.referee.consumer import judge_consumer

    def moved(out: dict) -> dict:  # type: ignore[type-arg]
        first, second = sorted(out)
        out[first]["partitions"], out[second]["partitions"] = (
            out[second]["partitions"],
            out[first]["partitions"],
        )
        return out

    records = _consumer_log()
    first = next(r for r in records if r["kind"] == "consumer_assignor")
    verdict = judge_consumer(_OwnConsumerAssignors(moved), records)  # type: ignore[arg-type]
    assert verdict.violations
    found = verdict.violations[0]
    assert found.invariant == "referee_disagrees"
    assert found.cause_seq == first["seq"]
    assert "RoundRobinAssignor disagrees" in found.detail
    assert "partitions: groupsim ['orders-" in found.detail


def test_consumer_rounds_without_inputs_are_skipped() -> None:
    from scenarios.referee.consumer import judge_consumer

    records = [
        {k: v for k, v in r.items() if k != "inputs"}
        for r in _consumer_log()
        if r["kind"] == "consumer_assignor"
    ]
    verdict = judge_consumer(_OwnConsumerAssignors(), records)  # type: ignore[arg-type]
    assert verdict.compared == 0
    assert dict(verdict.skipped) == {"no_inputs": len(records)}


@pytest.mark.parametrize(("name", "coordinator"), [("kafka", True), ("kafka-leaders", False)])
def test_only_the_kafka_referee_logs_and_judges_the_coordinators_answers(
    monkeypatch: pytest.MonkeyPatch, name: str, coordinator: bool
) -> None:
    """``--referee kafka-leaders`` keeps the run's quiet skipping (no coordinator traffic is
    logged) and judges leader rounds only; ``kafka`` logs and judges every answer."""
    from scenarios.campaigns.chaos import generate
    from scenarios.campaigns.chaos.run import run_spec

    seen: list[bool] = []

    def fake_judge(
        records: list[dict[str, object]], *, coordinator: bool = True
    ) -> referee.RefereeVerdict:
        seen.append(any(r["kind"] == "coordinator_opened" for r in records))
        return referee.RefereeVerdict()

    monkeypatch.setattr(referee, "judge", fake_judge)
    spec = generate(ChaosConfig(kind="consumer", members=(3, 3), duration_ms=60_000), 3, 0)
    run_spec(spec, name)
    assert seen == [coordinator]


def test_kafka_leaders_leaves_a_logged_coordinators_answers_unjudged() -> None:
    records: list[dict[str, object]] = [{"t_ms": 0, "seq": 0, "kind": "coordinator_opened"}]
    verdict = referee.judge(records, coordinator=False)  # no JVM is started for it
    assert (verdict.compared, verdict.answers, verdict.violations) == (0, 0, [])
