"""The liveness violation of a group looping because an eager member sits in a
cooperative-sticky group (``eager-member-cooperative-loop``) is named only when the log shows
that loop: an EAGER member at the end, and every one of the last ``LOOP_ROUNDS`` leader rounds
followed by a cooperative member's revoke-and-rejoin (KIP-429)."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios.check.consumer_known import EAGER_MEMBER_COOPERATIVE_LOOP
from scenarios.check.consumer_liveness import LOOP_ROUNDS, consumer_end_state, consumer_liveness
from tests.scenarios.check.logs import typed

REVOKE = "need to revoke partitions and re-join"


def looping_log(rounds: int, eager: bool = True, revoking: bool = True) -> list[dict[str, Any]]:
    """Two consumers on ``t`` (3 partitions); ``c2`` on EAGER when ``eager``; ``rounds``
    leader rounds in which ``t-2`` is withheld, each followed by ``c1`` revoking and
    rejoining when ``revoking``."""
    log: list[dict[str, Any]] = [
        {"t_ms": 0, "kind": "run_start", "topics": {"t": 3}},
        {"t_ms": 0, "kind": "member_start", "member": "c1"},
        {"t_ms": 0, "kind": "member_start", "member": "c2"},
    ]
    for i in range(rounds):
        t = 1000 * (i + 1)
        log.append({"t_ms": t, "kind": "consumer_assignor", "member": "c1", "assigned": {}})
        for member, owned, protocol in (
            ("c1", ["t-0"], "COOPERATIVE"),
            ("c2", ["t-1"], "EAGER" if eager else "COOPERATIVE"),
        ):
            log.append(
                {
                    "t_ms": t,
                    "kind": "consumer_assignment",
                    "member": member,
                    "owned": owned,
                    "protocol": "cooperative-sticky",
                    "rebalance_protocol": protocol,
                }
            )
        if revoking:
            log.append({"t_ms": t, "kind": "join_group_request", "member": "c1", "reason": REVOKE})
    return log


def named(log: list[dict[str, Any]]) -> str | None:
    """The known issue the log's one liveness violation is named after (None: not named)."""
    (found,) = consumer_liveness(consumer_end_state(typed(log)))
    assert found.invariant == "liveness" and "t-2" in found.detail
    return found.known_issue if isinstance(found.known_issue, str) else None


def test_a_loop_of_revoking_rounds_with_an_eager_member_is_named() -> None:
    assert named(looping_log(LOOP_ROUNDS)) == EAGER_MEMBER_COOPERATIVE_LOOP


@pytest.mark.parametrize(
    "log",
    [
        looping_log(LOOP_ROUNDS - 1),  # too few rounds to call it a loop
        looping_log(LOOP_ROUNDS, eager=False),  # every member cooperative: a real failure
        looping_log(LOOP_ROUNDS, revoking=False),  # the group stopped rebalancing
        looping_log(LOOP_ROUNDS)
        + [{"t_ms": 99_000, "kind": "consumer_assignor", "member": "c1", "assigned": {}}],
    ],
    ids=["short", "no-eager-member", "not-revoking", "last-round-quiet"],
)
def test_anything_else_stays_a_plain_liveness_failure(log: list[dict[str, Any]]) -> None:
    assert named(log) is None
