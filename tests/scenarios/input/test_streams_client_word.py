"""Issue 24 item 10: a Streams timeline names a client with one word, ``client``, in every
step: join, leave, crash, restart and the fault steps alike (``member`` is the Connect
format's word and is refused in a Streams scenario, the message naming ``client``)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from scenarios.campaigns.chaos.generate_streams import _StreamsTimeline
from scenarios.input.library import load_any

SCENARIO = """kind = "streams"
name = "words"
settle_ms = 60000

[[subtopologies]]
id = 0
partitions = 2
stateful = false

[[clients]]
name = "a"

[[clients]]
name = "b"

[[timeline]]
at_ms = 20000
action = "crash"
client = "b"

[[timeline]]
at_ms = 30000
action = "partition"
{word} = "a"
duration_ms = 5000
"""


def _run(tmp_path: Path, word: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "words.toml").write_text(SCENARIO.format(word=word))
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli.main", "run", "words.toml", "--out", "out",
         "--no-plot"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip


def test_a_streams_fault_step_names_its_client_with_client(tmp_path: Path) -> None:
    done = _run(tmp_path, "client")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "out" / "events.jsonl").open()]
    faults = [(r["fault"], r["member"]) for r in records if r["kind"] == "fault"]
    assert faults == [("partition", "a"), ("heal", "a")]  # the log keeps its word, member


def test_member_in_a_streams_fault_step_is_refused_naming_client(tmp_path: Path) -> None:
    done = _run(tmp_path, "member")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "groupsim: error: words.toml: timeline[1].member: not a key of action 'partition' "
        "(its keys: action, at_ms, client, duration_ms)"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["words.toml"]


def test_the_library_and_the_chaos_generator_say_client() -> None:
    loaded = load_any("kip-441-scale-out-with-faults")
    assert any(getattr(p.step, "member", None) == "I2" for p in loaded.steps)
    step = _StreamsTimeline(random.Random(0), ["c1"]).step(5, "partition", "c1")
    assert step == {"at_ms": 5, "action": "partition", "client": "c1"}
