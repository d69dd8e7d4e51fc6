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

The non-blocking forms (Iallreduce ... Iscatter) take the same arguments and return an mpi4py
Request (a subclass whose Wait / Test / Get_status / Free are libcollkit_mpi's, the calls that
move collkit's runs); mpi4py's Request.Waitall / Waitany / Testall / ... complete it too.

`tuned(table)` routes a block of mpi4py code by a tuning table: inside it, the collectives of
every mpi4py intra-communicator (comm.Allreduce(...), comm.Iallreduce(...), ...), one taken
before the block included, run the algorithm the table picks for the call's size and P, as the
interposition library does for a C program.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import numbers
import os
import threading
from collections.abc import Callable, Iterable, Iterator
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
            # The irregular calls: counts as MPI_Count arrays, displacements as MPI_Aint arrays.
            "ck_allgatherv": [p, n, h, p, p, p, h, h, s],
            "ck_alltoallv": [p, p, p, h, p, p, p, h, h, s],
            "ck_gatherv": [p, n, h, p, p, p, h, i, h, s],
            "ck_scatterv": [p, p, p, h, p, n, h, i, h, s],
            "ck_reduce_scatter": [p, p, p, h, h, h, s],
            "ck_scan": [p, p, n, h, h, h, s],
            "ck_exscan": [p, p, n, h, h, h, s],
        }
        # The non-blocking forms: the blocking call's arguments, then the MPI_Request*.
        for name, args in list(sig.items()):
            sig["ck_i" + name.removeprefix("ck_")] = [*args[:-1], p, s]
        # The completion calls of the library (over PMPI_): they move collkit's runs, which the
        # MPI's own (those mpi4py calls) would wait on for ever.
        sig.update(
            {
                "MPI_Wait": [p, p],
                "MPI_Test": [p, p, p],
                "MPI_Request_get_status": [h, p, p],
                "MPI_Request_free": [p],
                "MPI_Waitall": [i, p, p],
                "MPI_Testall": [i, p, p, p],
                "MPI_Waitany": [i, p, p, p],
                "MPI_Testany": [i, p, p, p, p],
                "MPI_Waitsome": [i, p, p, p, p],
                "MPI_Testsome": [i, p, p, p, p],
            }
        )
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


def _call(fn: str, fallback: Callable[[], Any], *args: Any) -> Any:
    lib = library()
    rc = int(getattr(lib, fn)(*args))
    if rc == 0:
        return None
    if lib.ck_declined(rc):
        return fallback()
    raise _error(fn, rc)


def _error(fn: str, rc: int) -> CollkitMPIError:
    msg = library().ck_error_message()
    return CollkitMPIError((msg or b"").decode(errors="replace") or f"{fn}: MPI error {rc}", rc)


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
    """The algorithm to run: the one given, or, inside a tuned() block, the table's choice."""
    if algorithm is not None:
        return algorithm
    table = _tuning.table
    if table is None or not _routable(comm):
        return None
    if nbytes < 0:
        # No size every rank sees alike (a gatherv's or scatterv's other ranks, an alltoallv):
        # as for the interposition library, only a rule for every size covers the call.
        P = comm.Get_size()
        algo = next(
            (
                str(r.algorithm)
                for r in table.rules
                if r.collective == collective
                and r.P[0] <= P <= r.P[1]
                and r.bytes[0] == 0
                and r.bytes[1] >= _EVERY_SIZE
            ),
            "native",
        )
    else:
        algo = str(table.lookup(collective, comm.Get_size(), nbytes))
    key = (collective, algo)
    with _lock:
        _routed_calls[key] = _routed_calls.get(key, 0) + 1
    return algo


# A rule's largest size (collkit/tuning.hpp's kMaxRuleBytes): [0, this] is every size.
_EVERY_SIZE = 1 << 62


def _routable(comm: Comm) -> bool:
    MPI = _MPI()
    if _tuning.patched:
        return isinstance(comm, MPI.Intracomm)
    return isinstance(comm, _routed_class())


def _op(op: Any) -> Any:
    return _MPI().SUM if op is None else op


def _nbytes(b: _Buf) -> int:
    return b.count * int(b.datatype.Get_size())


# ---- the nine collectives, blocking and non-blocking ------------------------------------------


def _run(
    collective: str,
    comm: Comm,
    nbytes: int,
    algorithm: str | None,
    native: Callable[[], Any],
    *args: Any,
    keep: tuple[Any, ...] | None = None,
) -> Any:
    """ck_<collective>(*args, comm, algorithm) by collkit's algorithm (the one given, or the tuned
    block's choice), or `native`, the MPI's own call, where that is native or collkit declines.
    With `keep` (the buffers, held until the request completes), the non-blocking form
    ck_i<collective>, returning a Request."""
    algo = _route(collective, comm, nbytes, algorithm)
    if _native(algo):
        return native()
    assert algo is not None
    if keep is None:
        return _call(f"ck_{collective}", native, *args, _h(comm), _name(algo))
    req = _request_class()()
    rc = int(
        getattr(library(), f"ck_i{collective}")(
            *args, _h(comm), _MPI()._addressof(req), _name(algo)
        )
    )
    if rc != 0:
        if library().ck_declined(rc):
            return native()
        raise _error(f"ck_i{collective}", rc)
    req._collkit_buffers = keep
    return req


