"""What every MPI implementation is to collkit: one object per installation.

An `MPI` knows its compiler wrapper, launcher and version, and, per implementation (one module
each: mpich.py, openmpi.py, intel.py), its own algorithms and how to force one, how to place
ranks and pass environment variables to them, the settings it wants when oversubscribed, and
the tuning file it reads. Code that runs MPI asks the object; it never tests a name.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from collkit.errors import InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:
    from collkit.tune.select import Choice

# Rank placements a campaign may sweep: consecutive ranks by core, socket or node.
PLACEMENTS = ("core", "socket", "node")


@dataclass
class MPI:
    """One MPI installation. Subclasses are the implementations collkit knows."""

    mpicxx: str
    mpiexec: str
    version: str  # e.g. "MPICH 4.3.0", "Open MPI 4.1.4"
    launch_args: list[str] = field(default_factory=list)
    # Why this MPI was chosen (printed by every command that runs MPI).
    reason: str = ""

    # The implementation's short name: cache directories and messages use it.
    kind: ClassVar[str] = "other"
    # The prefix of its own algorithms in the one name grammar (mpich:ring, ompi:ring);
    # "" for an MPI whose algorithms collkit cannot force.
    prefix: ClassVar[str] = ""
    # Settings for more ranks than cores, added unless the user set them.
    oversubscribed_env: ClassVar[dict[str, str]] = {}
    # The name of the tuning file `collkit tune` writes for it ("" if none).
    tuning_file_name: ClassVar[str] = ""

    def __post_init__(self) -> None:
        """Subclasses add their launcher's fixed arguments here."""

    @property
    def label(self) -> str:
        return self.version

    def describe(self) -> str:
        """'MPICH 4.3.0 (/path/mpiexec): why it was chosen' for the commands' first line."""
        why = f": {self.reason}" if self.reason else ""
        return f"{self.version} ({self.mpiexec}){why}"

    @classmethod
    def recognizes(cls, version_text: str) -> bool:
        """Whether `mpiexec --version` printed `version_text` for this implementation."""
        return False

    @classmethod
    def version_of(cls, version_text: str) -> str:
        text = version_text.strip()
        return text.splitlines()[0] if text else "unknown MPI"

    # ---- its own algorithms ----------------------------------------------------------------

    def algorithms(self, collective: str) -> list[str]:
        """Its own algorithms for `collective`, without the prefix (ring, recursive_doubling)."""
        return []

    def native_algorithms(self, collective: str) -> list[str]:
        """Names of this MPI's own algorithms for `collective`, as rows call them: mpich:ring."""
        return [f"{self.prefix}:{a}" for a in self.algorithms(collective)]

    def _force(self, collective: str, algorithm: str) -> dict[str, str]:
        raise NotImplementedError

    def force_env(self, collective: str, name: str) -> dict[str, str]:
        """Environment that makes the native call use algorithm `name` (mpich:ring, ompi:ring)."""
        from collkit.algorithms import parse_row_name

        parsed = parse_row_name(name)
        if (
            parsed.kind == "mpi"
            and parsed.impl == self.prefix
            and parsed.algorithm in self.algorithms(collective)
        ):
            return self._force(collective, parsed.algorithm)
        known = ", ".join(self.native_algorithms(collective)) or "none"
        raise InvalidArgumentError(
            f"'{name}' is not an algorithm of this MPI ({self.kind}) for {collective}; "
            f"known: {known}"
        )

    # ---- launching -------------------------------------------------------------------------

    def build_env(self) -> dict[str, str]:
        """Environment its compiler wrapper needs (added to the build's)."""
        return {}

    def placement_args(self, map_by: str) -> list[str]:
        """Launcher arguments that place consecutive ranks by core, socket or node (each rank
        bound to a core); "" leaves the MPI's default."""
        if not map_by:
            return []
        if map_by not in PLACEMENTS:
            raise InvalidArgumentError(
                f"placement '{map_by}' must be one of {', '.join(PLACEMENTS)}"
            )
        return self._placement(map_by)

    def _placement(self, map_by: str) -> list[str]:
        raise UnsupportedError(f"no placement options known for this MPI ({self.version})")

    def oversubscribe_args(self) -> list[str]:
        """Launcher arguments for more ranks than cores."""
        return []

    def hostfile_args(self, hosts: str) -> list[str]:
        return ["-f", hosts]  # hydra's spelling (MPICH, Intel MPI)

    def env_args(self, env: dict[str, str]) -> list[str]:
        """Launcher arguments that pass `env` to every rank (hydra: -genv K V)."""
        out: list[str] = []
        for k, v in env.items():
            out += ["-genv", k, v]
        return out

    # ---- tuning ----------------------------------------------------------------------------

    @classmethod
    def write_tuning_file(
        cls, choices: Sequence[Choice], out_dir: Path, header: str, program: Path | None
    ) -> Path | None:
        """Writes the tuning file this MPI reads for `choices` into `out_dir`; returns its
        path, or None if this MPI has none. `program` is a program built against this MPI
        (some files are built on the library's own defaults). By default: tuning_text's."""
        text = cls.tuning_text(choices, header)
        if text is None:
            return None
        path = out_dir / cls.tuning_file_name
        path.write_text(text)
        return path

    @classmethod
    def tuning_text(cls, choices: Sequence[Choice], header: str) -> str | None:
        """The tuning file's text for `choices`, for an MPI whose file needs nothing else."""
        return None


def by_collective_and_P(
    choices: Sequence[Choice], header: str
) -> tuple[dict[str, dict[int, list[Choice]]], list[str]]:
    """The choices grouped by collective and P, and the header as '#' comment lines: where
    every tuning file starts."""
    by: dict[str, dict[int, list[Choice]]] = {}
    for c in choices:
        by.setdefault(c.collective, {}).setdefault(c.P, []).append(c)
    return by, [f"# {ln}" for ln in header.splitlines()]


def am_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
