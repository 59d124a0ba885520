"""Reproducers found by chaos campaigns (tests/scenarios/campaigns/chaos/repro/), kept as
regression tests.

Each one failed when it was found. The groupsim bugs are fixed (a worker that revoked
everything after losing the coordinator now rejoins, as WorkerCoordinator.rejoinNeededOrPending
does with a null snapshot; a worker whose herder thread dies is gone from the group's view);
the Kafka behaviours are named (a member whose session expired while its SyncGroup answer was
in flight applies and runs that stale generation: KAFKA-9184's zombie window). Every reproducer
must now run clean or show only named upstream issues."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.campaigns.chaos import classify
from scenarios.input.library import load_any
from scenarios.sim.runner import simulate

REPRO = Path(__file__).parent / "repro"

#: file -> (what it showed when found, how it was resolved)
FOUND = {
    "failover-no-rejoin.toml": ("liveness", "fixed: rejoin after a coordinator-lost revoke"),
    "latency-no-rejoin.toml": ("liveness", "fixed: rejoin after a coordinator-lost revoke"),
    "failover-then-protocol-change-balance.toml": (
        "balance",
        "fixed: a worker whose herder died (INCONSISTENT_GROUP_PROTOCOL after a failover, "
        "Kafka's one-protocol replay) is no longer counted as live",
    ),
    "static-fenced-answer-on-dropped-connection.toml": (
        "liveness",
        "fixed: an answer on a connection the member dropped never arrives (NetworkClient)",
    ),
    "lost-heartbeat-answer-evicts-member.toml": (
        "unexplained_removal",
        "fixed: a Heartbeat every interval, answers matched by correlation id (HeartbeatThread)",
    ),
    "no-client-left-in-a-quiet-period.toml": (
        "quiet_period_balance",
        "fixed: with no client alive, no task is expected to run",
    ),
    "static-leader-replaced-during-join-answers.toml": (
        "leader_changed",
        "fixed: a JoinGroup answer may name a static leader's id from before its replacement",
    ),
    "latency-late-sync-double-ownership.toml": ("double_ownership", "named: KAFKA-9184"),
    "slow-removed-before-poll-timeout.toml": ("double_ownership", "named: KAFKA-16056"),
    "slow-then-downgrade-kafka-13816-per-member.toml": (
        "double_ownership",
        "named: KAFKA-13816",
    ),
    "loss-deleted-connector-keeps-running.toml": ("liveness", "named: deleted-not-revoked"),
    "crash-leader-deleted-tasks-not-discounted.toml": ("balance", "named: deleted-not-revoked"),
    "chaos-1368-deleted-task-not-discounted.toml": (
        "quiet_period_balance",
        "named: deleted-not-revoked",
    ),
    "static-straggler-keeps-task.toml": ("double_ownership", "named: streams-zombie"),
    "static-join-held-keeps-task.toml": ("double_ownership", "named: streams-zombie"),
    "static-rejoined-worker-keeps-deleted-task.toml": ("liveness", "named: deleted-not-revoked"),
    "static-member-gone-never-expires.toml": ("liveness", "named: static-member-kept"),
    "latency-late-sync-stale-generation.toml": ("stale_generation", "named: KAFKA-9184"),
    "late-sync-foreign-assignment.toml": ("foreign_assignment", "named: KAFKA-9184"),
    # seed 7, run 1794: the leader's SyncGroup, held by a delay_request fault, reached the
    # coordinator loaded after a failover, whose rebalance had reused its generation id, and
    # installed the stale assignment (a connector ran nowhere for 18 minutes)
    "failover-late-sync-reused-generation.toml": (
        "quiet_period_balance",
        "fixed: a request sent before a coordinator failover is answered NOT_COORDINATOR by "
        "the broker it went to, never handled by the new coordinator",
    ),
    # consumer seed 1, run 882: a static consumer restarted (its partitions given up, then
    # taken back in the same generation); later its zombie twin took the instance over
    "consumer-zombie-twin-after-own-restart.toml": (
        "cooperative_move_without_revocation",
        "fixed: a partition its member owns again is no longer counted as given up by it",
    ),
    # consumer seed 1, run 565: a static consumer rejoined in the same millisecond as a new
    # member joined, whose JoinGroup rebalanced the group
    "consumer-static-rejoin-beside-new-member.toml": (
        "static_rejoin_rebalanced",
        "fixed: a rebalance a new member (or a leaving one) starts at that instant is its own",
    ),
    # consumer seed 21, run 131 (the 10,000-run refereed campaign): a static consumer died of
    # INCONSISTENT_GROUP_PROTOCOL; a new process took its instance over in the same
    # generation and got the instance's assignment, as ClassicGroup#replaceStaticMember does
    "consumer-takeover-after-fatal-restart.toml": (
        "cooperative_move_without_revocation",
        "fixed: a takeover of a static member's instance is that member, not a move",
    ),
    # consumer seed 21, run 5895: a stalled static consumer's poll timer expired (it forgot
    # its member id), a twin took the instance over, then the stalled one's held Heartbeat
    # came back FENCED_INSTANCE_ID: stale, ignored (HeartbeatResponseHandler), so it rejoined
    # and took the instance back, as Kafka's client does
    "consumer-stale-fence-after-poll-timeout.toml": (
        "zombie_owns_work",
        "fixed: a stale Heartbeat's fence the client ignored is not a fence it heard",
    ),
    # consumer seed 21, run 5998: a twin with the default subscription took over a static
    # consumer that had narrowed its own; the coordinator rebalanced nothing (KAFKA-12759)
    "consumer-takeover-subscribes-more-kafka-12759.toml": ("liveness", "named: KAFKA-12759"),
    # Streams seed 21, runs 734 and 7756 (the 10,000-run refereed campaign): a client's
    # JoinGroup answer, sent when its join completed, came late (a latency fault) after a
    # twin had taken its instance over; its SyncGroup was then fenced, as Kafka's is
    "streams-zombie-late-join-answer-734.toml": (
        "zombie_owns_work",
        "fixed: a late answer of a join completed before the takeover is no admission",
    ),
    "streams-zombie-late-join-answer-7756.toml": (
        "zombie_owns_work",
        "fixed: a late answer of a join completed before the takeover is no admission",
    ),
    # streams seed 21, run 6368: a static client gone without LeaveGroup stayed in every
    # generation (static-member-kept); each assignment put a warm-up on it that its frozen
    # subscription never catches up and withheld the tasks it never revokes, so the last
    # assignment still asked for a probing rebalance and was not yet balanced
    "static-member-kept-never-balanced.toml": (
        "balance",
        "fixed: balance is judged only when the last assignment asks for no further rebalance "
        "(TaskAssignorConvergenceTest checks balance after convergence)",
    ),
    # streams seed 21, runs 6122 and 6864 (the 10,000-run refereed campaign): the leader's
    # SyncGroup was held past a coordinator failover, which reloaded the previous generation;
    # the next round reused the id, and the tasks' old owners had lost them (ILLEGAL_GENERATION)
    # or been replaced by a new process of their static instance, so nothing was withheld from
    # the client the lost round had withheld from; the checker still judged it by that round
    "failover-reused-generation-withheld-6122.toml": (
        "followup_rebalance_missing",
        "fixed: a generation id reused after a failover is judged by its latest leader decision",
    ),
    "failover-reused-generation-withheld-6864.toml": (
        "followup_rebalance_missing",
        "fixed: a generation id reused after a failover is judged by its latest leader decision",
    ),
    # seed 22 runs of 10,000 per kind on this release's code: a member stalled mid-join
    # handles the lost round's JoinGroup answer late (KIP-62: nobody polls during the stall)
    # — a generation id a failover made the group reuse (consumer 6256, 7690), or a leader's
    # for a generation the group had left, whose assignor ran and whose SyncGroup was fenced
    # (Streams 7604)
    "consumer-stale-join-answer-after-failover-6256.toml": (
        "leader_changed",
        "fixed: a generation id reused after a failover keeps both rounds' leaders and members",
    ),
    "consumer-stale-join-answer-after-failover-7690.toml": (
        "leader_changed",
        "fixed: a generation id reused after a failover keeps both rounds' leaders and members",
    ),
    "streams-stale-leader-answer-after-stall-7604.toml": (
        "liveness",
        "fixed: a Streams leader decision for a generation the group has left is not the last",
    ),
    # consumer seed 23 run 5819 (--referee kafka): a static consumer's instance taken over
    # twice in one generation (its own delayed restart, then a twin); the twin gets the
    # instance's assignment, which the first process had given up by crashing: the same member
    "consumer-takeover-of-takeover-5819.toml": (
        "cooperative_move_without_revocation",
        "fixed: every earlier member id of a static instance is the same member",
    ),
    # consumer seed 23 run 7664 (--referee kafka): a static consumer whose poll timer expired
    # rejoins with an empty member id; a twin takes the instance over while that JoinGroup is
    # delayed, and the JoinGroup then takes it back, as Kafka's coordinator does
    "consumer-forgot-id-before-takeover-7664.toml": (
        "zombie_owns_work",
        "fixed: a process that forgot its member id before a takeover is no zombie",
    ),
    # Streams seed 23 run 2878 (--referee kafka): the Streams form of consumer run 7664 — a
    # static client whose poll timer expired rejoins with an empty member id, delayed past a
    # twin's takeover, and takes the instance back
    "streams-forgot-id-before-takeover-2878.toml": (
        "zombie_owns_work",
        "fixed: a process that forgot its member id before a takeover is no zombie",
    ),
    # Streams seed 24 run 1169: a client stalled with its JoinGroup in flight handles the held
    # answer and syncs just before the session the stall ran out expires (a SyncGroup to a
    # Stable group renews none); removed, it runs its new tasks until its next Heartbeat
    "streams-removed-as-its-stall-ends-1169.toml": (
        "double_ownership",
        "named: streams-zombie",
    ),
    # consumer seed 22 run 1780: a consumer on the eager protocol ([range, cooperative-sticky])
    # in a rack-aware cooperative-sticky group whose subscriptions differ; the group rebalances
    # for ever (377 generations), as Kafka's real consumers do on a real three-rack cluster
    # (tests/kafka_oracle/test_real_cluster_eager_member_oscillation.py)
    "consumer-eager-member-sticky-oscillation-1780.toml": (
        "liveness",
        "named: eager-member-cooperative-loop",
    ),
}


def test_every_reproducer_is_listed() -> None:
    assert sorted(p.name for p in REPRO.glob("*.toml")) == sorted(FOUND)


def _open(name: str) -> bool:
    """Still open: a Kafka behaviour not named yet (or a bug not fixed yet)."""
    return not FOUND[name][1].startswith(("fixed", "named"))


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=FOUND[n][1])) if _open(n) else n
        for n in sorted(FOUND)
    ],
)
def test_reproducer_runs_clean_or_named(name: str) -> None:
    loaded = load_any(REPRO / name)
    result = simulate(loaded, loaded.scenario.seed)
    _, first_new = classify(result)
    assert first_new is None, (FOUND[name], first_new)
    assert result.failures == []
    if FOUND[name][1].startswith("named"):
        known = {r.get("known_issue") for r in result.records if r["kind"] == "violation"}
        assert FOUND[name][1].removeprefix("named: ") in known
        assert known <= {
            "KAFKA-9184",
            "KAFKA-16056",
            "KAFKA-13816",
            "deleted-not-revoked",
            "streams-zombie",
            "static-member-kept",
            "consumer-zombie",
            "sticky-unsubscribed-owner",
            "eager-member-cooperative-loop",
            "KAFKA-12759",
        }
