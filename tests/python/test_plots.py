"""Every plot function returns its matplotlib Figure and leaves the backend alone: no
matplotlib.use, no figure left open in pyplot (a notebook shows the returned Figure once)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

import collkit
from collkit import fit as F
from collkit.analysis import bruck
from collkit.bench import plot as bench_plot
from collkit.results import Row
from collkit.timeline import plot_timeline


def _rows() -> list[Row]:
    return [
        Row(
            "allreduce", f"allreduce:{a}", 2, b, min_us=t, q1_us=t, median_us=t * 1.1, q3_us=t * 1.2
        )
        for a, k in (("rd", 1.0), ("ring", 1.5))
        for b, t in ((8, k), (64, 2 * k), (512, 3 * k))
    ]


def _fit_rows() -> list[dict[str, Any]]:
    return [
        {
            "collective": "bcast",
            "algorithm": "bcast:linear",
            "P": P,
            "bytes": 1,
            "median": 2.0 * P + 1,
            "min": 1.8 * P + 1,
        }
        for P in range(2, 40, 3)
    ]


PLOTS: dict[str, Callable[[], Figure]] = {
    "timeline": lambda: plot_timeline(
        collkit.simulate("allreduce:rd", 4, bytes=8, model="pipelined-postal", timeline=True)
    ),
    "bench": lambda: bench_plot(_rows(), title="t"),
    "fit residuals": lambda: F.plot_residuals(F.fit(_fit_rows(), "latency ~ P")),
    "fit predicted": lambda: F.plot_predicted(F.fit(_fit_rows(), "latency ~ P")),
    "fit comparison": lambda: F.plot_comparison(F.compare(_fit_rows(), _fit_rows())),
    "bruck counts": lambda: bruck.plot_counts(16),
}


@pytest.mark.parametrize("name", list(PLOTS))
def test_plot_returns_its_figure_and_leaves_the_backend(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[object] = []
    monkeypatch.setattr(matplotlib, "use", lambda *a, **k: calls.append(a))
    before = plt.get_fignums()
    fig = PLOTS[name]()
    assert isinstance(fig, Figure) and fig.axes
    assert calls == [], "a plot function must not select a backend"
    assert plt.get_fignums() == before, "no figure left open in pyplot"


def test_a_returned_figure_saves(tmp_path: Path) -> None:
    PLOTS["bench"]().savefig(tmp_path / "b.png")
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("name", list(PLOTS))
def test_a_returned_figure_renders_itself_as_png(name: str) -> None:
    # a notebook without %matplotlib inline has no printer for a Figure outside pyplot: it
    # shows the Figure's own _repr_png_ (drawn by Agg, no figure opened in pyplot)
    before = plt.get_fignums()
    png = PLOTS[name]()._repr_png_()  # type: ignore[attr-defined]
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    assert plt.get_fignums() == before


_NOTEBOOK = [
    # a fresh kernel: no %matplotlib, no pyplot imported
    "import collkit\n"
    "from collkit.timeline import plot_timeline\n"
    "r = collkit.simulate('allreduce:rd', 4, bytes=8, timeline=True)\n"
    "plot_timeline(r)",
    "from collkit.bench import plot\n"
    "from collkit.results import Row\n"
    "plot([Row('allreduce', 'allreduce:rd', 2, b, median_us=b / 8) for b in (8, 64, 512)])",
    # pyplot imported: the inline backend's printer draws it, and only once
    "import matplotlib.pyplot as plt\nplot_timeline(r)",
]


def test_plots_display_in_a_fresh_notebook_kernel() -> None:
    nbformat = pytest.importorskip("nbformat", reason="pip install collkit[test] (nbformat)")
    nbclient = pytest.importorskip("nbclient", reason="pip install collkit[test] (nbclient)")
    pytest.importorskip("ipykernel", reason="pip install collkit[test] (ipykernel)")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in _NOTEBOOK]
    nbclient.NotebookClient(nb, timeout=240, kernel_name="python3").execute()
    for i, cell in enumerate(nb.cells):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, errors
        images = [o for o in cell.outputs if "image/png" in o.get("data", {})]
        assert len(images) == 1, f"cell {i}: {[o.get('data', {}).keys() for o in cell.outputs]}"
