"""``groupsim serve``: real Kafka clients join groupsim's group coordinator over TCP.

:class:`Broker` (in :mod:`scenarios.serve.broker`) is a one-node Kafka cluster speaking the
wire protocol (messages (de)serialised by ``kio``, see :mod:`scenarios.serve.wire`) with
:class:`coordinator.group.GroupCoordinator` behind its group APIs; :func:`open_broker` runs
it under trio; :mod:`scenarios.serve.translate` maps kio's group messages to and from
:mod:`protocol.group`; :mod:`scenarios.serve.config` reads serve scenarios (topics, broker settings,
fault timeline); :mod:`scenarios.cli.serve_cmd` is the ``groupsim serve`` command. Needs the
``serve`` extra (``pip install groupsim[serve]``). User guide: ``docs/serve.md``.

Names are imported lazily, so ``groupsim`` starts without ``kio`` installed.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Broker",
    "GroupSnapshot",
    "open_broker",
    "ServeOptions",
    "ServeScenario",
    "ServeInputError",
    "load_serve_scenario",
]

_WHERE = {
    "Broker": "broker",
    "GroupSnapshot": "broker",
    "open_broker": "broker",
    "ServeOptions": "config",
    "ServeScenario": "config",
    "ServeInputError": "config",
    "load_serve_scenario": "config",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'scenarios.serve' has no attribute {name!r}")
    return getattr(importlib.import_module(f"scenarios.serve.{module}"), name)
