"""Recursive multiplying ([Ruefenacht 2017]): its schedule language, the enumeration of every
schedule for
a process count, the pipelining postal model, b_opt, and a search that finds the model-optimal
schedule for N up to 10^6.

>>> from collkit.analysis import recmult
>>> recmult.plan("a8,a4", 32).shape
'factored'
>>> round(recmult.b_opt(4.0), 2)
3.95
"""

from collkit.analysis.recmult.enumerate import count_schedules, enumerate_schedules, factorisations
from collkit.analysis.recmult.model import (
    PipelinedPostal,
    b_opt,
    b_opt_brute,
    b_opt_eq5,
    eq4_cost,
    lambert_w0,
    parse_time,
    schedule_cost,
    stage_cost,
)
from collkit.analysis.recmult.rank import Ranked, rank_schedules
from collkit.analysis.recmult.search import SearchResult, search
from collkit.analysis.recmult.stages import Plan, Stage, plan, recursive_doubling

__all__ = [
    "PipelinedPostal",
    "Plan",
    "Ranked",
    "SearchResult",
    "Stage",
    "b_opt",
    "b_opt_brute",
    "b_opt_eq5",
    "count_schedules",
    "enumerate_schedules",
    "eq4_cost",
    "factorisations",
    "lambert_w0",
    "parse_time",
    "plan",
    "rank_schedules",
    "recursive_doubling",
    "schedule_cost",
    "search",
    "stage_cost",
]
