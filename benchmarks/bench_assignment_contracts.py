"""False-positive campaign for the KIP-441/708/925 assignment contract checkers.

    .venv/bin/python benchmarks/bench_assignment_contracts.py [--runs 1000] [--seed 1]
        [--start 0] [--members 3..10]

Runs Streams chaos runs ``start .. start+runs-1`` of campaign ``seed`` (the default
``groupsim chaos --kind streams`` settings: 3-10 clients, one virtual hour of faults) on
clean code and prints, per rule of :mod:`scenarios.check.assignment_contracts`, how many
leader ``streams_assignment`` records it judged (where the rule constrains something) and
how many violations it reported (expected: 0). Counts go to stdout as JSON too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from msgspec import UNSET

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios.campaigns.chaos import ChaosConfig, generate  # noqa: E402
from scenarios.campaigns.chaos.run import run_spec  # noqa: E402
from scenarios.check.assignment_contracts import (  # noqa: E402
    ASSIGNMENT_CHECKERS,
    ASSIGNMENT_INVARIANTS,
    contract_of,
)
from scenarios.eventlog.kinds_streams import StreamsAssignment  # noqa: E402
from scenarios.eventlog.records import decode_log  # noqa: E402


def _judged(r: StreamsAssignment) -> list[str]:
    """The rules that constrain record ``r`` (it is a leader's streams_assignment)."""
    contract = contract_of(r)
    assert contract is not None
    n = min(contract.num_standby_replicas, len(r.clients) - 1)
    out = []
    if any(c.warmups for c in r.clients.values()) or contract.kafka_warmups:
        out.append("warmups_over_budget")
    if n > 0 and r.lags:
        out.append("standby_replicas_missing")
    keys = contract.rack_aware_assignment_tags
    if (
        len(keys) == 1
        and n > 0
        and not r.active_movements
        and not r.standby_movements
        and r.cost is UNSET
        and len({str(v) for v in contract.client_tags.values()}) > 1
    ):
        out.append("standby_tags_not_spread")
    if contract.rack_aware_assignment_strategy == "min_traffic" and r.cost is not UNSET:
        out.append("rack_cost_raised")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--members", default="3..10")
    args = parser.parse_args(argv)
    low, _, high = args.members.partition("..")
    config = ChaosConfig(members=(int(low), int(high or low)), kind="streams")
    judged: Counter[str] = Counter()
    runs_judged: Counter[str] = Counter()
    found: Counter[str] = Counter()
    examples: list[str] = []
    for i in range(args.start, args.start + args.runs):
        _, result = run_spec(generate(config, args.seed, i))
        typed = decode_log(r for r in result.records if r.get("kind") != "violation")
        seen: set[str] = set()
        for r in typed:
            if isinstance(r, StreamsAssignment) and contract_of(r) is not None:
                for rule in _judged(r):
                    judged[rule] += 1
                    seen.add(rule)
        runs_judged.update(seen)
        for checker in ASSIGNMENT_CHECKERS:
            for v in checker(typed):
                found[v.invariant] += 1
                if len(examples) < 20:
                    examples.append(f"seed {args.seed} run {i}: {v.invariant}: {v.detail}")
        if (i + 1 - args.start) % 100 == 0:
            print(f"... {i + 1 - args.start} runs, violations {dict(found)}", flush=True)
    print(f"seed {args.seed}, runs {args.start}..{args.start + args.runs - 1}")
    print(f"{'rule':28} {'records judged':>15} {'runs judged':>12} {'violations':>11}")
    for rule in ASSIGNMENT_INVARIANTS:
        print(f"{rule:28} {judged[rule]:>15} {runs_judged[rule]:>12} {found[rule]:>11}")
    for line in examples:
        print(line)
    print(json.dumps({"judged": judged, "runs_judged": runs_judged, "violations": found}))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
