"""The round-28 audit's planted bugs (tests/scenarios/campaigns/chaos/planted/audit28.py):
each found in chaos by the checker of the rule it breaks, within a budget a few runs above the
run that found it on seed 1 (docs/chaos.md "Planted bugs: the round-28 audit")."""

from __future__ import annotations

import pytest

from .planted import by_name, detect


@pytest.mark.parametrize(
    ("name", "budget", "invariant"),
    [
        # the leader's protocol wins although the other members prefer another (run 4)
        ("coordinator-votes-leader-only", 10, "protocol_vote"),
        # the member drops its id and rejoins as new; only the answer shows it (run 5)
        ("coordinator-sync-preparing-unknown-member", 10, "sync_unknown_to_member"),
        # a member heartbeating through a rebalance is expired on its old deadline (run 6)
        ("coordinator-heartbeat-extends-only-when-stable", 10, "session_expired_after_heartbeat"),
        # a consumer whose generation was reset commits what it lost (run 20; run 0, which
        # found it first, now draws the zombie fault's parked SyncGroup variant)
        ("consumer-lost-as-revoked", 21, "revoked_without_generation"),
        # a second loss during the delay restarts it (run 12)
        ("cooperative-delay-extended-by-new-loss", 20, "scheduled_delay"),
        # two or more candidates back within the delay: Connect chaos's closing bounce (run 10)
        ("cooperative-lost-work-to-first-candidate", 20, "lost_work_dealt_unevenly"),
        # the consumer generator's whole-group outage empties the group (run 7)
        ("coordinator-empty-generation-not-bumped", 10, "generation_regressed"),
        # the probing rebalance at the default 10 minutes: never within a run (run 0)
        ("streams-probing-interval-default", 3, "probing_rebalance_missing"),
        # the consumer generator's long-poll straggler, stalled past the others' rebalance
        # timeout when another consumer's restart rebalances the group (run 2)
        ("coordinator-rebalance-timeout-min", 10, "join_completed_early"),
        # a Connect leader rejoining with unchanged metadata after losing the coordinator
        # under a latency fault (run 30)
        ("coordinator-stable-leader-rejoin-no-rebalance", 40, "leader_rejoin_not_rebalanced"),
    ],
)
def test_chaos_finds_an_audit28_bug_by_its_rule(name: str, budget: int, invariant: str) -> None:
    found = detect(by_name(name), budget)
    assert found.found_at is not None, f"{name} not found in {budget} runs"
    assert invariant in found.new, found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "budget", "invariant"),
    [
        # KIP-441's "within" the acceptable lag includes it (run 25)
        ("hata-acceptable-lag-exclusive", 40, "warmup_on_caught_up_client"),
        # ILLEGAL_GENERATION reaches static Streams members only (run 254; run 86, which found
        # it before, draws one of the zombie fault's SyncGroup variants since issue 23's round)
        ("client-illegal-generation-resets-member-id", 260, "member_id_dropped"),
    ],
)
def test_chaos_finds_a_slower_audit28_bug(name: str, budget: int, invariant: str) -> None:
    found = detect(by_name(name), budget)
    assert found.found_at is not None, f"{name} not found in {budget} runs"
    assert invariant in found.new, found
