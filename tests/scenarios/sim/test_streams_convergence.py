"""Group-level convergence in the spirit of Kafka's ``TaskAssignorConvergenceTest``: random
clusters, clients dropped and added over virtual time, each run ends valid and balanced
(KIP-441) within the probing-rebalance bound, with no safety violation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scenarios.input.streams import loads_streams_scenario
from scenarios.sim.runner import simulate as simulate_streams

PROBING_MS = 60_000


@st.composite
def clusters(draw: st.DrawFn) -> tuple[str, int]:
    clients = draw(st.integers(1, 5))
    stateful = draw(st.integers(1, 6))
    stateless = draw(st.integers(0, 3))
    standbys = draw(st.integers(0, 2))
    warmups = draw(st.integers(1, 3))
    spare = draw(st.integers(0, 2))
    bound = 2 * (stateful + stateful * standbys) + 1
    lines = [
        'kind = "streams"',
        'name = "convergence"',
        f"settle_ms = {(bound + 3) * PROBING_MS}",
        "[config]",
        f'"num.standby.replicas" = {standbys}',
        f'"max.warmup.replicas" = {warmups}',
        '"acceptable.recovery.lag" = 100',
        f'"probing.rebalance.interval.ms" = {PROBING_MS}',
        '"groupsim.restore.records.per.sec" = 5000',
        "[[subtopologies]]",
        "id = 0",
        f"partitions = {stateful}",
        "changelog_records = 150000",
    ]
    if stateless:
        lines += ["[[subtopologies]]", "id = 1", f"partitions = {stateless}", "stateful = false"]
    for i in range(clients + spare):
        lines += ["[[clients]]", f'name = "c{i}"', f'process_id = "PID_{i}"']
        if i >= clients:
            lines.append("autostart = false")
    live = set(range(clients))
    dropped: set[int] = set(range(clients, clients + spare))
    at = 0
    for _ in range(draw(st.integers(1, 4))):
        at += draw(st.integers(20_000, 120_000))
        if live and (not dropped or draw(st.booleans())) and len(live) > 1:
            who = draw(st.sampled_from(sorted(live)))
            live.discard(who)
            dropped.add(who)
            if draw(st.booleans()):
                lines += ["[[timeline]]", f"at_ms = {at}", 'action = "crash"', f'client = "c{who}"']
            else:
                lines += [
                    "[[timeline]]",
                    f"at_ms = {at}",
                    'action = "leave"',
                    f'client = "c{who}"',
                    "leave_group = true",
                ]
        elif dropped:
            who = draw(st.sampled_from(sorted(dropped)))
            dropped.discard(who)
            live.add(who)
            lines += ["[[timeline]]", f"at_ms = {at}", 'action = "join"', f'client = "c{who}"']
    return "\n".join(lines) + "\n", bound


@settings(max_examples=60, deadline=None)
@given(clusters(), st.integers(0, 3))
def test_random_clusters_converge(case: tuple[str, int], seed: int) -> None:
    text, bound = case
    loaded = loads_streams_scenario(text, source="convergence.toml")
    result = simulate_streams(loaded, seed)
    summary = result.summary
    assert summary.violations == {}, [r for r in result.records if r["kind"] == "violation"]
    assert summary.converged, summary.convergence
    last_step = max((s.at_ms for s in loaded.steps), default=0)
    fired = [
        r
        for r in result.records
        if r["kind"] == "timer_fired"
        and r.get("key") == "probing-rebalance"
        and r["t_ms"] > last_step
    ]
    assert len(fired) <= bound
