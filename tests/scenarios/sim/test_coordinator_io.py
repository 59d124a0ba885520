"""The coordinator's traffic log (``scenarios/sim/coordinator_io.py``), what the Kafka referee
replays: it adds records and changes nothing else, every answer names the request it answers,
and the records decode against the closed schema."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios import kinds
from scenarios.campaigns.chaos import ChaosConfig, generate
from scenarios.campaigns.chaos.render import spec_to_toml
from scenarios.eventlog import decode_record
from scenarios.sim.runner import simulate

_IO = ("coordinator_opened", "coordinator_request", "coordinator_response", "coordinator_timer")


def _run(kind: str, index: int, io: bool) -> list[dict[str, Any]]:
    spec = generate(ChaosConfig(kind=kind, members=(3, 5), duration_ms=600_000), 21, index)
    loaded = kinds.get(kind).loads(spec_to_toml(spec), f"{spec.name}.toml")
    return simulate(loaded, spec.seed, coordinator_io=io).records


def _without_seq(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in r.items() if k not in ("seq", "cause_seq")}
        for r in records
        if r["kind"] not in _IO
    ]


@pytest.mark.parametrize(("kind", "index"), [("connect", 1), ("streams", 4), ("consumer", 2)])
def test_the_traffic_log_adds_records_and_changes_nothing_else(kind: str, index: int) -> None:
    plain = _run(kind, index, io=False)
    logged = _run(kind, index, io=True)
    assert not [r for r in plain if r["kind"] in _IO]
    assert _without_seq(logged) == _without_seq(plain)
    requests = {r["handle"]: r for r in logged if r["kind"] == "coordinator_request"}
    answers = [r for r in logged if r["kind"] == "coordinator_response"]
    assert len(requests) > 50 and answers
    assert [r["kind"] for r in logged if r["kind"] in _IO][0] == "coordinator_opened"
    for answer in answers:
        request = requests[answer["handle"]]
        # an answer goes to the connection its request came on, for the same API, never before
        assert (answer["source"], answer["api"]) == (request["source"], request["api"])
        assert answer["t_ms"] >= request["t_ms"]
    # a new member's id is drawn while its JoinGroup is handled, and logged with it
    drawn = [u for r in requests.values() for u in r.get("member_uuids", ())]
    joined = {r["response"]["member_id"] for r in answers if r["api"] == "join"}
    assert drawn and all(any(m.endswith(u) for m in joined) for u in drawn)
    for record in logged:
        if record["kind"] in _IO:
            decode_record(record)
