"""Size limits on every input, checked before any work (docs/limits.md).

A scenario with ten million connectors, or an ``assign`` input with a billion tasks, would
otherwise be accepted and run until memory runs out. Each size has a generous limit; a value
above it is bad input (exit 2), one line naming the key, the value and the limit::

    big.toml: workload.generate.count: 10000000 exceeds the limit of 100000 connectors
    (raise it with GROUPSIM_LIMITS=connectors=N)

The environment variable ``GROUPSIM_LIMITS`` raises (or lowers) limits for one invocation:
a comma list of ``name=N`` (names of :data:`DEFAULT_LIMITS`), e.g.
``GROUPSIM_LIMITS=tasks=2000000,workers=5000 groupsim run big.toml``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from protocol.errors import InputError

__all__ = [
    "DEFAULT_LIMITS",
    "ENV_VAR",
    "LimitExceeded",
    "limit",
    "check_limit",
    "check_nesting",
    "limits",
]

#: The environment variable that overrides limits: ``name=N,name=N``.
ENV_VAR = "GROUPSIM_LIMITS"

#: Limit name → (default, what it counts). Generous: a run at every default still fits in a
#: few GB of memory; far larger groups than Kafka Connect or Streams clusters run in practice.
DEFAULT_LIMITS: Mapping[str, tuple[int, str]] = {
    "workers": (1_000, "workers or clients in one scenario (joins included)"),
    "connectors": (100_000, "connectors in one scenario or assign round"),
    "tasks_per_connector": (10_000, "tasks of one connector"),
    "tasks": (1_000_000, "tasks in one scenario or assign round"),
    "partitions": (100_000, "partitions of one Streams subtopology, and in total"),
    "steps": (100_000, "timeline steps, rolling restarts expanded"),
    "combinations": (10_000, "parameter combinations of one sweep"),
    "runs": (1_000_000, "runs of one sweep or chaos campaign"),
    "members": (1_000, "members of one chaos run or assign round"),
    "rounds": (10_000, "rounds of one assign input"),
    "nesting_levels": (100, "levels of nested arrays and tables in one JSON or TOML input"),
    "log_line_bytes": (16 << 20, "bytes of one event-log line (groupsim check)"),
    "log_bytes": (1 << 30, "bytes of one event log (groupsim check)"),
}


class LimitExceeded(InputError):
    """A size above its limit (or, with ``name`` ``""``, a malformed ``GROUPSIM_LIMITS``).
    ``str(err)`` is one line without the file (the loaders add it).

    Attributes:
        key: the input key (``workload.generate.count``, ``--runs``); value: the size;
        name: the limit's name; maximum: the limit in force.
    """

    def __init__(self, key: str, value: int, name: str, maximum: int) -> None:
        self.key = key
        self.value = value
        self.name = name
        self.maximum = maximum
        self.problem = (
            f"{value} exceeds the limit of {maximum} {name.replace('_', ' ')} "
            f"(raise it with {ENV_VAR}={name}=N)"
        )
        super().__init__(f"{key}: {self.problem}")

    @classmethod
    def bad_setting(cls, problem: str) -> LimitExceeded:
        """A malformed ``GROUPSIM_LIMITS`` (reported under that key)."""
        err = cls(ENV_VAR, 0, "", 0)
        err.problem = problem
        err.args = (f"{ENV_VAR}: {problem}",)
        return err


def limits() -> dict[str, int]:
    """The limits in force: :data:`DEFAULT_LIMITS` with ``GROUPSIM_LIMITS`` applied.

    Raises:
        LimitExceeded: ``GROUPSIM_LIMITS`` is malformed or names an unknown limit.
    """
    result = {name: default for name, (default, _) in DEFAULT_LIMITS.items()}
    text = os.environ.get(ENV_VAR, "")
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in result or not value.strip().isdigit():
            raise LimitExceeded.bad_setting(
                f"expected name=N items with names from {', '.join(result)}; got {item!r}"
            )
        result[name] = int(value)
    return result


def limit(name: str) -> int:
    """The limit ``name`` in force (see :func:`limits`)."""
    return limits()[name]


def check_limit(key: str, value: int, name: str) -> None:
    """Raise :class:`LimitExceeded` when ``value`` exceeds limit ``name``."""
    maximum = limit(name)
    if value > maximum:
        raise LimitExceeded(key, value, name, maximum)


# Tokens that change the nesting depth, and the strings (and TOML comments) to skip over.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_TOML_TOKENS = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]'
)


def check_nesting(text: str, *, toml: bool = False) -> None:
    """Refuse a JSON (or, with ``toml``, TOML) text whose arrays and tables nest deeper than
    the ``nesting_levels`` limit, before a parser recurses into it (Python's parsers raise
    ``RecursionError`` at about a thousand levels; no groupsim input needs more than ten).

    Brackets inside strings (and TOML comments) do not count; a malformed text is left to the
    parser to report.

    Raises:
        LimitExceeded: keyed ``"line L column C"``, the place of the first bracket too deep.
    """
    maximum = limit("nesting_levels")
    if text.count("[") + text.count("{") <= maximum:
        return  # cannot nest that deep: the common case costs two counts
    depth = 0
    for match in (_TOML_TOKENS if toml else _JSON_TOKENS).finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > maximum:
                start = match.start()
                line = text.count("\n", 0, start) + 1
                column = start - (text.rfind("\n", 0, start) + 1) + 1
                raise LimitExceeded(
                    f"line {line} column {column}", depth, "nesting_levels", maximum
                )
        elif token in ("]", "}"):
            depth = max(0, depth - 1)


def check_connect_scenario(sc: object) -> None:
    """The sizes of a decoded Connect :class:`scenarios.input.schema.Scenario`, before it is
    built: workers, connectors, tasks per connector and in total, timeline steps (a rolling
    restart counts once per worker it restarts).

    Raises:
        LimitExceeded: the first size above its limit.
    """
    from scenarios.input import schema

    assert isinstance(sc, schema.Scenario)
    cluster, workload = sc.cluster, sc.workload
    if cluster.size is not None:
        check_limit("cluster.size", cluster.size, "workers")
    joins = sum(1 for s in sc.timeline if isinstance(s, schema.Join))
    check_limit("cluster.workers", len(cluster.workers) + joins, "workers")
    workers = max(cluster.size or 0, len(cluster.workers)) + joins
    total = 0
    for i, conn in enumerate(workload.connectors):
        check_limit(f"workload.connectors[{i}].tasks", conn.tasks, "tasks_per_connector")
        total += conn.tasks
    count = len(workload.connectors)
    gen = workload.generate
    if gen is not None:
        check_limit("workload.generate.count", gen.count, "connectors")
        check_limit("workload.generate.tasks", gen.tasks, "tasks_per_connector")
        count += gen.count
        total += gen.count * gen.tasks
    check_limit("workload", count, "connectors")
    check_limit("workload", total, "tasks")
    steps = 0
    for i, step in enumerate(sc.timeline):
        tasks = getattr(step, "tasks", None)
        if isinstance(tasks, int):
            check_limit(f"timeline[{i}].tasks", tasks, "tasks_per_connector")
        if isinstance(step, schema.RollingRestart):
            steps += len(step.members) if step.members is not None else workers
        else:
            steps += 1
    check_limit("timeline", steps, "steps")


def check_streams_scenario(sc: object) -> None:
    """The sizes of a decoded :class:`scenarios.input.streams.StreamsScenario`: clients,
    partitions per subtopology and in total, timeline steps.

    Raises:
        LimitExceeded: the first size above its limit.
    """
    clients = list(getattr(sc, "clients", []))
    timeline = list(getattr(sc, "timeline", []))
    joins = sum(1 for s in timeline if type(s).__name__ == "JoinStep")
    check_limit("clients", len(clients) + joins, "workers")
    total = 0
    for i, sub in enumerate(getattr(sc, "subtopologies", [])):
        check_limit(f"subtopologies[{i}].partitions", sub.partitions, "partitions")
        total += sub.partitions
    check_limit("subtopologies", total, "partitions")
    check_limit("timeline", len(timeline), "steps")


def check_grid(parameters: Mapping[str, list[object]], seeds: int) -> None:
    """A sweep's grid before it is expanded: combinations (the product of the parameters'
    value counts) and runs (combinations × seeds).

    Raises:
        LimitExceeded: the first size above its limit.
    """
    combinations = 1
    for values in parameters.values():
        combinations *= max(1, len(values))
    check_limit("parameters", combinations, "combinations")
    check_limit("seeds", combinations * seeds, "runs")
