"""KIP-507 session keys under sessioned (and static): rotation, signing, rejection, downgrade."""

from __future__ import annotations

import itertools

from test_worker_scenarios import kinds, run

KEYS = '"inter.worker.key.ttl.ms" = 60000\n"groupsim.config.read.lag.ms" = 2000'


def set_tasks(at_ms: int, connector: str, tasks: int) -> str:
    return (
        f'[[timeline]]\nat_ms = {at_ms}\naction = "set_tasks"\n'
        f'connector = "{connector}"\ntasks = {tasks}\n'
    )


def test_leader_creates_and_rotates_the_key_every_ttl() -> None:
    result = run(size=3, extra_config=KEYS, settle=200_000)
    keys = kinds(result, "session_key")
    assert [k["key_id"] for k in keys] == [1, 2, 3, 4]
    leader = {k["member"] for k in keys}
    assert leader == {"w1"}
    assert [b["created_ms"] - a["created_ms"] for a, b in itertools.pairwise(keys)] == [60_000] * 3
    # Rotation is a config-topic write, not a rebalance.
    assert len(kinds(result, "generation")) == 1


def test_signed_task_configs_are_verified_by_the_leader() -> None:
    result = run(set_tasks(90_000, "c2", 1), size=3, extra_config=KEYS, settle=60_000)
    (request,) = kinds(result, "internal_request")
    assert request["member"] != "w1" and request["to"] == "w1" and request["signed"]
    (verified,) = kinds(result, "internal_request_verified")
    assert verified["validation"] is True and verified["origin"] == request["member"]
    assert result.summary.converged
    assert {r["task"] for r in kinds(result, "task_started")} >= {"c2-0"}
    assert "c2-1" not in set(result.summary.never_started)


def test_request_signed_with_a_rotated_key_is_rejected_then_retried() -> None:
    # The key rotates at ~66 s; a follower reads the new key 2 s later. A request signed in
    # between carries the old key: the leader rejects it, the follower retries with backoff.
    result = run(set_tasks(66_500, "c2", 1), size=3, extra_config=KEYS, settle=60_000)
    # The leader reads its own new key back from the topic 2 s later too, so until then the
    # old key is expired for it; once it has key 2, key 1 is unknown.
    rejected = kinds(result, "internal_request_rejected")
    assert [r["reason"] for r in rejected] == ["expired session key 1"] * 3
    requests = kinds(result, "internal_request")
    assert [r["key_id"] for r in requests] == [1, 1, 1, 2]
    assert len(kinds(result, "internal_request_verified")) == 1
    gaps = [b["t_ms"] - a["t_ms"] for a, b in itertools.pairwise(requests)]
    assert gaps == [252, 502, 1002]  # backoff 250, 500, 1000 ms plus the round trip
    final = [r for r in kinds(result, "config") if r["connectors"].get("c2") == 1]
    assert final, "the task configs were written once verified"


def test_validation_is_off_below_v2() -> None:
    result = run(
        '[[timeline]]\nat_ms = 30000\naction = "restart"\nmember = "w3"\n'
        'config = { "connect.protocol" = "eager" }\n' + set_tasks(80_000, "c2", 1),
        size=3,
        extra_config=KEYS,
        settle=60_000,
    )
    assert kinds(result, "protocol_downgrade")
    # c2 runs on a follower (w2): its request goes out unsigned and is accepted unverified.
    (request,) = kinds(result, "internal_request")
    assert request["member"] == "w2" and not request["signed"]
    (verified,) = kinds(result, "internal_request_verified")
    assert verified["validation"] is False
    # No key is written once the group runs below v2.
    assert all(k["t_ms"] < 30_000 for k in kinds(result, "session_key"))
