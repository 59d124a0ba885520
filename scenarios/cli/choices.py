"""The fixed sets of choices ``groupsim`` options take, as :class:`enum.StrEnum` classes (typer
validates them and lists them in ``--help``), and the command group that reports a bad value in
one line.

Comma lists (``groupsim chaos --protocol eager,sessioned``, ``--faults crash,leave``) stay text,
parsed in :mod:`scenarios.cli.chaos_cmd`; their help lists the choices of :class:`ChaosProtocol`
and :class:`FaultKind`, which a test keeps equal to :data:`scenarios.campaigns.chaos.PROTOCOLS`
and :data:`scenarios.campaigns.chaos.FAULT_KINDS`.
"""

from __future__ import annotations

import enum
from typing import Any

import typer
from typer.core import TyperGroup

from scenarios.cli.errors import stderr

__all__ = [
    "SEED_MAX",
    "OutputFormat",
    "ReportEngine",
    "ConnectMessage",
    "ChaosAssignor",
    "ChaosProtocol",
    "CompatKind",
    "FaultKind",
    "OneLineErrors",
    "choices",
    "plain_help",
]


#: The largest seed any command takes: a scenario's ``seed`` caps at the same 2^63 - 1
#: (:data:`scenarios.input.schema.INT64_MAX`, a Java long), so a seed given on the command
#: line can always be written into a scenario file.
SEED_MAX = 2**63 - 1


class OutputFormat(enum.StrEnum):
    """``groupsim compat --format``."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"


class ReportEngine(enum.StrEnum):
    """``groupsim report --engine``: how a sweep's Parquet tables are read."""

    AUTO = "auto"
    SPARK = "spark"
    PYARROW = "pyarrow"


class ConnectMessage(enum.StrEnum):
    """``groupsim codec decode|encode MESSAGE``: which Connect protocol message."""

    SUBSCRIPTION = "subscription"
    ASSIGNMENT = "assignment"


class CompatKind(enum.StrEnum):
    """``groupsim compat --kind``: which matrix (:mod:`scenarios.campaigns.compat` for
    Connect, :mod:`scenarios.campaigns.compat_consumer` for consumer groups)."""

    CONNECT = "connect"
    CONSUMER = "consumer"


class ChaosKind(enum.StrEnum):
    """``groupsim chaos --kind``: what each run generates
    (:data:`scenarios.campaigns.chaos_names.KINDS`)."""

    CONNECT = "connect"
    STREAMS = "streams"
    CONSUMER = "consumer"


class Referee(enum.StrEnum):
    """``--referee`` of ``groupsim chaos`` and ``groupsim check``: who replays the run
    (:data:`scenarios.referee.REFEREES`). ``kafka``: every leader assignment and every
    coordinator answer; ``kafka-leaders``: the leader assignments only (about 1.5× a plain
    run's CPU, where the coordinator answers cost about 10×)."""

    KAFKA = "kafka"
    KAFKA_LEADERS = "kafka-leaders"


class ChaosAssignor(enum.StrEnum):
    """``groupsim chaos --assignor``: the assignor every drawn protocol must run
    (:data:`scenarios.campaigns.chaos.ASSIGNOR_OF`)."""

    EAGER = "eager"
    INCREMENTAL_COOPERATIVE = "incremental_cooperative"
    STATIC = "static"


class ChaosProtocol(enum.StrEnum):
    """``connect.protocol`` values ``groupsim chaos --protocol`` lists (comma separated)."""

    EAGER = "eager"
    COMPATIBLE = "compatible"
    SESSIONED = "sessioned"
    STATIC = "static"


class FaultKind(enum.StrEnum):
    """Fault kinds ``groupsim chaos --faults`` lists (comma separated)."""

    CRASH = "crash"
    LEAVE = "leave"
    PARTITION = "partition"
    LOSS = "loss"
    LATENCY = "latency"
    SLOW = "slow"
    FAILOVER = "failover"
    CONFIG = "config"
    DELAY = "delay"
    ZOMBIE = "zombie"


def choices(kind: type[enum.Enum], sep: str = ", ") -> str:
    """The values of ``kind``, joined for a help text."""
    return sep.join(str(member.value) for member in kind)


class OneLineErrors(TyperGroup):
    """``groupsim``'s command group: a value typer rejects (not one of an option's choices,
    not an integer, …: :class:`typer.BadParameter`) is reported as one line on stderr,
    ``groupsim: error: <what>``, with exit code 2 — as every bad input is."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:
            message = " ".join(exc.format_message().split())
            stderr.print(f"groupsim: error: {message}", markup=False, soft_wrap=True)
            raise typer.Exit(2) from None


class TopLevelGroup(OneLineErrors):
    """The ``groupsim`` group itself: its ``--help`` (and the bare ``groupsim``) is click's
    plain help text rather than typer's Rich rendering, whose imports (Rich's console,
    Markdown and traceback modules) cost more than the rest of ``groupsim --help``. Each
    command's own ``--help`` keeps Rich."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        mode, self.rich_markup_mode = self.rich_markup_mode, None
        try:
            super().format_help(ctx, formatter)
        finally:
            self.rich_markup_mode = mode

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Click's command list, each command's first sentence whole (click would cut it to
        the column with "...") and wrapped in its column."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def plain_help() -> None:
    """Tidy typer's ``--help`` for groupsim (called once when the app is built): flags show no
    ``<bool>`` type (``--json`` takes no value), a required argument reads ``NAME`` in the
    usage line rather than ``{name}`` (which looks like a placeholder to fill in), and a seed's
    range reads ``[x>=0]``."""
    from typer import core

    if getattr(core.TyperOption, "_groupsim_plain", False):
        return
    flag_type = core.TyperOption.display_type_rich

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if self.is_flag else flag_type(self, ctx)

    def usage_name(self: Any) -> str:
        name = str(self.display_name_raw).upper()
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    number_range = core.TyperOption._get_number_range_help_str

    def range_help(self: Any) -> str | None:
        # a seed's range reads "x>=0": its cap, 2^63 - 1, is 19 digits no column can hold
        if getattr(self, "max", None) == SEED_MAX:
            return f"x>={self.min}"
        return number_range(self)

    core.TyperOption._get_number_range_help_str = range_help  # type: ignore[method-assign]
    core.TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
    core.TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]
    core.TyperOption._groupsim_plain = True  # type: ignore[attr-defined]
