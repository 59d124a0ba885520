"""The import rules of docs/development.md: protocol <- coordinator, members <- scenarios, and
inside ``scenarios`` one job per subpackage with imports flowing one way:

    eventlog, input  <-  check  <-  sim  <-  campaigns, serve  <-  record, analysis  <-  cli
    input  <-  assign  <-  cli
    input  <-  assign  <-  referee  <-  campaigns, cli;  check  <-  referee

``kinds`` holds the member kinds as plug-ins (docs/kinds.md): its registry and protocol
(``scenarios/kinds/__init__.py``, ``protocol.py``) are the *bottom* layer — they import no
other ``scenarios`` subpackage at run time (types only under ``TYPE_CHECKING``), so every layer
may look a kind up — while each kind's own package (``scenarios/kinds/connect/``, ...) sits
on *top*: it wires its loader, engine glue, checkers, views and chaos generator together and
is imported by the registry on first use, never by name from another subpackage. This is
what lets ``check`` (below ``sim``) dispatch on a log's kind without importing ``sim``.

``referee`` (Kafka's classes judging a finished log through the oracle harness) reads plain log
records and the ``protocol`` codecs; the Streams referee also reruns ``assign`` (groupsim's
assignor on a round's logged inputs) where two optimisers may pick different optima. A
disagreement is a checker's ``Violation`` (``scenarios/check/violation.py``), so the referee
sits above ``check`` and its verdict reads like any checker's.

The checkers are pure functions over the event log; the engine (``sim``) runs them online, so a
violation sits in the log right after the record that caused it — which is why ``check`` sits
below ``sim``. The coordinator never imports assignors (the leader member runs them, as in
Kafka); the pure packages never import trio; only ``scenarios/analysis`` may import pyspark.

No import cycles between modules (:func:`test_no_import_cycles`): the graph has one node per
module of the four packages and an edge for every import statement that runs, absolute or
relative, at module level or inside a function (a function-level import is how a cycle is
usually hidden; it still ties the two modules together, so it counts). Imports under
``if TYPE_CHECKING:`` are exempt: they never run. A module named only by a string
(``importlib.import_module``, as the kinds registry loads a kind's package) is no edge; the
registry's own rule (:func:`test_the_kinds_registry_is_the_bottom_layer`) covers those.
"""

from __future__ import annotations

import ast
import graphlib
import re
from collections.abc import Iterable
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
    "kinds": {"eventlog", "input", "check", "sim", "assign", "referee", "campaigns", "cli"},
    "eventlog": set(),
    "input": set(),
    "check": {"eventlog", "input"},
    "sim": {"eventlog", "input", "check"},
    "assign": {"input"},
    "referee": {"assign", "input", "check"},
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


