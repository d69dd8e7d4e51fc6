"""The errors collkit raises. All derive from CollkitError, itself a ValueError."""

from collkit._core import (
    AlgorithmNameError,
    CollkitError,
    InvalidArgumentError,
    ScheduleFormatError,
    UnsupportedError,
)

__all__ = [
    "AlgorithmNameError",
    "CollkitError",
    "InvalidArgumentError",
    "ScheduleFormatError",
    "UnsupportedError",
]
