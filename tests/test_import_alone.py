"""Every module imports on its own: no import cycle breaks when a module is the first one a
program imports.

A cycle between two modules can work when they are entered from one side and fail (a name of
a partially initialised module) when entered from the other. So each module of the four
packages is imported as the first groupsim module of an interpreter: one fresh interpreter
runs the whole list, forgetting every groupsim module between two imports (third-party
modules stay loaded; they cannot take part in a groupsim cycle).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("protocol", "coordinator", "members", "scenarios")

_SCRIPT = """
import importlib, sys, traceback
names = sys.argv[1:]
roots = {n.split(".")[0] for n in names}
failed = []
for name in names:
    for loaded in [m for m in sys.modules if m.split(".")[0] in roots]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\\n".join(failed))
"""


def _modules() -> list[str]:
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "templates" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out.append(".".join(parts))
    return out


def _import_each(modules: list[str], cwd: Path) -> list[str]:
    """The modules (with their error) that fail when imported first."""
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *modules],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


@pytest.mark.slow  # about 200 modules: ~30 s idle, ~2 min on a loaded machine
def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    modules = _modules()
    assert "members.consumer" in modules and "scenarios.sim.consumer" in modules
    assert not _import_each(modules, ROOT)


def test_a_cycle_entered_from_the_wrong_side_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyc import b\nX = 1\n")
    (pkg / "b.py").write_text("from cyc.a import X\n")
    failed = _import_each(["cyc.b", "cyc.a"], tmp_path)
    assert len(failed) == 1 and failed[0].startswith("cyc.a: ImportError"), failed
