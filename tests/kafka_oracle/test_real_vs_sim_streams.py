"""A Streams library scenario on real Kafka and in groupsim, side by side
(``tests/kafka_oracle/compare_streams.py``, the Streams table of docs/real-kafka.md): a Kafka
Streams client with standbys killed by SIGKILL, and the same crash in groupsim placed at the
real kill's heartbeat phase. Both sides must take the same rebalances (the session's expiry,
its follow-up, the KIP-441 probing rebalance, its follow-up), give every client the same tasks
in every round, and end with the same placement; the real trace must conform in every
coordinator answer and every leader assignment and be clean under ``groupsim check``."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("kio")

from tests.kafka_oracle.compare_streams import row, run_real  # noqa: E402
from tests.kafka_oracle.oracle import unavailable_reason  # noqa: E402

pytestmark = pytest.mark.kafka

#: One heartbeat interval (``heartbeat.interval.ms``, 3 s) per task: a real survivor that
#: heartbeated just before the crashed client's session expired learns of the rebalance one
#: heartbeat later than groupsim's lockstep clients (docs/real-kafka.md); six tasks.
DOWNTIME_SLACK_MS = 6 * 3_000


def test_a_streams_client_crash_with_standbys_real_and_simulated_agree(tmp_path: Path) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    name = "streams/client-crash-with-standbys"
    result = row(name, run_real(name, tmp_path))
    real, sim = result["real"], result["groupsim"]
    assert real["rebalances"] == sim["rebalances"] >= 2
    assert result["rounds_equal"] == result["rounds_compared"] == real["rebalances"]
    for measure in ("probing_rebalances", "followups", "tasks_moved", "actives_at_end"):
        assert real[measure] == sim[measure], measure
    assert sim["downtime_ms"] > 0
    assert abs(real["downtime_ms"] - sim["downtime_ms"]) <= DOWNTIME_SLACK_MS
    conformance = result["conformance"]
    assert conformance["answer_divergences"] == 0
    assert conformance["round_divergences"] == 0
    assert conformance["rounds"] >= real["rebalances"]
    assert conformance["violations"] == 0
