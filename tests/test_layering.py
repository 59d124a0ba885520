"""The import rules of docs/development.md: protocol <- coordinator, members <- scenarios, and
inside ``scenarios`` one job per subpackage with imports flowing one way:

    eventlog, input  <-  check  <-  sim  <-  campaigns, serve  <-  record, analysis  <-  cli
    input  <-  assign  <-  cli
    input  <-  assign  <-  referee  <-  campaigns, cli

``referee`` (Kafka's classes judging a finished log through the oracle harness) reads plain log
records and the ``protocol`` codecs; the Streams referee also reruns ``assign`` (groupsim's
assignor on a round's logged inputs) where two optimisers may pick different optima.

The checkers are pure functions over the event log; the engine (``sim``) runs them online, so a
violation sits in the log right after the record that caused it — which is why ``check`` sits
below ``sim``. The coordinator never imports assignors (the leader member runs them, as in
Kafka); the pure packages never import trio; only ``scenarios/analysis`` may import pyspark.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("protocol", "coordinator", "members", "scenarios")

# package -> top-level packages of this project it may import
ALLOWED = {
    "protocol": {"protocol"},
    "coordinator": {"protocol", "coordinator"},
    "members": {"protocol", "members"},
    "scenarios": {"protocol", "coordinator", "members", "scenarios"},
}


# scenarios subpackage -> the scenarios subpackages it may import (besides itself)
SCENARIOS_ALLOWED = {
    "eventlog": set(),
    "input": set(),
    "check": {"eventlog", "input"},
    "sim": {"eventlog", "input", "check"},
    "assign": {"input"},
    "referee": {"assign", "input"},
    "campaigns": {"eventlog", "input", "check", "sim", "referee"},
    "serve": {"eventlog", "input", "check", "sim"},
    "record": {"eventlog", "input", "check", "sim", "serve"},
    "analysis": {"eventlog", "input", "check", "sim", "campaigns"},
    "cli": {
        "eventlog",
        "input",
        "check",
        "sim",
        "assign",
        "campaigns",
        "serve",
        "record",
        "analysis",
        "referee",
    },
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_flow_one_way(package: str) -> None:
    offenders = []
    for path in _modules(package):
        for name in _imports(path):
            top = name.split(".")[0]
            if top in PACKAGES and top not in ALLOWED[package]:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, offenders


@pytest.mark.parametrize("package", ["protocol", "coordinator", "members"])
def test_pure_packages_do_not_import_trio(package: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)}"
        for path in _modules(package)
        if any(n.split(".")[0] == "trio" for n in _imports(path))
    ]
    assert not offenders, offenders


def test_only_analysis_imports_pyspark() -> None:
    offenders = []
    for package in PACKAGES:
        for path in _modules(package):
            if "analysis" in path.relative_to(ROOT).parts:
                continue
            if any(n.split(".")[0] == "pyspark" for n in _imports(path)):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders


def test_scenarios_is_split_into_the_known_subpackages() -> None:
    loose = sorted(p.name for p in (ROOT / "scenarios").glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules outside a subpackage: {loose}"
    packages = {p.parent.name for p in (ROOT / "scenarios").glob("*/__init__.py")}
    assert packages <= set(SCENARIOS_ALLOWED), packages - set(SCENARIOS_ALLOWED)


@pytest.mark.parametrize("subpackage", sorted(SCENARIOS_ALLOWED))
def test_scenarios_subpackages_import_one_way(subpackage: str) -> None:
    allowed = SCENARIOS_ALLOWED[subpackage] | {subpackage}
    offenders = []
    for path in sorted((ROOT / "scenarios" / subpackage).rglob("*.py")):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "scenarios" and len(parts) > 1 and parts[1] not in allowed:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, offenders


def test_no_scenarios_module_over_600_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "scenarios").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long, long


def test_the_rule_catches_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from members.worker import ConnectWorker\nimport trio\n")
    assert {"members.worker", "trio"} <= _imports(bad)
