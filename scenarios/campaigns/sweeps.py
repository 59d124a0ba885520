"""Sweep files: a grid of scenario parameters × seeds, expanded into runs (no pyspark here).

A sweep file is TOML (the format is ``docs/sweeps.md``)::

    name = "protocol-comparison"
    seeds = 20                          # seeds 0..19, or an explicit list [1, 5, 9]
    generator = "rolling-bounce"        # or scenario = "<library name or path>",
                                        # or template = "<TOML file with ${param} placeholders>"
    [parameters]                        # the grid: every combination of these lists
    protocol = ["eager", "compatible", "sessioned"]
    workers = [5, 10, 20, 50]

    [set]                               # optional: scenario key path -> value
    'cluster.config."groupsim.task.start.ms"' = "${task_start_ms}"

The override mechanism, for every base: the base becomes a scenario document (a generator
builds it from its parameters; a ``template``'s ``${name}`` placeholders are replaced by the
parameters' values written as TOML literals; a ``scenario`` file is read as is), ``[set]``
assigns values at scenario key paths (a string that is exactly ``"${name}"`` takes the
parameter's value and type; other strings have ``${name}`` replaced by the value's text),
and the result is written back to TOML text and loaded with
:func:`scenarios.input.loader.loads_scenario`. Every combination is loaded once when the sweep is
loaded, so a parameter value the scenario format rejects is reported before anything runs.

Runs: one per (combination, seed), in grid order (the first parameter varies slowest), seeds
innermost. A run's id is the first 16 hex digits of the SHA-256 of ``{"params", "seed",
"sweep"}`` (canonical JSON): re-running a sweep recognises the runs it already has.

:func:`execute_run` runs one :class:`RunSpec` in this process and returns its ``runs`` row
and its ``events`` rows; the Spark pipeline (:mod:`scenarios.analysis`) calls it inside
executors, the benchmark in a ``multiprocessing`` pool. A run that raises becomes a row with
``status = "failed"`` and the error, never an exception.

Errors: :class:`SweepError`, one line ``"<file>: <key path>: <problem>"`` as
:class:`scenarios.input.loader.ScenarioError`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from scenarios.input.library import resolve_scenario
from scenarios.input.loader import LoadedScenario, ScenarioError, loads_scenario
from scenarios.input.schema import INVARIANTS

__all__ = [
    "SweepError",
    "SweepFile",
    "Combination",
    "RunSpec",
    "RunOutcome",
    "LoadedSweep",
    "GENERATORS",
    "RUN_COLUMNS",
    "EVENT_COLUMNS",
    "RESERVED_NAMES",
    "AGGREGATE_METRICS",
    "PERCENTILES",
    "sweeps_dir",
    "sweep_names",
    "resolve_sweep",
    "load_sweep",
    "loads_sweep",
    "make_run_id",
    "execute_run",
    "toml_dumps",
    "param_type",
]

# --------------------------------------------------------------------------- errors


class SweepError(Exception):
    """A sweep file that cannot be used: ``"<file>: <key path>: <problem>"`` (one line), or
    ``"<file>: <problem>"`` when no key is involved."""

    def __init__(self, file: str, key_path: str | None, problem: str) -> None:
        self.file = file
        self.key_path = key_path
        self.problem = " ".join(str(problem).split())
        text = f"{file}: {key_path}: {self.problem}" if key_path else f"{file}: {self.problem}"
        super().__init__(text)


# --------------------------------------------------------------------------- the file


class SweepFile(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A sweep file as written (see the module docstring and ``docs/sweeps.md``)."""

    name: str
    description: str = ""
    seeds: int | list[int] = 1
    scenario: str | None = None
    template: str | None = None
    generator: str | None = None
    parameters: dict[str, list[Any]] = msgspec.field(default_factory=dict)
    set: dict[str, Any] = msgspec.field(default_factory=dict)


#: Column types used by the tables (Spark/Arrow names): string, long, double, boolean,
#: array<string>.
ColumnType = str

