"""Chaos throughput: runs per minute for N-member groups over one virtual hour of faults.

Run: ``.venv/bin/python benchmarks/bench_chaos.py [--runs N] [--jobs J] [--seed S]
[--members M] [--kind connect|streams|consumer]`` (default 600 runs of 10-member Connect
groups on 2 processes). Prints one table per protocol mix. Targets (issue 25): >= 2,000 runs
per minute on 2 cores for 10-member groups, >= 400 for 50-member groups (each run: a 1 h
fault window, then the liveness bound's quiet tail; issue 13's were 1,000 and 200).
``runs/min`` is measured wall-clock throughput (it drops when other work shares the
cores); ``runs/min, 2 idle cores`` is 2 × 60 / the mean CPU seconds of a run, what two
otherwise idle cores give.

The 10,000-run campaign per protocol (not part of the test suite; docs/chaos.md has results):

    for p in eager compatible sessioned static; do
        .venv/bin/groupsim chaos --runs 10000 --seed 1 --members 10 --protocol $p \\
            --duration 1h --jobs 2 --out groupsim-out/chaos-$p --json > chaos-$p.json
    done

or ``.venv/bin/python benchmarks/bench_chaos.py --campaign 10000`` for the four in a row.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scenarios.campaigns.chaos import PROTOCOLS, CampaignResult, ChaosConfig, run_campaign  # noqa: E402
from scenarios.check.invariants import KNOWN_ISSUES  # noqa: E402

#: runs per minute on 2 cores, by group size (issue 25)
TARGET_PER_MIN = {10: 2000, 50: 400}
HOUR_MS = 3_600_000


def _row(table: Table, label: str, r: CampaignResult, target: str) -> None:
    runs = r.runs
    wall = r.wall_s
    violations = r.violations
    new = {k: v for k, v in violations.items() if k not in KNOWN_ISSUES}
    known = {k: v for k, v in violations.items() if k in KNOWN_ISSUES}
    p50d, p99d = r.downtime_percentiles()
    p50c, p99c = r.converge_percentiles()
    faults = sum(r.faults.values())
    table.add_row(
        label,
        str(runs),
        str(faults),
        f"{wall:.1f}",
        f"{60 * runs / wall:.0f}" if wall else "-",
        f"{r.cpu_s_per_run * 1000:.0f}",
        f"{r.cpu_bound_runs_per_minute(2):.0f}",
        ", ".join(f"{k} {v}" for k, v in sorted(new.items())) or "none",
        ", ".join(f"{k} {v}" for k, v in sorted(known.items())) or "none",
        f"{p50d / 1000:.1f}/{p99d / 1000:.1f}",
        "-" if p50c is None else f"{p50c / 1000:.1f}/{(p99c or 0) / 1000:.1f}",
        target,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--kind", choices=("connect", "streams", "consumer"), default="connect")
    parser.add_argument(
        "--campaign",
        type=int,
        default=0,
        help="also run a campaign of this many runs per protocol (e.g. 10000)",
    )
    parser.add_argument("--out", type=Path, default=Path("groupsim-out/bench-chaos"))
    args = parser.parse_args()

    table = Table(
        title=(
            f"groupsim chaos throughput ({args.members}-member groups, 1 h of faults + the "
            f"liveness bound, {args.jobs} processes)"
        )
    )
    for column in (
        "protocols",
        "runs",
        "faults",
        "wall s",
        "runs/min",
        "CPU ms/run",
        "runs/min, 2 idle cores",
        "violations",
        "known upstream",
        "downtime p50/p99 s",
        "converge p50/p99 s",
        "target",
    ):
        table.add_column(column, justify="left" if column in ("protocols",) else "right")

    config = ChaosConfig(members=(args.members, args.members), duration_ms=HOUR_MS, kind=args.kind)
    started = time.perf_counter()
    result = run_campaign(config, args.runs, args.seed, jobs=args.jobs, shrink_failures=False)
    result.wall_s = time.perf_counter() - started
    target = TARGET_PER_MIN.get(args.members)
    _row(
        table,
        "all four" if args.kind == "connect" else args.kind,
        result,
        f">= {target}/min" if target else "-",
    )

    summaries = {}
    for protocol in PROTOCOLS if args.campaign else ():
        config = ChaosConfig(
            members=(args.members, args.members), protocols=(protocol,), duration_ms=HOUR_MS
        )
        started = time.perf_counter()
        campaign = run_campaign(
            config,
            args.campaign,
            args.seed,
            jobs=args.jobs,
            out_dir=args.out / protocol,
        )
        campaign.wall_s = time.perf_counter() - started
        _row(table, protocol, campaign, "")
        summaries[protocol] = campaign.to_json()
    Console(width=200).print(table)
    if summaries:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "campaigns.json").write_text(json.dumps(summaries, indent=2) + "\n")
        print(f"wrote {args.out / 'campaigns.json'}")


if __name__ == "__main__":
    main()
