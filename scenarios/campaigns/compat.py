"""The Connect protocol compatibility matrix behind ``groupsim compat``.

Two families of replays, each a small generated scenario run through the normal simulator:

* **mixes** — every pair and every three-member mix of ``connect.protocol`` settings
  (``eager``, ``compatible``, ``sessioned``, ``static``) started together: which protocol the
  vote settles on (ConnectProtocolCompatibility: the lowest common one,
  ``ClassicGroup#selectProtocol``), how many rebalances it takes, and whether KIP-507 request
  signing is on;
* **paths** — every upgrade or downgrade between two settings, rolled one worker at a time
  (three workers; each restarted cleanly with the new setting, 60 s apart): the protocols the
  group went through, rebalances, worst task downtime, double ownership (KAFKA-13816 is named
  as such) and whether signing stayed on.

A case is *unsafe* when it shows any safety violation; known upstream behaviour (KAFKA-13816 on
a downgrade to eager) is reported under its name and tolerated with ``allow_known``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

import msgspec

from protocol.connect import ConnectProtocol
from scenarios.check.invariants import KAFKA_13816
from scenarios.check.summary_types import ConnectSummary
from scenarios.input.loader import loads_scenario
from scenarios.sim.runner import simulate

_RowT = TypeVar("_RowT")

__all__ = [
    "SETTINGS",
    "CompatRow",
    "LEAD_COLUMNS",
    "MatrixRow",
    "Progress",
    "lead_cells",
    "markdown_table",
    "run_matrix",
    "run_cases",
    "render_markdown",
    "rows_to_json",
]

#: The known upstream behaviour ``--allow-known`` tolerates (named in the CLI's message).
KNOWN_LABEL = KAFKA_13816

#: The four ``connect.protocol`` settings, oldest first.
SETTINGS = ("eager", "compatible", "sessioned", "static")

_CLUSTER = """
name = "{name}"
seed = {seed}
{settle}[cluster.config]
"groupsim.connector.start.ms" = 100
"groupsim.task.start.ms" = 200
"groupsim.task.stop.ms" = 100
[workload.generate]
count = 4
tasks = 4
prefix = "connector"
"""


class CompatRow(msgspec.Struct):
    """One replay of the matrix.

    ``protocols`` are the group protocols elected, in order (JoinGroup names);
    ``max_task_downtime_ms`` is virtual ms; ``violations`` maps invariant (or known upstream
    issue) to count; ``signing`` is ``on``, ``off``, ``off→on`` or ``on→off`` (KIP-507 request
    validation at the first and the last generation).
    """

    kind: str
    case: str
    settled_protocol: str | None
    protocols: list[str]
    rebalances: int
    max_task_downtime_ms: int
    double_ownership: int
    violations: dict[str, int]
    signing: str
    converged: bool

    def unsafe(self, *, allow_known: bool) -> bool:
        """True when the replay broke a safety invariant (known issues excused if allowed)."""
        known = {KAFKA_13816} if allow_known else set()
        return any(count and name not in known for name, count in self.violations.items())


def _mix_scenario(settings: tuple[str, ...], seed: int) -> str:
    text = _CLUSTER.format(
        name="compat-mix-" + "-".join(settings), seed=seed, settle="settle_ms = 120000\n"
    )
    for i, setting in enumerate(settings, start=1):
        text += (
            f'[[cluster.workers]]\nname = "w{i}"\nconfig = {{ "connect.protocol" = "{setting}" }}\n'
        )
    return text


def _path_scenario(source: str, target: str, seed: int) -> str:
    text = _CLUSTER.format(name=f"compat-path-{source}-to-{target}", seed=seed, settle="")
    text = text.replace(
        "[cluster.config]",
        f'[cluster]\nsize = 3\n[cluster.config]\n"connect.protocol" = "{source}"',
        1,
    )
    return text + (
        '[[timeline]]\nat_ms = 60000\naction = "rolling_restart"\ninterval_ms = 60000\n'
        f'down_ms = 5000\nconfig = {{ "connect.protocol" = "{target}" }}\n'
    )


def _signing(protocols: list[str]) -> str:
    def on(name: str) -> bool:
        return ConnectProtocol.from_protocol_name(name).version >= 2

    if not protocols:
        return "off"
    first, last = on(protocols[0]), on(protocols[-1])
    if first == last:
        return "on" if first else "off"
    return "off→on" if last else "on→off"


def _row(kind: str, case: str, text: str, seed: int) -> CompatRow:
    result = simulate(loads_scenario(text, f"{case}.toml"), seed)
    records = result.records
    protocols = [r["protocol"] for r in records if r["kind"] == "generation" and r["protocol"]]
    elected = list(dict.fromkeys(protocols)) if kind == "mix" else _runs(protocols)
    summary = result.summary
    assert isinstance(summary, ConnectSummary)  # loads_scenario: a Connect scenario
    violations = dict(summary.violations)
    double = sum(
        1 for r in records if r["kind"] == "violation" and r["invariant"] == "double_ownership"
    )
    return CompatRow(
        kind=kind,
        case=case,
        settled_protocol=protocols[-1] if protocols else None,
        protocols=elected,
        rebalances=summary.rebalances,
        max_task_downtime_ms=summary.task_downtime_ms_max,
        double_ownership=double,
        violations=violations,
        signing=_signing(protocols),
        converged=summary.converged,
    )


def _runs(items: list[str]) -> list[str]:
    """``items`` with consecutive repeats collapsed (the sequence of protocols in force)."""
    return [key for key, _ in itertools.groupby(items)]


def cases() -> Iterable[tuple[str, str, Callable[[int], str]]]:
    """Every (kind, case name, scenario builder) of the matrix, mixes first."""
    for size in (2, 3):
        for mix in itertools.combinations_with_replacement(SETTINGS, size):
            yield "mix", "+".join(mix), functools.partial(_mix_scenario, mix)
    for source, target in itertools.permutations(SETTINGS, 2):
        yield "path", f"{source} → {target}", functools.partial(_path_scenario, source, target)


#: A matrix's progress callback: called with (replays done, replays in total), or None.
Progress = Callable[[int, int], None] | None


def run_cases(
    todo: Iterable[tuple[str, str, Callable[[int], str]]],
    row: Callable[[str, str, str, int], _RowT],
    seed: int,
    on_progress: Progress,
) -> list[_RowT]:
    """``row(kind, case, scenario text, seed)`` for every ``(kind, case, build)`` of a matrix,
    in order, calling ``on_progress(done, total)`` after each replay (shared by the Connect
    and the consumer matrices)."""
    cases_ = list(todo)
    rows = []
    for i, (kind, name, build) in enumerate(cases_, start=1):
        rows.append(row(kind, name, build(seed), seed))
        if on_progress is not None:
            on_progress(i, len(cases_))
    return rows


def run_matrix(seed: int = 1, *, on_progress: Progress = None) -> list[CompatRow]:
    """Run every mix and path with ``seed``; rows in :func:`cases` order.

    Args:
        seed: the seed of every replay.
        on_progress: called with (replays done, replays in total) after each replay.
    """
    return run_cases(cases(), _row, seed, on_progress)


#: The first columns of any matrix (:func:`lead_cells` gives their cells): the family, the
#: case, then the protocols (assignors) elected under the matrix's own name.
LEAD_COLUMNS = ("kind", "case")

COLUMNS = (
    *LEAD_COLUMNS,
    "protocols",
    "rebalances",
    "max task downtime",
    "double ownership",
    "signing",
    "safe",
)


class _Named(Protocol):
    kind: str
    case: str
    protocols: list[str]


def lead_cells(row: _Named) -> list[str]:
    """The first cells of any matrix's row: its family (``mix``/``path``), its case, and the
    protocols (assignors) the group elected, in order (``-`` when none)."""
    return [row.kind, row.case, " → ".join(row.protocols) or "-"]


def row_cells(row: CompatRow, *, allow_known: bool) -> list[str]:
    """The table cells of ``row``, in :data:`COLUMNS` order."""
    double = str(row.double_ownership)
    if row.double_ownership and row.violations.get(KAFKA_13816):
        double += f" ({KAFKA_13816})"
    return [
        *lead_cells(row),
        str(row.rebalances),
        f"{row.max_task_downtime_ms / 1000:.1f} s",
        double,
        row.signing,
        "no" if row.unsafe(allow_known=allow_known) else "yes",
    ]


def markdown_table(columns: Sequence[str], cells: Iterable[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table: a header of ``columns``, then one line per row of
    ``cells`` (any matrix's)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines.extend("| " + " | ".join(row) + " |" for row in cells)
    return "\n".join(lines) + "\n"


def render_markdown(rows: list[CompatRow], *, allow_known: bool) -> str:
    """The matrix as a GitHub-flavoured Markdown table (:func:`markdown_table`)."""
    return markdown_table(COLUMNS, (row_cells(row, allow_known=allow_known) for row in rows))


class MatrixRow(Protocol):
    """A row of any compatibility matrix (a msgspec Struct that knows whether it is safe)."""

    def unsafe(self, *, allow_known: bool) -> bool: ...


def rows_to_json(rows: Sequence[MatrixRow], *, allow_known: bool = False) -> list[dict[str, Any]]:
    """The rows of any matrix as JSON-able dicts, each with ``safe`` as the table's column
    says it (known upstream issues excused when ``allow_known``)."""
    return [
        {**msgspec.to_builtins(row), "safe": not row.unsafe(allow_known=allow_known)}
        for row in rows
    ]
