"""Issue 24 item 8: a table never loses a column. ``groupsim compat`` at 80 and 130 columns
(and piped with no width) shows all eight columns and every row's ``safe`` cell, within the
width; a table too wide is split into parts that repeat the case column."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.table import Table

from scenarios.campaigns.compat import COLUMNS
from scenarios.cli.tables import split_table


def _compat(tmp_path: Path, columns: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run(
        [sys.executable, "-m", "scenarios.cli.main", "compat", "--allow-known"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert list(tmp_path.iterdir()) == []
    return done.stdout


def _headers(text: str) -> list[str]:
    """Every header cell of every part, multi-line headers joined ("max task downtime")."""
    lines = text.splitlines()
    found: list[str] = []
    start = 0
    while start < len(lines):
        if not lines[start].startswith("┏"):
            start += 1
            continue
        end = next(i for i in range(start, len(lines)) if lines[i].startswith("┡"))
        rows = [line.strip("┃").split("┃") for line in lines[start + 1 : end]]
        for cells in zip(*rows, strict=True):
            found.append(" ".join(" ".join(cell.split()) for cell in cells if cell.strip()))
        start = end
    return found


@pytest.mark.parametrize("columns", ["80", "130", None])
def test_compat_shows_every_column_at_any_width(tmp_path: Path, columns: str | None) -> None:
    text = _compat(tmp_path, columns)
    headers = _headers(text)
    assert set(headers) == set(COLUMNS), headers
    if columns is not None:
        assert max(len(line) for line in text.splitlines()) <= int(columns)
    if columns == "80":
        assert headers.count("case") == 2  # two parts, the case column in each
    else:
        assert headers == list(COLUMNS)  # one table
    # every row's verdict is there: "yes" or "no" at the end of each row of the last part
    last = text.split("┡")[-1]
    verdicts = [row.split("│")[-2].strip() for row in last.splitlines() if row.startswith("│")]
    rows = [
        row
        for row in text.split("┡")[1].splitlines()
        if row.startswith("│ mix") or row.startswith("│ path")
    ]
    assert len([v for v in verdicts if v in ("yes", "no")]) == len(rows) > 30


def test_split_table_repeats_the_key_column_and_keeps_every_cell() -> None:
    table = Table(title="t")
    for name in ("name", "alpha", "beta", "gamma"):
        table.add_column(name)
    table.add_row("row-one", "a" * 20, "b" * 20, "c" * 20)
    table.add_row("row-two", "1", "2", "3")
    assert len(split_table(table, 200, keep=("name",))) == 1
    parts = split_table(table, 40, keep=("name",))
    assert [[c.header for c in part.columns] for part in parts] == [
        ["name", "alpha"],
        ["name", "beta"],
        ["name", "gamma"],
    ]
    assert [list(part.columns[0].cells) for part in parts] == [["row-one", "row-two"]] * 3
    assert parts[0].title == "t" and parts[1].title is None
