"""Make the repository root importable for the Streams assignor tests.

No ``__init__.py`` here (it would make this directory shadow real packages under pytest's
default import mode); the root goes on ``sys.path`` instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[4])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
