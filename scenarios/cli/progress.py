"""One transient progress bar on stderr for long commands (quiet when stderr is no terminal)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["ProgressBar"]


class ProgressBar:
    """``with ProgressBar("simulating") as advance: ... advance(done, total)``.

    ``advance`` is ``None`` when stderr is not a terminal (nothing is drawn). ``done`` and
    ``total`` are in the caller's unit (virtual ms, runs).
    """

    def __init__(self, label: str, *, total: int | None = None) -> None:
        self.label = label
        self.total = total
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Callable[[int, int], None] | None:
        if not sys.stderr.isatty():
            return None
        from rich.console import Console
        from rich.progress import Progress

        self.bar = Progress(console=Console(stderr=True, highlight=False), transient=True)
        self.bar.start()
        self.task = self.bar.add_task(self.label, total=self.total)

        def advance(done: int, total: int) -> None:
            self.bar.update(self.task, completed=done, total=total)

        return advance

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
