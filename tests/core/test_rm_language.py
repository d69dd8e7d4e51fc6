"""The recursive multiplying schedule language: valid schedules, impossible ones with errors that
say why, and hostile input that must end in a clear error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit
from collkit.analysis import recmult

SEED_EXAMPLES = [  # [Ruefenacht 2017]: §4.2, §6.2-6.3, Figs. 17-22
    ("a8,a4", 32, "factored"),
    ("a3,a2", 6, "factored"),
    ("a2,a2,a2", 8, "factored"),
    ("a8", 8, "factored"),
    ("c6m2,a2,a2,e6m2", 7, "split"),
    ("m1g2a3,n1g3a2", 7, "merged"),
    ("m3g2a2,n3g2a2", 7, "merged"),
]

TABLE2 = [  # [Ruefenacht 2017] Table 2: process count and the best schedule measured on ARCHER
    (4, "a4"),
    (6, "a6"),
    (8, "a2,a4"),
    (12, "a3,a4"),
    (16, "a4,a4"),
    (24, "a4,a6"),
    (32, "a8,a4"),
    (48, "a8,a6"),
    (64, "a8,a8"),
    (96, "a8,a3,a4"),
    (128, "a8,a4,a4"),
]


@pytest.mark.parametrize(("stages", "P", "shape"), SEED_EXAMPLES)
def test_seed_examples_parse(stages: str, P: int, shape: str) -> None:
    p = recmult.plan(stages, P)
    assert p.shape == shape
    assert p.text == stages
    assert collkit.Algorithm(f"allreduce:rm({stages})").canonical == f"allreduce:rm({stages})"


@pytest.mark.parametrize(("P", "stages"), TABLE2)
def test_table2_schedules_parse(P: int, stages: str) -> None:
    p = recmult.plan(stages, P)
    product = 1
    for s in p.stages:
        product *= s.base
    assert product == P


def test_hypercuboid_sizes() -> None:
    assert recmult.plan("c6m2,a2,a2,e6m2", 7).inner == 4
    assert recmult.plan("m1g2a3,n1g3a2", 7).inner == 6
    masks = [s.mask for s in recmult.plan("a8,a3,a4", 96).stages]
    assert masks == [1, 8, 24]


@pytest.mark.parametrize("P", [1, 2, 3, 5, 6, 8, 13, 64, 100])
def test_empty_list_is_recursive_doubling(P: int) -> None:
    rd = recmult.recursive_doubling(P)
    assert recmult.plan("", P).text == rd
    assert all(s.base == 2 for s in recmult.plan(rd, P).stages)
    pof2 = 1 << (P.bit_length() - 1)
    if pof2 == P:
        assert rd == ",".join(["a2"] * (pof2.bit_length() - 1))
    else:
        assert rd.startswith(f"c{2 * (P - pof2)}m2,") and rd.endswith(f",e{2 * (P - pof2)}m2")


IMPOSSIBLE = [
    ("a8,a3", 32, "multiply to 8·3, which does not divide 32"),
    ("a4,a4", 32, "multiply to 16, not 32: add a stage"),
    ("a7", 8, "does not divide 8"),
    ("c7m2,a2,a2,e7m2", 7, "threshold 7 is not divisible by the base 2"),
    ("c8m2,a2,a2,e8m2", 7, "exceeds the number of ranks"),
    ("e6m2,a2,a2", 7, "has no collapse before it"),
    ("c6m2,a2,a2", 7, "is never expanded: end the schedule with e6m2"),
    ("c6m2,a2,a2,e4m2", 7, "does not undo the collapse 'c6m2'"),
    ("a2,c6m2,a2,e6m2", 7, "must be the first stage"),
    ("c6m2,a2,e6m2,a2", 7, "must be the last stage"),
    ("c6m2,a3,e6m2", 7, "the collapse 'c6m2' leaves 4 ranks"),
    ("c2m2,c6m2,a2,a2,e6m2,e2m2", 7, "only one collapse/expand pair"),
    ("m1g3a3,n1g3a2", 7, "has 2 groups of 3 (6/3), not 3"),
    ("m1g2a3,n1g2a2", 7, "has 3 groups of 2 (6/2), not 2"),
    ("m1g2a3,n2g3a2", 7, "took 1"),
    ("m1g2a3", 7, "is never inverted"),
    ("n1g3a2,a3", 7, "has no merge before it"),
    ("c6m2,m1g2a3,n1g3a2,e6m2", 7, "not both"),
    ("m7g1a2,n7g1a2", 7, "leaves no internal ranks"),
    ("a1,a8", 8, "the base must be at least 2"),
    ("a2", 1, "does not divide 1"),
]


@pytest.mark.parametrize(("stages", "P", "why"), IMPOSSIBLE)
def test_impossible_schedules_say_why(stages: str, P: int, why: str) -> None:
    with pytest.raises(collkit.InvalidArgumentError) as e:
        recmult.plan(stages, P)
    msg = str(e.value)
    assert why in msg
    assert f"rm({stages})" in msg and "^" in msg and f"P = {P}" in msg
    with pytest.raises(collkit.InvalidArgumentError):
        collkit.generate(f"allreduce:rm({stages})", P=P, count=1)


@pytest.mark.parametrize(
    "token",
    ["x9", "a", "a-2", "c6", "c6m", "m1g2", "m1g2a", "a2b", "e6n2", "a99999999999", "A8", "ａ8"],
)
def test_malformed_stage_is_a_name_error(token: str) -> None:
    with pytest.raises(collkit.AlgorithmNameError) as e:
        recmult.plan(f"a2,{token}", 4)
    assert "is not aB, cTmB, eTmB, mRgGaB or nRgGaB" in str(e.value)


_token = st.one_of(
    st.text(alphabet="acemnga0123456789", max_size=12),
    st.builds(lambda k, n: f"{k}{n}", st.sampled_from("acemn"), st.integers(-5, 2**40)),
    st.builds(lambda t, b: f"c{t}m{b}", st.integers(0, 200), st.integers(0, 20)),
    st.builds(
        lambda r, g, b: f"m{r}g{g}a{b}", st.integers(0, 20), st.integers(0, 20), st.integers(0, 20)
    ),
    st.text(max_size=6),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_token, max_size=6), st.integers(1, 300))
def test_hostile_stage_lists_get_a_clear_error(tokens: list[str], P: int) -> None:
    try:
        p = recmult.plan(tokens, P)
    except collkit.CollkitError as e:
        assert str(e)
        return
    product = 1
    for s in p.stages:
        if s.kind not in ("collapse", "expand"):
            product *= s.base
    assert product == p.inner


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_hostile_names_get_a_clear_error(text: str) -> None:
    try:
        collkit.generate(f"allreduce:rm({text})", P=12, count=1)
    except collkit.CollkitError as e:
        assert str(e)