#: The ``runs`` table after the parameter columns (which come first, after ``run_id`` and
#: ``batch``): ``(name, type)``. Counts and virtual times are ``long``; ``wall_ms`` is the
#: real time the simulation took (not deterministic). Metric columns are null for a failed
#: run; ``scenario_*`` are null when the scenario could not even be loaded.
RUN_COLUMNS: list[tuple[str, ColumnType]] = [
    ("sweep", "string"),
    ("seed", "long"),
    ("status", "string"),
    ("error", "string"),
    ("scenario", "string"),
    ("scenario_workers", "long"),
    ("scenario_protocol", "string"),
    ("scenario_delay_ms", "long"),
    ("rebalances", "long"),
    ("join_rounds", "long"),
    ("sync_rounds", "long"),
    ("tasks_configured", "long"),
    ("task_downtime_ms_total", "long"),
    ("task_downtime_ms_max", "long"),
    ("connector_downtime_ms_total", "long"),
    ("task_movements", "long"),
    ("max_imbalance", "long"),
    ("converged", "boolean"),
    ("time_to_converge_ms", "long"),
    ("final_protocol", "string"),
    ("end_ms", "long"),
    ("violations_total", "long"),
    *[(f"violations_{name.replace('-', '_').lower()}", "long") for name in INVARIANTS],
    ("expectation_failures", "array<string>"),
    ("expect_ok", "boolean"),
    ("events", "long"),
    ("wall_ms", "double"),
]

#: The ``events`` table after ``run_id``, ``batch``, ``seed`` and the parameter columns: one
#: row per event-log record. ``fields`` is the record's other keys as a JSON object.
EVENT_COLUMNS: list[tuple[str, ColumnType]] = [
    ("t_ms", "long"),
    ("seq", "long"),
    ("kind", "string"),
    ("member", "string"),
    ("fields", "string"),
]

#: Metrics summarised per parameter combination in ``aggregates/`` (over ``ok`` runs):
#: ``<metric>_mean``, ``<metric>_p50``, ``<metric>_p95``, ``<metric>_p99`` (doubles; exact
#: percentiles with linear interpolation between closest ranks, as Spark's ``percentile``).
AGGREGATE_METRICS: tuple[str, ...] = (
    "task_downtime_ms_total",
    "task_downtime_ms_max",
    "rebalances",
    "task_movements",
    "time_to_converge_ms",
)
#: The percentiles of :data:`AGGREGATE_METRICS` in ``aggregates/``.
PERCENTILES: tuple[tuple[str, float], ...] = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))

#: Names a parameter may not take (they are columns of the tables).
RESERVED_NAMES = frozenset(
    {"run_id", "batch", "log", "runs", "ok_runs", "failed_runs", "converged_runs"}
    | {"expect_ok_runs", "runs_with_violations"}
    | {n for n, _ in RUN_COLUMNS}
    | {n for n, _ in EVENT_COLUMNS}
)

_PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SWEEP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