def _reduction(
    collective: str,
    comm: Comm,
    sendbuf: BufSpec,
    recvbuf: BufSpec,
    op: Any,
    in_place_blocks: int,
    algorithm: str | None,
    native: str,
    nonblocking: bool = False,
) -> Any:
    """The reductions to every rank: recvbuf holds `in_place_blocks` blocks when sendbuf is
    MPI.IN_PLACE; op defaults to SUM."""
    op = _op(op)
    s = _spec(sendbuf)
    r = _spec(recvbuf, in_place_blocks if s.in_place else 1)
    args = (s.address, r.address, r.count, _h(r.datatype), _h(op))
    call = lambda: _mpi4py(native)(comm, sendbuf, recvbuf, op)  # noqa: E731
    keep = (sendbuf, recvbuf, op) if nonblocking else None
    return _run(collective, comm, _nbytes(r), algorithm, call, *args, keep=keep)


def _reduce(
    comm: Comm,
    sendbuf: BufSpec,
    recvbuf: BufSpec,
    op: Any,
    root: int,
    algorithm: str | None,
    nonblocking: bool,
) -> Any:
    op = _op(op)
    s = _spec(sendbuf)
    r = _spec(recvbuf)
    data = r if s.in_place else s
    args = (s.address, r.address, data.count, _h(data.datatype), _h(op), root)
    name = "Ireduce" if nonblocking else "Reduce"
    native = lambda: _mpi4py(name)(comm, sendbuf, recvbuf, op, root)  # noqa: E731
    keep = (sendbuf, recvbuf, op) if nonblocking else None
    return _run("reduce", comm, _nbytes(data), algorithm, native, *args, keep=keep)


def _bcast(comm: Comm, buf: BufSpec, root: int, algorithm: str | None, nonblocking: bool) -> Any:
    b = _spec(buf)
    name = "Ibcast" if nonblocking else "Bcast"
    native = lambda: _mpi4py(name)(comm, buf, root)  # noqa: E731
    keep = (buf,) if nonblocking else None
    args = (b.address, b.count, _h(b.datatype), root)
    return _run("bcast", comm, _nbytes(b), algorithm, native, *args, keep=keep)


def _pair(
    collective: str,
    comm: Comm,
    sendbuf: BufSpec,
    recvbuf: BufSpec,
    send_blocks: int,
    recv_blocks: int,
    root: int | None,
    algorithm: str | None,
    native: str,
    nonblocking: bool = False,
) -> Any:
    """The collectives with a send and a receive buffer of their own types. The MPI's own call
    gets the buffers as the user gave them; collkit reads the root's only where MPI does."""
    rank = comm.Get_rank()
    send = None if collective == "scatter" and rank != root else sendbuf
    recv = None if collective == "gather" and rank != root else recvbuf
    s = _spec(send, send_blocks)
    r = _spec(recv, recv_blocks)
    if s.in_place:  # the block is where recvbuf says
        s = _Buf(s.address, r.count, r.datatype, in_place=True)
    elif r.address is None:  # non-root of gather: recvbuf is not read
        r = _Buf(None, s.count, s.datatype)
    if r.in_place:  # scatter's root: its block stays in sendbuf
        r = _Buf(r.address, s.count, s.datatype, in_place=True)
    elif s.address is None:  # non-root of scatter
        s = _Buf(None, r.count, r.datatype)
    args: list[Any] = [s.address, s.count, _h(s.datatype), r.address, r.count, _h(r.datatype)]
    extra = () if root is None else (root,)
    args += extra
    call = lambda: _mpi4py(native)(comm, sendbuf, recvbuf, *extra)  # noqa: E731
    keep = (sendbuf, recvbuf) if nonblocking else None
    return _run(collective, comm, _nbytes(r), algorithm, call, *args, keep=keep)


def Allreduce(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, op: Any = None, *, algorithm: str | None = None
) -> None:
    """MPI_Allreduce by collkit's `algorithm` (e.g. "allreduce:rm(a4)"); op defaults to SUM."""
    _reduction("allreduce", comm, sendbuf, recvbuf, op, 1, algorithm, "Allreduce")


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
    _reduce(comm, sendbuf, recvbuf, op, root, algorithm, False)


