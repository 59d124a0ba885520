"""The one base class of every error that means "the input is wrong", from every layer.

``protocol`` is the lowest layer with such errors (bytes that do not decode, a value the wire
cannot carry, an unknown ``connect.protocol``), and every other package may import it
(tests/test_layering.py), so the base lives here. Each layer keeps its own subclass with its
own attributes (:class:`protocol.primitives.DecodeError`,
:class:`scenarios.input.errors.ScenarioError`, ...); ``groupsim`` catches this one type and
prints ``str(err)`` as its one-line error (exit code 2, docs/cli-contracts.md).
"""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """Input the user must fix. ``str(err)`` is one line saying where and what is wrong,
    e.g. ``"bad.toml: timeline[0].member: no member 'w9'"``.

    A ``ValueError`` so that code which caught the layer's error as a ``ValueError`` still
    does. Not for groupsim's own bugs (those stay ``RuntimeError``/``AssertionError`` and keep
    their traceback).
    """