def param_type(value: Any) -> ColumnType | None:
    """The column type of a parameter value: ``string``, ``long``, ``double``, ``boolean``, or
    ``None`` for a value a parameter cannot take (a table, an array, a date)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    return None


# --------------------------------------------------------------------------- generators


@dataclass(frozen=True)
class Generator:
    """A built-in scenario generator: ``build(params) -> scenario document`` (a dict as
    :mod:`tomllib` would decode it). ``params`` maps each known parameter to its default;
    ``None`` means "derived" (documented in ``help``)."""

    name: str
    description: str
    params: dict[str, Any]
    help: dict[str, str]
    build: Callable[[dict[str, Any]], dict[str, Any]]


def _common_cluster(p: dict[str, Any]) -> dict[str, Any]:
    connectors = p["connectors"] if p["connectors"] is not None else p["workers"]
    return {
        "network": {"latency_ms": p["latency_ms"], "jitter_ms": p["jitter_ms"]},
        "cluster": {
            "size": p["workers"],
            "config": {
                "connect.protocol": p["protocol"],
                "scheduled.rebalance.max.delay.ms": p["delay_ms"],
                "session.timeout.ms": p["session_timeout_ms"],
                "groupsim.task.start.ms": p["task_start_ms"],
                "groupsim.task.stop.ms": p["task_stop_ms"],
            },
        },
        "workload": {"generate": {"count": connectors, "tasks": p["tasks"]}},
    }


def _rolling_bounce(p: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "rolling-bounce",
        "description": "every worker restarted once, one at a time",
    }
    doc.update(_common_cluster(p))
    doc["timeline"] = [
        {"at_ms": p["start_ms"], "action": "phase", "name": "rolling bounce"},
        {
            "at_ms": p["start_ms"],
            "action": "rolling_restart",
            "interval_ms": p["interval_ms"],
            "down_ms": p["down_ms"],
            "clean": p["clean"],
        },
    ]
    return doc


def _worker_departure(p: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "worker-departure",
        "description": "workers leave (or crash) and come back after down_ms",
    }
    doc.update(_common_cluster(p))
    timeline: list[dict[str, Any]] = [
        {"at_ms": p["start_ms"], "action": "phase", "name": "departure"}
    ]
    for i in range(int(p["departures"])):
        timeline.append(
            {
                "at_ms": p["start_ms"],
                "action": "restart",
                "member": f"w{p['workers'] - i}",
                "down_ms": p["down_ms"],
                "clean": p["clean"],
            }
        )
    doc["timeline"] = timeline
    return doc


_COMMON_PARAMS: dict[str, Any] = {
    "workers": 5,
    "protocol": "sessioned",
    "delay_ms": 300_000,
    "connectors": None,
    "tasks": 8,
    "session_timeout_ms": 10_000,
    "task_start_ms": 200,
    "task_stop_ms": 100,
    "latency_ms": 1,
    "jitter_ms": 5,
    "start_ms": 60_000,
}
_COMMON_HELP = {
    "workers": "cluster size (workers w1..wN)",
    "protocol": "connect.protocol of every worker",
    "delay_ms": "scheduled.rebalance.max.delay.ms of every worker",
    "connectors": "connectors (default: one per worker)",
    "tasks": "tasks per connector",
    "session_timeout_ms": "session.timeout.ms of every worker",
    "task_start_ms": "groupsim.task.start.ms (herder time to start a task)",
    "task_stop_ms": "groupsim.task.stop.ms (herder time to stop a task)",
    "latency_ms": "network latency",
    "jitter_ms": "network jitter (seeded)",
    "start_ms": "when the faults begin",
}

GENERATORS: dict[str, Generator] = {
    "rolling-bounce": Generator(
        name="rolling-bounce",
        description="a rolling restart of every worker, interval_ms apart, each down down_ms",
        params={**_COMMON_PARAMS, "interval_ms": 30_000, "down_ms": 5_000, "clean": True},
        help={
            **_COMMON_HELP,
            "interval_ms": "time between two workers' restarts",
            "down_ms": "how long each worker is down",
            "clean": "true: LeaveGroup on shutdown; false: a crash",
        },
        build=_rolling_bounce,
    ),
    "worker-departure": Generator(
        name="worker-departure",
        description="the last `departures` workers go away at start_ms and return after down_ms",
        params={**_COMMON_PARAMS, "down_ms": 60_000, "clean": False, "departures": 1},
        help={
            **_COMMON_HELP,
            "down_ms": "how long the departed workers stay away",
            "clean": "true: LeaveGroup on shutdown; false: a crash (noticed at session timeout)",
            "departures": "how many workers depart (the last ones: wN, wN-1, ...)",
        },
        build=_worker_departure,
    ),
}


# --------------------------------------------------------------------------- TOML writing


_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def toml_dumps(doc: Mapping[str, Any]) -> str:
    """A TOML document for ``doc`` (what :func:`tomllib.loads` returns): one ``key = value``
    line per top-level key, nested tables and arrays inline. ``tomllib.loads`` of the result
    equals ``doc``.

    Raises:
        TypeError: a value TOML cannot hold (``None``, an object).
    """
    return "".join(f"{_toml_key(str(k))} = {_toml_value(v)}\n" for k, v in doc.items())


# --------------------------------------------------------------------------- key paths


def _parse_key_path(path: str) -> list[str | int]:
    """``cluster.config."connect.protocol"`` / ``timeline[0].down_ms`` → segments.

    Raises:
        ValueError: not a key path.
    """
    segments: list[str | int] = []
    i, n = 0, len(path)
    expect_key = True
    while i < n:
        ch = path[i]
        if expect_key:
            if ch == '"':
                end = i + 1
                buf = []
                while end < n and path[end] != '"':
                    if path[end] == "\\" and end + 1 < n:
                        end += 1
                    buf.append(path[end])
                    end += 1
                if end >= n:
                    raise ValueError("unterminated quoted key")
                segments.append("".join(buf))
                i = end + 1
            else:
                m = re.match(r"[A-Za-z0-9_-]+", path[i:])
                if not m:
                    raise ValueError(f"unexpected {ch!r} at position {i}")
                segments.append(m.group(0))
                i += len(m.group(0))
            expect_key = False
            continue
        if ch == ".":
            expect_key = True
            i += 1
        elif ch == "[":
            m = re.match(r"\[(\d+)\]", path[i:])
            if not m:
                raise ValueError(f"bad index at position {i}")
            segments.append(int(m.group(1)))
            i += len(m.group(0))
        else:
            raise ValueError(f"unexpected {ch!r} at position {i}")
    if expect_key:
        raise ValueError("empty key" if not segments else "ends with '.'")
    return segments


def _assign(doc: dict[str, Any], segments: list[str | int], value: Any) -> None:
    """Set ``value`` at ``segments`` in ``doc``, creating missing tables.

    Raises:
        ValueError: a segment goes through a value that is not a table/array, or an index is
            out of range.
    """
    cur: Any = doc
    for pos, seg in enumerate(segments):
        last = pos == len(segments) - 1
        if isinstance(seg, int):
            if not isinstance(cur, list):
                raise ValueError(f"[{seg}]: not an array in the scenario")
            if seg >= len(cur):
                raise ValueError(f"[{seg}]: the scenario's array has {len(cur)} item(s)")
            if last:
                cur[seg] = value
            else:
                cur = cur[seg]
            continue
        if not isinstance(cur, dict):
            raise ValueError(f"{seg}: not a table in the scenario")
        if last:
            cur[seg] = value
        else:
            if seg not in cur:
                cur[seg] = {}
            cur = cur[seg]


def _substitute_value(value: Any, params: Mapping[str, Any], used: set[str]) -> Any:
    """``[set]`` values: ``"${p}"`` → the parameter's value; ``"a-${p}"`` → text."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole:
            used.add(whole.group(1))
            return params[whole.group(1)]

        def text(m: re.Match[str]) -> str:
            used.add(m.group(1))
            v = params[m.group(1)]
            return _toml_value(v) if not isinstance(v, str) else v

        return _PLACEHOLDER.sub(text, value)
    if isinstance(value, list):
        return [_substitute_value(v, params, used) for v in value]
    if isinstance(value, dict):
        return {k: _substitute_value(v, params, used) for k, v in value.items()}
    return value


