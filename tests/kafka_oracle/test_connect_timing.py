"""The Connect driver's ``connect.time`` and the Streams driver's ``streams.time`` verbs, which
``benchmarks/bench_vs_kafka.py`` uses.

It must time the same round groupsim times: the assignment it answers (as a digest) is the
one groupsim computes for the last round of the workload, and it reports one CPU and one wall
figure per timed iteration.
"""

from __future__ import annotations

import pytest

from benchmarks.bench_vs_kafka import (
    StreamsWorkload,
    Workload,
    build_rounds,
    digest,
    streams_document,
    time_groupsim,
    time_groupsim_streams,
    time_kafka,
    time_kafka_streams,
)
from tests.kafka_oracle.oracle import KafkaOracle

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize(
    "workload",
    [
        Workload("incremental", "bounce", 12, 200),
        Workload("incremental", "+1 worker", 12, 200),
        Workload("eager", "+1 worker", 12, 200),
    ],
    ids=str,
)
def test_time_verb_times_the_round_groupsim_times(
    kafka_oracle: KafkaOracle, workload: Workload
) -> None:
    rounds = build_rounds(workload)
    cpu, wall, kafka_digest = time_kafka(kafka_oracle, workload, rounds, 5, 1, 0)
    *_, ours = time_groupsim(workload, rounds, 5)
    assert kafka_digest == ours
    assert cpu > 0 and wall > 0


def test_digest_depends_on_every_byte() -> None:
    assert digest({"a": b"\x00\x01"}) != digest({"a": b"\x00\x02"})
    assert digest({"a": b"", "b": b"x"}) != digest({"a": b"x", "b": b""})


@pytest.mark.parametrize(
    "workload",
    [
        StreamsWorkload("high_availability", 6, 60, 1),
        StreamsWorkload("client_tag_standby", 6, 60, 1),
        StreamsWorkload("rack_aware", 5, 40, 0, "min_traffic"),
    ],
    ids=str,
)
def test_streams_time_verb_answers_what_assign_answers(
    kafka_oracle: KafkaOracle, workload: StreamsWorkload
) -> None:
    # streams.time times the same call as streams.assign: its last answer is assign's
    doc = streams_document(workload)
    cpu, wall, timed = time_kafka_streams(kafka_oracle, doc, 5, 1, 0)
    assert timed == kafka_oracle.call("streams.assign", input=doc)
    assert cpu > 0 and wall > 0
    *_, ours = time_groupsim_streams(doc, 5)
    if workload.assignor == "rack_aware":  # OR-Tools may pick another optimum: same cost
        assert ours["cost"] == timed["cost"]
    else:
        assert ours == timed