def _runtime_tree(path: Path) -> ast.Module:
    """``path`` parsed, with the bodies of ``if TYPE_CHECKING:`` emptied (they never run)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            node.body = []
    return tree


def _runtime_imports(path: Path) -> set[str]:
    """Like :func:`_imports`, without the imports under ``if TYPE_CHECKING:``."""
    tree = _runtime_tree(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


#: The registry half of ``scenarios.kinds`` (every layer may import these modules).
KINDS_CORE = ("scenarios.kinds", "scenarios.kinds.protocol")


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _module_name(path: Path, root: Path) -> str:
    """``scenarios/sim/engine.py`` -> ``scenarios.sim.engine``; a package's ``__init__.py`` ->
    the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` (under ``root``) it imports at run time.

    ``import a.b`` is an edge to ``a.b``; ``from a import b`` to the module ``a.b`` if there
    is one, else to ``a``; a relative import is resolved against the importing module's
    package first. Imports inside functions count; those under ``if TYPE_CHECKING:`` do not.
    """
    paths = {
        _module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))
    }

    def known(name: str) -> str | None:  # the module ``name`` names, or its nearest parent
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(_runtime_tree(path)):
            if isinstance(node, ast.Import):
                targets.update(known(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{up}.{base}" if base else up
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in paths else known(base))
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph`` (module -> modules it imports), each as ``[a, b, ..., a]``
    where each module imports the next; empty when no strongly connected component has more
    than one module. ``graphlib`` names one cycle at a time: one import of each cycle found is
    set aside before looking for the next, so every such component shows in at least one
    cycle (not every cycle through it is listed)."""
    remaining = {module: set(imported) for module, imported in graph.items()}
    cycles: list[list[str]] = []
    while True:
        try:
            graphlib.TopologicalSorter(remaining).prepare()
        except graphlib.CycleError as error:
            cycle = list(reversed(error.args[1]))  # graphlib lists an importer after its import
            cycles.append(cycle)
            remaining[cycle[0]].discard(cycle[1])
        else:
            return cycles


def test_no_import_cycles() -> None:
    cycles = import_cycles(import_graph(ROOT, PACKAGES))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_rule_sees_relative_and_function_level_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import A\n")
    (pkg / "sub" / "a.py").write_text("from . import b\nfrom ..top import T\nA = 1\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from pkg.sub.a import A\n    return A\n")
    (pkg / "top.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import a\nT = 1\n"
    )
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.sub"] == {"pkg.sub.a"}
    assert graph["pkg.sub.a"] == {"pkg.sub.b", "pkg.top"}
    assert graph["pkg.top"] == set()  # TYPE_CHECKING only
    assert import_cycles(graph) in (
        [["pkg.sub.a", "pkg.sub.b", "pkg.sub.a"]],
        [["pkg.sub.b", "pkg.sub.a", "pkg.sub.b"]],
    )
    (pkg / "sub" / "b.py").write_text("X = 1\n")
    assert import_cycles(import_graph(tmp_path, ["pkg"])) == []


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
            if parts[0] != "scenarios" or len(parts) == 1 or parts[1] == subpackage:
                continue
            if parts[1] == "kinds" and name not in KINDS_CORE:
                offenders.append(f"{path.relative_to(ROOT)} imports a kind's module {name}")
            elif parts[1] not in allowed | {"kinds"}:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, offenders


def test_the_kinds_registry_is_the_bottom_layer() -> None:
    """The registry and protocol import no other ``scenarios`` subpackage at run time."""
    offenders = []
    for module in KINDS_CORE:
        path = ROOT / (module.replace(".", "/") + ".py")
        if not path.is_file():
            path = ROOT / module.replace(".", "/") / "__init__.py"
        for name in _runtime_imports(path):
            parts = name.split(".")
            if parts[0] in PACKAGES and name not in KINDS_CORE:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, offenders


def test_no_module_over_600_lines() -> None:
    # one job per module: a file past 600 lines has grown a second one (issue 22)
    long = {
        str(p.relative_to(ROOT)): n
        for package in ("scenarios", "members", "coordinator", "protocol")
        for p in (ROOT / package).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long, long


def test_the_rule_catches_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from members.worker import ConnectWorker\nimport trio\n")
    assert {"members.worker", "trio"} <= _imports(bad)


#: A test of a member kind's name (``== "streams"``, ``"consumer" in ...``, ``in ("connect", ``)
#: or a read of a kind's summary key (``summary.get("streams")``). Kafka's wire
#: ``protocol_type`` (JoinGroup's protocolType, "connect"/"consumer") is another axis.
_KIND_TEST = re.compile(
    r"""(==|!=)\s*['"](connect|streams|consumer)['"]"""
    r"""|['"](connect|streams|consumer)['"]\s*(==|!=|in\b|not\s+in\b)"""
    r"""|\bin\s*[(\[{]\s*['"](connect|streams|consumer)['"]"""
    r"""|\.get\(\s*['"](streams|consumer)['"]"""
    r"""|ChaosKind\.(STREAMS|CONNECT|CONSUMER)\s*(\)|:|$|and|or|\bif\b)"""
    r"""|\bis\s+(not\s+)?ChaosKind\."""
)


def _own_module_of_a_kind(path: Path) -> bool:
    """A kind's own module: under ``scenarios/kinds/``, or named after its kind (its scenario
    format, engine glue, summary, bounds, chaos generator, record kinds)."""
    rel = path.relative_to(ROOT)
    return rel.parts[:2] == ("scenarios", "kinds") or any(
        k in path.stem for k in ("streams", "consumer", "connect")
    )


def _kind_tests(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if _KIND_TEST.search(line) and "protocol_type" not in line
    ]


def test_no_kind_name_tests_outside_the_kinds_own_modules() -> None:
    """Every per-kind decision goes through the registry (docs/kinds.md): no module outside a
    kind's own tests a kind's name."""
    offenders = [
        f"{path.relative_to(ROOT)}: {line}"
        for package in PACKAGES
        for path in _modules(package)
        if not _own_module_of_a_kind(path)
        for line in _kind_tests(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, offenders


def test_the_kind_name_rule_catches_a_test() -> None:
    assert _kind_tests('if config.kind == "streams":\n    pass')
    assert _kind_tests("x = 1 if kind in ('connect', 'streams') else 2")
    assert _kind_tests('streams = summary.get("streams")')
    assert _kind_tests("if kind is ChaosKind.STREAMS and protocol:")
    assert not _kind_tests('if join.protocol_type == "consumer":')
    assert not _kind_tests('kinds.get(spec.group_kind).loads(text, "x.toml")')
