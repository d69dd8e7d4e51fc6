"""The mpi4py face's reader of irregular buffer specifications (collkit.mpi.face._v_layout:
the counts and displacements of [buf, counts, displs, datatype]): any hostile value gives P
checked integers or a CollkitMPIError saying what is wrong, never another exception; what it
accepts stays inside the buffer (no MPI needed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collkit.mpi.face import CollkitMPIError, _v_layout

HOSTILE_SCALARS = st.one_of(
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.integers(min_value=-3, max_value=20),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
    st.binary(max_size=3),
)
HOSTILE = st.one_of(
    HOSTILE_SCALARS,
    st.lists(HOSTILE_SCALARS, max_size=6),
    st.lists(st.integers(min_value=-2, max_value=40), max_size=6),
    st.lists(st.integers(min_value=0, max_value=40), min_size=4, max_size=4).map(np.array),
    st.dictionaries(st.integers(0, 5), st.integers(0, 5), max_size=4),
)


@settings(max_examples=300, deadline=None)
@given(
    counts=HOSTILE,
    displs=st.one_of(st.none(), HOSTILE),
    P=st.integers(min_value=1, max_value=5),
    extent=st.sampled_from([0, 1, 4, 8, -8]),
    nbytes=st.integers(min_value=0, max_value=1 << 12),
)
def test_any_spec_is_read_or_refused_clearly(
    counts: Any, displs: Any, P: int, extent: int, nbytes: int
) -> None:
    try:
        c, d = _v_layout(counts, displs, P, extent, nbytes)
    except CollkitMPIError as e:
        assert str(e)
        return
    assert len(c) == len(d) == P
    assert all(isinstance(x, int) and x >= 0 for x in c + d)
    assert all((x + n) * extent <= nbytes for x, n in zip(d, c, strict=True) if n > 0)


def test_packed_displacements_and_clear_refusals() -> None:
    # No displacements: packed, as mpi4py computes them.
    assert _v_layout([2, 0, 3], None, 3, 8, 40) == ([2, 0, 3], [0, 2, 2])
    assert _v_layout(np.array([1, 1]), [3, 0], 2, 4, 16) == ([1, 1], [3, 0])
    for counts, displs, why in [
        ([1, 2], None, "2 counts for 3 ranks"),
        ([1, -1, 0], None, "negative"),
        ([1, 1, 1], [0, 1, 9], "reach past"),
        ("123", None, "sequence"),
        ([1.5, 1, 1], None, "integers"),
        ([True, 1, 1], None, "integers"),
        ([1 << 63, 0, 0], None, r"past 2\^62"),
    ]:
        with pytest.raises(CollkitMPIError, match=why):
            _v_layout(counts, displs, 3, 8, 24)
