"""Member kinds as plug-ins: the :class:`GroupKind` registry (docs/kinds.md).

Each kind lives in its own module (:mod:`scenarios.kinds.connect`,
:mod:`scenarios.kinds.streams`, :mod:`scenarios.kinds.consumer`) and registers one
:class:`GroupKind` object with :func:`register`. The built-in kinds are named here with the
module that registers them and imported on first use, so that every layer of ``scenarios``
(input, check, sim, campaigns, cli) can look a kind up without importing the layers above it
(tests/test_layering.py): the registry is the bottom layer, a kind's module sits on top.

Usage::

    kind = kinds.get("streams")        # or kinds.of_log(records), kinds.of_summary(summary)
    loaded = kind.loads(text, "app.toml")
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from scenarios.kinds.protocol import GroupKind, KindWords

__all__ = [
    "DEFAULT",
    "GroupKind",
    "KindWords",
    "UnknownKind",
    "get",
    "names",
    "of_log",
    "of_summary",
    "record_tags",
    "register",
]

#: The kind of a scenario file without a ``kind`` key, of a log whose ``run_start`` has no
#: ``app`` and of a summary with no kind's key.
DEFAULT = "connect"

#: Built-in kinds in listing order → the module that registers each.
_BUILTIN = {
    "connect": "scenarios.kinds.connect",
    "streams": "scenarios.kinds.streams",
    "consumer": "scenarios.kinds.consumer",
}

_registered: dict[str, GroupKind] = {}


class UnknownKind(KeyError):
    """No kind of that name is registered (``args[0]``: the name)."""


def register(kind: GroupKind) -> GroupKind:
    """Register ``kind`` under ``kind.name`` (again: replace it); returns ``kind``."""
    _registered[kind.name] = kind
    return kind


def get(name: str) -> GroupKind:
    """The kind called ``name``, importing a built-in kind's module on first use.

    Raises:
        UnknownKind: no such kind.
    """
    kind = _registered.get(name)
    if kind is None and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])
        kind = _registered.get(name)
    if kind is None:
        raise UnknownKind(name)
    return kind


def names() -> tuple[str, ...]:
    """Every kind's name: the built-in ones in their order, then any registered later."""
    return tuple(_BUILTIN) + tuple(n for n in _registered if n not in _BUILTIN)


def record_tags(module: object) -> frozenset[str]:
    """The ``kind`` tags of the event-log record Structs defined in ``module`` (a kind's
    ``scenarios/eventlog/kinds_<name>.py``), for :meth:`GroupKind.record_kinds`."""
    return frozenset(
        str(tag)
        for value in vars(module).values()
        if isinstance(value, type)
        and value.__module__ == getattr(module, "__name__", None)
        and isinstance(tag := getattr(getattr(value, "__struct_config__", None), "tag", None), str)
    )


def name_of_log(records: Sequence[Mapping[str, Any]], within: int = 5) -> str:
    """The kind of an event log: the ``app`` of a ``run_start`` record among its first
    ``within`` records, else :data:`DEFAULT`."""
    for r in records[:within]:
        if r.get("kind") == "run_start" and r.get("app") is not None:
            return str(r["app"])
    return DEFAULT


def of_log(records: Sequence[Mapping[str, Any]], within: int = 5) -> GroupKind:
    """The kind of an event log (:func:`name_of_log`)."""
    return get(name_of_log(records, within))


def of_summary(summary: Mapping[str, Any]) -> GroupKind:
    """The kind of a run summary: the first kind whose name is a key (a kind's details), else
    :data:`DEFAULT`."""
    for name in names():
        if name != DEFAULT and name in summary:
            return get(name)
    return get(DEFAULT)
