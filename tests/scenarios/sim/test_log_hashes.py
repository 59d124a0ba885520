"""Golden hashes of every library scenario's event log (seeds 1 and 7).

The sha256 of ``events.jsonl`` as ``groupsim run`` writes it, for each library scenario
(Connect, Kafka Streams and plain consumer groups) and each chaos reproducer at seeds 1 and
7, is kept in ``tests/golden/library_log_hashes.json``.
A change to any log fails here: when the change is deliberate, say why in the commit and
regenerate the file with ``GROUPSIM_UPDATE_HASHES=1 pytest tests/scenarios/test_log_hashes.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import msgspec
import pytest

from scenarios.input.library import (
    consumer_library_dir,
    library_dir,
    load_any,
    streams_library_dir,
)
from scenarios.input.streams import load_streams_scenario
from scenarios.sim.runner import simulate
from scenarios.sim.runner import simulate as simulate_streams

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "library_log_hashes.json"
SEEDS = (1, 7)
REPRO = Path(__file__).resolve().parents[1] / "campaigns" / "chaos" / "repro"


def _cases() -> list[tuple[str, Path]]:
    connect = [(f"connect/{p.stem}", p) for p in sorted(library_dir().glob("*.toml"))]
    streams = [(f"streams/{p.stem}", p) for p in sorted(streams_library_dir().glob("*.toml"))]
    consumer = [(f"consumer/{p.stem}", p) for p in sorted(consumer_library_dir().glob("*.toml"))]
    # The chaos reproducers exercise every fault kind on Connect groups.
    repro = [(f"repro/{p.stem}", p) for p in sorted(REPRO.glob("*.toml"))]
    return connect + streams + consumer + repro


def _log_sha256(key: str, path: Path, seed: int) -> str:
    if key.startswith("streams/"):
        result = simulate_streams(load_streams_scenario(path), seed)
    else:
        result = simulate(load_any(path), seed)
    data = msgspec.json.Encoder().encode_lines(result.records)
    return hashlib.sha256(data).hexdigest()


def _current() -> dict[str, str]:
    return {
        f"{key}@{seed}": _log_sha256(key, path, seed) for key, path in _cases() for seed in SEEDS
    }


def test_library_logs_match_their_golden_hashes() -> None:
    current = _current()
    if os.environ.get("GROUPSIM_UPDATE_HASHES"):
        GOLDEN.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
        pytest.skip("golden hashes rewritten")
    golden = json.loads(GOLDEN.read_text())
    changed = sorted(k for k in golden if current.get(k) != golden[k])
    missing = sorted(set(current) - set(golden))
    assert not changed and not missing, f"changed: {changed}; not in the golden file: {missing}"
