"""Planted-bug benchmark: runs-to-detection and shrunk reproducer size per planted bug.

    .venv/bin/python benchmarks/bench_planted.py [--runs 300] [--seed 1] [--no-shrink]

For each bug of ``tests/scenarios/campaigns/chaos/planted`` (applied by monkeypatching), runs chaos
runs (Connect:
5 workers, 10 virtual minutes of faults, protocols cycled; Streams bugs: ``--kind streams``
runs of 5 clients) until a violation that is not a known upstream issue, then shrinks that run with
:func:`scenarios.campaigns.chaos.shrink` and reports its timeline steps. Prints a table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios.campaigns.chaos import generate, shrink  # noqa: E402
from tests.scenarios.campaigns.chaos.planted import (  # noqa: E402
    CATALOGUE,
    PlantedBug,
    chaos_config,
    detect,
)


def _shrunk_steps(bug: PlantedBug, seed: int, index: int) -> int | None:
    spec = generate(chaos_config(bug, index), seed, index)
    with bug.applied():
        return len(shrink(spec).spec.steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument(
        "--referee",
        choices=["kafka"],
        help="run the referee-only bugs with --referee kafka (else they are listed as skipped)",
    )
    args = parser.parse_args(argv)
    print(
        f"{'bug':40} {'kind':8} {'runs':>5} {'found':>6} {'invariant':28} {'steps':>5} {'cpu s':>6}"
    )
    missed = 0
    for bug in CATALOGUE:
        start = time.process_time()
        if bug.referee_only and args.referee is None:
            print(f"{bug.name:40} {bug.kind:8} {'-':>5} {'skip':>6} referee only (--referee kafka)")
            continue
        found = detect(bug, args.runs, seed=args.seed, referee=args.referee)
        steps: int | None = None
        if found.found_at is not None and not args.no_shrink:
            steps = _shrunk_steps(bug, args.seed, found.found_at)
        missed += found.found_at is None
        print(
            f"{bug.name:40} {bug.kind:8} {found.runs:>5} "
            f"{'yes' if found.found_at is not None else 'NO':>6} {found.invariant or '-':28} "
            f"{'-' if steps is None else steps:>5} {time.process_time() - start:>6.1f}"
        )
    print(f"{len(CATALOGUE) - missed}/{len(CATALOGUE)} found within {args.runs} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
