"""Checks: invariants, metrics and ``[expect]`` evaluation — pure functions over the event log."""
