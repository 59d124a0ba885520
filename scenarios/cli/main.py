"""The ``groupsim`` command line (docs/commands.md).

Exit codes: 0 success (every ``[expect]`` holds), 1 an expectation failed or an invariant was
violated, 2 bad input (one line on stderr, no traceback, no output files left behind).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from scenarios.cli.plot_child import start_early
from scenarios.cli.stopping import quiet_ctrl_c

if __name__ == "__main__" or Path(sys.argv[0]).name == "groupsim":
    quiet_ctrl_c()  # the program (not a test importing the app): before the slow imports
    # a plotting `run`: the PNG's child imports matplotlib while this process imports the CLI
    start_early(sys.argv[1:])

import typer  # noqa: E402

from scenarios.cli.choices import (  # noqa: E402
    SEED_MAX,
    CompatKind,
    ConnectMessage,
    OneLineErrors,
    OutputFormat,
    Referee,
    TopLevelGroup,
    plain_help,
)
from scenarios.cli.errors import BadInput, InputError, fail, stderr  # noqa: E402
from scenarios.cli.progress import ProgressBar  # noqa: E402

if TYPE_CHECKING:
    from scenarios.cli.plot_child import ForkedPlotter

__all__ = ["app", "main"]

plain_help()

app = typer.Typer(
    name="groupsim",
    help="Replay Kafka Connect and Kafka Streams group rebalances deterministically, before "
    "you run them for real.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=TopLevelGroup,
)
codec_app = typer.Typer(
    help="Decode and encode Kafka Connect subscriptions and assignments.", cls=OneLineErrors
)
app.add_typer(codec_app, name="codec")

FLAGSHIP = "rolling-upgrade-eager-to-sessioned"


def _version() -> str:
    """The installed distribution's version (``pyproject.toml``'s when run from a checkout
    that is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("groupsim")
    except PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        with pyproject.open("rb") as handle:
            return str(tomllib.load(handle)["project"]["version"])


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"groupsim {_version()}")
        raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print groupsim's version and exit.",
        ),
    ] = False,
) -> None:
    """Replay Kafka Connect and Kafka Streams group rebalances deterministically, before you
    run them for real."""


@app.command()
def run(
    scenario: Annotated[
        str | None,
        typer.Argument(help=f"Scenario file or library name (default: {FLAGSHIP})."),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(min=0, max=SEED_MAX, help="Seed, >= 0 (default: the scenario's)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Output directory (default: groupsim-out/ then the scenario's name)."),
    ] = None,
    log_heartbeats: Annotated[
        bool, typer.Option("--log-heartbeats", help="Also log heartbeat RPCs.")
    ] = False,
    plot: Annotated[bool, typer.Option(help="Write timeline.png.")] = True,
    log_coordinator: Annotated[
        bool,
        typer.Option(
            "--log-coordinator",
            help="Also log every request, answer and timer of the coordinator, for "
            "`groupsim check --referee kafka` (docs/chaos.md).",
        ),
    ] = False,
) -> None:
    """Run a scenario: print a summary, write events.jsonl, summary.json and timeline.png."""
    from scenarios.cli.plot_child import start_plotter, take_early

    # the PNG's child imports matplotlib while this process loads and simulates
    plotter = take_early()
    if plotter is not None and not plot:
        plotter.cancel()
        plotter = None
    elif plotter is None and plot:
        plotter = start_plotter()
    try:
        _run(scenario, seed, out, log_heartbeats, plot, plotter, log_coordinator)
    finally:
        if plotter is not None:
            plotter.cancel()


