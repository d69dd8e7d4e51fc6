"""collkit: write a collective algorithm once; prove, simulate, run, model and tune it.

The compiled core is private (collkit._core); this package is the public face.
"""

from collkit.algorithms import (
    Algorithm,
    RankProgram,
    Schedule,
    algorithms,
    format_size,
    generate,
    generate_rank,
    parse_name,
    parse_size,
)
from collkit.errors import (
    AlgorithmNameError,
    CollkitError,
    InvalidArgumentError,
    ScheduleFormatError,
    UnsupportedError,
)
from collkit.simulate import Model, SimResult, simulate
from collkit.verify import Diagnostic, VerificationError, VerifyResult, verify, verify_algorithm

__version__ = "0.1.0"

__all__ = [
    "Algorithm",
    "AlgorithmNameError",
    "CollkitError",
    "Diagnostic",
    "InvalidArgumentError",
    "Model",
    "RankProgram",
    "Schedule",
    "ScheduleFormatError",
    "SimResult",
    "UnsupportedError",
    "VerificationError",
    "VerifyResult",
    "algorithms",
    "format_size",
    "generate",
    "generate_rank",
    "parse_name",
    "parse_size",
    "simulate",
    "verify",
    "verify_algorithm",
]