def Bcast(comm: Comm, buf: BufSpec, root: int = 0, *, algorithm: str | None = None) -> None:
    """MPI_Bcast."""
    _bcast(comm, buf, root, algorithm, False)


def Barrier(comm: Comm, *, algorithm: str | None = None) -> None:
    """MPI_Barrier."""
    _run("barrier", comm, 0, algorithm, lambda: _mpi4py("Barrier")(comm))


def Alltoall(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, *, algorithm: str | None = None
) -> None:
    """MPI_Alltoall: counts per destination / source (the buffers hold P blocks)."""
    P = comm.Get_size()
    _pair("alltoall", comm, sendbuf, recvbuf, P, P, None, algorithm, "Alltoall")


def Allgather(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, *, algorithm: str | None = None
) -> None:
    """MPI_Allgather: recvbuf holds P blocks; MPI.IN_PLACE as sendbuf."""
    P = comm.Get_size()
    _pair("allgather", comm, sendbuf, recvbuf, 1, P, None, algorithm, "Allgather")


def Gather(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, root: int = 0, *, algorithm: str | None = None
) -> None:
    """MPI_Gather: recvbuf (P blocks) at the root only; MPI.IN_PLACE as the root's sendbuf."""
    _pair("gather", comm, sendbuf, recvbuf, 1, comm.Get_size(), root, algorithm, "Gather")


def Scatter(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, root: int = 0, *, algorithm: str | None = None
) -> None:
    """MPI_Scatter: sendbuf (P blocks) at the root only; MPI.IN_PLACE as the root's recvbuf."""
    _pair("scatter", comm, sendbuf, recvbuf, comm.Get_size(), 1, root, algorithm, "Scatter")


def Reduce_scatter_block(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, op: Any = None, *, algorithm: str | None = None
) -> None:
    """MPI_Reduce_scatter_block: each rank gets its block of the reduction of P blocks;
    MPI.IN_PLACE as sendbuf reads the P blocks from recvbuf."""
    P = comm.Get_size()
    _reduction(
        "reduce_scatter_block", comm, sendbuf, recvbuf, op, P, algorithm, "Reduce_scatter_block"
    )


# ---- the irregular collectives (blocking) ------------------------------------------------------


@dataclass
class _VBuf:
    """A buffer of P blocks as mpi4py's v calls take it: block b holds counts[b] elements of
    datatype at displs[b] extents (packed where mpi4py's spec gives no displacements)."""

    address: int | None
    counts: Any  # ctypes MPI_Count array (None: not read on this rank)
    displs: Any  # ctypes MPI_Aint array
    datatype: Any
    in_place: bool = False


def _vspec(obj: BufSpec, P: int) -> _VBuf:
    """[buf, counts, displs, datatype], [buf, (counts, displs), datatype], [buf, counts,
    datatype] (packed), [buf, counts] (the array's type): mpi4py's conventions."""
    MPI = _MPI()
    if obj is None:
        return _VBuf(None, None, None, MPI.BYTE)
    if _is_in_place(obj):
        return _VBuf(_in_place_address(), None, None, MPI.BYTE, in_place=True)
    if not isinstance(obj, (list, tuple)) or not 2 <= len(obj) <= 4:
        raise CollkitMPIError(
            "a v buffer specification is [buf, counts, displs, datatype] (or [buf, counts], "
            f"[buf, counts, datatype], [buf, (counts, displs), datatype]), not {obj!r}"
        )
    parts = list(obj)
    buf, rest = parts[0], parts[1:]
    datatype = rest.pop() if rest and isinstance(rest[-1], MPI.Datatype) else None
    displs: Any = None
    if len(rest) == 1 and isinstance(rest[0], tuple) and len(rest[0]) == 2:
        counts, displs = rest[0]
    elif len(rest) == 2:
        counts, displs = rest
    elif len(rest) == 1:
        counts = rest[0]
    else:
        raise CollkitMPIError(f"cannot read the buffer specification {obj!r}")
    address, nbytes, code = _buffer(buf)
    if datatype is None:
        datatype = MPI._typedict.get(code)
        if datatype is None:
            raise CollkitMPIError(f"no MPI datatype for a buffer of type code '{code}'")
    counts, displs = _v_layout(counts, displs, P, int(datatype.Get_extent()[1]), nbytes)
    return _VBuf(
        address,
        (ctypes.c_longlong * P)(*counts),
        (ctypes.c_ssize_t * P)(*displs),
        datatype,
    )


def _int_list(what: str, v: object, P: int) -> list[int]:
    """P integers (Python's or numpy's, below 2^62) from a sequence, or CollkitMPIError."""
    if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
        raise CollkitMPIError(f"{what} must be a sequence of {P} integers, not {v!r:.60}")
    out = []
    for x in v:
        if isinstance(x, bool) or not isinstance(x, numbers.Integral):
            raise CollkitMPIError(f"{what} must be integers, not {x!r:.40}")
        if not -(1 << 62) < int(x) < 1 << 62:
            raise CollkitMPIError(f"{what}: {int(x)} is past 2^62")
        out.append(int(x))
    if len(out) != P:
        raise CollkitMPIError(f"{len(out)} {what} for {P} ranks")
    return out


