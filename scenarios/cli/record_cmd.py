"""The ``groupsim record`` command (registered by :mod:`scenarios.cli.main`).

Importing this module imports only typer; the proxy (trio, kio) loads when it runs.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from scenarios.cli.errors import fail, one_line_errors, os_error_behind
from scenarios.cli.serve_cmd import import_kio

__all__ = ["record", "replay"]


def _address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` → (host, port); ValueError naming the problem."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"--upstream {text!r}: expected HOST:PORT")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"--upstream {text!r}: port {port_text!r} is not a number") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"--upstream {text!r}: port {port} is outside 1..65535")
    return host.strip("[]"), port


def record(
    upstream: Annotated[
        str, typer.Option(help="A bootstrap broker of the real cluster, HOST:PORT (plaintext).")
    ],
    listen: Annotated[
        int, typer.Option(help="Port clients bootstrap from (0: any free port, printed).")
    ] = 9093,
    host: Annotated[str, typer.Option(help="Address the proxy listens on.")] = "127.0.0.1",
    advertised_host: Annotated[
        str | None,
        typer.Option(help="Host clients are told to connect to (default: --host)."),
    ] = None,
    out: Annotated[
        Path, typer.Option(help="Where trace.jsonl and events.jsonl are written as they happen.")
    ] = Path("groupsim-out/record"),
) -> None:
    """Record a real Kafka cluster's group traffic through a proxy, until Ctrl-C.

    Clients bootstrap from the proxy; it forwards every request and answer unchanged except
    broker addresses (Metadata, FindCoordinator, DescribeCluster), which it points at itself.
    Plaintext listeners only: TLS and SASL connections are refused with a one-line error.
    """
    try:
        import_kio()
    except ImportError:
        fail("groupsim record needs kio: pip install 'groupsim[serve]'")
    if not 0 <= listen <= 65535:
        fail(f"--listen {listen}: a port is 0..65535")
    try:
        target = _address(upstream)
    except ValueError as exc:
        fail(str(exc))
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".groupsim-record-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        fail(f"--out {out}: cannot write there ({exc.strerror or exc})")
    import trio

    from scenarios.record.proxy import RecordOptions

    options = RecordOptions(target, host, listen, advertised_host)
    try:
        interrupted = trio.run(_main, options, out)
    except (OSError, BaseExceptionGroup) as exc:
        error = os_error_behind(exc)
        if error is None:
            raise
        fail(f"cannot listen on {host}:{listen}: {error.strerror or error}")
    from scenarios.check.log_check import check_log

    violations = check_log(out / "events.jsonl")
    typer.echo(f"wrote {out / 'trace.jsonl'} and {out / 'events.jsonl'}")
    typer.echo(f"{len(violations)} violation(s) (groupsim check {out / 'events.jsonl'})")
    if interrupted:
        raise typer.Exit(130)


async def _main(options: Any, out: Path) -> bool:
    """Record until SIGINT/SIGTERM; True when a signal ended it (the files are then closed)."""
    import trio

    from scenarios.record.proxy import Proxy
    from scenarios.record.trace import Recording

    upstream = f"{options.upstream[0]}:{options.upstream[1]}"
    signalled = False
    recording = Recording(out, int(time.time() * 1000), upstream, options.host, options.port)
    try:
        proxy = Proxy(options, recording, lambda: time.time() * 1000)
        async with trio.open_nursery() as nursery:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                port = await nursery.start(proxy.run)
                print(
                    f"groupsim record: listening on {options.host}:{port} for {upstream}; "
                    "Ctrl-C stops",
                    flush=True,
                )
                async for _ in signals:
                    signalled = True
                    nursery.cancel_scope.cancel()
                    break
    finally:
        recording.close()
    return signalled


def replay(
    conform: Annotated[
        Path,
        typer.Option(
            "--conform",
            help="A groupsim record directory: hold groupsim to its trace.jsonl.",
        ),
    ],
    setting: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            # a short example: the option column is wide (--reorder-inflight-ms), and a
            # longer key is cut off at 80 columns
            help="The real broker's group setting KEY=VALUE, e.g. group.max.size=100 "
            "(Kafka's defaults otherwise; repeatable).",
        ),
    ] = None,
    tolerance_ms: Annotated[
        int,
        typer.Option(help="How far the broker's timer wheel may stray from exact deadlines."),
    ] = 100,
    max_lag_ms: Annotated[
        int,
        typer.Option(
            help="How late a loaded broker may run a timer, or take a request, against groupsim's "
            "exact deadlines: a timer and a request this close are tried in both orders "
            "(0: deadline order only)."
        ),
    ] = 2000,
    reorder_ms: Annotated[
        int,
        typer.Option(
            help="How close (ms) two requests on different connections must reach the proxy "
            "to be tried in the other order too (at most 5 at once); a loaded broker's network "
            "threads may take them either way."
        ),
    ] = 5,
    reorder_inflight_ms: Annotated[
        int,
        typer.Option(
            help="How much later (ms) than the proxy saw it a loaded broker may have taken a "
            "request it had not answered yet: a request on another connection sent meanwhile "
            "is tried before it too (its request queues; 0: --reorder-ms alone)."
        ),
    ] = 50,
) -> None:
    """Replay a recorded trace through groupsim's coordinator; exit 1 on any divergence.

    Every recorded JoinGroup, SyncGroup, Heartbeat and LeaveGroup goes, in recorded order and at
    recorded times, through groupsim's coordinator; each answer must equal the recorded one
    field by field. Every completed Connect round's leader assignment must be what groupsim's
    assignor makes from the same inputs (needs DIR/connect-configs.json; Streams rounds need
    DIR/streams-app.json). Writes
    DIR/conformance.json and prints a table.
    """
    from rich.console import Console
    from rich.table import Table

    from scenarios.serve.config import (
        ServeScenario,
        coordinator_config,
        parse_setting,
    )

    try:
        import_kio()
    except ImportError:
        fail("groupsim replay needs kio: pip install 'groupsim[serve]'")
    from scenarios.record.conform import conform_coordinator, read_exchanges
    from scenarios.record.consumer_leaders import read_metadata
    from scenarios.record.leaders import CONFIGS_FILE, conform_leaders, read_configs
    from scenarios.record.streams_leaders import APP_FILE, read_app, read_end_offsets

    if tolerance_ms < 0:
        fail(f"--tolerance-ms {tolerance_ms}: must be >= 0")
    if max_lag_ms < 0:
        fail(f"--max-lag-ms {max_lag_ms}: must be >= 0")
    if reorder_ms < 0:
        fail(f"--reorder-ms {reorder_ms}: must be >= 0")
    if reorder_inflight_ms < 0:
        fail(f"--reorder-inflight-ms {reorder_inflight_ms}: must be >= 0")
    trace = conform / "trace.jsonl" if conform.is_dir() else conform
    with one_line_errors():
        overrides = dict(parse_setting(text) for text in setting or [])
        config = coordinator_config(ServeScenario(), overrides)
        exchanges = read_exchanges(trace)
        configs_file = trace.parent / CONFIGS_FILE
        configs = read_configs(configs_file) if configs_file.exists() else None
        app_file = trace.parent / APP_FILE
        app = read_app(app_file) if app_file.exists() else None
        end_offsets = read_end_offsets(trace) if app is not None else None
        metadata = read_metadata(trace)
    verdict = conform_coordinator(
        exchanges,
        config,
        tolerance_ms,
        reorder_ms=reorder_ms,
        max_lag_ms=max_lag_ms,
        reorder_inflight_ms=reorder_inflight_ms,
    )
    leaders = conform_leaders(exchanges, configs, tolerance_ms, app, end_offsets, metadata)
    table = Table(title=f"conformance of groupsim's coordinator to {trace}")
    for column in ("api", "compared"):
        table.add_column(column, justify="right" if column == "compared" else "left")
    for api, count in sorted(verdict.compared.items()):
        table.add_row(api, str(count))
    console = Console()
    console.print(table)
    console.print(
        f"equal: {verdict.equal}   timing-only differences: {len(verdict.timing)}   "
        f"divergences: {len(verdict.divergences)}   join timers run late by the broker: "
        f"{verdict.deferred_timers}",
        markup=False,
    )
    for skipped, count in verdict.skipped.items():
        console.print(f"skipped {count}: {skipped}", markup=False)
    for move in verdict.coordinator_moves:
        console.print(
            f"coordinator of group {move.group} moved from {move.source} to {move.target}: "
            f"last answered at {move.died_ms} ms, group loaded at {move.loaded_ms} ms "
            f"(really after {move.not_loaded_ms} ms) "
            f"(generation {move.generation}, {len(move.members)} members)",
            markup=False,
        )
    for d in [*verdict.timing[:10], *verdict.divergences[:10]]:  # the first ten of each kind
        console.print(
            f"{d.kind} at {d.t_ms} ms, connection {d.conn}, {d.api} of group {d.group}: "
            f"{d.field}: recorded {d.recorded!r}, groupsim {d.groupsim!r}",
            markup=False,
        )
    console.print(
        f"leaders' assignments: {leaders.compared} rounds, equal: {leaders.equal}   "
        f"timing-only differences: {len(leaders.timing)}   "
        f"divergences: {len(leaders.divergences)}",
        markup=False,
    )
    for skipped, count in leaders.skipped.items():
        console.print(f"leaders skipped {count}: {skipped}", markup=False)
    for ld in leaders.differences[:10]:
        console.print(
            f"leader {ld.kind} in round {ld.generation} of group {ld.group} (leader {ld.leader}): "
            f"member {ld.member}: {ld.field}: recorded {ld.recorded!r}, groupsim {ld.groupsim!r}",
            markup=False,
        )
    out = conform if conform.is_dir() else conform.parent
    report = {**verdict.to_json(), "leaders": leaders.to_json()}
    try:
        (out / "conformance.json").write_text(json.dumps(report, indent=2) + "\n")
    except OSError as exc:
        fail(f"cannot write {out / 'conformance.json'}: {exc.strerror or exc}")
    console.print(f"wrote {out / 'conformance.json'}", markup=False)
    if verdict.divergences or leaders.divergences:
        raise typer.Exit(1)
