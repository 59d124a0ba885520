"""The referee's parts that need no JVM: where its violations go in a log, what it says when
Kafka's harness cannot run, and which campaigns accept it."""

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


def test_campaigns_accept_the_kafka_referee_for_connect_only() -> None:
    assert ChaosConfig(referee="kafka").referee == "kafka"
    with pytest.raises(ValueError, match="Connect campaigns only"):
        ChaosConfig(kind="streams", referee="kafka")
    with pytest.raises(ValueError, match="expected kafka"):
        ChaosConfig(referee="zookeeper")
