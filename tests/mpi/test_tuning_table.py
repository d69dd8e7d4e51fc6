"""The tuning table has one rule set: `collkit run` / `collkit tune` (collkit.tune.table) and the
interposition library (libcollkit_pmpi, through its check entry point) read a table with the
core's one reader and give the same verdict, message included: duplicate keys, integers past the
ranges, NaN, tables over 16 MiB, unknown keys, fractions where integers go, and rules whose
algorithm cannot run at their P."""

from __future__ import annotations

import ctypes
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collkit import _core
from collkit.errors import InvalidArgumentError
from collkit.tune import table as tt
from collkit.tune.table import Rule, load, parse

HEAD = '{"format": "collkit-tuning", "version": 1, '
RING = '{"collective": "allreduce", "P": [2, 8], "bytes": [0, 1024], "algorithm": "allreduce:ring"}'


def verdict_py(text: bytes, tmp: Path) -> tuple[bool, str]:
    f = tmp / "t.json"
    f.write_bytes(text)
    try:
        t = load(f)
    except InvalidArgumentError as e:
        return False, str(e).removeprefix(f"{f}: ")
    return True, str(len(t.rules))


@pytest.fixture(scope="module")
def library() -> ctypes.CDLL:
    from mpi_support import built, mpich_or_skip

    lib = ctypes.CDLL(str(built(mpich_or_skip()) / "libcollkit_pmpi.so"))
    lib.collkit_pmpi_check_table.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
    lib.collkit_pmpi_check_table.restype = ctypes.c_int
    return lib


def verdict_lib(lib: ctypes.CDLL, text: bytes, tmp: Path) -> tuple[bool, str]:
    f = tmp / "t.json"
    f.write_bytes(text)
    msg = ctypes.create_string_buffer(4096)
    n = lib.collkit_pmpi_check_table(str(f).encode(), msg, len(msg))
    return (n >= 0, str(n) if n >= 0 else msg.value.decode())


