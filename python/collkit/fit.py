"""Linear models of latency fitted to result rows, measured or simulated alike ([Latency models]).

Rows follow collkit's one row schema (:mod:`collkit.results`): collective, algorithm, P, bytes,
allocation and the statistics (microseconds). A fit turns them into a table with the columns a
formula may name:

==============  ==============================================================================
``latency``     the chosen statistic (``median`` unless told), microseconds
``P``           process count;  ``log2P``: log2(P)
``big``         1.0 where P > threshold ([Latency models]'s ``[P > 128]``), else 0.0
``size``        bytes per rank ([Latency models]'s Message_Size);  ``bytes`` is the same
``algorithm``   short name, e.g. ``pipeline`` (``bcast:pipeline(seg=8KiB)`` -> ``pipeline``)
``allocation``  how ranks were placed: ``core``, ``socket``, ``node``, or the row's text
``binding``     ``core``, ``socket``, ... where the row's settings bind ranks (HYDRA_BINDING)
``group``       ``algorithm-allocation[/bind-binding]``, e.g. ``binary-node``
``collective``, ``name`` (the full algorithm name), ``source``, ``mpi``, ``machine``
==============  ==============================================================================

Two of [Latency models]'s forms are named models:

- ``seed-p``: ``latency ~ 0 + P + big + P:big`` fitted separately per group (its per-algorithm
  tables); where no row has P above the threshold the ``big`` terms are dropped, as in the
  seed's "allocation by node" tables;
- ``seed-log``: ``latency ~ 0 + log2P:group + size:group`` fitted to all rows at once (its
  summary tables).

Any other text is a formula in the patsy language (R's), e.g. ``latency ~ P + size``.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from collkit import units
from collkit.errors import InvalidArgumentError

MODELS: dict[str, str] = {
    "seed-p": "latency ~ 0 + P + big + P:big",
    "seed-log": "latency ~ 0 + log2P:group + size:group",
}
# Models fitted once per group unless told otherwise.
PER_GROUP = {"seed-p"}
STATS = ("min", "q1", "median", "q3", "mean", "p99", "max")
COLUMNS = (
    "latency",
    "P",
    "log2P",
    "big",
    "size",
    "bytes",
    "algorithm",
    "allocation",
    "binding",
    "group",
    "collective",
    "name",
    "source",
    "mpi",
    "machine",
)

# Readable names for the seed's terms in tables.
_PRETTY = [
    (re.compile(r"^log2P:group\[(.*)\]$"), r"log2(P) : \1"),
    (re.compile(r"^size:group\[(.*)\]$"), r"size : \1"),
    (re.compile(r"^P:big$"), "P : [P > T]"),
    (re.compile(r"^big$"), "[P > T]"),
]


def _bad(msg: str) -> InvalidArgumentError:
    return InvalidArgumentError(msg)


def short_algorithm(name: str) -> str:
    """``bcast:pipeline(seg=8KiB)`` -> ``pipeline``; ``native`` stays ``native``."""
    return name.split(":", 1)[-1].split("(", 1)[0]


def short_allocation(text: str) -> str:
    """The placement of an allocation text: ``core``, ``socket`` or ``node`` where the text says
    how ranks were mapped ("by socket", "map-by node", "socket"); ranks on one node are mapped
    by core ("1 node x 8 ranks on 2 cores"); any other text is kept (spaces as '_')."""
    t = text.strip().lower()
    m = re.search(r"(?:by|map-by|bind-to|binding)[\s:=-]*(core|socket|node)s?\b", t)
    if m:
        return m.group(1)
    for word in ("socket", "core"):
        if re.fullmatch(rf"{word}s?", t):
            return word
    if t in ("node", "nodes") or re.match(r"^1\s*node\b", t):
        return "node" if t in ("node", "nodes") else "core"
    return re.sub(r"\s+", "_", t) or "-"


def _row_dict(row: Any) -> dict[str, Any]:
    if is_dataclass(row) and not isinstance(row, type):
        return asdict(row)
    if isinstance(row, Mapping):
        from collkit.results import _new_names

        try:
            return _new_names(dict(row))  # the statistics' old names (median) read as median_us
        except InvalidArgumentError as e:
            raise _bad(str(e)) from None
    raise _bad(f"a result row must be a Row or a mapping, not {type(row).__name__}")


def _brief(d: Mapping[str, Any]) -> str:
    """A row, shortened for a message."""
    text = ", ".join(f"{k}={v!r}" for k, v in d.items() if k in ("algorithm", "P", "bytes"))
    return "{" + (text or ", ".join(map(str, list(d)[:4]))) + "}"


def frame(rows: Iterable[Any], stat: str = "median", threshold: int = 128) -> Any:
    """The rows as a pandas DataFrame with the columns listed in the module's docstring.

    Rows without the statistic (NaN, an error) are left out; an empty result is an error."""
    import pandas as pd  # type: ignore[import-untyped]

    if stat not in STATS:
        raise _bad(f"statistic '{stat}' must be one of {', '.join(STATS)}")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise _bad(f"threshold must be a positive integer, got {threshold!r}")
    from collkit.results import field_value

    recs = []
    for row in rows:
        d = _row_dict(row)
        try:  # the row schema's own checks: P true is not 1, 64.9 not 64, a time not negative
            P, nbytes = field_value("P", d["P"]), field_value("bytes", d["bytes"])
            value = field_value(f"{stat}_us", d.get(f"{stat}_us"))
        except KeyError as e:
            raise _bad(f"result row without {e}: {_brief(d)}") from None
        except InvalidArgumentError as e:
            raise _bad(f"result row {_brief(d)}: {e}") from None
        if math.isnan(value) or d.get("error"):  # not measured (an error, or no statistic)
            continue
        if P < 1 or nbytes < 0:
            raise _bad(f"result row with P = {P}, bytes = {nbytes}")
        name = str(d.get("algorithm", ""))
        algo = short_algorithm(name)
        alloc = short_allocation(str(d.get("allocation", "")))
        # A binding set through the environment (HYDRA_BINDING=core) is a placement of its own.
        settings = str(d.get("settings", "")).lower()
        bound = re.search(r"(?:binding|bind-to)[\s:=-]*(core|socket|numa|hwthread)", settings)
        binding = bound.group(1) if bound else ""
        recs.append(
            {
                "latency": value,
                "P": float(P),
                "log2P": math.log2(P),
                "big": 1.0 if threshold < P else 0.0,
                "size": float(nbytes),
                "bytes": float(nbytes),
                "algorithm": algo,
                "allocation": alloc,
                "binding": binding,
                "group": f"{algo}-{alloc}" + (f"/bind-{binding}" if binding else ""),
                "collective": str(d.get("collective", "")),
                "name": name,
                "source": str(d.get("source", "")),
                "mpi": str(d.get("mpi", "")),
                "machine": str(d.get("machine", "")),
            }
        )
    if not recs:
        raise _bad(f"no result rows with a {stat} to fit")
    return pd.DataFrame.from_records(recs, columns=list(COLUMNS))


@dataclass
class Coefficient:
    term: str
    estimate: float
    std_error: float
    t_value: float
    p_value: float


@dataclass
class FitResult:
    """One fitted linear model: coefficients as in [Latency models]'s tables, R², and the data."""

    formula: str
    group: str  # "" for a fit of all rows
    n: int
    r_squared: float
    adj_r_squared: float
    coefficients: list[Coefficient]
    threshold: int
    stat: str
    measured: Any = field(repr=False)  # numpy arrays
    fitted: Any = field(repr=False)
    data: Any = field(repr=False)  # the DataFrame fitted
    model: Any = field(repr=False)  # statsmodels results

    @property
    def residuals(self) -> Any:
        return self.measured - self.fitted

    def coefficient(self, term: str) -> Coefficient:
        for c in self.coefficients:
            if c.term == term:
                return c
        raise _bad(
            f"no term '{term}' in {self.formula} (terms: "
            f"{', '.join(c.term for c in self.coefficients)})"
        )

    def table(self) -> str:
        """Markdown table in the seed's shape: Estimate, Std. Error, t value."""
        title = f"**{self.group}**: " if self.group else ""
        lines = [
            f"{title}`{self.formula}` ({self.stat}, n = {self.n}, "
            f"R² = {self.r_squared:.4f}, adjusted R² = {self.adj_r_squared:.4f})",
            "",
            "| term | Estimate | Std. Error | t value |",
            "| --- | ---: | ---: | ---: |",
        ]
        for c in self.coefficients:
            lines.append(
                f"| {c.term} | {_num(c.estimate)} | {_num(c.std_error)} | {c.t_value:.2f} |"
            )
        return "\n".join(lines)

    def predict(self, alpha: float = 0.05, **values: float | str) -> dict[str, float]:
        """Prediction at new values (P=4096, size=8, algorithm=..., ...) with the
        (1 - alpha) prediction interval for one new measurement: {mean, lower, upper}."""
        if not 0 < alpha < 1:
            raise _bad(f"alpha must be in (0, 1), got {alpha}")
        row = _new_row(self.data, values, self.threshold)
        try:
            pred = self.model.get_prediction(row).summary_frame(alpha=alpha)
        except Exception as e:  # patsy: a level the fit has not seen, a missing column
            raise _bad(f"cannot predict at {values}: {e}") from None
        mean = float(pred["mean"].iloc[0])
        if not mean >= 0:  # a latency is never negative: the formula does not hold there
            at = ", ".join(f"{k}={v}" for k, v in values.items())
            raise _bad(
                f"'{self.formula}'{' for ' + self.group if self.group else ''} predicts a "
                f"negative latency ({_num(mean)} us) at {at}: the model does not describe "
                f"the rows there (the rows span P {_span(self.data['P'])}, size "
                f"{_span(self.data['size'])})"
            )
        return {
            "mean": mean,
            "lower": float(pred["obs_ci_lower"].iloc[0]),
            "upper": float(pred["obs_ci_upper"].iloc[0]),
        }


