"""``groupsim chaos --master URL``: the campaign as a Spark job
(:func:`scenarios.analysis.chaos_spark.run_campaign_on_spark`), with the command's conventions:
bad input or no Spark is one line and exit 2; Ctrl-C is one line and exit 130 with no JVM or
Spark Python worker left. Returns the same :class:`scenarios.campaigns.chaos.CampaignResult`
the pool campaign gives, so ``chaos`` prints it the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from scenarios.cli.errors import fail, one_line_errors, parse_conf, stderr

__all__ = ["run_on_spark"]


def run_on_spark(
    config: Any,
    runs: int,
    seed: int,
    out: Path,
    *,
    master: str,
    conf: list[str],
    shrink: bool,
    progress: Any,
) -> Any:
    """Run the campaign on Spark at ``master``; its result (runs ``0 … runs-1`` read back from
    ``out/runs/``). Prints where the runs table is on stderr."""
    with one_line_errors():
        settings = parse_conf(conf)
    from scenarios.analysis.session import spark_problem

    problem = spark_problem()
    if problem is not None:
        fail(f"--master: campaigns on Spark need Spark: {problem}")
    from scenarios.analysis.chaos_spark import (
        CampaignOutError,
        SparkUnavailable,
        run_campaign_on_spark,
    )

    try:
        done = run_campaign_on_spark(
            config,
            runs,
            seed,
            out,
            master=master,
            conf=settings,
            shrink_failures=shrink,
            on_progress=progress,
        )
    except (CampaignOutError, SparkUnavailable) as exc:
        fail(f"--out: {exc}" if isinstance(exc, CampaignOutError) else f"--master: {exc}")
    except KeyboardInterrupt as stop:  # SweepInterrupted, or Ctrl-C while Spark starts
        from scenarios.analysis.interrupt import stop_jvm
        from scenarios.cli.analysis_cmd import stopped_line

        stop_jvm()  # no JVM or Spark Python worker outlives the command
        line = stopped_line(getattr(stop, "written", 0), str(out))
        stderr.print(line, markup=False, soft_wrap=True)
        raise typer.Exit(130) from None
    except Exception as exc:  # Spark failures: a bad master URL, an unreachable cluster
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            fail(f"Spark: {first}")
        raise
    stderr.print(
        f"runs table: {done.out}/runs ({done.ran} run now, {done.skipped} already there)",
        markup=False,
        soft_wrap=True,
    )
    return done.result
