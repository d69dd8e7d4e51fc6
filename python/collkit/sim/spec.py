"""The simulator's specs (noise, skew, topology) read by the core's grammar (core/src/name.cpp's
``call := word [ '(' arg {, arg} ')' ]``, the argument grammar of algorithm names): one grammar,
not a second one here."""

from __future__ import annotations

from collkit import _core
from collkit.errors import InvalidArgumentError


def parse_spec(spec: str, what: str) -> tuple[str, list[tuple[str, str]]]:
    """(kind, [(key, value), ...]) of a spec such as ``uniform(0,100ns)`` or
    ``fattree(k=16,hop=100ns)``; positional arguments have key ''. Errors name `what` and point
    at the character."""
    try:
        kind, args = _core.parse_call(spec)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{what}: {e}") from None
    return str(kind), [(str(k), str(v)) for k, v in args]
