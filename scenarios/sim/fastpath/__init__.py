"""The engine's fast paths over quiet heartbeat stretches (docs/engine-performance.md).

:mod:`.quiet` skips whole heartbeat periods of a quiet group (:class:`.quiet.QuietSkipper`)
or the quiet tail of a jittered run (:class:`.quiet.QuietTail`); :mod:`.heartbeats` replays
the heartbeat rounds between other events on a small queue of its own. Neither knows any
heartbeat, session or network rule: they schedule the steady heartbeat hooks of the classes
that own those rules (``GroupClient.heartbeat_round`` / ``heartbeat_answered``,
``GroupCoordinator.heartbeat_steady``, ``ClassicGroup.extend_session``,
``Network.arrival_ms``) and read
and update the engine only through :class:`.host.Host`. This package imports no engine
module at run time (the engine imports it; tests/test_layering.py checks for cycles).
"""
