"""``groupsim serve``: real Kafka clients join groupsim's group coordinator over TCP.

:class:`Broker` (in :mod:`scenarios.serve.broker`) is a one-node Kafka cluster speaking the
wire protocol (messages (de)serialised by ``kio``, see :mod:`scenarios.serve.wire`) with
:class:`coordinator.group.GroupCoordinator` behind its group APIs; :func:`open_broker` runs
it under trio; :mod:`scenarios.serve.config` reads serve scenarios (topics, broker settings,
fault timeline); :mod:`scenarios.serve.command` is the ``groupsim serve`` command. Needs the
``serve`` extra (``pip install groupsim[serve]``). User guide: ``docs/serve.md``.
"""

from .broker import Broker, GroupSnapshot, open_broker
from .config import ServeInputError, ServeOptions, ServeScenario, load_serve_scenario

__all__ = [
    "Broker",
    "GroupSnapshot",
    "open_broker",
    "ServeOptions",
    "ServeScenario",
    "ServeInputError",
    "load_serve_scenario",
]
