"""Atomic file writes: the one helper every l1scale writer uses (models, checkpoints,
svmlight / VW / sequence files, cache metadata, plots, CLI outputs).

A file is written under a temporary name next to its target,

    .<target name>.<pid>-<host tag>.<random>.tmp

flushed, fsync'ed and renamed over the target (``os.replace``, atomic on POSIX and
Windows), then the directory is fsync'ed: a reader sees the old file or the new one,
never a half-written one, and a crash or a full disk leaves the previous file intact.

**Leftovers.** A writer that fails removes its temporary. A writer that is killed (SIGKILL,
power loss) cannot; its temporary is *harmless* (hidden, and never read: only the target
name is) and is *collected* by the next write of the same target, which removes the
siblings ``.<target name>.*.tmp`` that are stale:

- written by a process of this host (same host tag) that no longer runs, or
- older than :data:`STALE_SECONDS` (24 hours) by modification time: temporaries of
  another host (a shared file system, where a pid means nothing here) and those of
  l1scale versions that did not record the pid.

A temporary of a live writer is never removed (a long write of a large file may take
hours), nor any file that does not match that pattern.

**Full disks.** A write that fails for lack of space (``ENOSPC``, ``EDQUOT``, ``EFBIG``,
or a short write such as NumPy's "N requested and M written") raises
:class:`~l1scale.exceptions.DiskFullError` naming the target and saying the disk is full;
writers that do not go through :func:`atomic_file` (the chunk-cache writer) translate
their errors with :func:`disk_full_error` or :func:`translate_write_errors`.

This module imports nothing from l1scale but its exceptions (no Numba): any module can use it.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import hashlib
import io
import lzma
import os
import re
import secrets
import socket
import time
from contextlib import contextmanager, suppress

from .exceptions import DiskFullError

__all__ = [
    "STALE_SECONDS",
    "AtomicFile",
    "atomic_file",
    "collect_stale_temporaries",
    "disk_full_error",
    "is_temporary_of",
    "translate_write_errors",
]

#: Age (seconds, by mtime) past which any temporary of a target is collected, whoever wrote it.
STALE_SECONDS = 24 * 3600

# errno values that mean "no room for these bytes".
_SPACE_ERRNOS = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}
# NumPy's tofile / np.save on a full disk: "686828 requested and 25584 written" (errno unset).
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")


def _host_tag() -> str:
    return hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:6]


_HOST = _host_tag()


def _temporary_name(base: str) -> str:
    return f".{base}.{os.getpid()}-{_HOST}.{secrets.token_hex(6)}.tmp"


def is_temporary_of(name: str, base: str) -> bool:
    """Whether the file name ``name`` is a temporary of a write of the target named ``base``
    (this module's ``.<base>.<pid>-<host>.<hex>.tmp`` or an older ``.<base>.<random>.tmp``)."""
    prefix = f".{base}."
    if not (name.startswith(prefix) and name.endswith(".tmp")):
        return False
    middle = name[len(prefix) : -4]
    return bool(middle) and "/" not in middle and os.sep not in middle


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's), or cannot tell: keep its file
    return True


def _is_stale(name: str, base: str, mtime: float, now: float) -> bool:
    if now - mtime > STALE_SECONDS:
        return True
    middle = name[len(base) + 2 : -4]
    m = re.fullmatch(r"(\d+)-([0-9a-f]{6})\.[0-9a-f]+", middle)
    if m is None or m.group(2) != _HOST:
        return False  # another host, or an old-style name: only the age tells
    pid = int(m.group(1))
    return pid != os.getpid() and not _pid_alive(pid)


def collect_stale_temporaries(path) -> list:
    """Remove the stale temporaries left next to ``path`` by killed writers (see the module
    docstring for which are stale); returns the paths removed. Never raises: a temporary
    that cannot be removed is left for a later write."""
    path = os.fspath(path)
    directory, base = os.path.split(os.path.abspath(path))
    removed = []
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not is_temporary_of(entry.name, base):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if _is_stale(entry.name, base, entry.stat(follow_symlinks=False).st_mtime, now):
                os.unlink(entry.path)
                removed.append(entry.path)
        except OSError:
            continue
    return removed


def _space_left(path):
    try:
        st = os.statvfs(os.path.dirname(os.path.abspath(path)) or ".")
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


def disk_full_error(path, exc: BaseException, *, intact=True):
    """The error to raise for ``exc``, a failure writing ``path``: a
    :class:`~l1scale.exceptions.DiskFullError` naming ``path`` when it means the disk is full
    (ENOSPC, EDQUOT, EFBIG, or a short write: NumPy's "N requested and M written"), else
    ``exc`` itself. Use as ``raise disk_full_error(path, exc) from exc``. ``intact``: the
    message adds that the previous file is intact (true of atomic writes only)."""
    path = os.fspath(path)
    if isinstance(exc, DiskFullError):
        return exc
    code = getattr(exc, "errno", None)
    short = isinstance(exc, OSError) and code is None and _SHORT_WRITE.search(str(exc)) is not None
    if not (isinstance(exc, OSError) and (code in _SPACE_ERRNOS or short)):
        return exc
    if code == errno.EFBIG:
        why = (
            "file too large: the file system's or this process's file-size limit (ulimit -f) was reached "
            "(no space left for it)"
        )
    elif code == getattr(errno, "EDQUOT", None) and code != errno.ENOSPC:
        why = "disk quota exceeded: no space left for this user"
    else:
        free = _space_left(path)
        why = "no space left on device (the disk is full)"
        if short:
            why = f"short write ({exc}): no space left on device (the disk is full)"
        if free is not None:
            why += f"; {free:,} bytes free there"
    tail = "; the previous file, if any, is intact" if intact else ""
    return DiskFullError(code if code is not None else errno.ENOSPC, f"cannot write {path}: {why}{tail}", path)


@contextmanager
def translate_write_errors(path, *, intact=False):
    """Context manager for writers that do not use :func:`atomic_file` (the chunk-cache
    writer's ``np.save``): an OSError meaning the disk is full inside it becomes a
    :class:`~l1scale.exceptions.DiskFullError` naming ``path`` (see :func:`disk_full_error`;
    ``intact``: say the previous file is intact, false by default)."""
    try:
        yield
    except OSError as exc:
        new = disk_full_error(path, exc, intact=intact)
        if new is exc:
            raise
        raise new from exc


def _fsync_directory(directory):
    """Make the rename itself durable (POSIX); best effort elsewhere."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AtomicFile:
    """A file written under a temporary name next to ``path`` and renamed over it on
    :meth:`commit` (see the module docstring); :meth:`abort` removes the temporary.

    Parameters
    ----------
    path : str or path-like
        The target.
    text : bool, default False
        A text file (UTF-8, ``\\n`` line ends) instead of a binary one.
    compress : bool, default False
        Compress by ``path``'s extension (.gz, .bz2, .xz; others: plain).
    what : str, default "file"
        What is written, for error messages ("model file", "checkpoint", ...).

    Attributes
    ----------
    file : file object
        What to write to.
    """

    def __init__(self, path, *, text=False, compress=False, what="file"):
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            raise IsADirectoryError(errno.EISDIR, "cannot write: is a directory", self.path)
        directory, base = os.path.split(os.path.abspath(self.path))
        self._directory = directory
        collect_stale_temporaries(self.path)  # before writing: a killed writer's bytes may be what fills the disk
        self.tmp = os.path.join(directory, _temporary_name(base))
        try:  # os.open with 0o666 honours the umask, unlike tempfile's 0o600
            fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as e:
            raise disk_full_error(
                self.path, type(e)(e.errno, f"cannot write {what} {self.path!r}: {e.strerror}")
            ) from None
        self._raw = os.fdopen(fd, "wb")
        self._layers = []
        stream = self._raw
        ext = os.path.splitext(self.path)[1].lower() if compress else ""
        if ext == ".gz":
            stream = gzip.GzipFile(filename=base[:-3], fileobj=self._raw, mode="wb", mtime=0)
        elif ext == ".bz2":
            stream = bz2.BZ2File(self._raw, mode="wb")
        elif ext == ".xz":
            stream = lzma.LZMAFile(self._raw, mode="wb")  # noqa: SIM115 - closed by commit / abort
        if stream is not self._raw:
            self._layers.append(stream)
        if text:
            stream = io.TextIOWrapper(stream, encoding="utf-8", newline="\n", write_through=False)
            self._layers.append(stream)
        self.file = stream
        self._done = False

    def _fail(self, exc: BaseException):
        """Remove the temporary and raise ``exc`` (a full disk as DiskFullError naming the file)."""
        self.abort()
        if isinstance(exc, OSError):
            new = disk_full_error(self.path, exc)
            if new is not exc:
                raise new from exc
        raise exc

    def commit(self):
        """Flush, sync and rename into place; a full disk raises DiskFullError (temporary removed)."""
        if self._done:
            return
        try:
            for layer in reversed(self._layers):
                if isinstance(layer, io.TextIOWrapper):
                    layer.flush()
                    layer.detach()  # closing it would close the layers below it
                else:
                    layer.close()
            self._raw.flush()
            os.fsync(self._raw.fileno())
            self._raw.close()
            with contextlib.suppress(OSError):  # keep the mode of the file replaced, where there is one
                os.chmod(self.tmp, os.stat(self.path).st_mode & 0o7777)
            os.replace(self.tmp, self.path)
        except BaseException as exc:  # noqa: BLE001 - _fail re-raises it
            self._fail(exc)
        self._done = True
        _fsync_directory(self._directory)

    def abort(self):
        """Close and remove the temporary (the target is untouched)."""
        self._done = True
        for f in [*reversed(self._layers), self._raw]:
            with suppress(Exception):  # already failing: keep the first error
                f.close()
        with suppress(OSError):
            os.unlink(self.tmp)


@contextmanager
def atomic_file(path, *, text=False, compress=False, what="file"):
    """Context manager giving a file that appears at ``path`` only when the block succeeds.

    Parameters
    ----------
    path : str or path-like
    text : bool, default False
        A text file (UTF-8) instead of a binary one.
    compress : bool, default False
        Compress by ``path``'s extension (.gz, .bz2, .xz).
    what : str, default "file"
        What is written, for error messages.

    Raises
    ------
    DiskFullError
        No space left (the message names ``path``); the previous file is intact.
    OSError
        The directory is missing or not writable (the message names ``path``).
    """
    out = AtomicFile(path, text=text, compress=compress, what=what)
    try:
        yield out.file
    except BaseException as exc:  # noqa: BLE001 - _fail re-raises it
        out._fail(exc)
    out.commit()
