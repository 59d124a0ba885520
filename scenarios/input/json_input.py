"""Checks shared by the JSON inputs of ``groupsim assign`` (Connect and Streams).

Each error names the key path of the bad value (``rounds[1].members.w3``) and what is wrong;
the caller passes its own error class, built as ``error(path, detail)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["type_name", "join_path", "require_object", "check_keys"]

ErrorFactory = Callable[[str, str], Exception]


def type_name(value: object) -> str:
    """How a JSON value's type reads in an error message (``an integer``, ``null``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def join_path(path: str, key: str) -> str:
    """``path.key``, or ``key`` at the top level."""
    return f"{path}.{key}" if path else key


def require_object(value: object, path: str, error: ErrorFactory) -> dict[str, Any]:
    """``value`` if it is a JSON object. Raises ``error(path, ...)`` otherwise."""
    if not isinstance(value, dict):
        raise error(path, f"expected an object, got {type_name(value)}")
    return value


def check_keys(obj: dict[str, Any], allowed: set[str], path: str, error: ErrorFactory) -> None:
    """Raise ``error(path.key, ...)`` for the first key of ``obj`` not in ``allowed``."""
    for key in obj:
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            raise error(join_path(path, str(key)), f"unknown key (expected one of {known})")
