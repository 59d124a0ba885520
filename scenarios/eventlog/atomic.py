"""Atomic file writing that honours the umask: the one helper every groupsim output uses.

A file is written under a temporary name in its own directory (``.<name>.<random>.tmp``),
given the permissions a plain ``open(path, "w")`` would give it (``0o666 & ~umask``; ``mkstemp``
alone would leave ``0o600``), then renamed over ``path`` with :func:`os.replace`. On any error
(including ``KeyboardInterrupt``) the temporary file is removed and ``path`` is untouched, so
nothing half-written ever looks complete.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_open", "atomic_write_text", "atomic_write_bytes", "current_umask", "make_dir"]


def current_umask() -> int:
    """The process's umask, read without changing it where Linux exposes it (``/proc``);
    elsewhere by setting and restoring it."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_open(
    path: str | Path, mode: str = "w", *, encoding: str | None = "utf-8", fsync: bool = False
) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing (``mode`` ``"w"`` or ``"wb"``); when
    the ``with`` block ends without an exception, rename it over ``path``.

    Raises:
        OSError: the directory does not exist or is not writable.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open: mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
        handle: IO[Any] = os.fdopen(fd, mode, encoding=None if mode == "wb" else encoding)
        with handle:
            yield handle
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "w") as handle:
        handle.write(text)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)


def make_dir(path: str | Path) -> Path:
    """A fresh temporary directory ``path`` prefix in its parent with the permissions ``mkdir``
    would give (``0o777 & ~umask``; ``mkdtemp`` alone gives ``0o700``)."""
    path = Path(path)
    created = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    os.chmod(created, 0o777 & ~current_umask())
    return created
