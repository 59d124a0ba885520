"""The built-in scenario library, and loading a scenario file of any kind.

A scenario file is a Kafka Connect scenario unless its top-level ``kind`` says ``"streams"``
or ``"consumer"`` (:mod:`scenarios.input.consumer`; ``kind = "connect"`` may be written
too). Library scenarios live in ``scenarios/library/`` (Connect) and
``scenarios/library/streams/`` (Kafka Streams), ``scenarios/library/consumer/`` (plain
consumer groups) — each kind's :meth:`scenarios.kinds.GroupKind.library_dir` — and are found
by name.
"""

from __future__ import annotations

from pathlib import Path

from scenarios import kinds
from scenarios.input.errors import ScenarioError, parse_toml, read_text_file
from scenarios.input.steps import LoadedView

__all__ = [
    "library_dir",
    "streams_library_dir",
    "library_names",
    "resolve_scenario",
    "load_any",
    "loads_any",
]


def library_dir() -> Path:
    """The built-in Connect scenarios, ``scenarios/library/``."""
    return Path(__file__).resolve().parent.parent / "library"


def streams_library_dir() -> Path:
    """The built-in Kafka Streams scenarios, ``scenarios/library/streams/``."""
    return library_dir() / "streams"


def consumer_library_dir() -> Path:
    """The built-in plain consumer-group scenarios, ``scenarios/library/consumer/``."""
    return library_dir() / "consumer"


def _library_dirs() -> list[tuple[kinds.GroupKind, Path]]:
    """Each kind that has a library, with its directory, in :func:`scenarios.kinds.names`
    order."""
    found = ((kind, kind.library_dir()) for kind in map(kinds.get, kinds.names()))
    return [(kind, directory) for kind, directory in found if directory is not None]


def library_names(kind: str | None = None) -> list[str]:
    """Names (file stems) of the library scenarios of ``kind`` (default: every kind), sorted."""
    names: list[str] = []
    for k, directory in _library_dirs():
        if kind is None or k.name == kind:
            names += [p.stem for p in directory.glob("*.toml")]
    return sorted(names)


def resolve_scenario(name_or_path: str | Path) -> Path:
    """A scenario file from a path or a library name (``rolling-upgrade-eager-to-sessioned``,
    ``kip-441-scale-out``), with or without ``.toml``; an existing file wins.

    Raises:
        ScenarioError: neither a file nor a library scenario (the message lists the library
            of both kinds).
    """
    text = str(name_or_path)
    path = Path(text)
    if path.is_file():
        return path
    if path.parent == Path(".") and text:
        stem = text[: -len(".toml")] if text.endswith(".toml") else text
        for _, directory in _library_dirs():
            candidate = directory / f"{stem}.toml"
            if candidate.is_file():
                return candidate
    listed = "; ".join(
        f"{k.words.title}: {', '.join(library_names(k.name)) or 'none'}" for k, _ in _library_dirs()
    )
    raise ScenarioError(text, None, f"no such file and no such library scenario ({listed})")


def load_any(name_or_path: str | Path) -> LoadedView:
    """Read, decode and validate a scenario file or library scenario of either kind.

    Raises:
        ScenarioError: not found, unreadable, not TOML, an unknown ``kind``, or a bad
            key/value (one line naming the file and the key path).
    """
    path = resolve_scenario(name_or_path)
    return loads_any(read_text_file(path), source=path)


def loads_any(text: str, source: str | Path = "<string>") -> LoadedView:
    """Like :func:`load_any` for TOML text; ``source`` names it in errors. The file's
    ``kind`` (default :data:`scenarios.kinds.DEFAULT`) picks the registered kind that loads
    it (:meth:`scenarios.kinds.GroupKind.loads`)."""
    file = Path(source).name
    name = parse_toml(text, file).get("kind", kinds.DEFAULT)
    if not isinstance(name, str) or name not in kinds.names():
        every = kinds.names()
        listed = ", ".join(every[:-1]) + f" or {every[-1]}"
        raise ScenarioError(file, "kind", f"must be {listed}, got {name!r}")
    return kinds.get(name).loads(text, source)
