"""Tuning: measure (or simulate) candidates, keep the winners that are real, write collkit's
table, MPICH's selection file and Open MPI's rules file (docs/tuning.md)."""

from collkit.tune.campaign import TuneOptions, candidates, measure, simulate_rows
from collkit.tune.select import Choice, Comparison, choose, compare, rules, size_ranges
from collkit.tune.table import Rule, Table, load, save, validate

__all__ = [
    "Choice",
    "Comparison",
    "Rule",
    "Table",
    "TuneOptions",
    "candidates",
    "choose",
    "compare",
    "load",
    "measure",
    "rules",
    "save",
    "simulate_rows",
    "size_ranges",
    "validate",
]