def _v_layout(
    counts: object, displs: object, P: int, extent: int, nbytes: int
) -> tuple[list[int], list[int]]:
    """A v buffer's counts and displacements (None: packed) as P integers each, checked against
    the buffer's `nbytes` (elements of `extent` bytes); CollkitMPIError says what is wrong."""

    c = _int_list("counts", counts, P)
    if any(x < 0 for x in c):
        raise CollkitMPIError(f"a count is negative: {c!r:.80}")
    if displs is None:  # packed, as mpi4py computes them
        d, at = [], 0
        for x in c:
            d.append(at)
            at += x
    else:
        d = _int_list("displacements", displs, P)
    end = max(((x + n) * extent for x, n in zip(d, c, strict=True) if n > 0), default=0)
    if any(x < 0 for x in d) or end > nbytes:
        raise CollkitMPIError(
            f"the counts and displacements reach past the buffer's {nbytes} bytes (or are negative)"
        )
    return c, d


def _vnbytes(v: _VBuf) -> int:
    return 0 if v.counts is None else sum(v.counts) * int(v.datatype.Get_size())


def Allgatherv(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, *, algorithm: str | None = None
) -> None:
    """MPI_Allgatherv: recvbuf is [buf, counts, displs, datatype]; MPI.IN_PLACE as sendbuf."""
    r = _vspec(recvbuf, comm.Get_size())
    s = _spec(sendbuf)
    args = (s.address, s.count, _h(s.datatype), r.address, r.counts, r.displs, _h(r.datatype))
    call = lambda: _mpi4py("Allgatherv")(comm, sendbuf, recvbuf)  # noqa: E731
    _run("allgatherv", comm, _vnbytes(r), algorithm, call, *args)


def Alltoallv(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, *, algorithm: str | None = None
) -> None:
    """MPI_Alltoallv: both buffers [buf, counts, displs, datatype]; MPI.IN_PLACE as sendbuf."""
    P = comm.Get_size()
    r = _vspec(recvbuf, P)
    s = _vspec(sendbuf, P)
    args: tuple[Any, ...] = (s.address, s.counts, s.displs, _h(s.datatype))
    args += (r.address, r.counts, r.displs, _h(r.datatype))
    call = lambda: _mpi4py("Alltoallv")(comm, sendbuf, recvbuf)  # noqa: E731
    _run("alltoallv", comm, -1, algorithm, call, *args)


def Gatherv(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, root: int = 0, *, algorithm: str | None = None
) -> None:
    """MPI_Gatherv: recvbuf [buf, counts, displs, datatype] at the root only (None elsewhere);
    MPI.IN_PLACE as the root's sendbuf."""
    at_root = comm.Get_rank() == root
    r = _vspec(recvbuf if at_root else None, comm.Get_size())
    s = _spec(sendbuf)
    args = (s.address, s.count, _h(s.datatype), r.address, r.counts, r.displs, _h(r.datatype))
    call = lambda: _mpi4py("Gatherv")(comm, sendbuf, recvbuf, root)  # noqa: E731
    _run("gatherv", comm, -1, algorithm, call, *args, root)


def Scatterv(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, root: int = 0, *, algorithm: str | None = None
) -> None:
    """MPI_Scatterv: sendbuf [buf, counts, displs, datatype] at the root only (None elsewhere);
    MPI.IN_PLACE as the root's recvbuf."""
    at_root = comm.Get_rank() == root
    s = _vspec(sendbuf if at_root else None, comm.Get_size())
    r = _spec(recvbuf)
    args = (s.address, s.counts, s.displs, _h(s.datatype), r.address, r.count, _h(r.datatype))
    call = lambda: _mpi4py("Scatterv")(comm, sendbuf, recvbuf, root)  # noqa: E731
    _run("scatterv", comm, -1, algorithm, call, *args, root)


