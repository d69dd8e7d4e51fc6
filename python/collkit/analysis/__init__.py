"""Analysis of algorithm families, reading costs and parameter grids from the registry.

- `limits`: the count limit of [Rabenseifner] between a small- and a large-count protocol, from the
  closed-form costs the algorithms register (`Algorithm.cost`) or any other time source;
- `bruck`: the radix-r Bruck all-to-all counted (numC / numD of [Fan 2022]) and its radix choice;
- `recmult`: recursive multiplying allreduce ([Ruefenacht 2017]): stage languages, the postal model,
  exhaustive enumeration and search, timelines;
- `torus`: the torus shapes (`dims`) worth trying for the torus allreduces ([Jain 2010]).
"""

from __future__ import annotations

__all__ = ["bruck", "limits", "recmult", "torus"]
