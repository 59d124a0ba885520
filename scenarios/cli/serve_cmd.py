"""The ``groupsim serve`` command (registered by :mod:`scenarios.cli.main`).

Importing this module imports only typer; the broker (and ``kio``) load when it runs.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer

from scenarios.cli.choices import SEED_MAX
from scenarios.cli.errors import InputError, fail, os_error_behind

__all__ = ["serve"]

_CONTROL_HELP = (
    "Read fault commands from stdin, one per line: ACTION key=value ... "
    "(e.g. 'partition member=c1 duration_ms=5000', 'heal member=c1', "
    "'latency member=c1 extra_ms=200 duration_ms=10000', 'coordinator_failover down_ms=3000'); "
    "'stop' ends the server."
)


def serve(
    scenario: Annotated[
        Path | None,
        typer.Option(
            help="Serve scenario file (TOML: topics, coordinator settings, fault timeline)."
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")
    ] = 9092,
    advertised_host: Annotated[
        str | None,
        typer.Option(help="Host clients are told to connect to (default: --host)."),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=SEED_MAX,
            help="Seed of member ids and loss draws, >= 0 (default: the scenario's).",
        ),
    ] = None,
    out: Annotated[
        Path, typer.Option(help="Where events.jsonl and summary.json are written on exit.")
    ] = Path("groupsim-out/serve"),
    topic: Annotated[
        list[str] | None,
        typer.Option(help="A topic as NAME:PARTITIONS (repeatable; adds to the scenario's)."),
    ] = None,
    setting: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="A coordinator or broker setting KEY=VALUE, Kafka's name and value (e.g. "
            "group.max.size=5; see docs/serve.md).",
        ),
    ] = None,
    control: Annotated[bool, typer.Option("--control", help=_CONTROL_HELP)] = False,
    log_heartbeats: Annotated[
        bool, typer.Option("--log-heartbeats", help="Also log Heartbeat requests.")
    ] = False,
) -> None:
    """Serve groupsim's group coordinator to real Kafka clients over TCP until Ctrl-C."""
    try:
        import_kio()
    except ImportError:
        fail("groupsim serve needs kio: pip install 'groupsim[serve]'")
    try:
        options = _options(scenario, host, port, seed, topic or [], setting or [], log_heartbeats)
        if advertised_host is not None:
            options = msgspec.structs.replace(options, advertised_host=advertised_host)
    except InputError as exc:
        fail(str(exc))
    from scenarios.cli.outputs import OutputDirError, check_out_dir

    try:  # before serving: the log of a whole session must not be lost at the end
        check_out_dir(out)
    except OutputDirError as exc:
        fail(str(exc))
    import trio

    # trio delivers Ctrl-C its own way when Python's default handler is in place (outside
    # the session's signal receiver too)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = trio.run(_main, options, out, control)
    except (OSError, BaseExceptionGroup) as exc:
        error = os_error_behind(exc)
        if error is None:
            raise
        fail(f"cannot serve on {host}:{port}: {error.strerror or error}")
    for group_id, group in result["groups"].items():
        typer.echo(
            f"group {group_id}: {group['state']}, generation {group['generation']}, "
            f"{len(group['members'])} member(s), {group['rebalances']} rebalance(s)"
        )
    typer.echo(f"wrote {out / 'events.jsonl'} and {out / 'summary.json'}")
    violations = len(result["violations"])
    typer.echo(f"{violations} violation(s) (groupsim check {out / 'events.jsonl'})")


def import_kio() -> None:
    """Import kio (Kafka's messages; the serve extra) without Hypothesis.

    kio registers Hypothesis strategies for its types whenever Hypothesis is importable (the
    dev extra installs it), and building them writes Hypothesis' cache into ``./.hypothesis/``
    of whatever directory ``groupsim serve`` runs in. Unless Hypothesis is already loaded (a
    test process), kio is imported with Hypothesis hidden, so it registers nothing.

    Raises:
        ImportError: kio is not installed.
    """
    hide = "hypothesis" not in sys.modules
    if hide:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]  # "import hypothesis" fails
    try:
        import kio.serial  # noqa: F401  (loads kio.static, where the strategies would be made)
    finally:
        if hide:
            del sys.modules["hypothesis"]


def _options(
    scenario_path: Path | None,
    host: str,
    port: int,
    seed: int | None,
    topics: list[str],
    settings: list[str],
    log_heartbeats: bool,
) -> Any:
    from scenarios.serve.config import (
        ServeOptions,
        ServeScenario,
        broker_settings,
        coordinator_config,
        load_serve_scenario,
        parse_setting,
        parse_topic,
    )

    scenario = load_serve_scenario(scenario_path) if scenario_path else ServeScenario()
    served = dict(scenario.topics)
    for text in topics:
        name, count = parse_topic(text)
        served[name] = count
    overrides = dict(parse_setting(text) for text in settings)
    broker = broker_settings(scenario, overrides)  # takes the broker keys out of overrides
    return ServeOptions(
        host=host,
        port=port,
        topics=served,
        coordinator=coordinator_config(scenario, overrides),
        seed=scenario.seed if seed is None else seed,
        timeline=tuple(scenario.timeline),
        name=scenario.name,
        log_heartbeats=log_heartbeats,
        connections_max_idle_ms=broker.connections_max_idle_ms,
    )


async def _main(options: Any, out: Path, control: bool) -> dict[str, Any]:
    """Serve until a signal, ``stop`` or end of stdin; the summary of :mod:`.outputs`."""
    import trio

    from scenarios.serve.broker import open_broker
    from scenarios.serve.outputs import summary

    async with open_broker(options, out) as broker, trio.open_nursery() as nursery:
        print(
            f"groupsim serve: listening on {options.host}:{broker.port} "
            f"(topics: {', '.join(f'{t}:{n}' for t, n in options.topics.items()) or 'none'}); "
            "Ctrl-C stops",
            flush=True,
        )

        async def on_signal() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

        nursery.start_soon(on_signal)
        if control:
            nursery.start_soon(_control_loop, broker, nursery.cancel_scope)
    return summary(broker)


async def _control_loop(broker: Any, scope: Any) -> None:
    """Apply fault commands read from stdin (see ``--control``); 'stop' or EOF ends."""
    import trio

    from scenarios.serve.config import ServeInputError, parse_fault_command

    stream = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    pending = b""
    async with stream:
        while True:
            data = await stream.receive_some(4096)
            if not data:
                scope.cancel()
                return
            pending += data
            while b"\n" in pending:
                raw, pending = pending.split(b"\n", 1)
                line = raw.decode("utf-8", "replace").strip()
                if not line or line.startswith("#"):
                    continue
                if line == "stop":
                    scope.cancel()
                    return
                try:
                    broker.inject(parse_fault_command(line, broker.now_ms()))
                except ServeInputError as exc:
                    print(f"groupsim serve: {exc}", file=sys.stderr, flush=True)
                else:
                    print(f"groupsim serve: applied {line}", flush=True)
