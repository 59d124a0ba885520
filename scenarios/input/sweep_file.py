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

Running a sweep is :mod:`scenarios.campaigns.sweeps` (``execute_run``); this module only
reads the file (the input layer: it never imports the engine).

Errors: :class:`SweepError`, one line ``"<file>: <key path>: <problem>"`` as
:class:`scenarios.input.loader.ScenarioError`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from scenarios.input import toml_writer
from scenarios.input.errors import ScenarioError, parse_toml, translate_validation_error
from scenarios.input.library import resolve_scenario
from scenarios.input.limits import LimitExceeded, check_grid, check_limit
from scenarios.input.loader import LoadedScenario, loads_scenario
from scenarios.input.sweep_columns import (
    AGGREGATE_METRICS,
    EVENT_COLUMNS,
    PERCENTILES,
    RESERVED_NAMES,
    RUN_COLUMNS,
    ColumnType,
)
from scenarios.input.sweep_generators import GENERATORS, Generator
from scenarios.input.sweep_keys import (
    PLACEHOLDER,
    assign,
    parse_key_path,
    placeholders,
    substitute_value,
)

__all__ = [
    "SweepError",
    "SweepFile",
    "Combination",
    "RunSpec",
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
    "toml_dumps",
    "param_type",
    "combination_of",
]

#: A scenario document as TOML text (:func:`scenarios.input.toml_writer.dumps`).
toml_dumps = toml_writer.dumps


class SweepError(ScenarioError):
    """A sweep file that cannot be used: ``"<file>: <key path>: <problem>"`` (one line), or
    ``"<file>: <problem>"`` when no key is involved."""


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


_PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SWEEP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


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


_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    """A key as written in an error's key path (quoted unless bare)."""
    return key if _BARE.match(key) else json.dumps(key, ensure_ascii=False)


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
        raw = parse_toml(text, file)
    except ScenarioError as exc:
        raise SweepError(file, exc.key_path, exc.problem) from None
    try:
        sweep = msgspec.convert(raw, type=SweepFile)
    except msgspec.ValidationError as exc:
        key, problem = translate_validation_error(str(exc), raw, SweepFile)
        raise SweepError(file, key, problem) from None

    def fail(key: str | None, problem: str) -> SweepError:
        return SweepError(file, key, problem)

    if not _SWEEP_NAME.match(sweep.name):
        raise fail("name", f"invalid name {sweep.name!r} (letters, digits, '.', '_', '-')")

    # seeds
    if isinstance(sweep.seeds, int):
        if sweep.seeds < 1:
            raise fail("seeds", f"expected an integer >= 1 (a count), got {sweep.seeds}")
        try:
            check_limit("seeds", sweep.seeds, "runs")
        except LimitExceeded as exc:
            raise fail(exc.key, exc.problem) from None
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
            if name not in gen.params and name not in placeholders(sweep.set):
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
            found = set(PLACEHOLDER.findall(base_text))
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
            filled = PLACEHOLDER.sub(lambda m: toml_writer.value(params[m.group(1)]), text)
            return parse_toml(filled, template_name)

    # [set]
    sets: list[tuple[str, list[str | int], Any]] = []
    for key_path, value in sweep.set.items():
        where = f"set.{_toml_key(key_path)}"
        try:
            segments = parse_key_path(key_path)
        except ValueError as exc:
            raise fail(where, f"not a scenario key path: {exc}") from None
        for name in sorted(placeholders(value)):
            if name not in param_names:
                raise fail(where, f"${{{name}}} is not a parameter")
        used |= placeholders(value)
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

    try:
        check_grid(sweep.parameters, len(seeds))  # before expanding it (docs/limits.md)
    except LimitExceeded as exc:
        raise fail(exc.key, exc.problem) from None
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
                    assign(doc, segments, substitute_value(value, params, set()))
                except ValueError as exc:
                    raise fail(where, str(exc)) from None
            scenario_text = toml_dumps(doc)
            loaded = loads_scenario(scenario_text, source=combo_source)
        except SweepError:
            raise
        except ScenarioError as exc:
            raise fail(None, f"combination {label or '(no parameters)'}: {exc}") from None
        combos.append(combination_of(params, scenario_text, combo_source, loaded))

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
    text = toml_writer.value(value) if not isinstance(value, str) else value
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


def combination_of(
    params: dict[str, Any], text: str, source: str, loaded: LoadedScenario
) -> Combination:
    """The :class:`Combination` of one grid point: its ``params``, the scenario TOML ``text``
    it expands to, the name ``source`` that text is loaded under, and the loaded scenario."""
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