def Reduce_scatter(
    comm: Comm,
    sendbuf: BufSpec,
    recvbuf: BufSpec,
    recvcounts: Any = None,
    op: Any = None,
    *,
    algorithm: str | None = None,
) -> None:
    """MPI_Reduce_scatter: rank r gets recvcounts[r] elements of the reduction of everyone's
    sendbuf (sum(recvcounts) elements; MPI.IN_PLACE reads them from recvbuf); op defaults to
    SUM. recvcounts defaults to recvbuf's size on every rank, as mpi4py's does."""
    op = _op(op)
    P = comm.Get_size()
    s = _spec(sendbuf)
    r = _spec(recvbuf)
    if recvcounts is None:
        recvcounts = comm.allgather(r.count)
    counts = _int_list("recvcounts", recvcounts, P)
    if any(c < 0 for c in counts):
        raise CollkitMPIError(f"recvcounts must be {P} counts >= 0, not {counts!r:.80}")
    arr = (ctypes.c_longlong * P)(*counts)
    args = (s.address, r.address, arr, _h(r.datatype), _h(op))
    call = lambda: _mpi4py("Reduce_scatter")(comm, sendbuf, recvbuf, counts, op)  # noqa: E731
    nbytes = sum(counts) * int(r.datatype.Get_size())
    _run("reduce_scatter", comm, nbytes, algorithm, call, *args)


def Scan(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, op: Any = None, *, algorithm: str | None = None
) -> None:
    """MPI_Scan: rank r gets the reduction of ranks 0..r's sendbuf; op defaults to SUM."""
    _reduction("scan", comm, sendbuf, recvbuf, op, 1, algorithm, "Scan")


def Exscan(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, op: Any = None, *, algorithm: str | None = None
) -> None:
    """MPI_Exscan: rank r gets the reduction of ranks 0..r-1's sendbuf (rank 0's recvbuf is
    undefined); op defaults to SUM."""
    _reduction("exscan", comm, sendbuf, recvbuf, op, 1, algorithm, "Exscan")


# The non-blocking forms (ck_i<coll>): each returns a Request, a subclass of mpi4py's, to
# complete with its Wait / Test or mpi4py's Request.Waitall ... (as for mpi4py's own call); the
# buffers must not be touched until then. A call that collkit declines, or "native", returns
# mpi4py's own call's request.


def Iallreduce(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, op: Any = None, *, algorithm: str | None = None
) -> Any:
    """MPI_Iallreduce: Allreduce's arguments; returns the Request."""
    return _reduction("allreduce", comm, sendbuf, recvbuf, op, 1, algorithm, "Iallreduce", True)


def Ireduce(
    comm: Comm,
    sendbuf: BufSpec,
    recvbuf: BufSpec,
    op: Any = None,
    root: int = 0,
    *,
    algorithm: str | None = None,
) -> Any:
    """MPI_Ireduce: Reduce's arguments; returns the Request."""
    return _reduce(comm, sendbuf, recvbuf, op, root, algorithm, True)


def Ibcast(comm: Comm, buf: BufSpec, root: int = 0, *, algorithm: str | None = None) -> Any:
    """MPI_Ibcast: Bcast's arguments; returns the Request."""
    return _bcast(comm, buf, root, algorithm, True)


def Ibarrier(comm: Comm, *, algorithm: str | None = None) -> Any:
    """MPI_Ibarrier; returns the Request."""
    native = lambda: _mpi4py("Ibarrier")(comm)  # noqa: E731
    return _run("barrier", comm, 0, algorithm, native, keep=())


def Ialltoall(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, *, algorithm: str | None = None
) -> Any:
    """MPI_Ialltoall: Alltoall's arguments; returns the Request."""
    P = comm.Get_size()
    return _pair("alltoall", comm, sendbuf, recvbuf, P, P, None, algorithm, "Ialltoall", True)


def Iallgather(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, *, algorithm: str | None = None
) -> Any:
    """MPI_Iallgather: Allgather's arguments; returns the Request."""
    P = comm.Get_size()
    return _pair("allgather", comm, sendbuf, recvbuf, 1, P, None, algorithm, "Iallgather", True)


def Igather(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, root: int = 0, *, algorithm: str | None = None
) -> Any:
    """MPI_Igather: Gather's arguments; returns the Request."""
    P = comm.Get_size()
    return _pair("gather", comm, sendbuf, recvbuf, 1, P, root, algorithm, "Igather", True)


def Iscatter(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, root: int = 0, *, algorithm: str | None = None
) -> Any:
    """MPI_Iscatter: Scatter's arguments; returns the Request."""
    P = comm.Get_size()
    return _pair("scatter", comm, sendbuf, recvbuf, P, 1, root, algorithm, "Iscatter", True)


def Ireduce_scatter_block(
    comm: Comm, sendbuf: BufSpec, recvbuf: BufSpec, op: Any = None, *, algorithm: str | None = None
) -> Any:
    """MPI_Ireduce_scatter_block: Reduce_scatter_block's arguments; returns the Request."""
    P = comm.Get_size()
    return _reduction(
        "reduce_scatter_block", comm, sendbuf, recvbuf, op, P, algorithm,
        "Ireduce_scatter_block", True,
    )  # fmt: skip


