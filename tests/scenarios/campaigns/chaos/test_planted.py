"""Fast subset of the planted-bug catalogue (tests/scenarios/campaigns/chaos/planted): chaos and
the checkers
find each of these bugs within a few runs, and a bug is patched out again afterwards.
``benchmarks/bench_planted.py`` measures the whole catalogue."""

from __future__ import annotations

from dataclasses import replace

import pytest

from coordinator import sync as coordinator_sync
from scenarios.campaigns.chaos import coordinator_draw

from .planted import CATALOGUE, by_name, detect


@pytest.mark.parametrize(
    ("name", "budget", "invariants"),
    [
        ("coordinator-generation-bumped-once", 5, {"generation_regressed"}),
        ("worker-ignores-revocations", 40, {"double_ownership", "balance", "liveness"}),
        ("client-ignores-rebalance-in-progress", 40, {"balance", "liveness", "double_ownership"}),
        ("cooperative-delay-never-cleared", 20, {"scheduled_delay"}),
        # not excused as deleted-not-revoked: the leader's view of the previous assignment
        # was valid, so Kafka would have revoked the deleted work
        ("cooperative-assignor-keeps-deleted", 30, {"balance", "quiet_period_balance"}),
        ("cooperative-lost-work-without-delay", 20, {"scheduled_delay"}),
        ("worker-never-revokes-on-coordinator-loss", 40, {"double_ownership"}),
        # reached through delay_request faults (a late Heartbeat of an older generation)
        ("coordinator-heartbeat-any-generation", 10, {"stale_generation_accepted"}),
        # every member still applies the (wrongly) elected protocol: only the vote shows it
        ("coordinator-votes-least-preferred", 3, {"protocol_vote"}),
        # the HA assignor's balance holds and every task restores in the end: only the
        # per-assignment KIP-441 rule shows it
        ("hata-skips-active-movements", 3, {"active_not_caught_up"}),
        ("coordinator-heartbeat-keeps-deadline", 3, {"unexplained_removal"}),
        # evictions under a loss of answers only, sooner than a correct worker's own session
        # timer can run out (found at run 23 of seed 1)
        ("client-one-heartbeat-in-flight", 30, {"unexplained_removal"}),
        # the leaving member is evicted a session timeout later instead of at once
        ("coordinator-ignores-leave", 10, {"unexplained_removal"}),
        ("coordinator-leader-first-joiner", 3, {"leader_changed"}),
        # KIP-415 fills the least loaded first: new work from the most loaded on (run 0)
        ("cooperative-new-work-to-busiest", 3, {"balance"}),
        # KIP-441 balances active load: stateless actives all on one client (run 17)
        ("hata-stateless-on-busiest-client", 30, {"balance"}),
        # plain consumers (KIP-429): found at runs 2, 5, 6 of seeds 1-3
        (
            "consumer-keeps-revoked-partition",
            10,
            {"cooperative_move_without_revocation", "double_ownership"},
        ),
        ("cooperative-sticky-skips-adjust", 10, {"cooperative_move_without_revocation"}),
        # runs 10, 4, 1 of seeds 1-3: an eager assignor voted in a group that thinks itself
        # cooperative
        ("consumer-protocol-of-any-assignor", 20, {"cooperative_move_without_revocation"}),
    ],
)
def test_chaos_finds_the_planted_bug(name: str, budget: int, invariants: set[str]) -> None:
    found = detect(by_name(name), budget)
    assert found.found_at is not None, f"{name} not found in {budget} runs"
    # by one of the checkers named, in the run that found it (another may report first:
    # run 0 of coordinator-heartbeat-keeps-deadline draws a group.max.size since chaos draws
    # [coordinator] settings, and the evicted workers' rejoins are refused, so liveness too)
    assert invariants & set(found.new), found


@pytest.mark.slow
def test_chaos_finds_an_elected_protocol_bug_and_a_streams_bug() -> None:
    assert detect(by_name("worker-applies-own-protocol"), 300).invariant == "protocol_mismatch"
    found = detect(by_name("streams-keeps-revoked-active"), 30).invariant
    assert found in {"stale_active_task", "liveness", "double_ownership"}


@pytest.mark.slow
def test_chaos_finds_a_coordinator_accepting_a_late_sync_group() -> None:
    # a SyncGroup held past request.timeout.ms reaches the coordinator after the member
    # rejoined into a later generation (delay_request faults; run 82 of seed 1)
    found = detect(by_name("coordinator-sync-any-generation"), 120)
    assert found.invariant == "stale_generation_accepted"


