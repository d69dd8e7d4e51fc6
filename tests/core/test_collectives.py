"""One CollectiveSpec per collective (core/src/collective.cpp) is the only list of collectives:
the CLI, the docs, the schedule formats, bench and the verifier all read it, and no other file
names the collectives again."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import collkit
from collkit import _core, io
from collkit.cli import algorithms as cli_algorithms
from collkit.cli import main
from collkit.collectives import COLLECTIVES, ROOTED, buffer_elems, collective, collectives
from conftest import MPI_PENDING

ROOT = Path(__file__).resolve().parents[2]


def test_the_python_lists_are_the_core_table() -> None:
    assert tuple(c["name"] for c in _core.collectives()) == COLLECTIVES
    registered = {s["collective"] for s in collkit.algorithms()}
    assert registered <= set(COLLECTIVES)
    with pytest.raises(collkit.InvalidArgumentError, match="known: allreduce, reduce"):
        collective("neighbor_alltoall")


def test_cli_lists_every_collective_from_the_specs(capsys: pytest.CaptureFixture[str]) -> None:
    for name in COLLECTIVES:
        assert main(["algorithms", name, "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert {s["collective"] for s in listed} <= {name}
    assert main(["algorithms", "neighbor_alltoall"]) == 2
    assert ", ".join(COLLECTIVES) in capsys.readouterr().err  # an error: on stderr


def test_docs_have_a_section_per_spec_even_a_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = collectives()
    doc = cli_algorithms.markdown()
    assert re.findall(r"^## (\w+)$", doc, re.M) == list(COLLECTIVES)
    for c in specs:
        assert f"`{c['mpi']}`: {c['summary']}." in doc
    # A collective added to the table gets its section (with no algorithm yet) and nothing else.
    new: dict[str, Any] = dict(
        specs[0], name="neighbor_alltoall", mpi="MPI_Neighbor_alltoall", summary="s"
    )
    monkeypatch.setattr(cli_algorithms, "collectives", lambda: [*specs, new])
    section = "## neighbor_alltoall\n\n`MPI_Neighbor_alltoall`: s.\n\nNone yet."
    assert section in cli_algorithms.markdown()


def test_names_and_schedule_files_accept_exactly_the_specs() -> None:
    for name in COLLECTIVES:
        assert collkit.parse_name(f"{name}:x")["collective"] == name
    with pytest.raises(collkit.CollkitError, match=re.escape(", ".join(COLLECTIVES))):
        collkit.parse_name("neighbor_alltoall:x")


@pytest.mark.parametrize("spec", collectives(), ids=lambda c: c["name"])
def test_buffer_sizes_follow_the_spec(spec: dict[str, Any]) -> None:
    blocks = {"none": 0, "one": 1, "P": 5}
    name = spec["name"]
    root = 3 if spec["rooted"] else 0
    for buf in ("in", "out"):
        for rank in range(5):
            where = "at_root" if rank == root else "elsewhere"
            want = blocks[spec[buf][where]] * 7
            assert buffer_elems(name, buf, 5, 7, root, rank) == want
    # The verifier's structure pass reads the same sizes: a copy onto out[k:k+1] is in bounds
    # exactly when k < out's size, on the root and elsewhere alike.
    for rank in range(2):
        n_out = buffer_elems(name, "out", 2, 3, 0, rank)
        n_in = buffer_elems(name, "in", 2, 3, 0, rank)
        for k in (n_out - 1, n_out):
            ops = {r: "" for r in range(2)}
            if n_in and k >= 0:
                ops[rank] = f"  0: copy out[{k}:{k + 1}] = in[0:1]\n"
            text = (
                f'collective {name}\nalgorithm ""\nP 2\ncount 3\nelem_size 8\nroot 0\n'
                f"rank 0\n{ops[0]}rank 1\n{ops[1]}"
            )
            res = collkit.verify(io.from_text(text))
            bad = [d for d in res.diagnostics if d.kind == "bad_op"]
            if n_in and k >= 0:
                assert bool(bad) == (k >= n_out), (name, rank, k, res.summary())


def test_no_other_file_lists_the_collectives() -> None:
    """Adding a collective is one spec plus its algorithm files: no switch on the collective or
    hard-coded list of names anywhere else in the core, the verifier or the Python package."""
    listing = re.compile(r'"allreduce",\s*"reduce"|\(allreduce, reduce|"reduce",\s*"bcast"')
    for path in [*ROOT.joinpath("python", "collkit").rglob("*.py")]:
        assert not listing.search(path.read_text()), f"{path} lists collectives"
    switch = re.compile(r"Collective::(allreduce|reduce|bcast|alltoall|barrier)")
    spec_file = ROOT / "core" / "src" / "collective.cpp"
    # The MPI side too: its one table of calls (call_table.hpp) generates every switch there.
    for sub in ("core/src", "core/include", "python/src", "mpi/src", "mpi/tests"):
        for path in ROOT.joinpath(sub).rglob("*.[ch]pp"):
            if path == spec_file or path.name == "collective.hpp":
                continue
            # A default member initializer names one collective without choosing between them.
            text = path.read_text().replace("collective = Collective::allreduce;", "")
            hits = switch.findall(text)
            # GOAL files carry no collective: an imported plain GOAL schedule is a barrier; the
            # conformance check times one barrier call of its own; the bench driver's patterns
            # put a (collkit) barrier before each timed call.
            allowed = (
                {"barrier"} if path.name in ("goal.cpp", "conformance.cpp", "bench.cpp") else set()
            )
            assert set(hits) <= allowed, f"{path} switches on the collective: {hits}"
    assert tuple(c["name"] for c in collectives() if c["rooted"]) == ROOTED


def _split_top(text: str) -> list[str]:
    """`text` split at its commas outside parentheses, each part stripped."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    parts.append(cur.strip())
    return parts


