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

from coordinator import session as coordinator_session
from coordinator import vote as coordinator_vote
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


# --------------------------------------------------------------------------- planted bugs

_JOIN = {"member": "none", "version": 3, "session": 500, "rebalance": 500, "type": "consumer"}
_SYNC = {"member": "known", "generation": "current", "assign": True, "protocol": "none"}
_BEAT = {"member": "known", "generation": "current"}
_CONFIG = {"initial_rebalance_delay_ms": 100, "max_size": 100}
#: Three members vote (range, range, roundrobin), sync, then keep their sessions alive with
#: Heartbeats every 300 ms (session 500 ms) past the first session deadline.
_PLANTED_SEQUENCE: list[list[Any]] = [
    ["join", "c1", {**_JOIN, "protocols": 0}],
    ["join", "c2", {**_JOIN, "protocols": 0}],
    ["join", "c3", {**_JOIN, "protocols": 1}],
    ["advance", 250],
    ["sync", "c1", _SYNC],
    ["sync", "c2", _SYNC],
    ["sync", "c3", _SYNC],
    *[
        step
        for _ in range(3)
        for step in (
            ["advance", 250],
            ["heartbeat", "c1", _BEAT],
            ["heartbeat", "c2", _BEAT],
            ["heartbeat", "c3", _BEAT],
        )
    ],
    ["describe", False],
]


def _heartbeat_that_does_not_extend(self: Any, source: str, req: Any, now_ms: int) -> Any:
    effects = _ORIGINAL_HEARTBEAT(self, source, req, now_ms)
    return [e for e in effects if type(e).__name__ != "SetTimer"]


def _vote_for_the_least_wanted(g: Any) -> str:
    members = g.members
    candidates = [n for n, c in g.supported.items() if c == len(members)]
    votes = {n: 0 for n in candidates}
    for m in members.values():
        votes[next(n for n in m.names if n in candidates)] += 1
    return min(votes, key=lambda n: (votes[n], n))


_ORIGINAL_HEARTBEAT = coordinator_session.heartbeat


def test_planted_sequence_agrees_without_a_bug(kafka_oracle: KafkaOracle) -> None:
    run_sequence(kafka_oracle, _CONFIG, _PLANTED_SEQUENCE)


@pytest.mark.parametrize(
    ("owner", "method", "bug", "caught_at"),
    [
        # The session deadline is not moved: the armed timer table differs at once.
        (coordinator_session, "heartbeat", _heartbeat_that_does_not_extend, "armed"),
        # The vote picks the protocol with the fewest votes: the JoinGroup answers differ.
        (coordinator_vote, "select_protocol", _vote_for_the_least_wanted, "protocol_name"),
    ],
    ids=["heartbeat-does-not-extend-session", "wrong-protocol-vote"],
)
def test_differential_catches_a_planted_bug(
    kafka_oracle: KafkaOracle,
    monkeypatch: pytest.MonkeyPatch,
    owner: Any,
    method: str,
    bug: Any,
    caught_at: str,
) -> None:
    monkeypatch.setattr(owner, method, bug)
    runner = SequenceRunner.start(kafka_oracle, _CONFIG)
    try:
        with pytest.raises(Mismatch) as caught:
            runner.run(_PLANTED_SEQUENCE)
    finally:
        runner.diff.close()
    assert caught_at in caught.value.what