def _placeholders(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(_PLACEHOLDER.findall(value))
    if isinstance(value, list):
        return set().union(*(_placeholders(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return set().union(*(_placeholders(v) for v in value.values())) if value else set()
    return set()


# --------------------------------------------------------------------------- loaded


@dataclass(frozen=True)
class Combination:
    """One point of the grid: the parameter values, the scenario's TOML text and what it
    looks like (``workers``: how many workers, ``protocol``: the workers' initial
    ``connect.protocol`` or ``"mixed"``, ``delay_ms``: the largest initial
    ``scheduled.rebalance.max.delay.ms``; all virtual ms), and a relative cost estimate
    (workers × virtual run length) used to schedule the longest runs first."""

    params: dict[str, Any]
    scenario_text: str
    source: str
    scenario: str
    workers: int
    protocol: str
    delay_ms: int
    cost: float


@dataclass(frozen=True)
class RunSpec:
    """One run: a combination's scenario with one seed. ``source`` names the scenario in
    errors; ``run_id`` is :func:`make_run_id` of ``(sweep, params, seed)``."""

    run_id: str
    sweep: str
    params: dict[str, Any]
    seed: int
    scenario_text: str
    source: str
    cost: float = 1.0


@dataclass(frozen=True)
class LoadedSweep:
    """A validated sweep.

    Attributes:
        name, description: from the file.
        source: the sweep file (or ``<string>``).
        parameters: ``{name: [values]}`` in file order; ``param_types``: each one's column
            type (``string``/``long``/``double``/``boolean``).
        seeds: the seeds of every combination.
        combinations: the grid, first parameter slowest.
        fingerprint: SHA-256 (hex) of the base and ``[set]`` (not of the grid or seeds): a
            results directory holds runs of one fingerprint; the grid may grow between runs.
    """

    name: str
    description: str
    source: Path
    parameters: dict[str, list[Any]]
    param_types: dict[str, ColumnType]
    seeds: list[int]
    combinations: list[Combination]
    fingerprint: str
    base: str = ""
    text: str = ""
    runs: list[RunSpec] = field(default_factory=list)


def make_run_id(sweep: str, params: Mapping[str, Any], seed: int) -> str:
    """16 hex digits of SHA-256 over canonical JSON ``{"params", "seed", "sweep"}``."""
    blob = json.dumps(
        {"params": dict(params), "seed": seed, "sweep": sweep},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


# --------------------------------------------------------------------------- library


def sweeps_dir() -> Path:
    """The built-in sweeps, ``scenarios/library/sweeps/``."""
    return Path(__file__).resolve().parent.parent / "library" / "sweeps"


def sweep_names() -> list[str]:
    """Names of the built-in sweeps (file stems), sorted."""
    directory = sweeps_dir()
    return sorted(p.stem for p in directory.glob("*.toml")) if directory.is_dir() else []


def resolve_sweep(name_or_path: str | Path) -> Path:
    """A sweep file from a path or a built-in name (``protocol-comparison``).

    Raises:
        SweepError: neither an existing file nor a built-in sweep.
    """
    text = str(name_or_path)
    path = Path(text)
    if path.is_file():
        return path
    if path.parent == Path(".") and text:
        stem = text[: -len(".toml")] if text.endswith(".toml") else text
        candidate = sweeps_dir() / f"{stem}.toml"
        if candidate.is_file():
            return candidate
    names = ", ".join(sweep_names()) or "none"
    raise SweepError(text, None, f"no such file and no such built-in sweep (built-in: {names})")


# --------------------------------------------------------------------------- loading


def load_sweep(path: str | Path) -> LoadedSweep:
    """Read and validate a sweep file (a path, or a built-in sweep's name).

    Raises:
        SweepError: unreadable, not TOML, breaks a rule of ``docs/sweeps.md``, or a
            combination's scenario is rejected by the scenario loader.
    """
    source = resolve_sweep(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepError(source.name, None, f"cannot read: {exc}") from None
    return loads_sweep(text, source)


def loads_sweep(text: str, source: str | Path = "<string>") -> LoadedSweep:
    """:func:`load_sweep` for TOML text. A ``template`` or ``scenario`` path is relative to
    ``source``'s directory (then the working directory; a scenario may be a library name)."""
    source = Path(source)
    file = source.name
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(file, None, f"invalid TOML: {exc}") from None
    try:
        sweep = msgspec.convert(raw, type=SweepFile)
    except msgspec.ValidationError as exc:
        key, problem = _translate(str(exc))
        raise SweepError(file, key, problem) from None

    def fail(key: str | None, problem: str) -> SweepError:
        return SweepError(file, key, problem)

    if not _SWEEP_NAME.match(sweep.name):
        raise fail("name", f"invalid name {sweep.name!r} (letters, digits, '.', '_', '-')")

    # seeds
    if isinstance(sweep.seeds, int):
        if sweep.seeds < 1:
            raise fail("seeds", f"expected an integer >= 1 (a count), got {sweep.seeds}")
        seeds = list(range(sweep.seeds))
    else:
        if not sweep.seeds:
            raise fail("seeds", "must not be empty")
        for i, s in enumerate(sweep.seeds):
            if s < 0:
                raise fail(f"seeds[{i}]", f"expected an integer >= 0, got {s}")
        dup = [s for s in sweep.seeds if sweep.seeds.count(s) > 1]
        if dup:
            raise fail("seeds", f"seed {dup[0]} is listed twice")
        seeds = list(sweep.seeds)

    # parameters
    types: dict[str, ColumnType] = {}
    for name, values in sweep.parameters.items():
        key = f"parameters.{_toml_key(name)}"
        if not _PARAM_NAME.match(name):
            raise fail(key, "invalid parameter name (letters, digits and '_', not first a digit)")
        if name in RESERVED_NAMES:
            raise fail(key, f"{name!r} is a column of the results; choose another name")
        if not values:
            raise fail(key, "must list at least one value")
        first: ColumnType | None = None
        for i, value in enumerate(values):
            t = param_type(value)
            if t is None:
                raise fail(f"{key}[{i}]", "expected a string, integer, float or boolean")
            if first is None:
                first = t
            elif t != first:
                raise fail(f"{key}[{i}]", f"all values must have one type ({first}), got {t}")
            if values.index(value) != i:
                raise fail(f"{key}[{i}]", f"{value!r} is listed twice")
        assert first is not None
        types[name] = first

    # base
    bases = [k for k in ("scenario", "template", "generator") if getattr(sweep, k) is not None]
    if len(bases) != 1:
        problem = (
            "needs one of 'scenario', 'template' or 'generator'"
            if not bases
            else f"give only one of 'scenario', 'template' or 'generator' (got {', '.join(bases)})"
        )
        raise fail(None, problem)
    kind = bases[0]
    base_value = str(getattr(sweep, kind))
    param_names = set(sweep.parameters)

    build: Callable[[dict[str, Any]], dict[str, Any]]
    used: set[str] = set()
    if kind == "generator":
        gen = GENERATORS.get(base_value)
        if gen is None:
            raise fail(
                "generator", f"unknown generator {base_value!r} (known: {', '.join(GENERATORS)})"
            )
        for name in sweep.parameters:
            if name not in gen.params and name not in _placeholders(sweep.set):
                known = ", ".join(gen.params)
                raise fail(
                    f"parameters.{name}",
                    f"not a parameter of generator {gen.name!r} and not used in [set] "
                    f"(its parameters: {known})",
                )
        used |= param_names & set(gen.params)
        base_text = f"generator:{gen.name}:{sorted(gen.params.items(), key=str)!r}"

        def build(params: dict[str, Any], gen: Generator = gen) -> dict[str, Any]:
            values = {k: params.get(k, default) for k, default in gen.params.items()}
            return gen.build(values)

    else:
        base_path = _find_file(base_value, source, library=(kind == "scenario"))
        if base_path is None:
            what = "template file" if kind == "template" else "scenario file or library scenario"
            raise fail(kind, f"no such {what}: {base_value!r}")
        try:
            base_text = base_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise fail(kind, f"cannot read {base_path}: {exc}") from None
        if kind == "template":
            found = set(_PLACEHOLDER.findall(base_text))
            for name in sorted(found):
                if name not in param_names:
                    raise fail(
                        "template",
                        f"{base_path.name} uses ${{{name}}}, which is not a parameter "
                        f"(parameters: {', '.join(sweep.parameters) or 'none'})",
                    )
            used |= found
        template_name = base_path.name

        def build(params: dict[str, Any], text: str = base_text) -> dict[str, Any]:
            filled = _PLACEHOLDER.sub(lambda m: _toml_value(params[m.group(1)]), text)
            try:
                return tomllib.loads(filled)
            except tomllib.TOMLDecodeError as exc:
                raise ScenarioError(template_name, None, f"invalid TOML: {exc}") from None

    # [set]
    sets: list[tuple[str, list[str | int], Any]] = []
    for key_path, value in sweep.set.items():
        where = f"set.{_toml_key(key_path)}"
        try:
            segments = _parse_key_path(key_path)
        except ValueError as exc:
            raise fail(where, f"not a scenario key path: {exc}") from None
        for name in sorted(_placeholders(value)):
            if name not in param_names:
                raise fail(where, f"${{{name}}} is not a parameter")
        used |= _placeholders(value)
        sets.append((where, segments, value))
    unused = [n for n in sweep.parameters if n not in used]
    if unused:
        raise fail(
            f"parameters.{unused[0]}",
            f"not used: no ${{{unused[0]}}} in the {kind}"
            + (" or [set]" if kind != "generator" else " parameters or [set]"),
        )

    fingerprint = hashlib.sha256(
        json.dumps(
            {"base": kind, "text": base_text, "set": sweep.set}, sort_keys=True, default=str
        ).encode("utf-8")
    ).hexdigest()

    combos: list[Combination] = []
    names = list(sweep.parameters)
    for point in itertools.product(*(sweep.parameters[n] for n in names)):
        params = dict(zip(names, point, strict=True))
        label = ",".join(f"{k}={_label(v)}" for k, v in params.items())
        combo_source = f"{sweep.name}[{label}]" if label else sweep.name
        try:
            doc = build(params)
            for where, segments, value in sets:
                try:
                    _assign(doc, segments, _substitute_value(value, params, set()))
                except ValueError as exc:
                    raise fail(where, str(exc)) from None
            scenario_text = toml_dumps(doc)
            loaded = loads_scenario(scenario_text, source=combo_source)
        except ScenarioError as exc:
            raise fail(None, f"combination {label or '(no parameters)'}: {exc}") from None
        combos.append(_combination(params, scenario_text, combo_source, loaded))

    runs = [
        RunSpec(
            run_id=make_run_id(sweep.name, c.params, seed),
            sweep=sweep.name,
            params=c.params,
            seed=seed,
            scenario_text=c.scenario_text,
            source=c.source,
            cost=c.cost,
        )
        for c in combos
        for seed in seeds
    ]
    return LoadedSweep(
        name=sweep.name,
        description=sweep.description,
        source=source,
        parameters={k: list(v) for k, v in sweep.parameters.items()},
        param_types=types,
        seeds=seeds,
        combinations=combos,
        fingerprint=fingerprint,
        base=f"{kind} {base_value}",
        text=text,
        runs=runs,
    )


def _label(value: Any) -> str:
    text = _toml_value(value) if not isinstance(value, str) else value
    return text.replace("/", "_")


def _find_file(value: str, source: Path, *, library: bool) -> Path | None:
    candidates = [Path(value)]
    if not Path(value).is_absolute():
        candidates.insert(0, source.parent / value)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    if library:
        try:
            return resolve_scenario(value)
        except ScenarioError:
            return None
    return None


def _combination(
    params: dict[str, Any], text: str, source: str, loaded: LoadedScenario
) -> Combination:
    configs = [w.config for w in loaded.workers]
    configs += [s.config for s in loaded.steps if s.action == "join" and s.config is not None]
    protocols = sorted({c.connect_protocol.setting for c in configs})
    protocol = protocols[0] if len(protocols) == 1 else ("mixed" if protocols else "")
    delay = max((c.scheduled_rebalance_max_delay_ms for c in configs), default=0)
    workers = len(loaded.worker_names)
    return Combination(
        params=params,
        scenario_text=text,
        source=source,
        scenario=loaded.name,
        workers=workers,
        protocol=protocol,
        delay_ms=delay,
        cost=float(max(workers, 1) * max(loaded.end_ms, 1)),
    )


def _translate(message: str) -> tuple[str | None, str]:
    """msgspec's ``"<problem> - at `$.a[1]`"`` → (``"a[1]"``, readable problem)."""
    text, sep, where = message.rpartition(" - at `")
    if not sep:
        text, where = message, "$`"
    path = where.rstrip("`")
    path = path[1:] if path.startswith("$") else path
    path = path.lstrip(".")
    path = re.sub(r"\[(['\"])(.*?)\1\]", lambda m: "." + _toml_key(m.group(2)), path).lstrip(".")
    known = ", ".join(f.encode_name for f in msgspec.structs.fields(SweepFile))
    if m := re.fullmatch(r"Object contains unknown field `(.+)`", text):
        key = ".".join(p for p in (path, _toml_key(m.group(1))) if p)
        return key, (f"unknown key (known: {known})" if not path else "unknown key")
    if m := re.fullmatch(r"Object missing required field `(.+)`", text):
        return ".".join(p for p in (path, m.group(1)) if p), "missing required key"
    if m := re.fullmatch(r"Expected `(.+)`, got `(\w+)`", text):
        want = m.group(1).replace("int | array", "an integer or an array of integers")
        return path or None, f"expected {want}, got {m.group(2)}"
    return path or None, text[:1].lower() + text[1:]


# --------------------------------------------------------------------------- running


@dataclass
class RunOutcome:
    """One run's results: ``row`` (the ``runs`` columns of :data:`RUN_COLUMNS` plus
    ``run_id`` and the parameters) and ``events`` (the event log as column lists:
    ``{"t_ms": [...], "seq": [...], "kind": [...], "member": [...], "fields": [...]}``)."""

    row: dict[str, Any]
    events: dict[str, list[Any]]


_encoder = msgspec.json.Encoder()
_STANDARD = ("t_ms", "seq", "kind", "member")


def _empty_events() -> dict[str, list[Any]]:
    return {name: [] for name, _ in EVENT_COLUMNS}


def execute_run(spec: RunSpec, *, with_events: bool = True) -> RunOutcome:
    """Load ``spec``'s scenario, simulate it with ``spec.seed`` and flatten the results.

    Never raises for a failing run: any exception (from loading or simulating) gives
    ``status = "failed"``, ``error = "<ExceptionType>: <message>"`` (one line) and null
    metrics. ``with_events=False`` leaves ``events`` empty (the row's ``events`` column still
    counts the records).
    """
    from scenarios.sim.runner import simulate  # imported here: trio is heavy and not always needed

    row: dict[str, Any] = {name: None for name, _ in RUN_COLUMNS}
    row.update(spec.params)
    row.update(
        run_id=spec.run_id,
        sweep=spec.sweep,
        seed=spec.seed,
        expectation_failures=[],
        violations_total=None,
    )
    events = _empty_events()
    started = time.perf_counter()
    try:
        loaded = loads_scenario(spec.scenario_text, source=spec.source)
        info = _combination(spec.params, spec.scenario_text, spec.source, loaded)
        row.update(
            scenario=info.scenario,
            scenario_workers=info.workers,
            scenario_protocol=info.protocol,
            scenario_delay_ms=info.delay_ms,
        )
        result = simulate(loaded, spec.seed)
    except Exception as exc:  # a failing run is data, not a crash of the sweep
        row.update(
            status="failed",
            error=" ".join(f"{type(exc).__name__}: {exc}".split()),
            wall_ms=(time.perf_counter() - started) * 1000.0,
        )
        return RunOutcome(row, events)
    wall = (time.perf_counter() - started) * 1000.0
    s = result.summary
    violations = s.get("violations") or {}
    row.update(
        status="ok",
        rebalances=s["rebalances"],
        join_rounds=s["join_rounds"],
        sync_rounds=s["sync_rounds"],
        tasks_configured=s["tasks_configured"],
        task_downtime_ms_total=s["task_downtime_ms_total"],
        task_downtime_ms_max=s["task_downtime_ms_max"],
        connector_downtime_ms_total=s["connector_downtime_ms_total"],
        task_movements=s["task_movements"],
        max_imbalance=s["max_imbalance"],
        converged=bool(s["converged"]),
        time_to_converge_ms=s["time_to_converge_ms"],
        final_protocol=s["final_protocol"],
        end_ms=s["end_ms"],
        violations_total=sum(violations.values()),
        expectation_failures=list(result.failures),
        expect_ok=not result.failures,
        events=len(result.records),
        wall_ms=wall,
    )
    for name in INVARIANTS:
        row[f"violations_{name.replace('-', '_').lower()}"] = int(violations.get(name, 0))
    if with_events:
        t_ms, seq, kind, member, fields = (events[k] for k, _ in EVENT_COLUMNS)
        for record in result.records:
            t_ms.append(record["t_ms"])
            seq.append(record["seq"])
            kind.append(record["kind"])
            m = record.get("member")
            member.append(m if isinstance(m, str) else None)
            rest = {k: v for k, v in record.items() if k not in _STANDARD}
            if "member" in record and not isinstance(m, str):
                rest["member"] = m
            fields.append(_encoder.encode(rest).decode("utf-8"))
    return RunOutcome(row, events)
