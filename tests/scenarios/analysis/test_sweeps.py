"""The sweep file loader (scenarios/sweeps.py): schema, errors, grid expansion, run ids,
parameter substitution, and running one run without Spark."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from scenarios.campaigns import sweeps
from scenarios.campaigns.sweeps import (
    RunSpec,
    SweepError,
    execute_run,
    load_sweep,
    loads_sweep,
    make_run_id,
    sweep_names,
    toml_dumps,
)

SMALL = """
name = "small"
generator = "rolling-bounce"
seeds = 3
[parameters]
protocol = ["eager", "sessioned"]
workers = [3, 4]
"""


def error_of(text: str, source: str = "s.toml") -> str:
    with pytest.raises(SweepError) as info:
        loads_sweep(text, source)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_grid_expansion_order_and_ids() -> None:
    sweep = loads_sweep(SMALL, "small.toml")
    assert sweep.name == "small"
    assert sweep.seeds == [0, 1, 2]
    assert sweep.param_types == {"protocol": "string", "workers": "long"}
    assert [c.params for c in sweep.combinations] == [
        {"protocol": "eager", "workers": 3},
        {"protocol": "eager", "workers": 4},
        {"protocol": "sessioned", "workers": 3},
        {"protocol": "sessioned", "workers": 4},
    ]
    assert len(sweep.runs) == 12
    assert [r.seed for r in sweep.runs[:4]] == [0, 1, 2, 0]
    ids = [r.run_id for r in sweep.runs]
    assert len(set(ids)) == 12
    assert all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
    first = sweep.runs[0]
    assert first.run_id == make_run_id("small", {"protocol": "eager", "workers": 3}, 0)
    # the same file gives the same ids; the id depends on the parameters and the seed only
    assert [r.run_id for r in loads_sweep(SMALL, "other.toml").runs] == ids
    combo = sweep.combinations[3]
    assert (combo.workers, combo.protocol, combo.delay_ms) == (4, "sessioned", 300000)


def test_parameters_reach_the_scenario() -> None:
    sweep = loads_sweep(SMALL, "small.toml")
    doc = tomllib.loads(sweep.combinations[1].scenario_text)
    assert doc["cluster"]["size"] == 4
    assert doc["cluster"]["config"]["connect.protocol"] == "eager"


def test_template_placeholders_and_set(tmp_path: Path) -> None:
    template = tmp_path / "base.toml"
    template.write_text(
        'name = "t"\n[cluster]\nsize = ${n}\n[cluster.config]\n"connect.protocol" = ${p}\n'
        "[workload.generate]\ncount = 2\ntasks = 2\n",
        encoding="utf-8",
    )
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(
        'name = "t"\ntemplate = "base.toml"\nseeds = [4, 7]\n'
        '[parameters]\nn = [2, 3]\np = ["eager"]\ndelay = [0, 5000]\n'
        '[set]\n\'cluster.config."scheduled.rebalance.max.delay.ms"\' = "${delay}"\n'
        '"description" = "n=${n} p=${p}"\n',
        encoding="utf-8",
    )
    sweep = load_sweep(sweep_file)
    assert sweep.seeds == [4, 7]
    assert len(sweep.runs) == 2 * 1 * 2 * 2
    last = sweep.combinations[-1]
    doc = tomllib.loads(last.scenario_text)
    assert doc["cluster"]["config"] == {
        "connect.protocol": "eager",
        "scheduled.rebalance.max.delay.ms": 5000,
    }
    assert doc["description"] == "n=3 p=eager"
    assert (last.workers, last.delay_ms) == (3, 5000)


def test_library_scenario_with_set() -> None:
    sweep = loads_sweep(
        'name = "x"\nscenario = "worker-bounce-within-delay"\n'
        '[parameters]\nprotocol = ["eager", "compatible"]\n'
        '[set]\n\'cluster.config."connect.protocol"\' = "${protocol}"\n',
        "x.toml",
    )
    assert [c.protocol for c in sweep.combinations] == ["eager", "compatible"]
    assert [c.workers for c in sweep.combinations] == [4, 4]


def test_builtin_sweeps_load() -> None:
    assert {"protocol-comparison", "delay-tuning"} <= set(sweep_names())
    pc = load_sweep("protocol-comparison")
    assert pc.parameters["workers"] == [5, 10, 20, 50]
    assert {"eager", "compatible", "sessioned"} <= set(pc.parameters["protocol"])
    assert len(pc.seeds) == 20
    dt = load_sweep("delay-tuning")
    assert dt.parameters["delay_ms"][0] == 0 and dt.parameters["delay_ms"][-1] == 300000
    assert dt.parameters["down_ms"][0] == 10000 and dt.parameters["down_ms"][-1] == 600000
    assert {c.delay_ms for c in dt.combinations} == set(dt.parameters["delay_ms"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('name = "a"\ngenerator = "rolling-bounce"\nbogus = 1\n', "s.toml: bogus: unknown key"),
        ('generator = "rolling-bounce"\n', "s.toml: name: missing required key"),
        (
            'name = "a"\ngenerator = "rolling-bounce"\nseeds = 0\n',
            "s.toml: seeds: expected an integer >= 1",
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\nseeds = []\n',
            "s.toml: seeds: must not be empty",
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\nseeds = [1, 1]\n',
            "s.toml: seeds: seed 1 is listed twice",
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\nseeds = [-1]\n',
            "s.toml: seeds[0]: expected an integer >= 0",
        ),
        ('name = "a"\nseeds = "x"\ngenerator = "rolling-bounce"\n', "s.toml: seeds: expected"),
        ('name = "a"\n', "s.toml: needs one of 'scenario', 'template' or 'generator'"),
        ('name = "a"\ngenerator = "x"\nscenario = "y"\n', "s.toml: give only one of"),
        (
            'name = "a"\ngenerator = "nope"\n',
            "s.toml: generator: unknown generator 'nope' (known: rolling-bounce, worker-departure)",
        ),
        ('name = "a b"\ngenerator = "rolling-bounce"\n', "s.toml: name: invalid name 'a b'"),
        (
            'name = "a"\ngenerator = "rolling-bounce"\n[parameters]\nzzz = [1]\n',
            "s.toml: parameters.zzz: not a parameter of generator 'rolling-bounce'",
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\n[parameters]\nworkers = [3, "4"]\n',
            "s.toml: parameters.workers[1]: all values must have one type (long), got string",
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\n[parameters]\nworkers = [3, 3]\n',
            "s.toml: parameters.workers[1]: 3 is listed twice",
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\n[parameters]\nworkers = []\n',
            "s.toml: parameters.workers: must list at least one value",
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\n[parameters]\nworkers = [[1]]\n',
            "s.toml: parameters.workers[0]: expected a string, integer, float or boolean",
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\n[parameters]\nseed = [1]\n',
            "s.toml: parameters.seed: 'seed' is a column of the results",
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\n[parameters]\n"a.b" = [1]\n',
            's.toml: parameters."a.b": invalid parameter name',
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\n[set]\n"cluster..size" = 3\n',
            's.toml: set."cluster..size": not a scenario key path',
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\n[set]\n"cluster.size" = "${n}"\n',
            's.toml: set."cluster.size": ${n} is not a parameter',
        ),
        (
            'name = "a"\ngenerator = "rolling-bounce"\n[set]\n"timeline[7].down_ms" = 3\n',
            's.toml: set."timeline[7].down_ms": [7]: the scenario\'s array has 2 item(s)',
        ),
        (
            'name = "a"\nscenario = "no-such-scenario"\n',
            "s.toml: scenario: no such scenario file or library scenario: 'no-such-scenario'",
        ),
        (
            'name = "a"\ntemplate = "missing.toml"\n',
            "s.toml: template: no such template file: 'missing.toml'",
        ),
        (
            'name = "a"\nscenario = "scale-out"\n[parameters]\nx = [1]\n',
            "s.toml: parameters.x: not used: no ${x} in the scenario or [set]",
        ),
        ('name = "a\n', "s.toml: invalid TOML"),
    ],
)
def test_loader_errors(text: str, expected: str) -> None:
    assert error_of(text).startswith(expected), error_of(text)


def test_a_value_the_scenario_rejects_names_the_combination() -> None:
    message = error_of(
        'name = "a"\ngenerator = "rolling-bounce"\n[parameters]\nprotocol = ["eager", "foo"]\n'
    )
    assert message.startswith("s.toml: combination protocol=foo: a[protocol=foo]: ")
    assert "cluster.config.\"connect.protocol\": unknown value 'foo'" in message


def test_template_placeholder_without_parameter(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text('name = "x"\n[cluster]\nsize = ${n}\n', encoding="utf-8")
    (tmp_path / "s.toml").write_text('name = "a"\ntemplate = "t.toml"\n', encoding="utf-8")
    with pytest.raises(SweepError, match=r"s.toml: template: t.toml uses \$\{n\}, which is not"):
        load_sweep(tmp_path / "s.toml")


def test_unknown_sweep_name() -> None:
    with pytest.raises(SweepError, match="no such file and no such built-in sweep"):
        load_sweep("no-such-sweep")


def test_toml_dumps_round_trips() -> None:
    doc = {
        "name": 'we"ird\\',
        "x": 1.5,
        "b": True,
        "t": {"a.b": [1, 2], "c": {"d": "e"}},
        "arr": [{"at_ms": 0, "action": "phase", "name": "p"}],
        "empty": {},
    }
    assert tomllib.loads(toml_dumps(doc)) == doc


def test_execute_run_ok_row() -> None:
    sweep = loads_sweep(SMALL, "small.toml")
    spec = sweep.runs[0]
    outcome = execute_run(spec)
    row = outcome.row
    assert row["status"] == "ok" and row["error"] is None
    assert row["run_id"] == spec.run_id and row["seed"] == 0
    assert row["protocol"] == "eager" and row["workers"] == 3
    assert row["scenario_workers"] == 3 and row["scenario_protocol"] == "eager"
    assert set(row) >= {name for name, _ in sweeps.RUN_COLUMNS}
    assert row["events"] == len(outcome.events["seq"]) > 0
    assert outcome.events["seq"] == list(range(row["events"]))
    assert outcome.events["kind"][0] == "run_start"
    # deterministic: the same run gives the same metrics and log
    again = execute_run(spec)
    assert {k: v for k, v in again.row.items() if k != "wall_ms"} == {
        k: v for k, v in row.items() if k != "wall_ms"
    }
    assert again.events == outcome.events
    assert execute_run(spec, with_events=False).events["seq"] == []


def test_a_run_that_raises_is_a_failed_row(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = loads_sweep(SMALL, "small.toml").runs[0]
    bad = RunSpec(spec.run_id, spec.sweep, spec.params, 5, "name = [", "bad.toml")
    row = execute_run(bad).row
    assert row["status"] == "failed" and row["seed"] == 5
    assert row["error"].startswith("ScenarioError: bad.toml: invalid TOML")
    assert row["rebalances"] is None and row["scenario"] is None

    import scenarios.sim.runner

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated\nfailure")

    monkeypatch.setattr(scenarios.sim.runner, "simulate", boom)
    row = execute_run(spec).row
    assert row["status"] == "failed"
    assert row["error"] == "RuntimeError: simulated failure"
    assert row["scenario_workers"] == 3  # loaded fine, failed in the simulation


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["no-such-sweep"], "no-such-sweep: no such file and no such built-in sweep"),
        (["delay-tuning", "--conf", "oops"], "--conf: expected KEY=VALUE, got 'oops'"),
    ],
)
def test_sweep_command_bad_input(args: list[str], expected: str) -> None:
    import typer
    from typer.testing import CliRunner

    from scenarios.cli.analysis_cmd import sweep

    app = typer.Typer()
    app.command()(sweep)
    app.command("noop")(lambda: None)
    result = CliRunner().invoke(app, ["sweep", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines == [f"groupsim: error: {expected}"] or (
        len(lines) == 1 and lines[0].startswith(f"groupsim: error: {expected}")
    )


def test_grid_and_runs_are_bounded_before_expansion(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 14: the grid is checked before it is expanded (docs/limits.md)."""
    monkeypatch.setenv("GROUPSIM_LIMITS", "combinations=3")
    assert error_of(SMALL, "small.toml") == (
        "small.toml: parameters: 4 exceeds the limit of 3 combinations "
        "(raise it with GROUPSIM_LIMITS=combinations=N)"
    )
    monkeypatch.setenv("GROUPSIM_LIMITS", "runs=11")
    assert "seeds: 12 exceeds the limit of 11 runs" in error_of(SMALL, "small.toml")
    monkeypatch.delenv("GROUPSIM_LIMITS")
    huge = SMALL.replace("seeds = 3", "seeds = 1000000000000")
    assert "seeds: 1000000000000 exceeds the limit of 1000000 runs" in error_of(huge)
