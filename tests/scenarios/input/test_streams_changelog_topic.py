"""Issue 21: a Streams scenario may name a stateful subtopology's changelog topic
(``[[subtopologies]] changelog_topic``); a bad name is a ScenarioError naming its path."""

from __future__ import annotations

import pytest

from members.assignors.streams import TaskId
from scenarios.input.library import loads_any
from scenarios.input.loader import ScenarioError

SCENARIO = """kind = "streams"
name = "named"
settle_ms = 60000

[[subtopologies]]
id = 0
partitions = 4
{first}

[[subtopologies]]
id = 1
partitions = 2
{second}

[[clients]]
name = "a"
"""


def _load(first: str = "", second: str = "") -> object:
    return loads_any(SCENARIO.format(first=first, second=second), "t.toml")


def test_a_named_changelog_topic_reaches_the_topology() -> None:
    loaded = _load('changelog_topic = "stateful-counts-changelog"')
    topology = loaded.topology  # type: ignore[attr-defined]
    assert topology.named_changelog_topic(0) == "stateful-counts-changelog"
    assert topology.changelog_partitions(TaskId(0, 3))[0].topic == "stateful-counts-changelog"
    # no name: groupsim's own, and the restore order stays task order
    assert topology.named_changelog_topic(1) is None
    assert topology.changelog_partitions(TaskId(1, 0))[0].topic == "store-1-changelog"


@pytest.mark.parametrize(
    ("first", "second", "path", "problem"),
    [
        ('changelog_topic = "no spaces"', "", "subtopologies[0].changelog_topic", "legal"),
        ('changelog_topic = ""', "", "subtopologies[0].changelog_topic", "legal"),
        ("changelog_topic = 7", "", "subtopologies[0].changelog_topic", "expected"),
        ('changelog_topic = ".."', "", "subtopologies[0].changelog_topic", "legal"),
        (f'changelog_topic = "{"x" * 250}"', "", "subtopologies[0].changelog_topic", "legal"),
        (
            'changelog_topic = "c"',
            'changelog_topic = "c"',
            "subtopologies[1].changelog_topic",
            "twice",
        ),
        (
            "",
            'stateful = false\nchangelog_topic = "c"',
            "subtopologies[1].changelog_topic",
            "stateless",
        ),
    ],
)
def test_a_bad_changelog_topic_is_refused_naming_its_path(
    first: str, second: str, path: str, problem: str
) -> None:
    with pytest.raises(ScenarioError) as info:
        _load(first, second)
    message = str(info.value)
    assert f"t.toml: {path}: " in message, message
    assert problem in message, message
