"""The import rules of DESIGN.md §2: protocol <- coordinator, members <- scenarios.

The coordinator never imports assignors (the leader member runs them, as in Kafka); the pure
packages never import trio; only ``scenarios/analysis`` may import pyspark.
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


def test_the_rule_catches_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from members.worker import ConnectWorker\nimport trio\n")
    assert {"members.worker", "trio"} <= _imports(bad)