def _run(
    scenario: str | None,
    seed: int | None,
    out: Path | None,
    log_heartbeats: bool,
    plot: bool,
    plotter: ForkedPlotter | None,
    log_coordinator: bool = False,
) -> None:
    from scenarios.check.summary_types import summary_dict
    from scenarios.cli.outputs import discard_stage, prepare_outputs, write_outputs
    from scenarios.cli.summary_view import render_summary
    from scenarios.input.library import load_any
    from scenarios.sim.runner import simulate

    try:
        loaded = load_any(scenario or FLAGSHIP)
        scenario_name = loaded.scenario.name
        run_seed = loaded.scenario.seed if seed is None else seed
        out_dir = out if out is not None else Path("groupsim-out") / scenario_name
        stage = prepare_outputs(out_dir)  # before the simulation: a bad --out fails at once
    except InputError as exc:
        fail(str(exc))
    try:
        with ProgressBar("simulating") as advance:
            result = simulate(
                loaded,
                run_seed,
                log_heartbeats=log_heartbeats or None,
                on_progress=advance,
                coordinator_io=log_coordinator,
            )
        write_outputs(result, out_dir, plot=plot, stage=stage, plotter=plotter)
    except InputError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"--out: cannot write {out_dir}: {exc.strerror or exc}")
    finally:
        discard_stage(stage)
    # Piped output gets a fixed width wide enough for the phase table.
    from rich.console import Console

    console = Console(width=None if sys.stdout.isatty() else 110)
    render_summary(
        summary_dict(result.summary),
        console,
        scenario_name=result.scenario,
        seed=result.seed,
        expectation_failures=result.failures,
    )
    console.print(
        f"wrote {out_dir}/events.jsonl, summary.json" + (", timeline.png" if plot else "")
    )
    raise typer.Exit(result.exit_code)


#: The module of each ``groupsim compat --kind`` matrix (``run_matrix``, ``COLUMNS``,
#: ``row_cells``, ``render_markdown``, ``rows_to_json``, ``KNOWN_LABEL``, optional ``TITLE``).
COMPAT_MATRICES = {
    CompatKind.CONNECT: "scenarios.campaigns.compat",
    CompatKind.CONSUMER: "scenarios.campaigns.compat_consumer",
}


@app.command()
def compat(
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="How to print the matrix.")
    ] = OutputFormat.TABLE,
    allow_known: Annotated[
        bool,
        typer.Option("--allow-known", help="Do not fail on known upstream bugs (KAFKA-13816)."),
    ] = False,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Seed of every replay (>= 0).")
    ] = 1,
    kind: Annotated[
        CompatKind,
        typer.Option(
            "--kind",
            help="connect: connect.protocol settings; consumer: partition.assignment.strategy "
            "lists (KIP-429).",
        ),
    ] = CompatKind.CONNECT,
) -> None:
    """The protocol compatibility matrix: every mix and every rolling upgrade/downgrade path."""
    import importlib

    matrix: Any = importlib.import_module(COMPAT_MATRICES[kind])
    COLUMNS, row_cells = matrix.COLUMNS, matrix.row_cells
    render_markdown, rows_to_json = matrix.render_markdown, matrix.rows_to_json
    title = getattr(matrix, "TITLE", "Connect protocol compatibility")

    with ProgressBar("replaying") as advance:
        rows = matrix.run_matrix(seed, on_progress=advance)
    if output_format is OutputFormat.JSON:
        typer.echo(json.dumps(rows_to_json(rows, allow_known=allow_known), indent=2))
    elif output_format is OutputFormat.MARKDOWN:
        typer.echo(render_markdown(rows, allow_known=allow_known), nl=False)
    else:
        from rich.table import Table

        from scenarios.cli.tables import print_table

        table = Table(title=f"{title} (seed {seed})")
        widest_case = max((len(row.case) for row in rows), default=4)
        for column in COLUMNS:
            # case names whole, never cut to "…"; two-word headers on two lines ("max task /
            # downtime"), so the whole table fits 130 columns
            header = column.replace(" ", "\n", 1) if len(column) > 10 else column
            table.add_column(header, min_width=widest_case if column == "case" else None)
        for row in rows:
            table.add_row(*row_cells(row, allow_known=allow_known))
        print_table(table, keep=("case",))
    unsafe = [row.case for row in rows if row.unsafe(allow_known=allow_known)]
    if unsafe:
        stderr.print(
            f"unsafe: {', '.join(unsafe)}"
            + ("" if allow_known else f" (--allow-known tolerates {matrix.KNOWN_LABEL})"),
            markup=False,
        )
    raise typer.Exit(1 if unsafe else 0)


@app.command("scenarios")
def list_scenarios() -> None:
    """List the built-in scenarios (run one with `groupsim run NAME`)."""
    from rich.table import Table

    from scenarios import kinds
    from scenarios.cli.tables import print_table
    from scenarios.input.library import library_names, load_any

    table = Table(show_header=True, header_style="bold")
    table.add_column("name")
    table.add_column("kind")
    table.add_column("description")
    for kind in kinds.names():
        for name in library_names(kind):
            label = name + (" (default)" if name == FLAGSHIP else "")
            table.add_row(label, kind, load_any(name).scenario.description)
    print_table(table, keep=("name",))


