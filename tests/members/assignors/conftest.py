"""Make the repository root importable and share the vector loaders of the assignor tests.

No ``__init__.py`` here (it would make this directory shadow the real ``members`` package
under pytest's default import mode); the root goes on ``sys.path`` instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[3])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
