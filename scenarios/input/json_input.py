"""Decoding shared by the JSON inputs of ``groupsim assign`` (Connect and Streams).

A document is converted into its Struct (:mod:`scenarios.input.assign_schema`); a problem is
one error naming the key path of the bad value (``rounds[1].members.w3.tasks``) and what is
wrong, through the scenario files' translator
(:func:`scenarios.input.errors.translate_validation_error`, JSON spelling). The caller passes
its own error class, built as ``error(path, detail)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from scenarios.input.errors import translate_validation_error

__all__ = ["decode_json_input"]

ErrorFactory = Callable[[str, str], Exception]
T = TypeVar("T")


def decode_json_input(doc: Any, type_: type[T], error: ErrorFactory) -> T:
    """Convert a decoded JSON document into ``type_`` (strict: no type coercion, no unknown
    keys).

    Raises:
        ``error(path, problem)``: ``path`` is the key path (``""`` for the document itself),
        ``problem`` one line, e.g. ``("rounds[1].connectors.c", "must be >= 0, got -2")``,
        ``("extra", "unknown key (expected one of assignor, config, protocol, rounds)")``,
        ``("assignor", "missing")``, ``("", "expected an object, got an array")``.
    """
    try:
        return msgspec.convert(doc, type_)
    except msgspec.ValidationError as exc:
        path, problem = translate_validation_error(str(exc), doc, type_, json=True)
        raise error(path or "", problem) from None
