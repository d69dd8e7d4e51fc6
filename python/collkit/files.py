"""Reading the files collkit is given, bounded: only a regular file is read (a device such as
/dev/zero, a FIFO or a terminal has no end, and a folder no content), and never more than
`limit` bytes. Every reader of a user's file (schedules, result rows, tuning tables, noise
samples) opens it here, so a bad path is one clear error (InvalidArgumentError), not a hang,
a MemoryError or an OSError traceback.
"""

from __future__ import annotations

import os
import stat

from collkit.errors import InvalidArgumentError

__all__ = ["MAX_READ", "check_regular", "read_bytes", "read_text"]

MAX_READ = 1 << 36  # 64 GiB: more than any schedule or row file collkit writes


def _open(path: str | os.PathLike[str], what: str) -> int:
    # O_NONBLOCK: opening a FIFO with no writer returns at once (and is then refused) instead
    # of waiting for a writer forever; a regular file is not affected.
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise InvalidArgumentError(
            f"{what}: cannot read {os.fspath(path)}: {e.strerror or e}"
        ) from None
    except (TypeError, ValueError) as e:  # a path with a NUL byte, not a path at all
        raise InvalidArgumentError(f"{what}: {path!r} is not a path: {e}") from None


def _check_fd(fd: int, path: str | os.PathLike[str], what: str, limit: int) -> int:
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise InvalidArgumentError(f"{what}: {os.fspath(path)} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InvalidArgumentError(
            f"{what}: {os.fspath(path)} is not a regular file (a device, FIFO or socket could "
            "be read without end)"
        )
    if st.st_size > limit:
        raise InvalidArgumentError(
            f"{what}: {os.fspath(path)} holds {st.st_size:,} bytes, more than the "
            f"{limit:,} collkit reads"
        )
    return st.st_size


def check_regular(path: str | os.PathLike[str], what: str, limit: int = MAX_READ) -> None:
    """An error unless `path` is a readable regular file of at most `limit` bytes."""
    fd = _open(path, what)
    try:
        _check_fd(fd, path, what, limit)
    finally:
        os.close(fd)


def read_bytes(path: str | os.PathLike[str], what: str, limit: int = MAX_READ) -> bytes:
    """The content of a regular file of at most `limit` bytes (a file that grows while it is
    read is cut at limit + 1 and refused)."""
    fd = _open(path, what)
    try:
        size = _check_fd(fd, path, what, limit)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            # The size first (read(n) allocates n bytes), then on in pieces: a file of /proc
            # says 0 and has content, and a file may grow while it is read.
            data = f.read(size + 1) if size else b""
            if not size or len(data) > size:  # /proc says 0, or it grew: read on, in pieces
                grown = bytearray(data)
                while len(grown) <= limit:
                    more = f.read(min(1 << 24, limit + 1 - len(grown)))
                    if not more:
                        break
                    grown += more
                data = bytes(grown)
    except OSError as e:
        raise InvalidArgumentError(
            f"{what}: cannot read {os.fspath(path)}: {e.strerror or e}"
        ) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InvalidArgumentError(f"{what}: {os.fspath(path)} is more than {limit:,} bytes")
    return data


def read_text(path: str | os.PathLike[str], what: str, limit: int = MAX_READ) -> str:
    """The content of a regular file as UTF-8 text (a byte that is not UTF-8 is an error that
    says where)."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidArgumentError(
            f"{what}: {os.fspath(path)} is not UTF-8 text (byte {e.start}: {e.reason})"
        ) from None
