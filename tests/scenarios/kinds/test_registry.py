"""The member-kind registry (docs/kinds.md): lookup by name, by log and by summary, each
kind's own record kinds, and a kind registered from outside taking part in loading."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scenarios import kinds
from scenarios.eventlog.records import RECORD_TYPES
from scenarios.input.errors import ScenarioError
from scenarios.input.library import load_any, loads_any

CONSUMER_FILE = Path(__file__).parents[1] / "consumer" / "cooperative-member-crash.toml"


def test_the_three_built_in_kinds_are_registered_in_order() -> None:
    assert kinds.names() == ("connect", "streams", "consumer")
    for name in kinds.names():
        assert kinds.get(name).name == name


def test_an_unknown_kind_is_a_typed_error() -> None:
    with pytest.raises(kinds.UnknownKind):
        kinds.get("share")


@pytest.mark.parametrize(
    ("records", "name"),
    [
        ([{"kind": "run_start", "log_version": 1}], "connect"),
        ([{"kind": "run_start", "app": "streams"}], "streams"),
        ([{"kind": "config"}, {"kind": "run_start", "app": "consumer"}], "consumer"),
        ([], "connect"),
    ],
)
def test_a_log_names_its_kind_in_run_start(records: list[dict[str, Any]], name: str) -> None:
    assert kinds.of_log(records).name == name


def test_of_log_looks_only_at_the_first_records_it_is_told_to() -> None:
    records = [{"kind": "config"}, {"kind": "run_start", "app": "streams"}]
    assert kinds.of_log(records, within=1).name == "connect"
    assert kinds.of_log(records, within=2).name == "streams"


@pytest.mark.parametrize(
    ("summary", "name"),
    [({"rebalances": 1}, "connect"), ({"streams": {}}, "streams"), ({"consumer": {}}, "consumer")],
)
def test_a_summary_keeps_its_kind_under_the_kinds_name(summary: dict[str, Any], name: str) -> None:
    assert kinds.of_summary(summary).name == name


def test_each_kinds_record_kinds_are_its_own_and_in_the_log_schema() -> None:
    seen: set[str] = set()
    for name in kinds.names():
        own = kinds.get(name).record_kinds()
        assert own, name
        assert own <= set(RECORD_TYPES), (name, own - set(RECORD_TYPES))
        assert not own & seen, (name, own & seen)
        seen |= own


def test_a_scenario_file_is_loaded_by_the_kind_it_names() -> None:
    loaded = load_any(CONSUMER_FILE)
    assert loaded.scenario.kind == "consumer"
    assert type(loaded) is type(kinds.get("consumer").loads(CONSUMER_FILE.read_text(), "x"))
    assert load_any("kip-441-scale-out").scenario.kind == "streams"


def test_an_unknown_kind_in_a_file_lists_every_registered_kind() -> None:
    with pytest.raises(ScenarioError, match="must be connect, streams or consumer, got 'share'"):
        loads_any('kind = "share"\nname = "x"\n', "x.toml")


class _Echo:
    """A stand-in kind: loading gives back the text (what registering a kind must enable)."""

    name = "echo"

    def loads(self, text: str, source: str | Path) -> Any:
        return ("echo", text)


def test_a_registered_kind_takes_part_in_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(kinds._registered, "echo", _Echo())  # type: ignore[arg-type]
    assert kinds.names()[-1] == "echo"
    text = 'kind = "echo"\nname = "e"\n'
    assert loads_any(text, "e.toml") == ("echo", text)  # type: ignore[comparison-overlap]
