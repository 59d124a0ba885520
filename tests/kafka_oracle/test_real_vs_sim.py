"""A Connect library scenario on real Kafka and in groupsim, side by side
(``tests/kafka_oracle/compare.py``, the table of docs/real-kafka.md): the same rebalances, the
same tasks moved and revoked, the same placement at the end, and a real trace groupsim
conforms to in every answer and every leader assignment."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("kio")
pytest.importorskip("kafka")

from tests.kafka_oracle.compare import run_real, run_simulation  # noqa: E402
from tests.kafka_oracle.oracle import unavailable_reason  # noqa: E402

pytestmark = pytest.mark.kafka


def test_worker_leaves_for_good_real_and_simulated_agree(tmp_path: Path) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    real, conformance = run_real("worker-leaves-for-good", tmp_path)
    simulated = run_simulation("worker-leaves-for-good")
    assert real == simulated
    assert real.workers_at_end == {"w1": 8, "w2": 8, "w3": 8}
    assert conformance["answer_divergences"] == 0 and conformance["round_divergences"] == 0
    assert conformance["rounds"] >= 3
