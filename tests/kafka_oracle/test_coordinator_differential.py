"""groupsim's classic group coordinator against Kafka's ``GroupMetadataManager``.

Hypothesis draws request sequences (``coordinator_sequences``: ≥20 requests from dynamic and
static members, KIP-394 joins, unknown ids, stale generations, several protocols, batch
leaves, DescribeGroups/ListGroups, time advances that expire sessions and rebalances); each
runs in lockstep through groupsim (the harness) and Kafka (the oracle driver), and every step's
responses, records, fired timers and timer table must be equal (``coordinator_replay``).

A failing sequence is written to ``$TMPDIR/coordinator-diff-failure.json`` (the last one is
Hypothesis's shrunk example); keep it under ``regressions/coordinator/``, where
:func:`test_regression` replays every file through both.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.kafka_oracle.coordinator_replay import Mismatch, steps_to_json
from tests.kafka_oracle.coordinator_sequences import SequenceRunner, configs, sequences
from tests.kafka_oracle.oracle import KafkaOracle

pytestmark = pytest.mark.kafka

REGRESSIONS = Path(__file__).parent / "regressions" / "coordinator"
FAILURE = Path(tempfile.gettempdir()) / "coordinator-diff-failure.json"
#: Sequences per ``-m kafka`` run (``COORDINATOR_DIFF_EXAMPLES`` overrides).
EXAMPLES = int(os.environ.get("COORDINATOR_DIFF_EXAMPLES", "520"))


def run_sequence(oracle: KafkaOracle, config: dict[str, Any], actions: list[list[Any]]) -> None:
    """Run one sequence through both; on a mismatch save it (plain data) and re-raise."""
    runner = SequenceRunner.start(oracle, config)
    try:
        runner.run(actions)
    except Mismatch:
        FAILURE.write_text(
            json.dumps(
                {
                    "config": config,
                    "actions": actions[: len(runner.steps)],
                    "steps": steps_to_json(runner.steps),
                },
                indent=1,
            )
        )
        raise
    finally:
        runner.diff.close()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(config=configs, actions=sequences)
def test_groupsim_coordinator_answers_as_kafka(
    kafka_oracle: KafkaOracle, config: dict[str, Any], actions: list[list[Any]]
) -> None:
    run_sequence(kafka_oracle, config, actions)
    kafka_oracle.compared["coordinator sequences"] += 1


@pytest.mark.parametrize("path", sorted(REGRESSIONS.glob("*.json")), ids=lambda p: p.stem)
def test_regression(kafka_oracle: KafkaOracle, path: Path) -> None:
    """Each kept sequence (a disagreement once found and settled) still agrees."""
    case = json.loads(path.read_text())
    run_sequence(kafka_oracle, case["config"], case["actions"])
    kafka_oracle.compared["coordinator regressions"] += 1
