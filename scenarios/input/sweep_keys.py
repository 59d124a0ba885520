"""Scenario key paths and ``${name}`` placeholders of a sweep's ``[set]`` table
(``docs/sweeps.md``): ``cluster.config."connect.protocol"`` / ``timeline[0].down_ms`` parsed
into segments, a value assigned at a path, placeholders found and substituted."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scenarios.input import toml_writer

__all__ = ["PLACEHOLDER", "parse_key_path", "assign", "substitute_value", "placeholders"]

#: ``${name}``: a parameter's value in a template or a ``[set]`` value.
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


def parse_key_path(path: str) -> list[str | int]:
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


def assign(doc: dict[str, Any], segments: list[str | int], value: Any) -> None:
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


def substitute_value(value: Any, params: Mapping[str, Any], used: set[str]) -> Any:
    """``[set]`` values: ``"${p}"`` → the parameter's value; ``"a-${p}"`` → text."""
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole:
            used.add(whole.group(1))
            return params[whole.group(1)]

        def text(m: re.Match[str]) -> str:
            used.add(m.group(1))
            v = params[m.group(1)]
            return toml_writer.value(v) if not isinstance(v, str) else v

        return PLACEHOLDER.sub(text, value)
    if isinstance(value, list):
        return [substitute_value(v, params, used) for v in value]
    if isinstance(value, dict):
        return {k: substitute_value(v, params, used) for k, v in value.items()}
    return value


def placeholders(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(PLACEHOLDER.findall(value))
    if isinstance(value, list):
        return set().union(*(placeholders(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return set().union(*(placeholders(v) for v in value.values())) if value else set()
    return set()
