"""``groupsim chaos``: seeded random fault campaigns (a plain typer command function; the
``groupsim`` app registers it). See docs/chaos.md.

With ``--master`` the campaign is a Spark job (:mod:`scenarios.cli.chaos_spark_cmd`; a
``runs`` Parquet table under ``--out``, resumable) and prints the same table or JSON.

Exit codes as every ``groupsim`` command: 0 no violation (known upstream issues are reported
under their names and do not count), 1 a violation, 2 bad input (one line on stderr).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from protocol.errors import InputError
from scenarios import kinds

# The light vocabulary module, not scenarios.campaigns.chaos (engine + assignors): the CLI
# imports this module at start-up; run_campaign is imported when the command runs.
from scenarios.campaigns.chaos_names import (
    ASSIGNOR_OF,
    DEFAULT_MAX_CPU_S,
    FAULT_KINDS,
    PROTOCOLS,
)
from scenarios.cli.choices import SEED_MAX, ChaosAssignor, ChaosKind, Referee
from scenarios.cli.errors import fail, stderr

if TYPE_CHECKING:
    from rich.console import Console
from scenarios.cli.progress import ProgressBar

__all__ = [
    "chaos",
    "parse_duration_ms",
    "parse_members",
    "parse_protocols",
    "parse_faults",
    "render_campaign",
    "MAX_MEMBERS",
]

#: The largest group ``--members`` accepts.
MAX_MEMBERS = 1000

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


class ChaosInputError(InputError):
    """A bad ``groupsim chaos`` option; its text is the one-line error."""


def parse_duration_ms(text: str) -> int:
    """``1h``, ``30m``, ``90s``, ``500ms`` (or a bare number of ms) → virtual ms (≥ 1)."""
    match = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|h)?\s*", text)
    if match is None:
        raise ChaosInputError(
            f"--duration: expected a number with a unit (ms, s, m, h), e.g. 1h, 30m, 90s, "
            f"500ms; got {text!r}"
        )
    value = int(match.group(1)) * _UNITS[match.group(2) or "ms"]
    if value < 1:
        raise ChaosInputError(f"--duration: must be at least 1 ms, got {text!r}")
    if value > 10 * 365 * 24 * 3_600_000:
        raise ChaosInputError(f"--duration: at most 10 years of virtual time, got {text!r}")
    return value


def parse_members(text: str) -> tuple[int, int]:
    """``N`` or ``A..B`` (1 ≤ A ≤ B ≤ :data:`MAX_MEMBERS`)."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:\.\.\s*(\d+)\s*)?", text)
    if match is None:
        raise ChaosInputError(f"--members: expected N or A..B (e.g. 10 or 3..50), got {text!r}")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) is not None else low
    if not 1 <= low <= high <= MAX_MEMBERS:
        raise ChaosInputError(
            f"--members: expected 1 <= A <= B <= {MAX_MEMBERS}, got {low}..{high}"
        )
    return low, high


