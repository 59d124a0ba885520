"""The oracle harness itself: it builds, answers, reports Kafka's errors and its version."""

from __future__ import annotations

import re

import pytest

from tests.kafka_oracle.oracle import KafkaOracle, OracleError, _pinned_version, requested_version

pytestmark = pytest.mark.kafka


def test_reports_the_pinned_kafka_version(kafka_oracle: KafkaOracle) -> None:
    assert kafka_oracle.version == (requested_version() or _pinned_version())
    assert re.fullmatch(r"[0-9a-f]{16}", kafka_oracle.commit)


def test_an_unknown_area_is_an_error_not_a_hang(kafka_oracle: KafkaOracle) -> None:
    with pytest.raises(OracleError, match="unknown area 'nosuch'"):
        kafka_oracle.call("nosuch.verb")
    # ... and the JVM still answers afterwards.
    assert kafka_oracle.call("version")["kafka"] == kafka_oracle.version
