"""The simulator's public names, kept where they have always been imported from
(``collkit.simulate``); the code lives in the package collkit.sim, one module per concern."""

from collkit.sim import *  # noqa: F403
from collkit.sim import __all__ as __all__
from collkit.sim import __doc__ as _doc

__doc__ = _doc