def _comma_list(option: str, text: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ChaosInputError(f"{option}: expected a comma list of {', '.join(allowed)}")
    for item in items:
        if item not in allowed:
            raise ChaosInputError(
                f"{option}: unknown value {item!r} (expected some of {', '.join(allowed)})"
            )
    return tuple(dict.fromkeys(items))


def parse_protocols(text: str) -> tuple[str, ...]:
    """One protocol or a comma list of ``eager``, ``compatible``, ``sessioned``, ``static``."""
    return _comma_list("--protocol", text, PROTOCOLS)


def parse_faults(text: str) -> tuple[str, ...]:
    """A comma list of fault kinds (:data:`scenarios.campaigns.chaos.FAULT_KINDS`); ``none`` for
    none."""
    if text.strip() == "none":
        return ()
    return _comma_list("--faults", text, FAULT_KINDS)


def _check_assignor(assignor: str | None, protocols: tuple[str, ...]) -> None:
    if assignor is None:
        return
    known = sorted(set(ASSIGNOR_OF.values()))
    if assignor not in known:
        raise ChaosInputError(
            f"--assignor: unknown assignor {assignor!r} (expected one of {', '.join(known)})"
        )
    wrong = [p for p in protocols if ASSIGNOR_OF[p] != assignor]
    if wrong:
        implied = ", ".join(f"{p} runs {ASSIGNOR_OF[p]}" for p in wrong)
        raise ChaosInputError(
            f"--assignor: {assignor} does not match --protocol ({implied}); the protocol "
            "implies the assignor"
        )


def _check_size(key: str, value: int, name: str) -> None:
    """A size above its limit (docs/limits.md) is bad input."""
    from scenarios.input.limits import LimitExceeded, check_limit

    try:
        check_limit(key, value, name)
    except LimitExceeded as exc:
        raise ChaosInputError(str(exc)) from None


def _seconds(ms: int | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f} s"


def render_campaign(result: Any, console: Console) -> None:
    """Print a campaign's table: runs, faults injected, violations by kind, p50/p99 downtime
    (the worst task of each run; a consumer group's worst partition: the kind's
    ``words.downtime_of``) and time to converge after the last fault."""
    from rich.table import Table

    config = result.config
    kind = kinds.get(config.kind)
    low, high = config.members
    title = (
        f"groupsim chaos (seed {result.seed}, {result.runs} runs, "
        f"{low if low == high else f'{low}..{high}'} members, "
        f"{', '.join(config.protocols) if kind.chaos_protocols else kind.words.app}, "
        f"{config.duration_ms / 1000:g} s of faults)"
    )
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("detail")
    faults = result.faults
    table.add_row(
        "runs",
        str(result.runs),
        f"{result.wall_s:.1f} s wall, {result.runs_per_minute:.0f} runs/min on {result.jobs} "
        f"process{'es' if result.jobs != 1 else ''} "
        f"({result.cpu_s_per_run * 1000:.0f} CPU ms per run)",
    )
    table.add_row(
        "faults injected",
        str(sum(faults.values())),
        ", ".join(f"{k} {v}" for k, v in sorted(faults.items())) or "none",
    )
    violations = result.violations
    runs_with = result.runs_with
    from scenarios.check.invariants import KNOWN_ISSUES
    from scenarios.referee import REFEREE_INVARIANT

    new = {k: v for k, v in violations.items() if k not in KNOWN_ISSUES and k != REFEREE_INVARIANT}
    known = {k: v for k, v in violations.items() if k in KNOWN_ISSUES}
    table.add_row(
        "violations",
        str(sum(new.values())),
        ", ".join(f"{k} {v} (in {runs_with[k]} runs)" for k, v in sorted(new.items())) or "none",
    )
    if config.referee is not None:
        disagreements = violations.get(REFEREE_INVARIANT, 0)
        table.add_row(
            f"referee ({config.referee})",
            str(disagreements),
            f"{REFEREE_INVARIANT} in {runs_with[REFEREE_INVARIANT]} runs; "
            f"{result.refereed} leader rounds compared with Kafka's assignors, "
            f"{result.refereed_answers} coordinator answers with its GroupMetadataManager "
            f"({result.refereed_after_failover} after a coordinator failover)",
        )
    table.add_row(
        "known upstream",
        str(sum(known.values())),
        ", ".join(f"{k} {v} (in {runs_with[k]} runs)" for k, v in sorted(known.items())) or "none",
    )
    p50d, p99d = result.downtime_percentiles()
    unit = kind.words.downtime_of
    table.add_row(
        f"{unit} downtime p50/p99", f"{_seconds(p50d)} / {_seconds(p99d)}", f"worst {unit}"
    )
    p50c, p99c = result.converge_percentiles()
    converged = sum(1 for o in result.outcomes if o.converge_ms is not None)
    table.add_row(
        "converge p50/p99",
        f"{_seconds(p50c)} / {_seconds(p99c)}",
        f"after the last fault ends; {converged}/{result.runs} runs converged",
    )
    console.print(table)
    for rep in result.reproducers:
        where = str(rep.path) if rep.path else "(not written)"
        check = "reproduces" if rep.verified else "DOES NOT reproduce"
        console.print(
            f"run {rep.index}: {rep.invariant} — shrunk {rep.steps_before} → {rep.steps_after} "
            f"faults, {check}: groupsim run {where}",
            markup=False,
            soft_wrap=True,
        )
        if rep.detail:
            console.print(f"  {rep.detail}", markup=False, soft_wrap=True)
    failed_unshrunk = [
        o for o in result.failed if o.index not in {r.index for r in result.reproducers}
    ]
    for outcome in failed_unshrunk:
        invariant, detail = outcome.first_new or ("?", "")
        console.print(f"run {outcome.index}: {invariant}: {detail}", markup=False, soft_wrap=True)


def chaos(
    runs: Annotated[int, typer.Option(help="Number of runs.")] = 100,
    seed: Annotated[int, typer.Option(help="Campaign seed (run i is seeded by (seed, i)).")] = 1,
    members: Annotated[
        str, typer.Option(help="Members per run: N or A..B (drawn per run).")
    ] = "3..10",
    kind: Annotated[
        ChaosKind,
        typer.Option(
            help="Generate Connect groups, Kafka Streams applications or consumer groups."
        ),
    ] = ChaosKind.CONNECT,
    protocol: Annotated[
        str | None,
        typer.Option(
            help="connect.protocol per run: one or a comma list of "
            + ", ".join(PROTOCOLS)
            + " (--kind connect).",
            show_default="all of them",
        ),
    ] = None,
    assignor: Annotated[
        ChaosAssignor | None,
        typer.Option(
            help="Check that every --protocol runs this assignor (the protocol implies it)."
        ),
    ] = None,
    faults: Annotated[
        str,
        typer.Option(
            help="Fault kinds, comma list of " + ", ".join(FAULT_KINDS) + "; or none.",
            show_default="all of them",
        ),
    ] = ",".join(FAULT_KINDS),
    duration: Annotated[
        str, typer.Option(help="Fault window per run: 1h, 30m, 90s, 500ms.")
    ] = "1h",
    out: Annotated[
        Path, typer.Option(help="Where shrunk reproducers go (chaos-SEED-RUN.toml each).")
    ] = Path("groupsim-out/chaos"),
    jobs: Annotated[int, typer.Option(help="Worker processes (without --master).")] = 2,
    shrink: Annotated[bool, typer.Option(help="Shrink failing runs to minimal scenarios.")] = True,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the result as JSON instead of a table.")
    ] = False,
    master: Annotated[
        str | None,
        typer.Option(
            help="Run on Spark: a master URL (local[*], local[N], spark://host:7077, …); "
            "--out then holds runs/ (Parquet) and re-running resumes. Needs the spark extra.",
            show_default="a local process pool (--jobs)",
        ),
    ] = None,
    conf: Annotated[
        list[str] | None,
        typer.Option(help="Extra Spark setting KEY=VALUE (repeatable; with --master)."),
    ] = None,
    max_records: Annotated[
        int | None,
        typer.Option(
            help="Each run's budget of event-log records; a run over it fails with "
            "run_budget_exceeded.",
            show_default="100,000 + 2,000 per member and hour of --duration",
        ),
    ] = None,
    max_cpu_seconds: Annotated[
        float,
        typer.Option(help="Each run's budget of CPU seconds (as --max-records)."),
    ] = DEFAULT_MAX_CPU_S,
    fail_fast: Annotated[
        bool,
        typer.Option(
            "--fail-fast", help="Stop at the first failing run (shrink it, report what ran)."
        ),
    ] = False,
    referee: Annotated[
        Referee | None,
        typer.Option(
            help="Replay every leader assignment through Kafka's own assignors and, with "
            "kafka, every coordinator answer through its GroupMetadataManager (about 10x "
            "the CPU; kafka-leaders: the leader rounds only, about 1.5x). One harness JVM "
            "per worker; every kind, without --master; needs Java and Maven; "
            "docs/chaos.md.",
            show_default="none",
        ),
    ] = None,
) -> None:
    """Run seeded random fault campaigns; shrink each failing run to a scenario file."""
    options = dict(locals())  # every option, by name, for _chaos
    from scenarios.cli.stopping import stopping

    # Ctrl-C or SIGTERM, however many and whenever: one line, exit 130 (143), the finished
    # runs kept, no worker process left
    with stopping() as stop:
        try:
            _chaos(**options)
        except KeyboardInterrupt as exc:
            stop.ignore_further()
            if master is not None:  # Ctrl-C before the Spark campaign took charge of it
                from scenarios.analysis.interrupt import stop_jvm

                stop_jvm()
            _interrupted(getattr(exc, "partial", None), out, stop)


