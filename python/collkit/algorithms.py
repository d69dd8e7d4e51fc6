"""Algorithms by name: the registry, the name grammar and generation.

>>> import collkit
>>> s = collkit.generate("allreduce:rd", P=6, count=4)
>>> s.P, s.total_ops
(6, ...)
"""

from __future__ import annotations

from typing import Any

from collkit import _core
from collkit._core import Algorithm, RankProgram, Schedule

__all__ = [
    "Algorithm",
    "RankProgram",
    "Schedule",
    "algorithms",
    "format_size",
    "generate",
    "generate_rank",
    "parse_name",
    "parse_size",
]


def algorithms(collective: str | None = None) -> list[dict[str, Any]]:
    """Every registered algorithm (optionally of one collective) with its parameters and docs."""
    specs: list[dict[str, Any]] = _core.algorithms()
    return [s for s in specs if collective is None or s["collective"] == collective]


def parse_name(name: str) -> dict[str, Any]:
    """Parse an algorithm name without resolving it: collective, algorithm, (key, value) args."""
    result: dict[str, Any] = _core.parse_name(name)
    return result


def parse_size(text: str) -> int:
    """Bytes in a size such as '8', '8B', '4KiB', '1MiB', '1.5MB'."""
    return int(_core.parse_size(text))


def format_size(nbytes: int) -> str:
    """The largest exact binary unit: 8192 -> '8KiB'."""
    return str(_core.format_size(nbytes))


def generate(
    algorithm: str | Algorithm, P: int, count: int, elem_size: int = 8, root: int = 0
) -> Schedule:
    """The whole schedule of `algorithm` for P ranks and `count` elements per rank."""
    algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)
    return algo.generate(P, count, elem_size, root)


def generate_rank(
    algorithm: str | Algorithm, P: int, rank: int, count: int, elem_size: int = 8, root: int = 0
) -> RankProgram:
    """One rank's program alone, in time proportional to its ops (P may be 10^6 or more)."""
    algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)
    return algo.generate_rank(P, rank, count, elem_size, root)
