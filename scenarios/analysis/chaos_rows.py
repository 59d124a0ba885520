"""A chaos campaign's ``runs`` table (no pyspark): its columns, one run as a row (what a Spark
executor computes), and the rows back as a :class:`scenarios.campaigns.chaos.CampaignResult`
(what ``groupsim chaos`` prints, the same with or without ``--master``).

Column types are the names :func:`scenarios.analysis.arrow.arrow_type` knows. ``{name:
count}`` maps (faults, violations) are JSON text, as the ``fields`` column of sweep events
(``get_json_object(violations, '$.KAFKA-9184')`` in Spark SQL), each beside its total.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from scenarios.campaigns.chaos import (
    CampaignResult,
    ChaosConfig,
    Reproducer,
    RunOutcome,
    reproducer_path,
    run_one,
    shrink_run,
    write_reproducer_text,
)

__all__ = [
    "CHAOS_RUN_COLUMNS",
    "run_id_of",
    "chaos_row",
    "outcome_of",
    "result_from_rows",
    "write_row_reproducers",
    "config_fingerprint",
    "same_campaign",
]

#: The ``runs`` table of a campaign on Spark, in order (name, type).
CHAOS_RUN_COLUMNS: list[tuple[str, str]] = [
    ("run_id", "string"),  # chaos-<campaign seed>-<run index>, the reproducer's stem
    ("batch", "string"),  # the Spark job that wrote the row
    ("batch_wall_s", "double"),  # that job's wall-clock seconds (to the interrupt, if one)
    ("run_index", "long"),
    ("campaign_seed", "long"),
    ("seed", "long"),  # the simulation seed (the scenario file's own)
    ("protocol", "string"),
    ("members", "long"),
    ("faults", "string"),  # JSON {kind: count}
    ("faults_total", "long"),
    ("violations", "string"),  # JSON {name: count}, known upstream issues under their names
    ("violations_total", "long"),
    ("new_violations", "string"),  # JSON {invariant: count}: what fails a run
    ("new_violations_total", "long"),
    ("failed", "boolean"),
    ("first_new_invariant", "string"),
    ("first_new_detail", "string"),
    ("converged", "boolean"),
    ("task_downtime_max_ms", "long"),  # virtual ms
    ("converge_ms", "long"),  # virtual ms after the last fault ends; null: not converged
    ("wall_s", "double"),  # seconds the simulation took
    ("cpu_s", "double"),  # CPU seconds of the whole run on its executor
    ("reproducer", "string"),  # path of the shrunk scenario file, when written
    ("reproducer_toml", "string"),  # its text (also when no file could be written)
    ("reproducer_detail", "string"),
    ("reproducer_steps_before", "long"),
    ("reproducer_steps_after", "long"),
    ("reproducer_verified", "boolean"),
]


def run_id_of(campaign_seed: int, index: int) -> str:
    """``chaos-<campaign seed>-<index>``: a run's id, and its reproducer file's stem."""
    return f"chaos-{campaign_seed}-{index}"


def chaos_row(
    config: ChaosConfig,
    campaign_seed: int,
    index: int,
    *,
    batch: str,
    shrink: bool,
    shrink_budget: int,
    local_out: str | None,
) -> dict[str, Any]:
    """Run ``index`` of campaign ``campaign_seed`` (:func:`scenarios.campaigns.chaos.run_one`)
    and, when it fails and ``shrink``, shrink it (:func:`scenarios.campaigns.chaos.shrink_run`,
    at most ``shrink_budget`` simulations): its ``runs`` row. Runs on a Spark executor; the
    reproducer's text is in the row, and ``reproducer`` names where the driver writes it
    (under ``local_out``; ``None`` when the output is a URL)."""
    outcome = run_one(config, campaign_seed, index)
    row = _outcome_row(outcome, campaign_seed, batch)
    if outcome.failed and shrink and outcome.first_new is not None:
        rep = shrink_run(config, campaign_seed, index, outcome.first_new[0], budget=shrink_budget)
        row.update(
            reproducer=(
                str(reproducer_path(Path(local_out), campaign_seed, index)) if local_out else None
            ),
            reproducer_toml=rep.text,
            reproducer_detail=rep.detail,
            reproducer_steps_before=rep.steps_before,
            reproducer_steps_after=rep.steps_after,
            reproducer_verified=rep.verified,
        )
    return row


def _outcome_row(outcome: RunOutcome, campaign_seed: int, batch: str) -> dict[str, Any]:
    first = outcome.first_new
    row: dict[str, Any] = {name: None for name, _ in CHAOS_RUN_COLUMNS}
    row.update(
        run_id=run_id_of(campaign_seed, outcome.index),
        batch=batch,
        run_index=outcome.index,
        campaign_seed=campaign_seed,
        seed=outcome.seed,
        protocol=outcome.protocol,
        members=outcome.members,
        faults=_json(outcome.faults),
        faults_total=sum(outcome.faults.values()),
        violations=_json(outcome.violations),
        violations_total=sum(outcome.violations.values()),
        new_violations=_json(outcome.new_violations),
        new_violations_total=sum(outcome.new_violations.values()),
        failed=outcome.failed,
        first_new_invariant=first[0] if first else None,
        first_new_detail=first[1] if first else None,
        converged=outcome.converged,
        task_downtime_max_ms=outcome.task_downtime_max_ms,
        converge_ms=outcome.converge_ms,
        wall_s=outcome.wall_s,
        cpu_s=outcome.cpu_s,
    )
    return row


def _json(counts: Mapping[str, int]) -> str:
    return json.dumps(dict(sorted(counts.items())), separators=(",", ":"))


def outcome_of(row: Mapping[str, Any]) -> RunOutcome:
    """A ``runs`` row back as the :class:`scenarios.campaigns.chaos.RunOutcome` the pool
    campaign would have returned for that run."""
    first = row["first_new_invariant"]
    return RunOutcome(
        index=int(row["run_index"]),
        seed=int(row["seed"]),
        protocol=str(row["protocol"]),
        members=int(row["members"]),
        faults=json.loads(row["faults"]),
        violations=json.loads(row["violations"]),
        new_violations=json.loads(row["new_violations"]),
        first_new=(str(first), str(row["first_new_detail"] or "")) if first is not None else None,
        converged=bool(row["converged"]),
        task_downtime_max_ms=int(row["task_downtime_max_ms"]),
        converge_ms=None if row["converge_ms"] is None else int(row["converge_ms"]),
        wall_s=float(row["wall_s"]),
        cpu_s=float(row["cpu_s"] or 0.0),
    )


def result_from_rows(
    config: ChaosConfig,
    seed: int,
    runs: int,
    rows: Iterable[Mapping[str, Any]],
    *,
    out_dir: Path | None,
    jobs: int,
    wall_s: float | None = None,
) -> CampaignResult:
    """The :class:`scenarios.campaigns.chaos.CampaignResult` of runs ``0 … runs-1`` in
    ``rows`` (other indexes, and repeats of one, are ignored): outcomes sorted by index,
    reproducers from the rows that carry one (``path`` under ``out_dir`` as the caller
    named it, when the row's file was written). ``wall_s`` defaults to the sum of the
    rows' batches' ``batch_wall_s`` (the Spark jobs that ran them, over every invocation:
    a resumed campaign's runs per minute stay what its jobs took)."""
    by_index: dict[int, Mapping[str, Any]] = {}
    for row in rows:
        index = int(row["run_index"])
        if 0 <= index < runs:
            by_index.setdefault(index, row)
    ordered = [by_index[i] for i in sorted(by_index)]
    reproducers = [
        Reproducer(
            index=int(row["run_index"]),
            invariant=str(row["first_new_invariant"]),
            detail=str(row["reproducer_detail"] or ""),
            path=(
                reproducer_path(out_dir, seed, int(row["run_index"]))
                if out_dir is not None and row["reproducer"] is not None
                else None
            ),
            steps_before=int(row["reproducer_steps_before"]),
            steps_after=int(row["reproducer_steps_after"]),
            verified=bool(row["reproducer_verified"]),
            text=str(row["reproducer_toml"]),
        )
        for row in ordered
        if row["reproducer_toml"] is not None
    ]
    outcomes = [outcome_of(row) for row in ordered]
    if wall_s is None:
        batches = {str(row["batch"]): float(row["batch_wall_s"] or 0.0) for row in ordered}
        wall_s = sum(batches.values())
    return CampaignResult(config, seed, outcomes, reproducers, wall_s=wall_s, jobs=jobs)


def write_row_reproducers(rows: Iterable[Mapping[str, Any]]) -> int:
    """On the driver: write each row's reproducer TOML to its ``reproducer`` path (atomically;
    rows without one are skipped). Returns the files written."""
    written = 0
    for row in rows:
        if row.get("reproducer") and row.get("reproducer_toml") is not None:
            path = Path(row["reproducer"])
            write_reproducer_text(
                path.parent,
                int(row["campaign_seed"]),
                int(row["run_index"]),
                row["reproducer_toml"],
            )
            written += 1
    return written


def config_fingerprint(config: ChaosConfig, seed: int) -> dict[str, Any]:
    """What identifies a campaign's runs (``campaign.json``): its seed and every field of
    its :class:`scenarios.campaigns.chaos.ChaosConfig`, as JSON values."""
    fields = json.loads(json.dumps(dataclasses.asdict(config)))
    return {"seed": seed, "config": fields}


def same_campaign(meta: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    """Whether a ``campaign.json`` document ``meta`` names the campaign ``want``
    (:func:`config_fingerprint`). A :class:`ChaosConfig` field ``meta`` lacks (written before
    the field existed, e.g. ``kind`` before ``--kind streams``) counts as its default: the
    runs of such a campaign are the default's."""
    defaults = config_fingerprint(ChaosConfig(), 0)["config"]
    config = meta.get("config")
    if not isinstance(config, Mapping):
        return dict(meta) == dict(want)
    filled = {**{k: v for k, v in defaults.items() if k not in config}, **config}
    return {**meta, "config": filled} == dict(want)