@app.command()
def assign(
    input_file: Annotated[
        Path, typer.Argument(help="Rounds as JSON (docs/cli-contracts.md), or - for stdin.")
    ],
) -> None:
    """Run a Connect assignor over rounds and print each member's assignment as JSON."""
    from scenarios.assign.connect import run_assign
    from scenarios.assign.limits import check_assign_limits
    from scenarios.assign.streams import STREAMS_ASSIGNORS, run_assign_streams

    try:
        doc = _read_json(input_file)
        check_assign_limits(doc)
        _check_assignor_name(doc, STREAMS_ASSIGNORS)
        streams = isinstance(doc, dict) and doc.get("assignor") in STREAMS_ASSIGNORS
        output = run_assign_streams(doc) if streams else run_assign(doc)
    except InputError as exc:
        fail(str(exc))
    typer.echo(json.dumps(output, indent=2))


@app.command()
def check(
    events: Annotated[Path, typer.Argument(help="An events.jsonl written by groupsim run.")],
    allow_known: Annotated[
        bool,
        typer.Option(
            "--allow-known",
            help="Do not fail on violations of named upstream issues (known_issue, e.g. "
            "KAFKA-13816); they are still listed.",
        ),
    ] = False,
    referee: Annotated[
        Referee | None,
        typer.Option(
            help="Also replay every leader assignment (any kind) through Kafka's own "
            "assignors and, with kafka, every coordinator answer a --log-coordinator run "
            "logged (needs Java, Maven and a source checkout's tests/kafka_oracle; "
            "docs/chaos.md).",
        ),
    ] = None,
) -> None:
    """Re-check every invariant on a saved event log; exit 1 if any is violated."""
    from scenarios.check.log_check import check_log

    try:
        if events.is_dir():
            raise BadInput(
                f"{events}: is a directory, not an event log (e.g. {events}/events.jsonl)"
            )
        if not events.is_file():
            raise BadInput(f"{events}: no such file")
        found = check_log(events)
    except InputError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{events}: {exc.strerror or exc}")
    violations = [v.report() for v in found]  # printed as JSON, one a line
    verdict_line = ""
    if referee is not None:
        from scenarios.eventlog import read_jsonl
        from scenarios.referee import OracleUnavailable, judge, prepare

        try:
            prepare()
            verdict = judge(read_jsonl(events), coordinator=referee == "kafka")
        except OracleUnavailable as exc:
            fail(str(exc))
        violations = violations + [d.record() for d in verdict.violations]
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(verdict.skipped.items()))
        notes = ", ".join(f"{k} {v}" for k, v in sorted(verdict.notes.items()))
        verdict_line = (
            f"referee Kafka {verdict.kafka or '-'}: {verdict.compared} leader round(s) "
            "compared, "
            + (f"{verdict.answers} coordinator answer(s) compared, " if verdict.answers else "")
            + f"{len(verdict.violations)} disagreement(s)"
            + (f" (not judged: {skipped})" if skipped else "")
            + (f" (noted: {notes})" if notes else "")
        )
    for violation in violations:
        typer.echo(json.dumps(_clipped(violation), sort_keys=True))
    if verdict_line:
        typer.echo(verdict_line)
    known = [v for v in violations if v.get("known_issue")]
    failing = [v for v in violations if not (allow_known and v.get("known_issue"))]
    typer.echo(
        f"{len(violations)} violation(s) in {events}"
        + (f", {len(known)} of them known upstream issues" if known else "")
        + (" (allowed by --allow-known)" if known and allow_known else "")
    )
    raise typer.Exit(1 if failing else 0)


@codec_app.command("decode")
def codec_decode(
    message: Annotated[ConnectMessage, typer.Argument(help="Which Connect message.")],
    hex_bytes: Annotated[str, typer.Argument(metavar="HEX", help="The bytes, in hex.")],
) -> None:
    """Decode Connect bytes (hex) to JSON, reading them as Kafka's workers do."""
    from protocol.connect_codec import decode_assignment, decode_subscription
    from protocol.connect_json import assignment_to_json, subscription_to_json

    try:
        kind = message.value
        data = _parse_hex(hex_bytes)
        if kind == "subscription":
            obj = subscription_to_json(decode_subscription(data))
        else:
            obj = assignment_to_json(decode_assignment(data))
    except InputError as exc:
        fail(str(exc))
    typer.echo(json.dumps(obj))


