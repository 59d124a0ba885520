"""The ``groupsim record`` command (registered by :mod:`scenarios.cli.main`).

Importing this module imports only typer; the proxy (trio, kio) loads when it runs.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["record"]


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
    from scenarios.cli.main import _fail

    try:
        import kio  # noqa: F401  (Kafka's messages; the serve extra)
    except ImportError:
        _fail("groupsim record needs kio: pip install 'groupsim[serve]'")
    if not 0 <= listen <= 65535:
        _fail(f"--listen {listen}: a port is 0..65535")
    try:
        target = _address(upstream)
    except ValueError as exc:
        _fail(str(exc))
    if out.exists() and not out.is_dir():
        _fail(f"--out {out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".groupsim-record-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        _fail(f"--out {out}: cannot write there ({exc.strerror or exc})")
    import trio

    from scenarios.record.proxy import RecordOptions

    options = RecordOptions(target, host, listen, advertised_host)
    try:
        interrupted = trio.run(_main, options, out)
    except (OSError, BaseExceptionGroup) as exc:
        error = _os_error(exc)
        if error is None:
            raise
        _fail(f"cannot listen on {host}:{listen}: {error.strerror or error}")
    from scenarios.check.log_check import check_log

    violations = check_log(out / "events.jsonl")
    typer.echo(f"wrote {out / 'trace.jsonl'} and {out / 'events.jsonl'}")
    typer.echo(f"{len(violations)} violation(s) (groupsim check {out / 'events.jsonl'})")
    if interrupted:
        raise typer.Exit(130)


def _os_error(exc: BaseException) -> OSError | None:
    if isinstance(exc, OSError):
        return exc
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return _os_error(exc.exceptions[0])
    return None


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