# ---- completing collkit's requests ------------------------------------------------------------
#
# collkit's runs move only inside the completion calls of libcollkit_mpi (MPI_Wait ... over
# PMPI_). mpi4py's Request methods call the MPI's own, bound when mpi4py was loaded, which would
# wait for ever on a collkit request. So collkit's requests are a subclass whose Wait / Test /
# Get_status / Free are libcollkit_mpi's, and mpi4py's class-level Waitall / Testall / Waitany /
# Testany / Waitsome / Testsome go through libcollkit_mpi when a collkit request is among them.


def _handle_type() -> Any:
    return ctypes.c_uint if _MPI()._sizeof(_MPI().Request) == 4 else ctypes.c_void_p


def _statuses(n: int) -> Any:
    return (ctypes.c_byte * (max(n, 1) * int(_MPI()._sizeof(_MPI().Status))))()


def _copy_status(raw: Any, index: int, status: Any) -> None:
    if status is not None:
        size = int(_MPI()._sizeof(_MPI().Status))
        ctypes.memmove(_MPI()._addressof(status), ctypes.addressof(raw) + index * size, size)


def _check(fn: str, rc: int) -> None:
    if rc != 0:
        raise _error(fn, rc)


class _Requests:
    """A list of mpi4py requests as an MPI_Request array for libcollkit_mpi, and back."""

    def __init__(self, requests: Any) -> None:
        self.objs = list(requests) if requests is not None else []
        h = _handle_type()
        self.array = (h * max(len(self.objs), 1))()
        for k, r in enumerate(self.objs):
            self.array[k] = int(_MPI()._handleof(r)) if r is not None else 0
        self.n = len(self.objs)

    def back(self) -> None:
        h = _handle_type()
        for k, r in enumerate(self.objs):
            if r is not None:
                h.from_address(_MPI()._addressof(r)).value = self.array[k] or 0


def _completion(requests: Any) -> tuple[_Requests, Any]:
    reqs = _Requests(requests)
    return reqs, _statuses(reqs.n)


def _fill(raw: Any, statuses: Any, n: int) -> None:
    if statuses is not None:
        for k in range(min(n, len(statuses))):
            _copy_status(raw, k, statuses[k])


def _ck_waitall(requests: Any, statuses: Any = None) -> bool:
    reqs, raw = _completion(requests)
    rc = int(library().MPI_Waitall(reqs.n, reqs.array, raw))
    reqs.back()
    _check("MPI_Waitall", rc)
    _fill(raw, statuses, reqs.n)
    return True


def _ck_testall(requests: Any, statuses: Any = None) -> bool:
    reqs, raw = _completion(requests)
    flag = ctypes.c_int(0)
    rc = int(library().MPI_Testall(reqs.n, reqs.array, ctypes.byref(flag), raw))
    reqs.back()
    _check("MPI_Testall", rc)
    if flag.value:
        _fill(raw, statuses, reqs.n)
    return bool(flag.value)


def _ck_waitany(requests: Any, status: Any = None) -> int:
    reqs, raw = _completion(requests)
    index = ctypes.c_int(0)
    rc = int(library().MPI_Waitany(reqs.n, reqs.array, ctypes.byref(index), raw))
    reqs.back()
    _check("MPI_Waitany", rc)
    _copy_status(raw, 0, status)
    return int(index.value)


def _ck_testany(requests: Any, status: Any = None) -> tuple[int, bool]:
    reqs, raw = _completion(requests)
    index, flag = ctypes.c_int(0), ctypes.c_int(0)
    rc = int(
        library().MPI_Testany(reqs.n, reqs.array, ctypes.byref(index), ctypes.byref(flag), raw)
    )
    reqs.back()
    _check("MPI_Testany", rc)
    if flag.value:
        _copy_status(raw, 0, status)
    return int(index.value), bool(flag.value)


def _ck_some(name: str, requests: Any, statuses: Any = None) -> list[int] | None:
    reqs, raw = _completion(requests)
    out = ctypes.c_int(0)
    indices = (ctypes.c_int * max(reqs.n, 1))()
    rc = int(getattr(library(), name)(reqs.n, reqs.array, ctypes.byref(out), indices, raw))
    reqs.back()
    _check(name, rc)
    if out.value == int(_MPI().UNDEFINED):
        return None
    done = [int(indices[k]) for k in range(out.value)]
    if statuses is not None:
        for k, i in enumerate(done):
            if i < len(statuses):
                _copy_status(raw, k, statuses[i])
    return done


