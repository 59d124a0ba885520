"""Chaos campaigns: seeded random scenarios with faults, checked for safety and liveness, and
every failing run shrunk to a minimal scenario file (``groupsim chaos``; docs/chaos.md).

Three parts:

- **Generator** (:func:`generate`): from ``(campaign seed, run index)`` alone — one
  ``random.Random`` seeded with the string ``"groupsim-chaos/<seed>/<index>"``, nothing else
  random — a :class:`ChaosSpec`: a Connect cluster (member count, ``connect.protocol``, which
  implies the assignor, a few randomised timings), a workload, and a timeline of faults drawn
  from the enabled kinds at random times within the fault window, written in time order. The
  run then continues for the **liveness bound** (:func:`liveness_bound_ms`): the scenario's
  ``settle_ms`` is the bound, so the run ends ``bound`` after the last fault has ended, and
  the runner's end-of-run check (every configured job runs exactly once, balanced) is the
  liveness property "converged within the bound".
- **Campaign** (:func:`run_campaign`): N independent runs on a ``multiprocessing`` pool
  (spawned processes; each run depends only on ``(seed, index)``, so results do not depend on
  the number of processes or their scheduling), aggregated into a :class:`CampaignResult`.
- **Shrinker** (:func:`shrink`): delta debugging (ddmin) over the fault steps, keeping the
  failure signature (the first violation's invariant that is not a known upstream issue),
  then cheap number simplifications; the minimal scenario is written atomically as
  ``chaos-<seed>-<index>.toml`` and verified to reproduce with :func:`scenarios.sim.runner.simulate`
  (so ``groupsim run FILE`` reproduces it).

Known upstream behaviours (violations carrying ``known_issue``: KAFKA-13816, KAFKA-9184,
KAFKA-16056) are counted under their names and do not fail a campaign; generated scenarios
list them in ``[expect] expected_violations``.

Modules, one job each: :mod:`.bound` (the liveness bound), :mod:`.generate` (the generator),
:mod:`.render` (a spec written as TOML), :mod:`.classify` (known issues, failure signatures),
:mod:`.run` (one run; the only module that drives :mod:`scenarios.sim`), :mod:`.shrink`,
:mod:`.campaign`.
"""

from __future__ import annotations

from scenarios.campaigns.chaos.bound import BOUND_ROUNDS, bound_for, liveness_bound_ms
from scenarios.campaigns.chaos.campaign import (
    CampaignInterrupted,
    CampaignResult,
    Reproducer,
    percentile,
    run_campaign,
    shrink_run,
)
from scenarios.campaigns.chaos.classify import classify, failure_signature, known_issue_of
from scenarios.campaigns.chaos.generate import (
    ASSIGNOR_OF,
    DEFAULT_FAULT_KINDS,
    FAULT_KINDS,
    PROTOCOLS,
    ChaosConfig,
    ChaosSpec,
    generate,
)
from scenarios.campaigns.chaos.render import spec_to_toml
from scenarios.campaigns.chaos.run import RunOutcome, run_one, run_spec
from scenarios.campaigns.chaos.shrink import (
    ShrinkResult,
    ddmin,
    reproducer_path,
    shrink,
    write_reproducer,
    write_reproducer_text,
)

__all__ = [
    "PROTOCOLS",
    "ASSIGNOR_OF",
    "FAULT_KINDS",
    "DEFAULT_FAULT_KINDS",
    "BOUND_ROUNDS",
    "ChaosConfig",
    "ChaosSpec",
    "RunOutcome",
    "CampaignResult",
    "liveness_bound_ms",
    "bound_for",
    "generate",
    "spec_to_toml",
    "run_spec",
    "run_one",
    "run_campaign",
    "CampaignInterrupted",
    "failure_signature",
    "classify",
    "known_issue_of",
    "shrink",
    "ddmin",
    "write_reproducer",
    "write_reproducer_text",
    "reproducer_path",
    "shrink_run",
    "percentile",
    "Reproducer",
    "ShrinkResult",
]
