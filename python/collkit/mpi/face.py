"""collkit's algorithms on mpi4py communicators.

    from mpi4py import MPI
    import numpy as np
    import collkit.mpi

    x = np.arange(1000.0)
    y = np.empty_like(x)
    collkit.mpi.Allreduce(MPI.COMM_WORLD, x, y, op=MPI.SUM, algorithm="allreduce:rm(a4)")

Each function takes the arguments of mpi4py's method of the same name, with the same buffer
conventions (a numpy array or any buffer; [buf, datatype], [buf, count, datatype],
[buf, (count, displ), datatype], [buf, count, displ, datatype]; MPI.IN_PLACE; None where MPI reads
nothing), plus `algorithm`: a collkit name of the matching collective, or "native" for the
MPI's own collective (mpi4py's call). The call goes to collkit's C API (mpi/include/collkit.h,
libcollkit_mpi, built once for the MPI mpi4py was built with) through mpi4py's handles.

A collkit error (a bad name, the wrong collective, a P the algorithm refuses) raises
CollkitMPIError with collkit's message; a call that collkit declines before communicating (the
decision is the same on every rank: collkit.h's ck_declined) goes to mpi4py's call instead.

`tuned(table)` routes a block of mpi4py code by a tuning table: inside it, the collectives of
mpi4py's communicators (comm.Allreduce(...), ...) run the algorithm the table picks for the
call's size and P, as the interposition library does for a C program.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from collkit.errors import CollkitError

# mpi4py is an optional dependency: imported on the first call, typed as Any here.
Comm = Any
BufSpec = Any


class CollkitMPIError(CollkitError):
    """A collkit error from a collective on a communicator (the C API's message)."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


@cache
def _MPI() -> Any:
    try:
        return importlib.import_module("mpi4py.MPI")
    except ImportError as e:
        raise CollkitMPIError(
            f"collkit.mpi's collectives need mpi4py ({e}): pip install mpi4py (built against "
            "the MPI you run with: MPICC=/path/to/mpicc pip install --no-binary mpi4py mpi4py)"
        ) from None


def _mpi_of_mpi4py() -> Any:
    """The collkit MPI object of the MPI mpi4py runs on: the siblings of the mpicc mpi4py was
    built with, else collkit's usual choice (find_mpi), else the MPI of the kind mpi4py runs on
    (find_mpi_of_kind: a binary mpi4py carries no mpicc), which must be the same
    implementation as the library mpi4py loaded."""
    from collkit.errors import UnsupportedError
    from collkit.mpi.find import find_mpi, find_mpi_of_kind, implementation

    MPI = _MPI()
    running = implementation(str(MPI.Get_library_version()))
    mpi4py = importlib.import_module("mpi4py")
    mpicc = str(mpi4py.get_config().get("mpicc", ""))
    d = Path(mpicc).parent if mpicc else None
    mpi = None
    if d is not None and (d / "mpiexec").exists():
        cxx = next((d / n for n in ("mpicxx", "mpic++") if (d / n).exists()), None)
        if cxx is not None:
            mpi = find_mpi(str(d / "mpiexec"), mpicxx=str(cxx))
            mpi.reason = f"the MPI mpi4py was built with ({mpicc})"
    if mpi is None:
        mpi = find_mpi()
    if type(mpi) is not running:
        with contextlib.suppress(UnsupportedError):
            mpi = find_mpi_of_kind(running.kind)
    if type(mpi) is not running:
        raise CollkitMPIError(
            f"mpi4py runs on {running.kind} but collkit found {mpi.describe()}: point MPIEXEC "
            "and MPICXX at the MPI mpi4py uses, or COLLKIT_MPI_LIB at a libcollkit_mpi.so "
            "built for it"
        )
    return mpi


_lock = threading.Lock()
_library: list[ctypes.CDLL] = []


def library() -> ctypes.CDLL:
    """libcollkit_mpi for the MPI mpi4py uses (COLLKIT_MPI_LIB names one explicitly), built on
    first use, its functions typed for this MPI's handle size."""
    with _lock:
        if _library:
            return _library[0]
        path = os.environ.get("COLLKIT_MPI_LIB")
        if not path:
            from collkit.mpi.programs import build

            path = str(build(_mpi_of_mpi4py(), ["libcollkit_mpi.so"]) / "libcollkit_mpi.so")
        MPI = _MPI()
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        # MPICH's handles are ints, Open MPI's pointers.
        h = ctypes.c_uint if MPI._sizeof(MPI.Comm) == 4 else ctypes.c_void_p
        p, n, s, i = ctypes.c_void_p, ctypes.c_longlong, ctypes.c_char_p, ctypes.c_int
        sig: dict[str, list[Any]] = {
            "ck_allreduce": [p, p, n, h, h, h, s],
            "ck_reduce": [p, p, n, h, h, i, h, s],
            "ck_bcast": [p, n, h, i, h, s],
            "ck_alltoall": [p, n, h, p, n, h, h, s],
            "ck_barrier": [h, s],
            "ck_allgather": [p, n, h, p, n, h, h, s],
            "ck_reduce_scatter_block": [p, p, n, h, h, h, s],
            "ck_gather": [p, n, h, p, n, h, i, h, s],
            "ck_scatter": [p, n, h, p, n, h, i, h, s],
        }
        for name, args in sig.items():
            f = getattr(lib, name)
            f.argtypes, f.restype = args, ctypes.c_int
        lib.ck_declined.argtypes, lib.ck_declined.restype = [ctypes.c_int], ctypes.c_int
        lib.ck_error_message.argtypes, lib.ck_error_message.restype = [], ctypes.c_char_p
        _library.append(lib)
        return lib


# ---- mpi4py's buffer specifications ------------------------------------------------------------


@dataclass
class _Buf:
    address: int | None  # None: NULL
    count: int  # elements of `datatype`
    datatype: Any  # an MPI.Datatype
    in_place: bool = False


def _is_in_place(obj: object) -> bool:
    return obj is _MPI().IN_PLACE


def _in_place_address() -> int:
    """MPI_IN_PLACE's value (MPICH: -1, Open MPI: 1): mpi4py 4's IN_PLACE converts to it."""
    return int(_MPI().IN_PLACE)


def _buffer(obj: Any) -> tuple[int, int, str]:
    """Address, bytes and typecode of a contiguous buffer (numpy array, bytearray, ...)."""
    import numpy as np

    arr = np.asarray(obj)
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        raise CollkitMPIError("buffer is not contiguous (pass a contiguous array)")
    return int(arr.ctypes.data), int(arr.nbytes), str(arr.dtype.char)


def _spec(obj: BufSpec, blocks: int = 1) -> _Buf:
    """A buffer specification as mpi4py takes it; the count is per block (of `blocks`)."""
    MPI = _MPI()
    if obj is None:
        return _Buf(None, 0, MPI.BYTE)
    if _is_in_place(obj):
        return _Buf(_in_place_address(), 0, MPI.BYTE, in_place=True)
    count: int | None = None
    displ = 0
    datatype = None
    if isinstance(obj, (list, tuple)):
        parts = list(obj)
        if not 1 <= len(parts) <= 4:
            raise CollkitMPIError(f"a buffer specification has 1 to 4 items, not {len(parts)}")
        buf, rest = parts[0], parts[1:]
        if rest and isinstance(rest[-1], MPI.Datatype):
            datatype = rest.pop()
        if len(rest) == 1 and isinstance(rest[0], (list, tuple)):
            count, displ = int(rest[0][0]), int(rest[0][1])
        elif len(rest) == 2:
            count, displ = int(rest[0]), int(rest[1])
        elif len(rest) == 1:
            count = int(rest[0])
        elif rest:
            raise CollkitMPIError(f"cannot read the buffer specification {obj!r}")
    else:
        buf = obj
    address, nbytes, code = _buffer(buf)
    if datatype is None:
        datatype = MPI._typedict.get(code)
        if datatype is None:
            raise CollkitMPIError(f"no MPI datatype for a buffer of type code '{code}'")
    extent = int(datatype.Get_extent()[1])
    if count is None:
        if extent <= 0 or nbytes % (extent * blocks):
            raise CollkitMPIError(
                f"a buffer of {nbytes} bytes is not a whole number of {blocks} block(s) of "
                f"{datatype.Get_name() or 'the datatype'} ({extent} bytes)"
            )
        count = nbytes // extent // blocks
    return _Buf(address + displ * extent, count, datatype)


def _h(obj: Any) -> int:
    return int(_MPI()._handleof(obj))


def _name(algorithm: str) -> bytes:
    return algorithm.encode()


def _call(fn: str, fallback: Callable[[], None], *args: Any) -> None:
    lib = library()
    rc = int(getattr(lib, fn)(*args))
    if rc == 0:
        return
    if lib.ck_declined(rc):
        fallback()
        return
    msg = lib.ck_error_message()
    raise CollkitMPIError((msg or b"").decode(errors="replace") or f"{fn}: MPI error {rc}", rc)


def _native(algorithm: str | None) -> bool:
    """Whether `algorithm` means the MPI's own call (None, "native", "allreduce:native")."""
    if algorithm is None:
        return True
    from collkit.algorithms import parse_row_name

    name = parse_row_name(algorithm)  # AlgorithmNameError with a caret if malformed
    if name.kind == "mpi":
        raise CollkitMPIError(
            f"'{algorithm}' is one of an MPI's own algorithms: those are forced through the "
            "environment before MPI starts (collkit bench shows how), not per call"
        )
    return name.kind == "native"


def _route(collective: str, comm: Comm, nbytes: int, algorithm: str | None) -> str | None:
    """The algorithm to run: the one given, or the tuned block's table's choice."""
    if algorithm is not None:
        return algorithm
    table = _tuning.table
    if table is None or not isinstance(comm, _routed_class()):
        return None
    algo = str(table.lookup(collective, comm.Get_size(), nbytes))
    key = (collective, algo)
    _routed_calls[key] = _routed_calls.get(key, 0) + 1
    return algo


def _op(op: Any) -> Any:
    return _MPI().SUM if op is None else op


def _nbytes(b: _Buf) -> int:
    return b.count * int(b.datatype.Get_size())


# ---- the nine collectives ----------------------------------------------------------------------


def _run(
    collective: str,
    comm: Comm,
    nbytes: int,
    algorithm: str | None,
    native: Callable[[], None],
    *args: Any,
) -> None:
    """ck_<collective>(*args, comm, algorithm) by collkit's algorithm (the one given, or the tuned
    block's choice), or `native`, the MPI's own call, where that is native or collkit declines."""
    algo = _route(collective, comm, nbytes, algorithm)
    if _native(algo):
        native()
        return
    assert algo is not None
    _call(f"ck_{collective}", native, *args, _h(comm), _name(algo))


def _reduction(
    collective: str,
    comm: Comm,
    sendbuf: BufSpec,
    recvbuf: BufSpec,
    op: Any,
    in_place_blocks: int,
    algorithm: str | None,
    native: Callable[[Any], None],
) -> None:
    """The reductions to every rank: recvbuf holds `in_place_blocks` blocks when sendbuf is
    MPI.IN_PLACE; op defaults to SUM."""
    op = _op(op)
    s = _spec(sendbuf)
    r = _spec(recvbuf, in_place_blocks if s.in_place else 1)
    args = (s.address, r.address, r.count, _h(r.datatype), _h(op))
    _run(collective, comm, _nbytes(r), algorithm, lambda: native(op), *args)


def Allreduce(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, op: Any = None, *, algorithm: str | None = None
) -> None:
    """MPI_Allreduce by collkit's `algorithm` (e.g. "allreduce:rm(a4)"); op defaults to SUM."""
    base = _base(comm)
    _reduction(
        "allreduce", comm, sendbuf, recvbuf, op, 1, algorithm,
        lambda op: base.Allreduce(sendbuf, recvbuf, op),
    )  # fmt: skip


def Reduce(
    comm: Comm,
    sendbuf: BufSpec,
    recvbuf: BufSpec,
    op: Any = None,
    root: int = 0,
    *,
    algorithm: str | None = None,
) -> None:
    """MPI_Reduce; recvbuf is read at the root only (None elsewhere)."""
    op = _op(op)
    s = _spec(sendbuf)
    r = _spec(recvbuf)
    data = r if s.in_place else s
    args = (s.address, r.address, data.count, _h(data.datatype), _h(op), root)
    native = lambda: _base(comm).Reduce(sendbuf, recvbuf, op, root)  # noqa: E731
    _run("reduce", comm, _nbytes(data), algorithm, native, *args)


def Bcast(comm: Comm, buf: BufSpec, root: int = 0, *, algorithm: str | None = None) -> None:
    """MPI_Bcast."""
    b = _spec(buf)
    native = lambda: _base(comm).Bcast(buf, root)  # noqa: E731
    _run("bcast", comm, _nbytes(b), algorithm, native, b.address, b.count, _h(b.datatype), root)


def Barrier(comm: Comm, *, algorithm: str | None = None) -> None:
    """MPI_Barrier."""
    _run("barrier", comm, 0, algorithm, lambda: _base(comm).Barrier())


def _pair(
    collective: str,
    comm: Comm,
    sendbuf: BufSpec,
    recvbuf: BufSpec,
    send_blocks: int,
    recv_blocks: int,
    root: int | None,
    algorithm: str | None,
    fallback: Callable[[], None],
) -> None:
    """The collectives with a send and a receive buffer of their own types."""
    s = _spec(sendbuf, send_blocks)
    r = _spec(recvbuf, recv_blocks)
    if s.in_place:  # the block is where recvbuf says
        s = _Buf(s.address, r.count, r.datatype, in_place=True)
    elif r.address is None:  # non-root of gather: recvbuf is not read
        r = _Buf(None, s.count, s.datatype)
    if r.in_place:  # scatter's root: its block stays in sendbuf
        r = _Buf(r.address, s.count, s.datatype, in_place=True)
    elif s.address is None:  # non-root of scatter
        s = _Buf(None, r.count, r.datatype)
    args: list[Any] = [s.address, s.count, _h(s.datatype), r.address, r.count, _h(r.datatype)]
    if root is not None:
        args.append(root)
    _run(collective, comm, _nbytes(r), algorithm, fallback, *args)


def Alltoall(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, *, algorithm: str | None = None
) -> None:
    """MPI_Alltoall: counts per destination / source (the buffers hold P blocks)."""
    P = comm.Get_size()
    native = lambda: _base(comm).Alltoall(sendbuf, recvbuf)  # noqa: E731
    _pair("alltoall", comm, sendbuf, recvbuf, P, P, None, algorithm, native)


def Allgather(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, *, algorithm: str | None = None
) -> None:
    """MPI_Allgather: recvbuf holds P blocks; MPI.IN_PLACE as sendbuf."""
    native = lambda: _base(comm).Allgather(sendbuf, recvbuf)  # noqa: E731
    _pair("allgather", comm, sendbuf, recvbuf, 1, comm.Get_size(), None, algorithm, native)


def Gather(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, root: int = 0, *, algorithm: str | None = None
) -> None:
    """MPI_Gather: recvbuf (P blocks) at the root only; MPI.IN_PLACE as the root's sendbuf."""
    recv = recvbuf if comm.Get_rank() == root else None
    native = lambda: _base(comm).Gather(sendbuf, recvbuf, root)  # noqa: E731
    _pair("gather", comm, sendbuf, recv, 1, comm.Get_size(), root, algorithm, native)


def Scatter(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, root: int = 0, *, algorithm: str | None = None
) -> None:
    """MPI_Scatter: sendbuf (P blocks) at the root only; MPI.IN_PLACE as the root's recvbuf."""
    send = sendbuf if comm.Get_rank() == root else None
    native = lambda: _base(comm).Scatter(sendbuf, recvbuf, root)  # noqa: E731
    _pair("scatter", comm, send, recvbuf, comm.Get_size(), 1, root, algorithm, native)


def Reduce_scatter_block(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, op: Any = None, *, algorithm: str | None = None
) -> None:
    """MPI_Reduce_scatter_block: each rank gets its block of the reduction of P blocks;
    MPI.IN_PLACE as sendbuf reads the P blocks from recvbuf."""
    base = _base(comm)
    _reduction(
        "reduce_scatter_block", comm, sendbuf, recvbuf, op, comm.Get_size(), algorithm,
        lambda op: base.Reduce_scatter_block(sendbuf, recvbuf, op),
    )  # fmt: skip


# ---- routing a block of mpi4py code by a tuning table --------------------------------------------


class _Tuning(threading.local):
    table: Any = None


_tuning = _Tuning()
# Calls routed by tuned() blocks: (collective, algorithm) -> count ("native" included).
_routed_calls: dict[tuple[str, str], int] = {}


def routed_calls() -> dict[tuple[str, str], int]:
    """How many calls tuned() blocks sent where, per (collective, algorithm)."""
    return dict(_routed_calls)


def _base(comm: Comm) -> Any:
    """The communicator as mpi4py's own class (its methods are mpi4py's, not routed ones)."""
    if isinstance(comm, _routed_class()):
        return _MPI().Intracomm(comm)
    return comm


_ROUTED: dict[str, Callable[..., None]] = {
    "Allreduce": Allreduce,
    "Reduce": Reduce,
    "Bcast": Bcast,
    "Barrier": Barrier,
    "Alltoall": Alltoall,
    "Allgather": Allgather,
    "Gather": Gather,
    "Scatter": Scatter,
    "Reduce_scatter_block": Reduce_scatter_block,
}


@cache
def _routed_class() -> Any:
    """An MPI.Intracomm whose nine collectives go through collkit (mpi4py's classes cannot
    be patched: they are immutable extension types), and whose Dup / Split / Split_type /
    Create stay routed."""
    MPI = _MPI()
    ns: dict[str, Any] = {"__doc__": "An mpi4py Intracomm routed by collkit.mpi.tuned()."}
    for name, fn in _ROUTED.items():

        def method(self: Any, *args: Any, _fn: Callable[..., None] = fn, **kw: Any) -> None:
            _fn(self, *args, **kw)

        method.__name__ = name
        ns[name] = method
    for name in ("Dup", "Split", "Split_type", "Create"):

        def derived(self: Any, *args: Any, _name: str = name, **kw: Any) -> Any:
            new = getattr(MPI.Intracomm, _name)(self, *args, **kw)
            return cls(new) if new != MPI.COMM_NULL else new

        derived.__name__ = name
        ns[name] = derived
    cls = type("RoutedIntracomm", (MPI.Intracomm,), ns)
    return cls


@contextlib.contextmanager
def tuned(table: Any, comm: Comm = None) -> Iterator[Any]:
    """Route a block of mpi4py code by a collkit tuning table (a path or a loaded Table).

    Inside the block, MPI.COMM_WORLD (or the `comm` given) is the same communicator in a class
    whose nine collectives (comm.Allreduce(...), ..., as mpi4py spells them) run the algorithm
    the table picks for the call's P and bytes, and the MPI's own where it picks none;
    communicators made from it (Dup, Split, ...) are routed too. Yields that communicator:

        with collkit.mpi.tuned("tune-results/collkit-tuning.json"):
            app(MPI.COMM_WORLD)        # unmodified mpi4py code
    """
    from collkit.tune.table import Table, load

    t = table if isinstance(table, Table) else load(str(table))
    MPI = _MPI()
    world = comm is None
    base = MPI.COMM_WORLD if world else comm
    if isinstance(base, MPI.Intercomm) or not isinstance(base, MPI.Intracomm):
        raise CollkitMPIError("collkit.mpi.tuned() routes intra-communicators only")
    routed = _routed_class()(base)
    old = _tuning.table
    _tuning.table = t
    if world:
        MPI.COMM_WORLD = routed
    try:
        yield routed
    finally:
        _tuning.table = old
        if world:
            MPI.COMM_WORLD = base