@cache
def _request_class() -> Any:
    """mpi4py's Request, completed through libcollkit_mpi (see above)."""
    MPI = _MPI()

    def Wait(self: Any, status: Any = None) -> bool:
        raw = _statuses(1)
        _check("MPI_Wait", int(library().MPI_Wait(MPI._addressof(self), raw)))
        _copy_status(raw, 0, status)
        return True

    def Test(self: Any, status: Any = None) -> bool:
        raw, flag = _statuses(1), ctypes.c_int(0)
        rc = int(library().MPI_Test(MPI._addressof(self), ctypes.byref(flag), raw))
        _check("MPI_Test", rc)
        if flag.value:
            _copy_status(raw, 0, status)
        return bool(flag.value)

    def Get_status(self: Any, status: Any = None) -> bool:
        raw, flag = _statuses(1), ctypes.c_int(0)
        h = int(MPI._handleof(self))
        rc = int(library().MPI_Request_get_status(h, ctypes.byref(flag), raw))
        _check("MPI_Request_get_status", rc)
        if flag.value:
            _copy_status(raw, 0, status)
        return bool(flag.value)

    def Free(self: Any) -> None:
        _check("MPI_Request_free", int(library().MPI_Request_free(MPI._addressof(self))))

    def wait(self: Any, status: Any = None) -> None:
        Wait(self, status)

    def test(self: Any, status: Any = None) -> tuple[bool, None]:
        return Test(self, status), None

    ns: dict[str, Any] = {
        "__doc__": "An mpi4py Request of a collkit non-blocking collective (collkit.mpi.I...).",
        "Wait": Wait,
        "Test": Test,
        "Get_status": Get_status,
        "Free": Free,
        "wait": wait,
        "test": test,
    }
    cls = type("CollkitRequest", (MPI.Request,), ns)
    _patch_request_class_methods(cls)
    return cls


def _patch_request_class_methods(ours: Any) -> None:
    """mpi4py's Request.Waitall ...: through libcollkit_mpi when a collkit request is among
    them (else mpi4py's own, unchanged); raises where the type cannot be changed and says so."""
    MPI = _MPI()
    table: dict[str, Callable[..., Any]] = {
        "Waitall": _ck_waitall,
        "Testall": _ck_testall,
        "Waitany": _ck_waitany,
        "Testany": _ck_testany,
        "Waitsome": lambda r, s=None: _ck_some("MPI_Waitsome", r, s),
        "Testsome": lambda r, s=None: _ck_some("MPI_Testsome", r, s),
    }
    new: dict[str, Any] = {}
    for name, ck in table.items():
        orig = MPI.Request.__dict__.get(name)
        if orig is None:
            continue
        mpi4py_call = getattr(MPI.Request, name)  # bound to the class (a classmethod)

        def call(
            cls: Any,
            requests: Any,
            *args: Any,
            _ck: Callable[..., Any] = ck,
            _orig: Any = mpi4py_call,
        ) -> Any:
            if requests is not None and any(isinstance(r, ours) for r in requests):
                return _ck(requests, *args)
            return _orig(requests, *args)

        call.__name__ = name
        new[name] = classmethod(call)
    if not _set_type_attributes(MPI.Request, new):
        import warnings

        warnings.warn(
            "collkit.mpi: mpi4py's Request.Waitall / Waitany / ... cannot be extended on this "
            "Python, and would wait for ever on a collkit request: complete collkit's requests "
            "with their own Wait() / Test()",
            RuntimeWarning,
            stacklevel=3,
        )


def _set_type_attributes(cls: Any, attrs: dict[str, Any]) -> bool:
    """Sets `attrs` on `cls`, one of mpi4py's classes (immutable extension types: setattr
    refuses), through the type's own dict, as CPython allows; False where that is impossible
    (another Python)."""
    import gc
    import sys

    if sys.implementation.name != "cpython":
        return False
    dicts = [d for d in gc.get_referents(cls.__dict__) if isinstance(d, dict)]
    if len(dicts) != 1:
        return False
    d = dicts[0]
    for name, value in attrs.items():
        if value is None:
            d.pop(name, None)
        else:
            d[name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))
    return True


# ---- routing a block of mpi4py code by a tuning table --------------------------------------------


class _Tuning(threading.local):
    table: Any = None
    patched: bool = False  # mpi4py's classes route (this thread's table), not only a wrapper


_tuning = _Tuning()
# Calls routed by tuned() blocks: (collective, algorithm) -> count ("native" included).
_routed_calls: dict[tuple[str, str], int] = {}


def routed_calls() -> dict[tuple[str, str], int]:
    """How many calls tuned() blocks sent where, per (collective, algorithm)."""
    return dict(_routed_calls)


_ROUTED: dict[str, Callable[..., Any]] = {
    "Allreduce": Allreduce,
    "Reduce": Reduce,
    "Bcast": Bcast,
    "Barrier": Barrier,
    "Alltoall": Alltoall,
    "Allgather": Allgather,
    "Gather": Gather,
    "Scatter": Scatter,
    "Reduce_scatter_block": Reduce_scatter_block,
    "Allgatherv": Allgatherv,
    "Alltoallv": Alltoallv,
    "Gatherv": Gatherv,
    "Scatterv": Scatterv,
    "Reduce_scatter": Reduce_scatter,
    "Scan": Scan,
    "Exscan": Exscan,
    "Iallreduce": Iallreduce,
    "Ireduce": Ireduce,
    "Ibcast": Ibcast,
    "Ibarrier": Ibarrier,
    "Ialltoall": Ialltoall,
    "Iallgather": Iallgather,
    "Igather": Igather,
    "Iscatter": Iscatter,
    "Ireduce_scatter_block": Ireduce_scatter_block,
}