def _span(col: Any) -> str:
    lo, hi = float(col.min()), float(col.max())
    return f"{lo:g}" if lo == hi else f"{lo:g}..{hi:g}"


def _num(x: float) -> str:
    return f"{x:.4g}" if x == 0 or 1e-3 <= abs(x) < 1e5 else f"{x:.3e}"


def _new_row(data: Any, values: Mapping[str, float | str], threshold: int) -> Any:
    import pandas as pd

    unknown = set(values) - set(COLUMNS)
    if unknown:
        raise _bad(
            f"unknown column(s) to predict at: {', '.join(sorted(unknown))} "
            f"(columns: {', '.join(COLUMNS)})"
        )
    missing = [
        c for c in ("P", "size") if c not in values and not (c == "size" and "bytes" in values)
    ]
    missing = [c for c in missing if data[c].nunique() > 1]
    if missing:  # else the first row's P would be used without a word
        raise _bad(
            f"give {' and '.join(missing)} to predict at (the rows have more than one value "
            f"of {' and '.join(missing)}): e.g. P=4096,size=8"
        )
    rec: dict[str, Any] = {c: data[c].iloc[0] for c in COLUMNS}  # defaults: the fitted group
    for k, v in values.items():
        rec[k] = v
    try:
        P = float(rec["P"])
        size = float(values.get("size", values.get("bytes", rec["size"])))
    except (TypeError, ValueError):
        raise _bad(f"P and size to predict at must be numbers: {values}") from None
    if not P >= 1 or not size >= 0 or not math.isfinite(P * size + P):
        raise _bad(f"cannot predict at P = {P}, size = {size}")
    rec.update(P=P, log2P=math.log2(P), big=1.0 if threshold < P else 0.0, size=size, bytes=size)
    if "group" not in values and ("algorithm" in values or "allocation" in values):
        rec["group"] = f"{rec['algorithm']}-{rec['allocation']}"
    return pd.DataFrame([rec])


