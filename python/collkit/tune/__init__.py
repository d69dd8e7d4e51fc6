"""Tuning: measure (or simulate) candidates, keep the winners that are real, write collkit's
table, MPICH's selection file and Open MPI's rules file (docs/tuning.md).

``tune(TuneOptions(...))`` runs a campaign as `collkit tune` does and returns its TuneResult;
``check(options)`` makes its checks alone."""

from collkit.tune.campaign import TuneOptions, candidates, measure, simulate_rows
from collkit.tune.run import TunePlan, TuneResult, check, tune
from collkit.tune.select import Choice, Comparison, choose, compare, rules, size_ranges
from collkit.tune.table import Rule, Table, load, save, validate

__all__ = [
    "Choice",
    "Comparison",
    "Rule",
    "Table",
    "TuneOptions",
    "TunePlan",
    "TuneResult",
    "candidates",
    "check",
    "choose",
    "compare",
    "load",
    "measure",
    "rules",
    "save",
    "simulate_rows",
    "size_ranges",
    "tune",
    "validate",
]