@pytest.mark.parametrize(
    ("name", "budget", "invariant"),
    [
        # contract bugs (docs/chaos.md "Contract rules"): safe and live, or caught only late
        # by liveness; each is found by the checker of the rule it breaks
        ("coordinator-admits-without-member-id", 3, "member_id_not_required"),
        ("coordinator-heartbeat-hides-rebalance", 10, "heartbeat_not_rebalancing"),
        # a static leader's rejoin in Stable: Streams runs with group.instance.id (run 6)
        ("coordinator-static-leader-reassigns", 30, "assignment_recomputed"),
        ("cooperative-assignor-reassigns-revoked-at-once", 3, "revoked_and_reassigned"),
        ("hata-warmups-without-probing", 3, "probing_rebalance_missing"),
        # KIP-441/708/925 assignment rules (scenarios/check/assignment_contracts.py)
        ("hata-warmup-budget-off-by-one", 3, "warmups_over_budget"),
        ("standby-movement-needs-warmup", 3, "standby_replicas_missing"),
        # also breaks the end-of-run liveness (invalid final assignment) in the same run
        ("standby-assignor-skips-last-task", 5, "standby_replicas_missing"),
        # one tag key is judged; half the tagged runs draw two keys, judged by the referee
        # only (docs/chaos.md, round-28 audit): found at run 11 of seed 1
        ("tag-aware-standby-ignores-tags", 20, "standby_tags_not_spread"),
        ("rack-aware-flow-maximises", 10, "rack_cost_raised"),
        ("cooperative-delay-for-one-member", 3, "scheduled_delay_not_shared"),
        # static members rejoin only in Streams runs that draw group.instance.id (run 5)
        ("coordinator-static-rejoin-rebalances", 20, "static_rejoin_rebalanced"),
        # the zombie fault in consumer runs: the fenced consumer still owns its partitions at
        # the end (runs 3, 5, 0 of seeds 1-3; liveness too)
        ("consumer-ignores-fencing", 10, "zombie_owns_work"),
        # KIP-415 bounds on the leader's round (scenarios/check/connect_contracts.py); neither
        # is found by any other checker in 300 runs of seed 1
        ("cooperative-revokes-past-floor", 20, "revoked_below_floor"),
        # runs 56, 37, 50 of seeds 1-3 (13 before the bounce: that run now ends in a
        # whole-group outage that restarts the leader before the delay expires)
        ("cooperative-lost-work-ignores-candidates", 60, "lost_work_not_returned"),
        # found by liveness at run 8 without its rule (a revoked task waits for the next round)
        ("cooperative-revokes-when-balanced", 5, "revoked_while_balanced"),
        # one overloaded worker too many keeps floor + 1: the next round rebalances (run 14)
        ("cooperative-revocation-leaves-excess", 30, "revocation_leaves_excess"),
        # the water fill's level never rises past the first sweep: runs 13, 11, 1 of seeds 1-3
        # (without the rule balance finds it at the end of runs 14, 109, 41)
        ("cooperative-tasks-level-never-rises", 30, "new_work_not_least_loaded"),
        # KIP-62 before its time: a worker still in its rebalance (a stall, a restart) is
        # dropped when the session timeout ends the join phase (run 16 of seed 1)
        ("coordinator-join-bounded-by-session-timeout", 30, "join_completed_early"),
        # a worker evicted during a partition rejoins with its old id (run 4 of seed 1)
        ("coordinator-answers-unknown-member", 10, "join_answer_outside_generation"),
        # KIP-394: a member added before its MEMBER_ID_REQUIRED answer is listed by the next
        # generation while still pending (run 0 of seed 1)
        ("coordinator-pending-member-added-at-once", 3, "pending_member_listed"),
        # KIP-814: a SyncGroup held 10-40 s by the delay fault outlasts a session-timeout
        # deadline but not the rebalance timeout's (run 17 of seed 1)
        ("coordinator-pending-sync-by-session-timeout", 30, "pending_sync_expired_early"),
        # consumer assignor rules (scenarios/check/consumer_contracts.py) under chaos --kind
        # consumer: found at runs 9, 3, 0 and 1, 16, 3 of seeds 1-3; since half the consumer
        # runs draw KIP-881 racks (where stickiness gives way to racks, so the rule is not
        # judged) the sticky one at runs 16, 32, 7
        ("range-assignor-off-by-one", 20, "consumer_assignment_unbalanced"),
        ("sticky-assignor-not-sticky", 40, "sticky_partitions_moved"),
        # KIP-441's "rejoin at once" (scenarios/check/rejoin_contracts.py): run 0 of seeds 1-3
        ("streams-ignores-followup", 3, "followup_rejoin_missed"),
    ],
)
def test_chaos_finds_a_contract_bug_by_its_rule(name: str, budget: int, invariant: str) -> None:
    found = detect(by_name(name), budget)
    assert found.found_at is not None, f"{name} not found in {budget} runs"
    assert invariant in found.new, found


