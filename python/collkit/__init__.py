"""collkit: write a collective algorithm once; prove, simulate, run, model and tune it.

The compiled core is private (collkit._core); this package is the public face.
"""

from collkit import units  # times (ns), per-byte costs (ns/B), bandwidths, sizes: one reading
from collkit.algorithms import (
    Algorithm,
    algorithms,
    format_size,
    generate,
    generate_rank,
    parse_name,
    parse_size,
)
from collkit.analysis import recmult  # recursive multiplying: schedules, models, search
from collkit.errors import (
    AlgorithmNameError,
    CollkitError,
    InvalidArgumentError,
    ScheduleFormatError,
    UnsupportedError,
)
from collkit.io import from_goal, from_json, from_text, load, save, to_goal, to_json, to_text
from collkit.placement import Placement
from collkit.schedule import RankProgram, Schedule
from collkit.simulate import Model, SimResult, simulate
from collkit.verify import (
    Diagnostic,
    TreeComparison,
    VerificationError,
    VerifyResult,
    compare_trees,
    verify,
    verify_algorithm,
)

__version__ = "0.1.0"

__all__ = [
    "Algorithm",
    "AlgorithmNameError",
    "CollkitError",
    "Diagnostic",
    "InvalidArgumentError",
    "Model",
    "Placement",
    "RankProgram",
    "Schedule",
    "ScheduleFormatError",
    "SimResult",
    "TreeComparison",
    "UnsupportedError",
    "VerificationError",
    "VerifyResult",
    "algorithms",
    "compare_trees",
    "format_size",
    "from_goal",
    "from_json",
    "from_text",
    "generate",
    "generate_rank",
    "load",
    "parse_name",
    "parse_size",
    "recmult",
    "save",
    "simulate",
    "to_goal",
    "to_json",
    "to_text",
    "units",
    "verify",
    "verify_algorithm",
]
