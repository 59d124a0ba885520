"""Printing a rich table whole: no column is ever dropped for want of width.

Rich fits a table to the console by wrapping cells, but when its squeezing falls short it lets
the table overflow and the console crops it: columns on the right silently go missing
(``groupsim compat`` at 80 columns showed 5 of its 8). :func:`print_table` lays the columns
out itself (:func:`fit_widths`) and, when even every column at its narrowest does not fit,
prints the table as several tables that each fit, every one repeating the key columns (the
row names), so each value still sits beside the row it belongs to.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table

__all__ = ["fit_widths", "output_console", "print_table", "split_table"]

#: Output width bounds when stdout is not a terminal and ``COLUMNS`` is not set.
MIN_PIPED_WIDTH = 80
MAX_PIPED_WIDTH = 160

_MEASURE = Console(width=1 << 16, file=io.StringIO())


def output_console(natural_width: int = MIN_PIPED_WIDTH) -> Console:
    """The console for a command's output on stdout: the terminal's width (or ``COLUMNS``,
    when set); piped without ``COLUMNS``, ``natural_width`` columns kept within
    :data:`MIN_PIPED_WIDTH`..:data:`MAX_PIPED_WIDTH`, so that a table wraps in a file only
    when its lines would be too long to read."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").strip().isdigit():
        return Console()
    return Console(width=min(MAX_PIPED_WIDTH, max(MIN_PIPED_WIDTH, natural_width)))


def _natural_width(table: Table) -> int:
    """The width ``table`` takes when nothing has to wrap, in console columns."""
    return Measurement.get(_MEASURE, _MEASURE.options, table).maximum


def _column_range(column: Column) -> tuple[int, int]:
    """(narrowest, widest) content width of ``column``: its longest word and its longest
    cell (header included), both at least its ``min_width``."""
    cells = (column.header, *column.cells)
    sizes = [Measurement.get(_MEASURE, _MEASURE.options, cell) for cell in cells]
    low = max(max(m.minimum for m in sizes), column.min_width or 0, 1)
    high = max(max(m.maximum for m in sizes), low)
    return low, high


def fit_widths(table: Table, indexes: Sequence[int], width: int) -> list[int] | None:
    """Content widths for ``table``'s columns at ``indexes`` that fit in ``width`` console
    columns (borders and padding included), or ``None`` when the columns do not fit even at
    their narrowest. Columns start at their widest; the width missing is taken, a character
    at a time, from whichever column has the most to spare above its narrowest."""
    ranges = [_column_range(table.columns[i]) for i in indexes]
    chrome = 3 * len(indexes) + 1  # "│ " before each column and "│" after the last
    if sum(low for low, _ in ranges) + chrome > width:
        return None
    widths = [high for _, high in ranges]
    for _ in range(sum(widths) + chrome - width):
        spare = [w - low for w, (low, _) in zip(widths, ranges, strict=True)]
        widths[spare.index(max(spare))] -= 1
    return widths


def _column_options(column: Column) -> dict[str, Any]:
    names = ("justify", "style", "header_style", "no_wrap", "overflow", "vertical")
    return {name: getattr(column, name) for name in names}


def _subtable(table: Table, indexes: Sequence[int], widths: Sequence[int], title: bool) -> Table:
    """A table of ``table``'s columns at ``indexes`` (same style and rows), column ``n``
    ``widths[n]`` characters wide; ``table``'s title when ``title``."""
    part = Table(
        title=table.title if title else None,
        box=table.box,
        show_header=table.show_header,
        header_style=table.header_style,
        title_style=table.title_style,
        show_lines=table.show_lines,
    )
    columns = [table.columns[i] for i in indexes]
    for column, width in zip(columns, widths, strict=True):
        part.add_column(column.header, width=width, **_column_options(column))
    for row in zip(*(list(column.cells) for column in columns), strict=True):
        part.add_row(*row)
    return part


def split_table(table: Table, width: int, keep: Sequence[str] = ()) -> list[Table]:
    """``table`` laid out in ``width`` console columns: one table when its columns fit (cells
    wrapped where needed), else several tables, in column order, each repeating the columns
    whose header is in ``keep`` and holding as many others as fit.

    A part with a single column besides the kept ones that still does not fit is made at its
    narrowest (the console wraps it); no column is ever left out.
    """
    every = list(range(len(table.columns)))
    widths = fit_widths(table, every, width)
    if widths is not None:
        return [_subtable(table, every, widths, True)]
    kept = [i for i in every if table.columns[i].header in keep]
    parts: list[list[int]] = [[]]
    for index in (i for i in every if i not in kept):
        if parts[-1] and fit_widths(table, sorted([*kept, *parts[-1], index]), width) is None:
            parts.append([index])
        else:
            parts[-1].append(index)
    tables = []
    for n, part in enumerate(parts):
        indexes = sorted([*kept, *part])
        fitted = fit_widths(table, indexes, width)
        narrowest = [_column_range(table.columns[i])[0] for i in indexes]
        tables.append(_subtable(table, indexes, fitted or narrowest, n == 0))
    return tables


def print_table(table: Table, keep: Sequence[str] = (), console: Console | None = None) -> None:
    """Print ``table`` with every column (see the module docstring) on ``console`` (default:
    :func:`output_console` at the table's natural width)."""
    if console is None:
        console = output_console(_natural_width(table))
    for n, part in enumerate(split_table(table, console.width, keep)):
        if n:
            console.print()
        console.print(part)
