"""CLI start-up: importing the ``groupsim`` app leaves the heavy libraries unloaded.

Matplotlib (plots), pyarrow and pyspark (sweeps, reports), OR-Tools and numpy (the Streams
assignor) and the engine are imported only by the commands that use them, so ``groupsim
--help`` and every other command start fast; numpy and OR-Tools are imported by the Streams
assignors only when one of them runs, so a Connect ``groupsim run`` loads neither (and with
``--no-plot`` no matplotlib). ``groupsim --help`` is click's plain help text and loads no Rich
module (each command's own ``--help`` keeps typer's Rich rendering). A behaviour test: it
checks ``sys.modules`` in a fresh interpreter, never a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scenarios.campaigns import chaos, chaos_names

ROOT = Path(__file__).resolve().parents[3]

HEAVY = ("matplotlib", "pyarrow", "pyspark", "ortools", "numpy", "scenarios.campaigns.chaos")
RICH_HELP = ("typer.rich_utils", "rich.console", "rich.markdown", "rich.traceback")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_cli_loads_no_heavy_library() -> None:
    loaded = _modules_after("import scenarios.cli.main")
    assert "scenarios.cli.chaos_cmd" in loaded  # the commands are registered
    assert sorted(m for m in HEAVY if m in loaded) == []


def test_help_loads_no_heavy_library() -> None:
    code = (
        "import sys\nfrom scenarios.cli.main import main\nsys.argv = ['groupsim', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    loaded = _modules_after(code)
    assert sorted(m for m in HEAVY if m in loaded) == []
    # the top-level help is click's plain text: typer's Rich renderer (Rich's console,
    # Markdown and traceback modules) stays unloaded, and so does Rich itself
    assert sorted(m for m in RICH_HELP if m in loaded) == []


def test_a_command_help_still_renders_with_rich() -> None:
    code = (
        "import sys\nfrom scenarios.cli.main import main\n"
        "sys.argv = ['groupsim', 'run', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert "typer.rich_utils" in _modules_after(code)


def test_the_cli_vocabulary_is_the_campaigns() -> None:
    assert chaos_names.PROTOCOLS == chaos.PROTOCOLS
    assert chaos_names.ASSIGNOR_OF == chaos.ASSIGNOR_OF
    assert chaos_names.FAULT_KINDS == chaos.FAULT_KINDS


def _run_flagship(tmp_path: Path, *flags: str) -> set[str]:
    code = (
        "import sys\nfrom scenarios.cli.main import main\n"
        f"sys.argv = ['groupsim', 'run', '--out', {str(tmp_path / 'out')!r}, *{flags!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    return _modules_after(code)


def test_flagship_run_without_plot_loads_no_heavy_library(tmp_path: Path) -> None:
    # a Connect scenario: the Streams assignors are imported, numpy and OR-Tools are not
    loaded = _run_flagship(tmp_path, "--no-plot")
    assert (tmp_path / "out" / "events.jsonl").exists()
    assert sorted(m for m in HEAVY if m in loaded and m != "scenarios.campaigns.chaos") == []


def test_flagship_run_with_plot_loads_only_matplotlib(tmp_path: Path) -> None:
    loaded = _run_flagship(tmp_path)
    assert (tmp_path / "out" / "timeline.png").exists()
    # matplotlib needs numpy; OR-Tools, pyarrow and pyspark stay out. On Linux a forked
    # child draws the PNG (scenarios.cli.plot_child): the command's own process loads neither.
    heavy = sorted(m for m in HEAVY if m in loaded and m != "scenarios.campaigns.chaos")
    assert heavy == ([] if sys.platform.startswith("linux") else ["matplotlib", "numpy"])
