"""The documentation a new user reads: the README stays an entrance, its set-up commands stay
the ones it shows, every relative link in the README, CHANGELOG.md and ``docs/*.md`` leads to a
file (and, with ``#anchor``, to a heading of it), every repository path they name exists, and
no code or test cites a design note that is not in the repository (issue 24, items 13 and 14).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]

#: The README's two set-up commands, verbatim: one installs groupsim and runs the flagship,
#: one installs the development tools and runs the default tests.
SETUP_COMMANDS = (
    "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/groupsim run",
    'python3 -m venv .venv && .venv/bin/pip install -e ".[dev,spark]" && .venv/bin/pytest -q',
)

_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
#: A path into the repository written in backticks: a top-level folder, then a path.
_REPO_PATH = re.compile(
    r"`((?:protocol|coordinator|members|scenarios|tests|benchmarks|docs|\.ci)/[\w./-]*)`"
)


def _prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of ``path`` outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, inline markup and punctuation dropped,
    spaces to hyphens (hyphens and underscores kept)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    """Every heading anchor of ``path``; a repeated heading gets ``-1``, ``-2``… as on GitHub."""
    seen: Counter[str] = Counter()
    anchors = set()
    for _, line in _prose_lines(path):
        match = _HEADING.match(line)
        if match is None:
            continue
        slug = _slug(match.group(2))
        anchors.add(slug if seen[slug] == 0 else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return anchors


def _links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every relative link in ``path``'s prose."""
    out = []
    for number, line in _prose_lines(path):
        for match in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            target = match.group(1)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                out.append((number, target))
    return out


def test_readme_is_an_entrance_of_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"


def test_readme_shows_both_setup_commands_verbatim_on_its_first_screen() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    for command in SETUP_COMMANDS:
        assert command in lines, f"README.md lost the set-up command {command!r}"
        assert lines.index(command) < 40, f"{command!r} is not on the README's first screen"


def test_the_first_setup_command_prints_what_the_readme_shows(tmp_path: Path) -> None:
    """``groupsim run`` (the flagship, as the first set-up command runs it) prints the README's
    block line for line and writes the files its last line names."""
    text = README.read_text(encoding="utf-8")
    match = re.search(r"and prints:\n\n```\n(.*?)\n```", text, re.S)
    assert match is not None, "README.md lost the flagship output"
    groupsim = Path(sys.executable).with_name("groupsim")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    run = subprocess.run(
        [str(groupsim), "run"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    printed = [line.rstrip() for line in run.stdout.splitlines()]
    assert printed == [line.rstrip() for line in match.group(1).splitlines()]
    out = tmp_path / "groupsim-out" / "rolling-upgrade-eager-to-sessioned"
    assert {p.name for p in out.iterdir()} >= {"events.jsonl", "summary.json", "timeline.png"}


def _groupsim(*args: str, stdin: str | None = None, cwd: Path | None = None):
    groupsim = Path(sys.executable).with_name("groupsim")
    return subprocess.run(
        [str(groupsim), *args], input=stdin, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_commands_page_codec_and_streams_assign_examples_print_what_it_shows(
    tmp_path: Path,
) -> None:
    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    codec = re.search(
        r"\$ echo '(.*?)' \| \.venv/bin/groupsim codec encode assignment\n(\w+)\n"
        r"\$ \.venv/bin/groupsim codec decode assignment (\w+)\n(groupsim: error: [^\n]*)\n",
        text,
        re.S,
    )
    assert codec is not None, "docs/commands.md lost the codec example"
    encoded = _groupsim("codec", "encode", "assignment", stdin=codec.group(1))
    assert (encoded.returncode, encoded.stdout.strip()) == (0, codec.group(2))
    decoded = _groupsim("codec", "decode", "assignment", codec.group(3))
    assert (decoded.returncode, decoded.stderr.strip()) == (2, codec.group(4))

    streams = re.search(
        r"\$ cat streams-input\.json\n(.*?)\n\$ \.venv/bin/groupsim assign streams-input\.json\n"
        r"(.*?)\n```",
        text,
        re.S,
    )
    assert streams is not None, "docs/commands.md lost the Streams assign example"
    (tmp_path / "streams-input.json").write_text(streams.group(1), encoding="utf-8")
    assigned = _groupsim("assign", "streams-input.json", cwd=tmp_path)
    assert assigned.returncode == 0, assigned.stderr
    assert json.loads(assigned.stdout) == json.loads(streams.group(2))


def test_the_upgrades_page_shows_what_groupsim_compat_prints() -> None:
    rows = [
        line
        for line in (ROOT / "docs" / "upgrades.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| ")
    ]
    compat = _groupsim("compat", "--format", "markdown", "--allow-known", "--seed", "1")
    assert compat.returncode == 0, compat.stderr
    assert rows == [line for line in compat.stdout.splitlines() if line.startswith("| ")]


def test_the_consumer_page_shows_what_groupsim_compat_kind_consumer_prints() -> None:
    doc = (ROOT / "docs" / "consumer.md").read_text(encoding="utf-8")
    compat = _groupsim("compat", "--kind", "consumer", "--format", "markdown", "--seed", "1")
    assert compat.returncode == 0, compat.stderr
    assert compat.stdout.count("\n| ") >= 28
    assert compat.stdout in doc


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_and_heading(page: Path) -> None:
    broken = []
    for number, target in _links(page):
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{page.name}:{number}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{page.name}:{number}: {target}: no heading #{anchor} there")
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_the_docs_name_exists(page: Path) -> None:
    missing = []
    for number, line in _prose_lines(page):
        for match in _REPO_PATH.finditer(line):
            named = match.group(1)
            if not (ROOT / named).exists():
                missing.append(f"{page.name}:{number}: {named}")
    assert missing == []


def test_the_slugs_follow_github() -> None:
    assert _slug("Version probing (mixed releases)") == "version-probing-mixed-releases"
    assert _slug("`groupsim report DIR [--out FILE]`") == "groupsim-report-dir---out-file"
    assert _slug("2,500-run campaigns with the `delay` fault") == (
        "2500-run-campaigns-with-the-delay-fault"
    )


@pytest.mark.parametrize(
    ("page", "folder"),
    [
        ("library.md", ""),
        ("streams.md", "streams"),
        ("sweeps.md", "sweeps"),
        ("consumer.md", "consumer"),
    ],
)
def test_the_docs_name_every_built_in_scenario_and_sweep(page: str, folder: str) -> None:
    """library.md names every file of scenarios/library/; streams.md's and sweeps.md's tables
    every one of theirs."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    names = [p.stem for p in (ROOT / "scenarios" / "library" / folder).rglob("*.toml")]
    assert names
    assert [n for n in names if f"`{n}`" not in text] == []


def test_default_output_directories_are_ignored_by_git() -> None:
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    for directory in ("groupsim-out/", "sweep-out/"):  # run/chaos/serve and sweep defaults
        assert directory in ignored


#: Citations a fresh clone cannot follow: design notes and reference files that were never in
#: the repository, and numbered sections of them ("connect.md §5.3", "DESIGN §8").
_OUTSIDE = re.compile(r"DESIGN\.md|DESIGN §|\breference/|shared/|§\s*\d")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_cite_nothing_outside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert [line for line in text.splitlines() if _OUTSIDE.search(line)] == []


def test_code_and_tests_cite_nothing_outside_the_repository() -> None:
    found = []
    for folder in ("protocol", "coordinator", "members", "scenarios", "tests"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in {".py", ".toml", ".j2", ".json", ".java", ".xml", ".md"}:
                continue
            if path == Path(__file__).resolve() or "target" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _OUTSIDE.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
