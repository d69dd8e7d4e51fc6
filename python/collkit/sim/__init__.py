"""Simulate a collective: discrete-event engine over the per-rank DAGs of a Schedule.

Every time is in **nanoseconds** (floats), every size in bytes. Parameters accept numbers (ns) or
strings with units: ``"1.34us"``, ``"500ns"``, ``"2ms"``; per-byte costs accept ``"0.4ns"``,
``"0.4ns/B"`` or a bandwidth such as ``"2.5GB/s"``.

>>> import collkit
>>> r = collkit.simulate("allreduce:rd", P=8, bytes=8, model="postal", alpha="500ns")
>>> r.makespan
1500.0

Models (see docs/simulator.md for the exact semantics; their list and parameters come from the
core's table):

- ``postal``: ``alpha + n*beta`` per message, one message in flight per rank (Ruefenacht, Bull
  and Booth 2017, Eq. 1).
- ``pipelined-postal``: ``alpha_p + b*(alpha_r + n*beta)`` for b sends issued together (Eq. 3).
- ``logp``, ``loggp``, ``loggops``: ``L, o, g, G, O, S`` with the semantics of LogGOPSim.

Local costs in every model: ``gamma`` (ns per byte reduced), ``reduce_base`` (ns per reduce op),
``copy_beta`` (ns per byte copied); compute and sleep ops last their own duration.

One module per concern:

- ``options``: the models and their parameters (from the core), Model, the core's SimOptions
- ``spec``: the specs' grammar (the core's, ``kind(args)``)
- ``noise``: noise and skew distributions and their specs, noise files and traces
- ``topology``: topologies, each kind said once, and their specs
- ``result``: SimResult (the core's result with what was simulated) and ``simulated_row``, the
  one builder of simulated result rows
- ``run``: ``simulate``, ``simulate_file`` and ``simulate_row`` (a campaign's row: stored or
  simulated)
- ``memory``: ``memory_estimate``
"""

from __future__ import annotations

from collkit.sim.memory import memory_estimate, rank_memory_bytes
from collkit.sim.noise import Distribution, parse_distribution
from collkit.sim.options import (
    LOCAL_PARAMS,
    MODEL_NAMES,
    MODELS,
    PARAM_DOCS,
    PARAM_UNITS,
    PER_BYTE,
    Model,
    Time,
    param_help,
    parse_per_byte,
    parse_time,
)
from collkit.sim.result import SimResult, format_ns, simulated_row
from collkit.sim.run import simulate, simulate_file, simulate_row
from collkit.sim.topology import Topology, parse_topology, placed_topology

__all__ = [
    "LOCAL_PARAMS",
    "MODELS",
    "MODEL_NAMES",
    "PARAM_DOCS",
    "PARAM_UNITS",
    "PER_BYTE",
    "Distribution",
    "Model",
    "SimResult",
    "Time",
    "Topology",
    "format_ns",
    "memory_estimate",
    "param_help",
    "parse_distribution",
    "parse_per_byte",
    "parse_time",
    "parse_topology",
    "placed_topology",
    "rank_memory_bytes",
    "simulate",
    "simulate_file",
    "simulate_row",
    "simulated_row",
]
