"""Pictures of the recursive multiplying model: b_opt against alpha_p/alpha_r ([Ruefenacht 2017]
Fig. 3)
and the Eq. 4 cost surface over b and N (Fig. 4).

    python -m collkit.analysis.recmult.plots docs/img
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from collkit.analysis.recmult.model import PipelinedPostal, b_opt, b_opt_brute, b_opt_eq5, eq4_cost


def _best_integer_b(ratio: float) -> int:
    model = PipelinedPostal(ratio, 1.0)
    return min(range(1, 100), key=lambda b: float(eq4_cost(b, 1e6, model)))


def figure_b_opt(path: str | Path, max_ratio: float = 20.0) -> Path:
    """Fig. 3: b_opt for ratios 1..max_ratio, the corrected closed form, the seed's Eq. 5 as
    printed, brute-force minima of Eq. 4 and the best integer b."""
    from collkit.plotting import new_figure

    ratios = np.linspace(1.0, max_ratio, 400)
    fig = new_figure(figsize=(6.4, 4.2), dpi=120)
    ax = fig.subplots()
    ax.plot(ratios, [b_opt(r) for r in ratios], label=r"$e^{W((\rho-1)/e)+1}-1$ (corrected)")
    ax.plot(ratios, [b_opt_eq5(r) for r in ratios], "--", label=r"seed Eq. 5: $e^{W(\rho-1)+1}-1$")
    dots = np.arange(1.0, max_ratio + 0.01, 1.0)
    ax.plot(dots, [b_opt_brute(r) for r in dots], "o", ms=4, label="brute-force minimum of Eq. 4")
    m = [_best_integer_b(float(r)) for r in dots]
    ax.step(dots, m, where="mid", color="0.4", lw=1, label="best integer b")
    ax.set_xlabel(r"$\rho = \alpha_p / \alpha_r$")
    ax.set_ylabel(r"$b_{opt}$")
    ax.set_title("Optimal fan-out of recursive multiplying (cf. [Ruefenacht 2017] Fig. 3)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    return out


def figure_cost_surface(
    path: str | Path,
    alpha_p: float = 1e-6,
    alpha_r: float = 0.25e-6,
    max_b: int = 16,
    max_N: int = 4096,
) -> Path:
    """Fig. 4: Eq. 4's cost (alpha_p + b alpha_r) log_{b+1} N over b and N, with b_opt."""
    from collkit.plotting import new_figure

    model = PipelinedPostal(alpha_p, alpha_r)
    b = np.linspace(1, max_b, 300)
    N = np.geomspace(2, max_N, 300)
    B, NN = np.meshgrid(b, N)
    cost = np.asarray(eq4_cost(B, NN, model)) * 1e6
    fig = new_figure(figsize=(6.4, 4.6), dpi=120)
    ax = fig.subplots()
    cs = ax.contourf(B, NN, cost, levels=30, cmap="viridis")
    fig.colorbar(cs, ax=ax, label=r"modelled time ($\mu$s)")
    ax.contour(B, NN, cost, levels=12, colors="white", linewidths=0.4, alpha=0.6)
    bo = b_opt(alpha_p / alpha_r)
    ax.axvline(bo, color="red", lw=1.5, label=rf"$b_{{opt}}$ = {bo:.2f} (any N)")
    ax.set_yscale("log", base=2)
    ax.set_xlabel("b (messages per stage)")
    ax.set_ylabel("N (processes)")
    ax.set_title(
        rf"Eq. 4 cost, $\alpha_p$ = {alpha_p * 1e6:g} $\mu$s, "
        rf"$\alpha_r$ = {alpha_r * 1e6:g} $\mu$s (cf. [Ruefenacht 2017] Fig. 4)",
        fontsize=10,
    )
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    return out


def main(argv: list[str]) -> int:
    outdir = Path(argv[0] if argv else "docs/img")
    outdir.mkdir(parents=True, exist_ok=True)
    print(figure_b_opt(outdir / "rm-b-opt.png"))
    print(figure_cost_surface(outdir / "rm-cost-surface.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
