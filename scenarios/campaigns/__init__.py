"""Campaigns of many runs: chaos testing, sweeps and the upgrade compatibility matrix."""
