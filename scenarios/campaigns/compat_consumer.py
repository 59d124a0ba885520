"""The consumer assignor compatibility matrix behind ``groupsim compat --kind consumer``.

Two families of replays, each a small generated consumer-group scenario
(docs/consumer.md) run through the normal simulator:

* **mixes** — two consumers started together with every pair of
  ``partition.assignment.strategy`` lists of :data:`LISTS`: which assignor the coordinator's
  vote elects (``ClassicGroup#selectProtocol``: the protocol every member supports that most
  members list first), each member's rebalance protocol (``ConsumerCoordinator``: the highest
  one *all* its own assignors support), and who dies of ``INCONSISTENT_GROUP_PROTOCOL`` (no
  protocol in common);
* **paths** — KIP-429 upgrades and downgrades rolled over three consumers, one bounce per
  stage (each consumer restarted cleanly with the stage's list, 30 s apart): done in two
  bounces (``[range]`` → ``[range, cooperative-sticky]`` → ``[cooperative-sticky]``) or in
  one, the assignors elected, the rebalance protocols in force, consumers that died, the
  longest time a partition had no owner, and ownership violations.

A case is *unsafe* when it shows an ownership or liveness violation; a consumer's death is an
outage, shown in its own column, not a safety violation. Known behaviours
(``consumer-zombie``) are tolerated with ``allow_known``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Sequence

import msgspec

from scenarios.campaigns.chaos.generate_consumer import STRATEGY_LISTS
from scenarios.campaigns.compat import (
    LEAD_COLUMNS,
    Progress,
    lead_cells,
    markdown_table,
    rows_to_json,
    run_cases,
)
from scenarios.check.consumer_known import CONSUMER_ZOMBIE
from scenarios.check.consumer_summary import partition_downtime
from scenarios.check.summary_types import ConsumerSummary
from scenarios.input.consumer import loads_consumer_scenario
from scenarios.sim.runner import simulate

__all__ = [
    "LISTS",
    "PATHS",
    "TITLE",
    "COLUMNS",
    "ConsumerCompatRow",
    "run_matrix",
    "row_cells",
    "render_markdown",
    "rows_to_json",
]

TITLE = "Consumer assignor compatibility"
#: The known behaviour ``--allow-known`` tolerates (named in the CLI's message).
KNOWN_LABEL = CONSUMER_ZOMBIE

#: The ``partition.assignment.strategy`` lists of the mixes: the lists a consumer chaos run
#: draws from (the eager assignors, KIP-429's ``cooperative-sticky`` and both orders of an
#: upgrade's ``[range, cooperative-sticky]``).
LISTS: tuple[tuple[str, ...], ...] = STRATEGY_LISTS

#: Rolling paths: the starting list, then one list per bounce.
PATHS: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("range",), ("range", "cooperative-sticky"), ("cooperative-sticky",)),
    (("range",), ("cooperative-sticky",)),
    (("range",), ("cooperative-sticky", "range")),
    (("range", "cooperative-sticky"), ("cooperative-sticky",)),
    (("sticky",), ("sticky", "cooperative-sticky"), ("cooperative-sticky",)),
    (("cooperative-sticky",), ("range", "cooperative-sticky"), ("range",)),
    (("cooperative-sticky",), ("range",)),
)

_BOUNCE_MS = 30_000

_GROUP = """kind = "consumer"
name = "{name}"
seed = {seed}
settle_ms = 120000
[topics]
orders = 6
payments = 3
"""


def _name(strategies: Sequence[str]) -> str:
    return ",".join(strategies)


def _toml_list(strategies: Sequence[str]) -> str:
    return "[" + ", ".join(f'"{s}"' for s in strategies) + "]"


def _mix_scenario(a: tuple[str, ...], b: tuple[str, ...], seed: int) -> str:
    text = _GROUP.format(name=f"compat-mix-{_name(a)}+{_name(b)}", seed=seed)
    for member, strategies in (("c1", a), ("c2", b)):
        text += (
            f'[[consumers]]\nname = "{member}"\n'
            f'config = {{ "partition.assignment.strategy" = {_toml_list(strategies)} }}\n'
        )
    return text


def _path_scenario(stages: tuple[tuple[str, ...], ...], seed: int) -> str:
    name = "compat-path-" + "-to-".join(_name(s) for s in stages)
    text = _GROUP.format(name=name, seed=seed)
    text += f'[config]\n"partition.assignment.strategy" = {_toml_list(stages[0])}\n'
    for member in ("c1", "c2", "c3"):
        text += f'[[consumers]]\nname = "{member}"\n'
    at = _BOUNCE_MS
    for stage in stages[1:]:
        for member in ("c1", "c2", "c3"):
            text += (
                f'[[timeline]]\naction = "restart"\nat_ms = {at}\nmember = "{member}"\n'
                f'config = {{ "partition.assignment.strategy" = {_toml_list(stage)} }}\n'
            )
            at += _BOUNCE_MS
    return text


class ConsumerCompatRow(msgspec.Struct):
    """One replay of the matrix.

    ``protocols``: the assignors elected, consecutive repeats collapsed; ``rebalance``: the
    rebalance protocols in force per generation (``EAGER``, ``COOPERATIVE``, or ``mixed`` when
    the members of one generation differ), collapsed; ``fatal``: consumers that died (each
    ``member: error``); ``max_partition_downtime_ms``: the longest time, after its first
    assignment, that a partition had no owner (virtual ms;
    :attr:`scenarios.check.consumer_summary.PartitionDowntime.longest_gap_ms`);
    ``violations``: invariant (or known behaviour) → count.
    """

    kind: str
    case: str
    protocols: list[str]
    rebalance: list[str]
    rebalances: int
    max_partition_downtime_ms: int
    fatal: list[str]
    violations: dict[str, int]
    converged: bool

    def unsafe(self, *, allow_known: bool) -> bool:
        """True when the replay broke an ownership or liveness rule (``consumer-zombie``
        excused if allowed)."""
        known = {CONSUMER_ZOMBIE} if allow_known else set()
        return any(count and name not in known for name, count in self.violations.items())


def _collapse(items: Iterable[str]) -> list[str]:
    return [key for key, _ in itertools.groupby(items)]


def _row(kind: str, case: str, text: str, seed: int) -> ConsumerCompatRow:
    result = simulate(loads_consumer_scenario(text, f"{case}.toml"), seed)
    records = result.records
    protocols = [r["protocol"] for r in records if r["kind"] == "generation" and r["protocol"]]
    per_generation: dict[int, set[str]] = {}
    for r in records:
        if r["kind"] == "consumer_assignment":
            per_generation.setdefault(int(r["generation"]), set()).add(r["rebalance_protocol"])
    rebalance = [
        next(iter(kinds)) if len(kinds) == 1 else "mixed"
        for _, kinds in sorted(per_generation.items())
    ]
    assert isinstance(result.summary, ConsumerSummary)
    summary = result.summary.consumer
    return ConsumerCompatRow(
        kind=kind,
        case=case,
        protocols=_collapse(protocols),
        rebalance=_collapse(rebalance),
        rebalances=summary.generations,
        max_partition_downtime_ms=partition_downtime(records).longest_gap_ms,
        fatal=[f"{r['member']}: {r['error']}" for r in records if r["kind"] == "member_fatal"],
        violations=dict(summary.violation_names),
        converged=result.summary.converged,
    )


def cases() -> Iterable[tuple[str, str, Callable[[int], str]]]:
    """Every (kind, case name, scenario builder) of the matrix, mixes first."""
    for a, b in itertools.combinations_with_replacement(LISTS, 2):
        yield "mix", f"[{_name(a)}] + [{_name(b)}]", functools.partial(_mix_scenario, a, b)
    for stages in PATHS:
        case = " → ".join(f"[{_name(s)}]" for s in stages)
        yield "path", case, functools.partial(_path_scenario, stages)


def run_matrix(seed: int = 1, *, on_progress: Progress = None) -> list[ConsumerCompatRow]:
    """Every mix and path of :func:`cases` replayed with ``seed``, as
    :func:`scenarios.campaigns.compat.run_cases` runs the Connect matrix's (same arguments)."""
    return run_cases(cases(), _row, seed, on_progress)


COLUMNS = (
    *LEAD_COLUMNS,
    "assignors",
    "rebalance protocol",
    "rebalances",
    "max partition downtime",
    "died",
    "safe",
)


def row_cells(row: ConsumerCompatRow, *, allow_known: bool) -> list[str]:
    """The table cells of ``row``, in :data:`COLUMNS` order."""
    return [
        *lead_cells(row),
        " → ".join(row.rebalance) or "-",
        str(row.rebalances),
        f"{row.max_partition_downtime_ms / 1000:.1f} s",
        ", ".join(row.fatal) or "-",
        "no" if row.unsafe(allow_known=allow_known) else "yes",
    ]


def render_markdown(rows: list[ConsumerCompatRow], *, allow_known: bool) -> str:
    """The consumer matrix in Markdown (:func:`scenarios.campaigns.compat.markdown_table`)."""
    return markdown_table(COLUMNS, (row_cells(row, allow_known=allow_known) for row in rows))
