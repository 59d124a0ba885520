"""The ``groupsim`` command line (DESIGN.md §8).

Exit codes: 0 success (every ``[expect]`` holds), 1 an expectation failed or an invariant was
violated, 2 bad input (one line on stderr, no traceback, no output files left behind).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

from scenarios.cli.stopping import quiet_ctrl_c

if __name__ == "__main__" or Path(sys.argv[0]).name == "groupsim":
    quiet_ctrl_c()  # the program (not a test importing the app): before the slow imports

import typer  # noqa: E402
from rich.console import Console  # noqa: E402

from scenarios.cli.choices import (  # noqa: E402
    ConnectMessage,
    OneLineErrors,
    OutputFormat,
    plain_help,
)
from scenarios.cli.progress import ProgressBar  # noqa: E402

__all__ = ["app", "main"]

plain_help()

app = typer.Typer(
    name="groupsim",
    help="Replay Kafka Connect and Kafka Streams group rebalances deterministically, before "
    "you run them for real.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=OneLineErrors,
)
codec_app = typer.Typer(
    help="Decode and encode Kafka Connect subscriptions and assignments.", cls=OneLineErrors
)
app.add_typer(codec_app, name="codec")

FLAGSHIP = "rolling-upgrade-eager-to-sessioned"

_stderr = Console(stderr=True, highlight=False)


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


class BadInput(Exception):
    """Input the user must fix; reported as one line with exit code 2."""


def _fail(message: str) -> NoReturn:
    _stderr.print(f"groupsim: error: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(2)


def _bad_input_types() -> tuple[type[BaseException], ...]:
    from members.assignors import UnknownAssignorError
    from members.assignors.streams import StreamsAssignmentError
    from protocol.connect import ConfigError
    from protocol.connect_codec import CodecInputError
    from protocol.primitives import DecodeError, EncodeError
    from scenarios.assign.connect import AssignInputError
    from scenarios.assign.streams import StreamsAssignInputError
    from scenarios.eventlog import LogFormatError
    from scenarios.input.limits import LimitExceeded
    from scenarios.input.loader import ScenarioError

    return (
        BadInput,
        ScenarioError,
        ConfigError,
        DecodeError,
        EncodeError,
        CodecInputError,
        AssignInputError,
        StreamsAssignInputError,
        StreamsAssignmentError,
        UnknownAssignorError,
        LogFormatError,
        LimitExceeded,
    )


@app.command()
def run(
    scenario: Annotated[
        str | None,
        typer.Argument(help=f"Scenario file or library name (default: {FLAGSHIP})."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(min=0, help="Seed, >= 0 (default: the scenario's).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Output directory (default: ./groupsim-out/<scenario>)."),
    ] = None,
    log_heartbeats: Annotated[
        bool, typer.Option("--log-heartbeats", help="Also log heartbeat RPCs.")
    ] = False,
    plot: Annotated[bool, typer.Option(help="Write timeline.png.")] = True,
) -> None:
    """Run a scenario: print a summary, write events.jsonl, summary.json and timeline.png."""
    from scenarios.cli.outputs import (
        OutputDirError,
        discard_stage,
        prepare_outputs,
        write_outputs,
    )
    from scenarios.cli.summary_view import render_summary
    from scenarios.input.library import load_any
    from scenarios.sim.runner import simulate

    try:
        loaded = load_any(scenario or FLAGSHIP)
        scenario_name = loaded.scenario.name
        run_seed = loaded.scenario.seed if seed is None else seed
        out_dir = out if out is not None else Path("groupsim-out") / scenario_name
        stage = prepare_outputs(out_dir)  # before the simulation: a bad --out fails at once
    except OutputDirError as exc:
        _fail(str(exc))
    except _bad_input_types() as exc:
        _fail(str(exc))
    try:
        with ProgressBar("simulating") as advance:
            result = simulate(
                loaded,
                run_seed,
                log_heartbeats=log_heartbeats or None,
                on_progress=advance,
            )
        write_outputs(result, out_dir, plot=plot, stage=stage)
    except _bad_input_types() as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"--out: cannot write {out_dir}: {exc.strerror or exc}")
    finally:
        discard_stage(stage)
    # Piped output gets a fixed width wide enough for the phase table.
    console = Console(width=None if sys.stdout.isatty() else 110)
    render_summary(
        result.summary,
        console,
        scenario_name=result.scenario,
        seed=result.seed,
        expectation_failures=result.failures,
    )
    console.print(
        f"wrote {out_dir}/events.jsonl, summary.json" + (", timeline.png" if plot else "")
    )
    raise typer.Exit(result.exit_code)


@app.command()
def compat(
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="How to print the matrix.")
    ] = OutputFormat.TABLE,
    allow_known: Annotated[
        bool,
        typer.Option("--allow-known", help="Do not fail on known upstream bugs (KAFKA-13816)."),
    ] = False,
    seed: Annotated[int, typer.Option(min=0, help="Seed of every replay (>= 0).")] = 1,
) -> None:
    """The protocol compatibility matrix: every mix and every rolling upgrade/downgrade path."""
    from scenarios.campaigns.compat import (
        COLUMNS,
        render_markdown,
        row_cells,
        rows_to_json,
        run_matrix,
    )

    with ProgressBar("replaying") as advance:
        rows = run_matrix(seed, on_progress=advance)
    if output_format is OutputFormat.JSON:
        typer.echo(json.dumps(rows_to_json(rows, allow_known=allow_known), indent=2))
    elif output_format is OutputFormat.MARKDOWN:
        typer.echo(render_markdown(rows, allow_known=allow_known), nl=False)
    else:
        from rich.table import Table

        table = Table(title=f"Connect protocol compatibility (seed {seed})")
        widest_case = max((len(row.case) for row in rows), default=4)
        for column in COLUMNS:
            # case names whole, never cut to "…": the other columns wrap instead
            table.add_column(column, min_width=widest_case if column == "case" else None)
        for row in rows:
            table.add_row(*row_cells(row, allow_known=allow_known))
        Console(width=None if sys.stdout.isatty() else 130).print(table)
    unsafe = [row.case for row in rows if row.unsafe(allow_known=allow_known)]
    if unsafe:
        _stderr.print(
            f"unsafe: {', '.join(unsafe)}"
            + ("" if allow_known else " (--allow-known tolerates KAFKA-13816)"),
            markup=False,
        )
    raise typer.Exit(1 if unsafe else 0)


@app.command("scenarios")
def list_scenarios() -> None:
    """List the built-in scenarios (run one with `groupsim run NAME`)."""
    from rich.table import Table

    from scenarios.input.library import library_names, load_any

    table = Table(show_header=True, header_style="bold")
    table.add_column("name")
    table.add_column("kind")
    table.add_column("description")
    for kind in ("connect", "streams"):
        for name in library_names(kind):
            label = name + (" (default)" if name == FLAGSHIP else "")
            table.add_row(label, kind, load_any(name).scenario.description)
    Console(width=None if sys.stdout.isatty() else 120).print(table)


@app.command()
def assign(
    input_file: Annotated[
        Path, typer.Argument(help="Rounds as JSON (see README), or - for stdin.")
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
    except _bad_input_types() as exc:
        _fail(str(exc))
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
) -> None:
    """Re-check every invariant on a saved event log; exit 1 if any is violated."""
    from scenarios.check.log_check import check_log

    try:
        if not events.is_file():
            raise BadInput(f"{events}: no such file")
        violations = check_log(events)
    except _bad_input_types() as exc:
        _fail(str(exc))
    for violation in violations:
        typer.echo(json.dumps(violation, sort_keys=True))
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
    from protocol.connect_codec import (
        assignment_to_json,
        decode_assignment,
        decode_subscription,
        subscription_to_json,
    )

    try:
        kind = message.value
        data = _parse_hex(hex_bytes)
        if kind == "subscription":
            obj = subscription_to_json(decode_subscription(data))
        else:
            obj = assignment_to_json(decode_assignment(data))
    except _bad_input_types() as exc:
        _fail(str(exc))
    typer.echo(json.dumps(obj))


@codec_app.command("encode")
def codec_encode(
    message: Annotated[ConnectMessage, typer.Argument(help="Which Connect message.")],
    version: Annotated[
        int | None, typer.Option(help="Version to write (default: the JSON's version).")
    ] = None,
) -> None:
    """Encode JSON from stdin to Connect bytes, printed as hex."""
    from protocol.connect_codec import (
        assignment_from_json,
        encode_assignment,
        encode_subscription,
        subscription_from_json,
    )

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
    except _bad_input_types() as exc:
        _fail(str(exc))
    typer.echo(data.hex())


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
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None


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


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
