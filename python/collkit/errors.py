"""The errors collkit raises. All derive from CollkitError, itself a ValueError; an argument of the
wrong type is ArgumentTypeError, an InvalidArgumentError that is also a TypeError."""

from collkit._core import (
    AlgorithmNameError,
    CollkitError,
    InvalidArgumentError,
    ScheduleFormatError,
    UnsupportedError,
)


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong type (a str where a Schedule goes): collkit's own error, and a
    TypeError for code that catches those."""


__all__ = [
    "AlgorithmNameError",
    "ArgumentTypeError",
    "CollkitError",
    "InvalidArgumentError",
    "ScheduleFormatError",
    "UnsupportedError",
]
