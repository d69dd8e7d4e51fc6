"""Figures for the plot functions: made without pyplot, so that a plot function returns its
Figure and leaves the matplotlib backend alone (a script saves it; a CLI that only writes files
may select Agg itself). A Figure outside pyplot has no backend to draw it in a notebook, so the
Figures made here render themselves: `_repr_png_` draws one with Agg, and Jupyter shows the
image in a fresh kernel, without `%matplotlib inline` (where the inline backend is active, its
own printer draws the Figure, once)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from collkit.errors import UnsupportedError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["new_figure", "save_figure"]

# The Figure subclass, made on first use: importing matplotlib costs a CLI that never plots.
_FIGURE_CLASS: type[Figure] | None = None


def _figure_class() -> type[Figure]:
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        try:
            from matplotlib.figure import Figure
        except ImportError as e:
            raise UnsupportedError("plotting needs matplotlib: pip install matplotlib") from e

        class NotebookFigure(Figure):
            """A Figure that IPython displays as a PNG (drawn by Agg, never by pyplot)."""

            def _repr_png_(self) -> bytes:
                import io

                buf = io.BytesIO()
                self.savefig(buf, format="png", bbox_inches="tight")
                return buf.getvalue()

        # picklable as collkit.plotting.NotebookFigure (the module's __getattr__ finds it)
        NotebookFigure.__module__ = __name__
        NotebookFigure.__qualname__ = "NotebookFigure"
        _FIGURE_CLASS = NotebookFigure
    return _FIGURE_CLASS


def __getattr__(name: str) -> Any:
    if name == "NotebookFigure":
        return _figure_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def new_figure(**kw: Any) -> Figure:
    """A Figure not registered with pyplot (no backend, no window) that a notebook displays:
    Figure(**kw)."""
    return _figure_class()(**kw)


def save_figure(fig: Figure, path: str | Path, *, dpi: int = 120) -> Path:
    """Write `fig` to `path` (png, svg or pdf by suffix; '.png' added to a path without one, as
    matplotlib would) and return the path written."""
    p = Path(path)
    if not p.suffix:
        p = p.with_name(p.name + ".png")
    fig.savefig(p, dpi=dpi)
    return p