@cache
def _originals() -> dict[str, tuple[Any, Any]]:
    """mpi4py's own collective methods, as found before tuned() changes anything: name ->
    (the class that defines it, its function)."""
    MPI = _MPI()
    out: dict[str, tuple[Any, Any]] = {}
    for name in _ROUTED:
        for cls in MPI.Intracomm.__mro__:
            if name in cls.__dict__:
                out[name] = (cls, cls.__dict__[name])
                break
    return out


def _mpi4py(name: str) -> Callable[..., Any]:
    """mpi4py's own method `name` of the communicators (never a routed one)."""
    return _originals()[name][1]  # type: ignore[no-any-return]


# tuned() blocks active in any thread: mpi4py's classes route while there is one.
_blocks = 0


def _patch(on: bool) -> bool:
    """Routes (on) or restores (off) mpi4py's communicator classes' collectives; False where
    the classes cannot be changed."""
    by_class: dict[Any, dict[str, Any]] = {}
    for name, (cls, orig) in _originals().items():
        if on:
            fn = _ROUTED[name]

            def method(
                self: Any, *args: Any, _fn: Callable[..., Any] = fn, _o: Any = orig, **kw: Any
            ) -> Any:
                if _tuning.table is None or not isinstance(self, _MPI().Intracomm):
                    return _o(self, *args, **kw)
                return _fn(self, *args, **kw)

            method.__name__ = name
            method.__doc__ = getattr(orig, "__doc__", None)
            by_class.setdefault(cls, {})[name] = method
        else:
            by_class.setdefault(cls, {})[name] = orig
    return all(_set_type_attributes(cls, attrs) for cls, attrs in by_class.items())


@cache
def _routed_class() -> Any:
    """Where mpi4py's classes cannot be changed: an MPI.Intracomm whose collectives go through
    collkit, and whose Dup / Split / Split_type / Create stay routed."""
    MPI = _MPI()
    ns: dict[str, Any] = {"__doc__": "An mpi4py Intracomm routed by collkit.mpi.tuned()."}
    for name, fn in _ROUTED.items():

        def method(self: Any, *args: Any, _fn: Callable[..., Any] = fn, **kw: Any) -> Any:
            return _fn(self, *args, **kw)

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

    Inside the block, the collectives of every mpi4py intra-communicator (comm.Allreduce(...),
    comm.Iallreduce(...), ..., as mpi4py spells them), whenever the communicator object was
    taken (a module's `comm = MPI.COMM_WORLD` before the block included), run the algorithm the
    table picks for the call's P and bytes, and the MPI's own where it picks none. The block
    routes the calls of the thread that entered it. Yields the communicator (MPI.COMM_WORLD or
    the `comm` given):

        comm = MPI.COMM_WORLD
        with collkit.mpi.tuned("tune-results/collkit-tuning.json"):
            app(comm)        # unmodified mpi4py code

    On a Python where mpi4py's classes cannot be changed (CPython can), only the communicator
    yielded, MPI.COMM_WORLD inside the block and communicators made from them are routed, and a
    RuntimeWarning says so.
    """
    from collkit.tune.table import Table, load

    global _blocks
    t = table if isinstance(table, Table) else load(str(table))
    MPI = _MPI()
    base = MPI.COMM_WORLD if comm is None else comm
    if isinstance(base, MPI.Intercomm) or not isinstance(base, MPI.Intracomm):
        raise CollkitMPIError("collkit.mpi.tuned() routes intra-communicators only")
    with _lock:
        patched = _blocks > 0 or _patch(True)
        if patched:
            _blocks += 1
    old, old_patched = _tuning.table, _tuning.patched
    _tuning.table, _tuning.patched = t, patched
    world = comm is None
    if patched:
        routed = base
    else:
        import warnings

        warnings.warn(
            "collkit.mpi.tuned(): mpi4py's classes cannot be changed on this Python, so only the "
            "communicator this block yields (and MPI.COMM_WORLD looked up inside it, and "
            "communicators made from them) is routed; one taken before the block is not",
            RuntimeWarning,
            stacklevel=3,
        )
        routed = _routed_class()(base)
        if world:
            MPI.COMM_WORLD = routed
    try:
        yield routed
    finally:
        _tuning.table, _tuning.patched = old, old_patched
        if not patched and world:
            MPI.COMM_WORLD = base
        if patched:
            with _lock:
                _blocks -= 1
                if _blocks == 0:
                    _patch(False)