def _chaos(
    *,
    runs: int,
    seed: int,
    members: str,
    kind: ChaosKind,
    protocol: str | None,
    assignor: ChaosAssignor | None,
    faults: str,
    duration: str,
    out: Path,
    jobs: int,
    shrink: bool,
    json_out: bool,
    master: str | None,
    conf: list[str] | None,
    max_records: int | None,
    max_cpu_seconds: float,
    fail_fast: bool,
    referee: Referee | None,
) -> NoReturn:
    """The command's work (see :func:`chaos`); ends with ``typer.Exit``."""
    from scenarios.campaigns.chaos import CampaignInterrupted, ChaosConfig, run_campaign
    from scenarios.cli.outputs import OutputDirError, check_out_dir

    try:
        if runs < 1:
            raise ChaosInputError(f"--runs: must be at least 1, got {runs}")
        _check_size("--runs", runs, "runs")
        if not 0 <= seed <= SEED_MAX:
            raise ChaosInputError(f"--seed: must be 0..{SEED_MAX}, got {seed}")
        if not 1 <= jobs <= 256:
            raise ChaosInputError(f"--jobs: must be 1..256, got {jobs}")
        _check_size("--members", parse_members(members)[1], "members")
        if not kinds.get(kind.value).chaos_protocols and (
            protocol is not None or assignor is not None
        ):
            given = "--protocol" if protocol is not None else "--assignor"
            raise ChaosInputError(kinds.get(kind.value).chaos_option_error(given))
        if referee is not None and master is not None:
            raise ChaosInputError(
                "--referee: Kafka referees campaigns on the local pool only (not --master)"
            )
        protocols = parse_protocols(protocol if protocol is not None else ",".join(PROTOCOLS))
        _check_assignor(assignor.value if assignor else None, protocols)
        if max_records is not None and max_records < 1:
            raise ChaosInputError(f"--max-records: must be at least 1, got {max_records}")
        if not 0 < max_cpu_seconds <= 10**9:
            raise ChaosInputError(
                f"--max-cpu-seconds: must be above 0 (at most 10^9), got {max_cpu_seconds:g}"
            )
        if master is not None and fail_fast:
            raise ChaosInputError(
                "--fail-fast: not with --master (a Spark campaign runs "
                "in batches and resumes; stop it with Ctrl-C)"
            )
        config = ChaosConfig(
            members=parse_members(members),
            protocols=protocols,
            faults=parse_faults(faults),
            duration_ms=parse_duration_ms(duration),
            kind=kind.value,
            max_records=max_records,
            max_cpu_s=max_cpu_seconds,
            referee=referee.value if referee is not None else None,
        )
        if "://" not in str(out):
            check_out_dir(out)  # before any work: a bad --out is bad input, not lost runs
    except (ChaosInputError, OutputDirError) as exc:
        fail(str(exc))
    if config.referee is not None:
        from scenarios.referee import OracleUnavailable, prepare

        try:
            prepare()  # build Kafka's harness before any run: no Java or Maven is one line
        except OracleUnavailable as exc:
            fail(str(exc))
    if master is not None:
        from scenarios.cli.chaos_spark_cmd import run_on_spark

        with ProgressBar("chaos runs", total=runs) as advance:
            result = run_on_spark(
                config,
                runs,
                seed,
                out,
                master=master,
                conf=conf or [],
                shrink=shrink,
                progress=advance,
            )
    else:
        with ProgressBar("chaos runs", total=runs) as advance:
            result = run_campaign(
                config,
                runs,
                seed,
                jobs=jobs,
                out_dir=out,
                shrink_failures=shrink,
                fail_fast=fail_fast,
                on_progress=advance,
            )
    try:
        _print_result(result, json_out)
    except KeyboardInterrupt:  # every run finished and its reproducer is written
        raise CampaignInterrupted(result) from None