def _prettify(term: str, threshold: int) -> str:
    for rx, rep in _PRETTY:
        if rx.match(term):
            return rx.sub(rep, term).replace("T]", f"{threshold}]")
    return term


def _rank_deficiency(X: Any, terms: list[str], df: Any) -> str | None:
    """Why the design matrix X (one column per term) has a smaller rank than it has columns, or
    None when every coefficient is determined by the rows. Columns are scaled to unit length
    first, so that bytes in millions and a 0/1 column are judged alike."""
    if X.size == 0:
        return None
    norms = np.linalg.norm(X, axis=0)
    scaled = X / np.where(norms > 0, norms, 1.0)
    rank = int(np.linalg.matrix_rank(scaled))
    if rank == X.shape[1]:
        return None
    # The terms of a dependency: leaving one out does not lower the rank.
    tied = [
        t
        for j, t in enumerate(terms)
        if int(np.linalg.matrix_rank(np.delete(scaled, j, 1))) == rank
    ]
    parts = []
    for j, t in enumerate(terms):
        col = X[:, j]
        if t in tied and t != "Intercept" and np.ptp(col) == 0:
            parts.append(f"{t} is {col[0]:g} in every row")
    if not parts:
        parts.append(f"{', '.join(tied)} are linearly dependent in these rows")
    spread = [
        f"{df[c].nunique()} distinct {c} ({', '.join(f'{v:g}' for v in sorted(df[c].unique())[:6])}"
        f"{', ...' if df[c].nunique() > 6 else ''})"
        for c in ("P", "size")
        if c in df.columns
    ]
    return f"rank {rank} of {X.shape[1]}: {'; '.join(parts)}; the rows have {' and '.join(spread)}"


