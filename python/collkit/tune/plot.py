"""The picture of a tuning campaign: the winner by P x size, one panel per collective."""

from __future__ import annotations

from pathlib import Path

from collkit.tune.select import Choice, shaped_keys

__all__ = ["plot"]


def plot(choices: list[Choice], path: Path, title: str) -> None:
    """Winner by P (rows) x size (columns); hatched cells are simulated."""
    from matplotlib import colormaps
    from matplotlib.patches import Rectangle

    from collkit.plotting import new_figure

    colls = sorted({c.collective for c in choices})
    fig = new_figure(
        figsize=(9, 1.2 + 1.1 * len(colls) + 0.35 * max(len({c.P for c in choices}), 1))
    )
    axes = fig.subplots(len(colls), 1, squeeze=False)
    shaped = shaped_keys(choices)
    for ax, coll in zip(axes[:, 0], colls, strict=True):
        cs = [c for c in choices if c.collective == coll]
        Ps = sorted({_row(c, shaped) for c in cs})
        sizes = sorted({c.bytes for c in cs})
        names = sorted({c.collkit.algorithm if c.collkit else "native" for c in cs})
        if "native" in names:
            names.remove("native")
            names.insert(0, "native")
        cmap = colormaps["tab20"]
        for c in cs:
            name = c.collkit.algorithm if c.collkit else "native"
            x, y = sizes.index(c.bytes), Ps.index(_row(c, shaped))
            color = "#dddddd" if name == "native" else cmap(names.index(name) % 20)
            ax.add_patch(
                Rectangle(
                    (x, y), 1, 1, color=color, hatch="//" if c.source == "simulated" else None
                )
            )
            if c.collkit:
                ax.text(
                    x + 0.5,
                    y + 0.5,
                    f"{c.collkit.speedup:.2f}x",
                    ha="center",
                    va="center",
                    fontsize=6,
                )
        ax.set_xlim(0, len(sizes))
        ax.set_ylim(0, len(Ps))
        ax.set_xticks([i + 0.5 for i in range(len(sizes))])
        ax.set_xticklabels([_fmt(s) for s in sizes], rotation=60, fontsize=7)
        ax.set_yticks([i + 0.5 for i in range(len(Ps))])
        ax.set_yticklabels(
            [f"P={P}" + (f" ({n}x{k or '?'})" if n else "") for P, n, k in Ps], fontsize=7
        )
        ax.set_title(coll, fontsize=9)
        handles = [
            Rectangle((0, 0), 1, 1, color="#dddddd" if n == "native" else cmap(names.index(n) % 20))
            for n in names
        ]
        ax.legend(handles, names, fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _fmt(n: int) -> str:
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return f"{n}B"


def _row(c: Choice, shaped: set[tuple[str, int]]) -> tuple[int, int, int]:
    """A choice's row: its P, one per shape where the P has several (nodes, ppn; 0: not said)."""
    if (c.collective, c.P) not in shaped:
        return (c.P, 0, 0)
    return (c.P, c.nodes or 0, c.ppn or 0)