def _print_result(result: Any, json_out: bool) -> NoReturn:
    """Print a campaign (a table, or ``--json``) and exit 1 when a run failed, else 0."""
    if json_out:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        from rich.console import Console

        render_campaign(result, Console(width=None if sys.stdout.isatty() else 120))
    raise typer.Exit(1 if result.failed else 0)


def _interrupted(partial: Any, out: Path, stop: Any) -> NoReturn:
    """Ctrl-C or SIGTERM: keep what finished (``OUT/chaos-<seed>-interrupted.json``, the
    ``--json`` shape of the finished runs; reproducers already written stay), say so in one
    line and exit ``128 + signal`` (130 for Ctrl-C, as a shell reports it). Nothing is written
    when no run finished."""
    from scenarios.eventlog.atomic import atomic_write_text

    what = "interrupted" if stop.name == "SIGINT" else f"stopped by {stop.name}"
    runs = partial.runs if partial is not None else 0
    if runs == 0:
        where = "nothing written"
    else:
        try:
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_text(
                out / f"chaos-{partial.seed}-interrupted.json",
                json.dumps(partial.to_json(), indent=2) + "\n",
            )
            where = f"results so far in {out}"
        except OSError as exc:
            where = f"could not write {out}: {exc.strerror or exc}"
    stderr.print(f"{what} after {runs} runs; {where}", markup=False, soft_wrap=True)
    raise typer.Exit(stop.exit_code)
