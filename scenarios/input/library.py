"""The built-in scenario library, and loading a scenario file of any kind.

A scenario file is a Kafka Connect scenario unless its top-level ``kind`` says ``"streams"``
or ``"consumer"`` (:mod:`scenarios.input.consumer`; ``kind = "connect"`` may be written
too). Library scenarios live in ``scenarios/library/`` (Connect) and
``scenarios/library/streams/`` (Kafka Streams) and ``scenarios/library/consumer/`` (plain
consumer groups) and are found by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from scenarios.input.consumer import LoadedConsumerScenario, loads_consumer_scenario
from scenarios.input.errors import ScenarioError, parse_toml, read_text_file
from scenarios.input.loader import LoadedScenario, loads_scenario
from scenarios.input.streams import LoadedStreamsScenario, loads_streams_scenario

__all__ = [
    "KINDS",
    "library_dir",
    "streams_library_dir",
    "consumer_library_dir",
    "library_names",
    "resolve_scenario",
    "load_any",
    "loads_any",
]

Kind = Literal["connect", "streams", "consumer"]

#: The kinds of scenario file (the top-level ``kind`` key; ``connect`` when absent).
KINDS: tuple[Kind, ...] = ("connect", "streams", "consumer")


def library_dir() -> Path:
    """The built-in Connect scenarios, ``scenarios/library/``."""
    return Path(__file__).resolve().parent.parent / "library"


def streams_library_dir() -> Path:
    """The built-in Kafka Streams scenarios, ``scenarios/library/streams/``."""
    return library_dir() / "streams"


def consumer_library_dir() -> Path:
    """The built-in plain consumer-group scenarios, ``scenarios/library/consumer/``."""
    return library_dir() / "consumer"


def _dirs() -> dict[str, Path]:
    return {
        "connect": library_dir(),
        "streams": streams_library_dir(),
        "consumer": consumer_library_dir(),
    }


def library_names(kind: Kind | None = None) -> list[str]:
    """Names (file stems) of the library scenarios of ``kind`` (default: every kind), sorted."""
    dirs = _dirs()
    names: list[str] = []
    for k in (kind,) if kind else KINDS:
        names += [p.stem for p in dirs[k].glob("*.toml")]
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
        for directory in _dirs().values():
            candidate = directory / f"{stem}.toml"
            if candidate.is_file():
                return candidate
    labels = {"connect": "Connect", "streams": "Streams", "consumer": "consumer"}
    listed = "; ".join(f"{labels[k]}: {', '.join(library_names(k)) or 'none'}" for k in KINDS)
    raise ScenarioError(text, None, f"no such file and no such library scenario ({listed})")


def load_any(
    name_or_path: str | Path,
) -> LoadedScenario | LoadedStreamsScenario | LoadedConsumerScenario:
    """Read, decode and validate a scenario file or library scenario of either kind.

    Raises:
        ScenarioError: not found, unreadable, not TOML, an unknown ``kind``, or a bad
            key/value (one line naming the file and the key path).
    """
    path = resolve_scenario(name_or_path)
    return loads_any(read_text_file(path), source=path)


def loads_any(
    text: str, source: str | Path = "<string>"
) -> LoadedScenario | LoadedStreamsScenario | LoadedConsumerScenario:
    """Like :func:`load_any` for TOML text; ``source`` names it in errors."""
    file = Path(source).name
    kind = parse_toml(text, file).get("kind", "connect")
    if kind == "streams":
        return loads_streams_scenario(text, source)
    if kind == "consumer":
        return loads_consumer_scenario(text, source)
    if kind != "connect":
        raise ScenarioError(file, "kind", f"must be connect, streams or consumer, got {kind!r}")
    return loads_scenario(text, source)
