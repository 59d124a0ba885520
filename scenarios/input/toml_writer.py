"""The one TOML writer of groupsim: every scenario file groupsim writes (chaos reproducers, a
sweep's scenario for each combination, template substitutions) goes through here, on
`tomli-w <https://github.com/hukkin/tomli-w>`_, so what is written is what
:func:`tomllib.loads` reads back.

- :func:`dumps`: a document (a mapping as :func:`tomllib.loads` returns it) as TOML text,
  optionally after ``#`` comment lines (tomli-w writes no comments; the header is text).
- :func:`value`: one scalar or array as a TOML literal (``true``, ``1.5``, ``"a\\"b"``, ``nan``),
  for a value put inside other TOML text.

Errors: :class:`TypeError` for what TOML cannot hold (``None``, an object), as tomli-w raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import tomli_w

__all__ = ["dumps", "value"]


def dumps(doc: Mapping[str, Any], *, comments: Iterable[str] = ()) -> str:
    """``doc`` as TOML text; ``tomllib.loads`` of the result equals ``doc``.

    Args:
        doc: string keys; values strings, ints, floats (``nan``/``inf`` too), booleans,
            dates, lists and mappings of those.
        comments: lines written first, each as ``# <line>`` (a line must not contain a
            newline).

    Raises:
        TypeError: a value TOML cannot hold.
        ValueError: a comment line with a newline.
    """
    header = []
    for line in comments:
        if "\n" in line or "\r" in line:
            raise ValueError(f"a TOML comment line cannot hold a newline: {line!r}")
        header.append(f"# {line}\n" if line else "#\n")
    return "".join(header) + tomli_w.dumps(dict(doc))


def value(literal: Any) -> str:
    """One TOML value literal for ``literal`` (a string, number, boolean, date or a list of
    those; arrays are written one item a line, valid wherever TOML takes a value).

    Raises:
        TypeError: a mapping (write it with :func:`dumps`) or a value TOML cannot hold.
    """
    if isinstance(literal, Mapping):
        raise TypeError("a table is not a value literal; write it with dumps()")
    text = tomli_w.dumps({"v": literal})
    return text.removeprefix("v = ").rstrip("\n")