def _params(text: str) -> list[tuple[str, str]]:
    """A C parameter list as (type, name) pairs, spaces normalised."""
    out = []
    for p in _split_top(text):
        m = re.fullmatch(r"(.*?[\s*])(\w+)", " ".join(p.split()))
        assert m, p
        out.append((m.group(1).replace(" *", "*").strip(), m.group(2)))
    return out


def call_table() -> dict[str, list[str]]:
    """The lines of the MPI side's one table of calls (mpi/src/call_table.hpp), by collective:
    its macro arguments (name, Name, counted, params, args, send, recv, op, root, in_place)."""
    text = (ROOT / "mpi" / "src" / "call_table.hpp").read_text().replace("\\\n", "\n")
    body = text[text.index("#define CK_COLLECTIVES(X, Count)") :]
    body = body[: body.index("\n\n")]
    lines: dict[str, list[str]] = {}
    at = 0
    while (start := body.find("X(", at)) >= 0:
        depth, end = 0, start + 1
        for end in range(start + 1, len(body)):
            depth += (body[end] == "(") - (body[end] == ")")
            if depth == 0:
                break
        args = _split_top(body[start + 2 : end])
        lines[args[0]] = args
        at = end
    return lines


def test_the_mpi_call_table_has_every_collective_once() -> None:
    """The C API, the interposition library and the programs' switches are generated from one
    table: a line for each collective of the core, in the core's order."""
    table = call_table()
    assert tuple(table) == tuple(c for c in COLLECTIVES if c not in MPI_PENDING)
    for name, args in table.items():
        assert len(args) == 10, (name, args)
        mpi = collective(name)["mpi"]
        assert f"MPI_{args[1]}" == mpi, (name, args[1], mpi)
        params = _params(args[3].strip("()"))
        assert [n for _, n in params] == _split_top(args[4].strip("()")), name
        assert args[2] == ("1" if any("Count" in t for t, _ in params) else "0"), name


def header_mismatches(header: str) -> list[str]:
    """Where the C header text `header` fails to declare a collective of the table as ck_<name>
    (its non-blocking form ck_i<name>, the request before the name, and its persistent form
    ck_<name>_init, an MPI_Info and the request before the name) with the table's parameters
    (counts as MPI_Count) and the algorithm name last."""
    flat = re.sub(r"/\*.*?\*/", " ", " ".join(header.split()))
    wrong = []
    for name, args in call_table().items():
        # Counts as MPI_Count; an irregular call's arrays as MPI 4's MPI_Count and MPI_Aint.
        types = {"Count": "MPI_Count", "const Count*": "const MPI_Count*"}
        types["const CK_DISPL(Count)*"] = "const MPI_Aint*"
        want = [(types.get(t, t), n) for t, n in _params(args[3].strip("()"))]
        name_last = ("const char*", "algorithm")
        forms = {
            name: [*want, name_last],
            f"i{name}": [*want, ("MPI_Request*", "request"), name_last],
            f"{name}_init": [*want, ("MPI_Info", "info"), ("MPI_Request*", "request"), name_last],
        }
        for fn, params in forms.items():
            m = re.search(rf"int ck_{fn}\(([^)]*)\);", flat)
            if not m or _params(m.group(1)) != params:
                wrong.append(fn)
    return wrong


def test_collkit_h_declares_every_collective_of_the_table() -> None:
    """collkit.h is written for its readers, and checked against the table."""
    header = (ROOT / "mpi" / "include" / "collkit.h").read_text()
    assert header_mismatches(header) == []
    # The check sees a changed parameter type, a renamed parameter and a missing declaration.
    assert header_mismatches(
        header.replace("MPI_Count count, MPI_Datatype", "int count, MPI_Datatype", 1)
    ) == ["allreduce"]
    assert header_mismatches(
        header.replace(
            "int root, MPI_Comm comm, const char* algorithm);\nint ck_bcast",
            "int rt, MPI_Comm comm, const char* algorithm);\nint ck_bcast",
        )
    ) == ["reduce"]
    assert header_mismatches(header.replace("int ck_barrier(", "int ck_barrier_(")) == ["barrier"]
    # ... and an irregular call's arrays of the wrong type (MPI 4's MPI_Aint displacements).
    assert header_mismatches(
        header.replace("const MPI_Aint* sdispls", "const int* sdispls", 1)
    ) == ["alltoallv"]
    assert header_mismatches(header.replace("int ck_ibcast(", "int ck_ibcast_(")) == ["ibcast"]
    assert header_mismatches(
        header.replace("MPI_Info info, MPI_Request* request", "MPI_Info info", 1)
    ) == ["allreduce_init"]
