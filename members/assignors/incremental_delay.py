"""KIP-415's delays in Kafka's ``IncrementalCooperativeAssignor``: the successive-revocation
backoff (``ExponentialBackoff`` over ``scheduled.rebalance.max.delay.ms``). Lost work's
scheduled delay itself is the assignor's ``handleLostAssignments``
(:meth:`~.incremental_cooperative.IncrementalCooperativeAssignor.handle_lost_assignments`).
"""

from __future__ import annotations

import math

__all__ = ["exponential_backoff"]


def exponential_backoff(max_delay_ms: int, attempts: int) -> int:
    """Kafka ``ExponentialBackoff(initial = 0 if max is 0 else 1, ×40, max, jitter 0)``.

    ``backoff(n)``: with ``expMax = ln(max / max(initial, 1)) / ln 40`` (0 when max ≤ initial)
    the value is ``initial`` if expMax is 0, else ``min((long)(initial · 40^min(n, expMax)),
    max)``. For max 300000: 40, 1600, 64000, 300000, 300000, …; max 1 → 1; max 0 → 0.
    """
    initial = min(max_delay_ms, 0 if max_delay_ms == 0 else 1)
    if max_delay_ms > initial:
        exp_max = math.log(max_delay_ms / max(initial, 1)) / math.log(40)
    else:
        exp_max = 0.0
    if exp_max == 0:
        return initial
    term = initial * math.pow(40, min(float(attempts), exp_max))
    value = int(term)
    return max_delay_ms if value > max_delay_ms else value