# Each case: what `collkit run` took or refused before, differently from the library.
CASES = {
    # Python took the last "rules" (one rule), the library the first (none).
    "duplicate key": (HEAD + f'"rules": [], "rules": [{RING}]}}', "given twice"),
    "duplicate rule key": (
        HEAD + '"rules": [{"collective": "allreduce", "collective": "bcast", "P": [2, 8], '
        '"bytes": [0, 8], "algorithm": "native"}]}',
        "given twice",
    ),
    # Python took any integer; the library dropped the table.
    "P past 2^64": (
        HEAD + '"rules": [{"collective": "allreduce", "P": [2, 36893488147419103232], '
        '"bytes": [0, 8], "algorithm": "allreduce:ring"}]}',
        '"P" must be [lo, hi]',
    ),
    "bytes past 2^62": (
        HEAD + '"rules": [{"collective": "allreduce", "P": [2, 4], '
        '"bytes": [0, 9223372036854775807], "algorithm": "allreduce:ring"}]}',
        '"bytes" must be [lo, hi]',
    ),
    # Python's json took NaN (not JSON); the library dropped the table.
    "NaN": (HEAD + '"rules": [' + RING[:-1] + ', "speedup": NaN}]}', "not valid JSON"),
    "Infinity": (HEAD + '"rules": [' + RING[:-1] + ', "speedup": -Infinity}]}', "not valid JSON"),
    # The library took keys and float ranges Python refused.
    "unknown rule key": (HEAD + '"rules": [' + RING[:-1] + ', "speed": 2}]}', "unknown keys"),
    "unknown table key": (HEAD + '"rulez": [], "rules": []}', "unknown keys"),
    "float range": (
        HEAD + '"rules": [{"collective": "allreduce", "P": [2.0, 4], "bytes": [0, 8], '
        '"algorithm": "allreduce:ring"}]}',
        '"P" must be [lo, hi]',
    ),
    "exponent range": (
        HEAD + '"rules": [{"collective": "allreduce", "P": [2, 4], "bytes": [0, 1e3], '
        '"algorithm": "allreduce:ring"}]}',
        '"bytes" must be [lo, hi]',
    ),
    "version 1.0": ('{"format": "collkit-tuning", "version": 1.0, "rules": []}', '"version"'),
    # The check ignored P: a staged rm whose stages multiply to 4 cannot run at P = 2.
    "rm at a P its stages do not divide": (
        HEAD + '"rules": [{"collective": "allreduce", "P": [2, 2], "bytes": [0, 8], '
        '"algorithm": "allreduce:rm(a2,a2)"}]}',
        "cannot run at any P of [2, 2]",
    ),
    "allgather:rm likewise": (
        HEAD + '"rules": [{"collective": "allgather", "P": [3, 3], "bytes": [0, 8], '
        '"algorithm": "allgather:rm(a2,a2)"}]}',
        "cannot run at any P of [3, 3]",
    ),
    "power of two only": (
        HEAD + '"rules": [{"collective": "reduce_scatter_block", "P": [3, 3], "bytes": [0, 8], '
        '"algorithm": "reduce_scatter_block:noncommutative"}]}',
        "needs P to be a power of two",
    ),
    # "block" (tune --block) is an integer 1 .. 10^6, nothing else.
    "block 0": (HEAD + '"block": 0, "rules": []}', '"block" must be an integer'),
    "block 2.0": (HEAD + '"block": 2.0, "rules": []}', '"block" must be an integer'),
    "block past the limit": (HEAD + '"block": 1000001, "rules": []}', '"block" must be'),
    "block a string": (HEAD + '"block": "16", "rules": []}', '"block" must be an integer'),
    "not UTF-8": (HEAD + '"mpi": "\xff", "rules": []}', "not UTF-8"),
    "lone surrogate": (HEAD + '"mpi": "\\udc00", "rules": []}', "lone surrogate"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_collkit_run_refuses_what_the_library_would_drop(name: str, tmp_path: Path) -> None:
    text, message = CASES[name]
    ok, why = verdict_py(text.encode("latin-1"), tmp_path)
    assert not ok and message in why, why


def test_a_table_over_16_MiB_is_refused(tmp_path: Path) -> None:
    text = (HEAD + '"rules": []' + " " * (16 << 20) + "}").encode()
    ok, why = verdict_py(text, tmp_path)
    assert not ok and "larger than 16 MiB" in why


def test_a_rule_for_an_exact_op_only_algorithm_loads_without_a_note() -> None:
    # allreduce:swing_lat runs at every P; which op a call has is each call's to decide (the
    # MPI side declines floating point for it), not the table's.
    t = parse(
        (
            HEAD + '"rules": [{"collective": "allreduce", "P": [2, 12], "bytes": [0, 64], '
            '"algorithm": "allreduce:swing_lat"}]}'
        ).encode()
    )
    assert len(t.rules) == 1 and not t.notes


def test_a_rule_that_runs_at_some_of_its_P_is_kept_with_a_note() -> None:
    t = parse(
        (
            HEAD + '"rules": [{"collective": "allreduce", "P": [2, 8], "bytes": [0, 8], '
            '"algorithm": "allreduce:rm(a2,a2)"}]}'
        ).encode()
    )
    assert len(t.rules) == 1 and len(t.notes) == 1
    assert "rule 0 (allreduce:rm(a2,a2)): cannot run at P = 2" in t.notes[0]
    assert "calls there go to the MPI" in t.notes[0]


def test_what_save_writes_reads_back(tmp_path: Path) -> None:
    rule = Rule("allreduce", (4, 4), (0, 1023), "allreduce:rd", speedup=1.5, ci95=(1.2, math.nan))
    tt.save(tt.Table(rules=[rule], mpi="MPICH 5 \u00e9"), tmp_path / "t.json")
    back = load(tmp_path / "t.json")
    assert back.mpi == "MPICH 5 \u00e9" and back.rules[0].P == (4, 4)
    assert back.rules[0].speedup == 1.5 and math.isnan(back.rules[0].ci95[1])


def test_the_timing_block_round_trips_and_defaults_to_single_calls(tmp_path: Path) -> None:
    tt.save(tt.Table(rules=[], block=16), tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text())["block"] == 16
    assert load(tmp_path / "t.json").block == 16
    (tmp_path / "old.json").write_text(HEAD + '"rules": []}')  # written before "block" existed
    assert load(tmp_path / "old.json").block == 1


def test_the_reader_knows_the_rule_fields_python_writes() -> None:
    assert set(_core.TUNING_RULE_KEYS) == set(Rule.__dataclass_fields__)


def test_the_library_gives_the_same_verdicts(library: ctypes.CDLL, tmp_path: Path) -> None:
    for name, (text, message) in CASES.items():
        lib = verdict_lib(library, text.encode("latin-1"), tmp_path)
        assert lib == verdict_py(text.encode("latin-1"), tmp_path), name
        assert not lib[0] and message in lib[1], (name, lib)
    big = (HEAD + '"rules": []' + " " * (16 << 20) + "}").encode()
    assert verdict_lib(library, big, tmp_path) == verdict_py(big, tmp_path)


# ---- random and hostile tables through both readers -----------------------------------------

ALGOS = ["native", "allreduce:rd", "allreduce:rm(a2,a2)", "allreduce:ring", "bcast:binomial",
         "allgather:rm(a3)", "x(y=1)", "allreduce:native", ""]  # fmt: skip
NUMBERS = st.one_of(
    st.integers(-3, 100),
    st.sampled_from([2**31, 2**31 + 1, 2**62, 2**62 + 1, 2**63, 2**64 + 5, 2**70]),
    st.floats(allow_nan=True, allow_infinity=True),
)
hyp_rule = st.dictionaries(
    st.sampled_from([*_core.TUNING_RULE_KEYS, "extra"]),
    st.one_of(
        st.sampled_from(["allreduce", "bcast", "allgather", "gather", "nope", *ALGOS]),
        st.lists(NUMBERS, min_size=0, max_size=3),
        NUMBERS,
        st.none(),
        st.sampled_from(["measured", "simulated"]),
    ),
)
good_rule = st.fixed_dictionaries(
    {
        "collective": st.just("allreduce"),
        "P": st.tuples(st.integers(1, 9), st.integers(0, 9)).map(lambda t: [t[0], t[0] + t[1]]),
        "bytes": st.tuples(st.integers(0, 2**40), st.integers(0, 9)).map(
            lambda t: [t[0], t[0] + t[1]]
        ),
        "algorithm": st.sampled_from(ALGOS[:4]),
    }
)


def dumps(doc: Any, dup: bool) -> str:
    text = json.dumps(doc)  # NaN and Infinity come out as the non-JSON words Python writes
    if dup and text.startswith("{"):
        text = '{"rules": [], ' + text[1:]
    return text


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rules=st.lists(st.one_of(good_rule, hyp_rule), max_size=4),
    version=st.sampled_from([1, 1.0, 2, "1"]),
    dup=st.booleans(),
    cut=st.integers(-1, 300),
    junk=st.sampled_from([b"", b"\x00", b"\xff", b"\xef\xbb\xbf", b"[[[", b'"\\ud800"', b"1e999"]),
    block=st.one_of(st.none(), NUMBERS, st.sampled_from(["1", [1], 1000000, 1000001])),
)
def test_random_and_hostile_tables_get_one_verdict(
    library: ctypes.CDLL,
    tmp_path: Path,
    rules: list[dict[str, Any]],
    version: Any,
    dup: bool,
    cut: int,
    junk: bytes,
    block: Any,
) -> None:
    doc: dict[str, Any] = {"format": "collkit-tuning", "version": version, "rules": rules}
    if block is not None:
        doc["block"] = block
    text = dumps(doc, dup).encode()
    if cut >= 0:
        text = text[:cut] + junk + text[cut:]
    py = verdict_py(text, tmp_path)
    assert verdict_lib(library, text, tmp_path) == py
