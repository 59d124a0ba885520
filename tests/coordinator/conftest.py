"""Make the repository root importable for these tests (and `tests.coordinator.harness`).

The package is not installed in the dev venv and pyproject sets no ``pythonpath``, so under
pytest's default ``prepend`` import mode ``import protocol`` would fail. (An ``__init__.py``
here would be worse: this directory would shadow the real ``protocol`` package.)
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
