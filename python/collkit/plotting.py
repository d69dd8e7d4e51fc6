"""Figures for the plot functions: made without pyplot, so that a plot function returns its
Figure and leaves the matplotlib backend alone (a notebook shows the Figure inline; a script
saves it). A CLI that only writes files may select Agg itself."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from collkit.errors import UnsupportedError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["new_figure", "save_figure"]


def new_figure(**kw: Any) -> Figure:
    """A Figure not registered with pyplot (no backend, no window): Figure(**kw)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise UnsupportedError("plotting needs matplotlib: pip install matplotlib") from e
    return Figure(**kw)


def save_figure(fig: Figure, path: str | Path, *, dpi: int = 120) -> Path:
    """Write `fig` to `path` (png, svg or pdf by suffix; '.png' added to a path without one, as
    matplotlib would) and return the path written."""
    p = Path(path)
    if not p.suffix:
        p = p.with_name(p.name + ".png")
    fig.savefig(p, dpi=dpi)
    return p