@codec_app.command("encode")
def codec_encode(
    message: Annotated[ConnectMessage, typer.Argument(help="Which Connect message.")],
    version: Annotated[
        int | None, typer.Option(help="Version to write (default: the JSON's version).")
    ] = None,
) -> None:
    """Encode JSON from stdin to Connect bytes, printed as hex."""
    from protocol.connect_codec import encode_assignment, encode_subscription
    from protocol.connect_json import assignment_from_json, subscription_from_json

    try:
        kind = message.value
        if version is not None and not 0 <= version <= 3:
            raise BadInput(f"--version: must be 0..3, got {version}")
        doc = _read_json(Path("-"))
        if not isinstance(doc, dict):
            raise BadInput("stdin: expected a JSON object")
        if version is not None:
            doc = {**doc, "version": version}
        if kind == "subscription":
            data = encode_subscription(subscription_from_json(doc))
        else:
            data = encode_assignment(assignment_from_json(doc))
    except InputError as exc:
        fail(str(exc))
    typer.echo(data.hex())


#: The longest text ``check`` prints from a log (a name, a detail); longer is cut with "…".
_CLIP = 300


def _clipped(value: Any) -> Any:
    """``value`` (a violation) with every string longer than :data:`_CLIP` characters cut:
    a log's names are echoed, never a whole record."""
    if isinstance(value, str):
        return value if len(value) <= _CLIP else f"{value[:_CLIP]}… ({len(value)} characters)"
    if isinstance(value, dict):
        return {key: _clipped(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_clipped(item) for item in value]
    return value


def _check_assignor_name(doc: Any, streams_assignors: tuple[str, ...]) -> None:
    """An unknown ``assignor`` is named with every assignor ``assign`` runs, Connect's and
    Streams' alike."""
    from members.assignors import ASSIGNORS

    if not isinstance(doc, dict) or not isinstance(doc.get("assignor"), str):
        return  # the assignor's own reader names a missing or mistyped key
    name = doc["assignor"]
    known = [*sorted(ASSIGNORS), *streams_assignors]
    if name not in known:
        raise BadInput(f"assignor: unknown assignor {name!r} (known: {', '.join(known)})")


def _parse_hex(text: str) -> bytes:
    cleaned = "".join(text.split())
    try:
        return bytes.fromhex(cleaned)
    except ValueError:
        raise BadInput(f"HEX: not a hexadecimal byte string: {text[:40]!r}") from None


def _read_json(path: Path) -> Any:
    """The JSON document in file ``path`` (``-``: stdin), UTF-8.

    Raises:
        BadInput: ``"<path>: <problem>"``: unreadable, not UTF-8 (the byte offset), invalid
            JSON (line and column), or nested deeper than the ``nesting_levels`` limit (line
            and column, docs/limits.md).
    """
    from scenarios.input.limits import LimitExceeded, check_nesting

    name = "stdin" if str(path) == "-" else str(path)
    try:
        data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    except OSError as exc:
        raise BadInput(f"{name}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{name}: not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    try:
        check_nesting(text)
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(
            f"{name}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except LimitExceeded as exc:
        raise BadInput(f"{name}: {exc}") from None
    except RecursionError:  # a nesting limit raised past what the parser can recurse into
        raise BadInput(f"{name}: nested too deeply to parse") from None


def _register_commands() -> None:
    """Commands defined in their own modules (chaos campaigns, Spark sweeps, reports)."""
    from scenarios.cli.analysis_cmd import report, sweep
    from scenarios.cli.chaos_cmd import chaos

    app.command()(chaos)
    app.command()(sweep)
    app.command()(report)


_register_commands()


def _register_serve() -> None:
    """``groupsim serve`` (scenarios/serve/; its broker and kio load only when it runs)."""
    from scenarios.cli.serve_cmd import serve

    app.command()(serve)


_register_serve()


def _register_record() -> None:
    """``groupsim record`` (scenarios/record/; the proxy and kio load only when it runs)."""
    from scenarios.cli.record_cmd import record, replay

    app.command()(record)
    app.command()(replay)


_register_record()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