def test_chaos_finds_a_zombie_the_coordinator_does_not_fence() -> None:
    # a zombie instance (the zombie fault, in Streams runs with static members): run 0 of seed
    # 2. Seed 1 found it at run 3 until chaos drew [coordinator] settings: that run now draws a
    # 10 s initial delay, which moves the zombie's overlap, and seed 1 finds the bug at run 15
    # by liveness only (docs/chaos.md "Planted bugs")
    found = detect(by_name("coordinator-does-not-fence"), 5, seed=2)
    assert "zombie_owns_work" in found.new, found


def test_a_coordinator_that_does_not_fence_is_found_by_consumer_chaos_too() -> None:
    # the zombie fault reaches static consumers as well as Streams clients: runs 5 and 0 of
    # seeds 2 and 3 by zombie_owns_work (run 3 of seed 1 by liveness first)
    bug = replace(by_name("coordinator-does-not-fence"), kind="consumer")
    found = detect(bug, 10, seed=3)
    assert found.found_at is not None and "zombie_owns_work" in found.new, found


def test_a_planted_bug_is_patched_out_afterwards() -> None:
    original = coordinator_sync.__dict__["sync"]
    with by_name("coordinator-sync-any-generation").applied():
        assert coordinator_sync.__dict__["sync"] is not original
    assert coordinator_sync.__dict__["sync"] is original
    assert len({bug.name for bug in CATALOGUE}) == len(CATALOGUE)


@pytest.fixture
def without_coordinator_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """Campaigns as they were before chaos drew ``[coordinator]`` settings (no run draws
    any), for a bug only one run of a seed reaches and the draw changes that run."""
    monkeypatch.setattr(coordinator_draw, "COORDINATOR_SHARE", 0.0)


@pytest.mark.slow
@pytest.mark.usefixtures("without_coordinator_draw")
def test_chaos_finds_a_client_ignoring_illegal_generation_through_static_members() -> None:
    # only a KIP-345 static member that missed a join phase stays in the next generation and
    # hears ILLEGAL_GENERATION for the one it runs (Streams chaos draws static members): run
    # 97 of seed 1, which since the [coordinator] draw refuses one static member (its session
    # above the drawn maximum), so the bug is then not found in 300 runs of seeds 1 or 3 (seed
    # 2: run 131, by unexplained_removal, with or without the draw)
    found = detect(by_name("client-ignores-illegal-generation"), 150)
    assert found.found_at is not None
    assert found.invariant in {"double_ownership", "stale_active_task", "stale_generation"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "budget", "invariant"),
    [
        # the join timer fires only with a straggler that heartbeats and does not rejoin: a
        # Streams static member stalled past max.poll.interval.ms (run 87 of seed 1)
        ("coordinator-join-timer-reset-on-rejoin", 120, "join_phase_overran"),
        # a worker behind the leader's config offset: a config write the worker has not read
        # yet when its assignment arrives (run 108 of seed 1)
        ("worker-runs-assignment-without-reading-config", 150, "config_behind_assignment"),
        # reached through the delay fault's SyncGroup hold past the rebalance timeout (run 84)
        ("coordinator-pending-sync-never-expires", 150, "pending_sync_kept"),
        # a same-metadata rejoin while the group completes: a SyncGroup held past
        # request.timeout.ms by the delay fault, on the wire tap's completing_join record
        # (runs 85, 21, 130 of seeds 1-3; seed 2 in tests/scenarios/check/test_rejoin_contracts.py)
        ("coordinator-completing-rejoin-rebalances", 120, "completing_rejoin_rebalanced"),
    ],
)
def test_chaos_finds_a_coordinator_timer_bug_by_its_rule(
    name: str, budget: int, invariant: str
) -> None:
    found = detect(by_name(name), budget)
    assert found.found_at is not None, f"{name} not found in {budget} runs"
    assert invariant in found.new, found


def test_chaos_finds_a_pending_member_that_never_expires() -> None:
    # a pending id that never rejoins: its MEMBER_ID_REQUIRED answer lost, or its worker
    # crashed before the rejoin. Run 2 of seed 2; seed 1 found it at run 213 until that run
    # drew a group.max.size (a pending id refused for the size is forgotten: max_size)
    found = detect(by_name("coordinator-pending-member-never-expires"), 5, seed=2)
    assert "pending_member_kept" in found.new, found
