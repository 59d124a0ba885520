"""How every ``groupsim`` command reports bad input: one line on stderr,
``groupsim: error: <where>: <what>``, and exit code 2 (docs/cli-contracts.md).

Every layer's input errors subclass :class:`protocol.errors.InputError`, so a command catches
that one type (:func:`one_line_errors`) instead of a list of classes from every package.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from rich.console import Console

from protocol.errors import InputError

__all__ = [
    "BadInput",
    "InputError",
    "fail",
    "one_line_errors",
    "os_error_behind",
    "parse_conf",
    "stderr",
]

#: The console every command writes its one-line messages to.
stderr = Console(stderr=True, highlight=False)


class BadInput(InputError):
    """Input the CLI itself rejects (an option, a file that is not there); its text is the
    one-line error."""


def fail(message: str) -> NoReturn:
    """Print ``groupsim: error: <message>`` (whitespace collapsed to one line) on stderr and
    exit with code 2."""
    stderr.print(f"groupsim: error: {' '.join(message.split())}", markup=False, soft_wrap=True)
    raise typer.Exit(2)


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn an :class:`InputError` raised inside the block into :func:`fail`."""
    try:
        yield
    except InputError as exc:
        fail(str(exc))


def parse_conf(items: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` items (Spark settings) as a dict; the last of a repeated key wins.

    Raises:
        BadInput: an item without ``=`` or with an empty key.
    """
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"--conf: expected KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


def os_error_behind(exc: BaseException) -> OSError | None:
    """The ``OSError`` (e.g. an address in use) behind trio's exception groups, if any."""
    if isinstance(exc, OSError):
        return exc
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return os_error_behind(exc.exceptions[0])
    return None