def fit_frame(
    df: Any, formula: str, *, group: str = "", threshold: int = 128, stat: str = "median"
) -> FitResult:
    """Ordinary least squares of `formula` on the DataFrame `df` (see :func:`frame`)."""
    import statsmodels.formula.api as smf  # type: ignore[import-untyped]

    if "~" not in formula:
        raise _bad(f"formula '{formula}' has no '~' (example: latency ~ P + size)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tiny groups: statsmodels warns about kurtosis
            model = smf.ols(formula, data=df).fit()
    except Exception as e:  # patsy evaluates the user's formula: any failure is bad input
        why = (str(e).splitlines() or [type(e).__name__])[0]
        raise _bad(f"cannot fit '{formula}': {why}") from None
    n = int(model.nobs)
    deficient = _rank_deficiency(
        np.asarray(model.model.exog, dtype=float), [str(t) for t in model.params.index], df
    )
    if deficient:  # least squares would still print numbers: one of the many equally good fits
        raise _bad(
            f"'{formula}'{' for ' + group if group else ''}: the rows cannot tell its "
            f"{len(model.params)} coefficients apart ({deficient}); drop a term from the formula "
            "or add rows where it varies"
        )
    if n <= len(model.params):
        raise _bad(
            f"'{formula}'{' for ' + group if group else ''}: {n} rows cannot fit "
            f"{len(model.params)} coefficients (need more rows than coefficients)"
        )
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        se, tv, pv = model.bse, model.tvalues, model.pvalues
        coefs = [
            Coefficient(
                _prettify(str(t), threshold),
                float(model.params[t]),
                float(se[t]),
                float(tv[t]),
                float(pv[t]),
            )
            for t in model.params.index
        ]
        r2, ar2 = float(model.rsquared), float(model.rsquared_adj)
    measured = np.asarray(model.model.endog, dtype=float)
    return FitResult(
        formula,
        group,
        n,
        r2,
        ar2,
        coefs,
        threshold,
        stat,
        measured,
        np.asarray(model.fittedvalues, dtype=float),
        df,
        model,
    )


def fit(
    rows: Iterable[Any] | Any,
    model: str = "seed-p",
    *,
    stat: str = "median",
    threshold: int = 128,
    by: Sequence[str] | None = None,
    where: Mapping[str, str] | None = None,
) -> list[FitResult]:
    """Fit `model` (a name in MODELS or a formula) to result rows.

    `by` lists columns to fit separately for (default: ``group`` for seed-p, nothing otherwise);
    `where` keeps rows whose columns equal the given values (e.g. ``{"collective": "bcast"}``).
    """
    import pandas as pd

    df = rows if isinstance(rows, pd.DataFrame) else frame(rows, stat, threshold)
    for k, v in (where or {}).items():
        if k not in df.columns:
            raise _bad(f"unknown column '{k}' (columns: {', '.join(COLUMNS)})")
        if df[k].dtype.kind == "f":  # P, size, ...: compare as numbers ("8" selects 8.0)
            try:  # units' ASCII grammar: float() would take '٣', '８' and '1_0'
                df = df[df[k] == units.parse_float(v, f"column '{k}'")]
            except InvalidArgumentError:
                raise _bad(f"column '{k}' holds numbers, not '{v}'") from None
        else:
            df = df[df[k].astype(str) == str(v)]
    if df.empty:
        raise _bad(f"no rows left after selecting {dict(where or {})}")
    formula = MODELS.get(model, model)
    if by is None:
        by = ["group"] if model in PER_GROUP else []
    for k in by:
        if k not in df.columns:
            raise _bad(f"unknown column '{k}' to fit by (columns: {', '.join(COLUMNS)})")
    if not by:
        return [fit_frame(df, formula, threshold=threshold, stat=stat)]
    out = []
    for key, part in df.groupby(list(by), sort=True):
        keys = key if isinstance(key, tuple) else (key,)
        label = " / ".join(str(k) for k in keys)
        f = formula
        if model == "seed-p" and not (part["big"] > 0).any():
            f = "latency ~ 0 + P"  # no P above the threshold: the seed's by-node form
        out.append(fit_frame(part, f, group=label, threshold=threshold, stat=stat))
    return out


# ---- pictures --------------------------------------------------------------------------------


def _grid(n: int) -> tuple[Any, Any]:
    from collkit.plotting import new_figure

    cols = min(n, 3)
    rows = -(-n // cols)
    fig = new_figure(figsize=(4.2 * cols, 3.4 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes.flat


def plot_residuals(fits: Sequence[FitResult], path: str | Path | None = None) -> Any:
    """Residuals against fitted values, one panel per fit: the Figure (also written to `path`
    when given; the backend is left alone)."""
    fig, axes = _grid(len(fits))
    for ax, f in zip(axes, fits, strict=False):
        ax.scatter(f.fitted, f.residuals, s=8, alpha=0.7)
        ax.axhline(0.0, color="black", lw=0.8)
        ax.set_title(f.group or f.formula, fontsize=9)
        ax.set_xlabel("fitted latency (us)")
        ax.set_ylabel("residual (us)")
    return _save(fig, path)


def plot_predicted(fits: Sequence[FitResult], path: str | Path | None = None) -> Any:
    """Predicted against measured latency, one panel per fit, with the line y = x: the Figure
    (also written to `path` when given)."""
    fig, axes = _grid(len(fits))
    for ax, f in zip(axes, fits, strict=False):
        ax.scatter(f.measured, f.fitted, s=8, alpha=0.7)
        lo = float(min(f.measured.min(), f.fitted.min()))
        hi = float(max(f.measured.max(), f.fitted.max()))
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
        ax.set_title(f"{f.group or f.formula}  R² = {f.r_squared:.3f}", fontsize=9)
        ax.set_xlabel("measured latency (us)")
        ax.set_ylabel("predicted (us)")
    return _save(fig, path)


def _save(fig: Any, path: str | Path | None) -> Any:
    """The Figure, laid out, and written to `path` when given."""
    fig.tight_layout()
    if path is not None:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, dpi=110)
    return fig


# ---- model versus measurement ([Ruefenacht 2017] Figs. 12, 14, 15)


@dataclass
class Comparison:
    """Measured rows matched with predicted rows (simulated or analytic) on collective,
    algorithm, P and bytes; relative differences are (measured - predicted) / predicted."""

    keys: list[tuple[str, str, int, int]]
    measured_min: Any
    measured_median: Any
    predicted_min: Any
    predicted_median: Any
    unmatched: int

    @property
    def rel_min(self) -> Any:
        return (self.measured_min - self.predicted_min) / self.predicted_min

    @property
    def rel_median(self) -> Any:
        return (self.measured_median - self.predicted_median) / self.predicted_median

    def table(self) -> str:
        lines = [
            "| collective | algorithm | P | bytes | measured min | predicted | rel. diff min |"
            " measured median | predicted | rel. diff median |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for i, (c, a, P, b) in enumerate(self.keys):
            lines.append(
                f"| {c} | {a} | {P} | {b} | {_num(self.measured_min[i])} | "
                f"{_num(self.predicted_min[i])} | {self.rel_min[i]:+.1%} | "
                f"{_num(self.measured_median[i])} | {_num(self.predicted_median[i])} | "
                f"{self.rel_median[i]:+.1%} |"
            )
        return "\n".join(lines)


def compare(measured: Iterable[Any], predicted: Iterable[Any]) -> Comparison:
    """Pairs every measured row with the predicted row of the same collective, algorithm (by
    canonical name), P and bytes; where predictions of that key differ by allocation, the one
    with the measured row's allocation (a lone prediction predicts every allocation). A
    predicted row's min (median) predicts the measured min (median); where it has only one of
    them, that one predicts both."""
    pred: dict[tuple[str, str, int, int], dict[str, tuple[float, float]]] = {}
    for row in predicted:
        d = _row_dict(row)
        lo, med = float(d.get("min_us", math.nan)), float(d.get("median_us", math.nan))
        lo, med = (lo if math.isfinite(lo) else med), (med if math.isfinite(med) else lo)
        if math.isfinite(lo) and lo > 0:
            pred.setdefault(_key(d), {})[str(d.get("allocation", ""))] = (lo, med)
    keys, mm, md, pm, pd_ = [], [], [], [], []
    unmatched = 0
    for row in measured:
        d = _row_dict(row)
        k = _key(d)
        lo, med = float(d.get("min_us", math.nan)), float(d.get("median_us", math.nan))
        by_alloc = pred.get(k, {})
        p = by_alloc.get(str(d.get("allocation", "")))
        if p is None and len(by_alloc) == 1:
            p = next(iter(by_alloc.values()))
        if p is None or not (math.isfinite(lo) and math.isfinite(med)):
            unmatched += 1
            continue
        keys.append(k)
        mm.append(lo)
        md.append(med)
        pm.append(p[0])
        pd_.append(p[1])
    if not keys:
        raise _bad(
            "no measured row has a predicted row with the same collective, algorithm, P and bytes"
        )
    return Comparison(keys, np.array(mm), np.array(md), np.array(pm), np.array(pd_), unmatched)


def _key(d: Mapping[str, Any]) -> tuple[str, str, int, int]:
    try:
        return (str(d["collective"]), str(d["algorithm"]), int(d["P"]), int(d["bytes"]))
    except (KeyError, TypeError, ValueError) as e:
        raise _bad(f"result row without collective, algorithm, P or bytes: {e}") from None


def plot_comparison(c: Comparison, path: str | Path | None = None) -> Any:
    """Three panels: relative difference against P ([Ruefenacht 2017] Fig. 12), and measured against
    predicted for the minimum (Fig. 14) and the median (Fig. 15), coloured by size: the Figure
    (also written to `path` when given)."""
    from collkit.plotting import new_figure

    P = np.array([k[2] for k in c.keys], dtype=float)
    size = np.array([max(k[3], 1) for k in c.keys], dtype=float)
    fig = new_figure(figsize=(13.5, 3.8))
    axes = fig.subplots(1, 3)
    order = np.argsort(P)
    # Ratios, on a log axis: measured times can be 10^4 times a prediction (oversubscription).
    axes[0].scatter(P[order], (c.measured_min / c.predicted_min)[order], s=10, label="minimum")
    axes[0].scatter(P[order], (c.measured_median / c.predicted_median)[order], s=10, label="median")
    axes[0].axhline(1.0, color="black", lw=0.8)
    axes[0].set_xscale("log", base=2)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("P")
    axes[0].set_ylabel("measured / predicted (1 + relative difference)")
    axes[0].legend(fontsize=8)
    for ax, m, p, what in (
        (axes[1], c.measured_min, c.predicted_min, "minimum"),
        (axes[2], c.measured_median, c.predicted_median, "median"),
    ):
        sc = ax.scatter(p, m, c=np.log2(size), s=10, cmap="viridis")
        lo, hi = float(min(m.min(), p.min())), float(max(m.max(), p.max()))
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"predicted {what} (us)")
        ax.set_ylabel(f"measured {what} (us)")
        fig.colorbar(sc, ax=ax, label="log2(bytes)")
    return _save(fig, path)
