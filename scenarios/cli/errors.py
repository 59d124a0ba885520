"""How every ``groupsim`` command reports bad input: one line on stderr,
``groupsim: error: <where>: <what>``, and exit code 2 (docs/cli-contracts.md).

Every layer's input errors subclass :class:`protocol.errors.InputError`, so a command catches
that one type (:func:`one_line_errors`) instead of a list of classes from every package.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from protocol.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "BadInput",
    "InputError",
    "fail",
    "one_line_errors",
    "os_error_behind",
    "parse_conf",
    "stderr",
]


class _StderrConsole:
    """Rich's stderr ``Console``, built (and ``rich.console`` imported) on first use, so a
    command that prints nothing there (``groupsim --help``) does not pay for the import."""

    def __init__(self) -> None:
        self._console: Console | None = None

    def get(self) -> Console:
        """The ``Console`` itself (for Rich objects that take one, e.g. ``Progress``)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=True, highlight=False)
        return self._console

    def print(self, *objects: Any, **options: Any) -> None:
        """``Console.print`` on stderr."""
        self.get().print(*objects, **options)


#: The console every command writes its one-line messages to.
stderr = _StderrConsole()


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
