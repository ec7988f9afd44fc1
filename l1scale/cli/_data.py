"""Reading data into memory for the commands, and checking output paths before any work.

Like the rest of the package it imports the library only when called (``l1scale --help``
stays instant); the training Stream is in :mod:`._stream`, imported by ``train`` when run.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys

try:
    import fcntl
except ImportError:  # not on Windows
    fcntl = None

import click
import numpy as np

from .._atomic import atomic_file
from ._params import DEFAULT_HASH_BITS, check_no_layout_flag, zero_based_value

#: Names read as Vowpal Wabbit text by ``--format auto``: those of ``Stream.open``
#: (l1scale.data.stream.VW_SUFFIXES; not imported here, see above; a test keeps them equal).
VW_SUFFIXES = (".vw", ".vw.gz", ".vw.bz2", ".vw.xz")


#: DATA read from standard input.
STDIN = "-"


def is_stdin(path):
    """Whether DATA is ``-``: standard input (svmlight text, or VW with --format vw)."""
    return os.fspath(path) == STDIN


def stdin_bytes():
    """Standard input as a binary file object (compressed input is detected by its magic bytes).

    A pipe is widened to 1 MiB where the system allows it (Linux ``F_SETPIPE_SZ``; the
    default 64 KiB makes each 16 MB read thousands of small ones: 1.1 GB/s from ``cat``
    against 3.2 GB/s widened, on this project's machine)."""
    _widen_pipe(sys.stdin)
    return sys.stdin.buffer


def _widen_pipe(stream, size=1 << 20):
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    try:
        fd = stream.fileno()
        if set_size is not None and stat.S_ISFIFO(os.fstat(fd).st_mode):
            fcntl.fcntl(fd, set_size, size)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # not a pipe, or a limit below 1 MiB (pipe-max-size): the default size still works


def data_format(path, requested="auto"):
    """How ``path`` is read: "cache" (a directory), "svmlight" or "vw".

    ``requested`` is ``--format`` (or "cache", a format already found): auto goes by the
    name (VW_SUFFIXES: vw); svmlight or vw given for a directory is a usage error naming
    --format. Standard input (``-``) has no name: svmlight unless --format vw.
    """
    if is_stdin(path):
        return "vw" if requested == "vw" else "svmlight"
    if os.path.isdir(path):
        if requested not in ("auto", "cache"):
            raise click.BadParameter(f"{path} is a cache directory, not a {requested} file", param_hint="--format")
        return "cache"
    if requested != "auto":
        return requested
    return "vw" if os.fspath(path).lower().endswith(VW_SUFFIXES) else "svmlight"


#: Parser messages that mean the file is not in the format it was read as at all (a CSV file, a
#: table of numbers, a model file): their error then says what was expected.
_NOT_THIS_FORMAT = ("label is not a number", "token without ':'", "missing label", "no label")
_EXPECTED = {
    "svmlight": "svmlight text was expected, one example per line: LABEL INDEX:VALUE INDEX:VALUE ... "
    "(e.g. '1 3:0.5 17:2'); a CSV file or a table of numbers is not read as data "
    "(convert it: sklearn.datasets.dump_svmlight_file, or l1scale.data.dump_svmlight)",
    "vw": "Vowpal Wabbit text was expected, one example per line: LABEL [IMPORTANCE] |NAMESPACE "
    "FEATURE[:VALUE] ... (e.g. '1 |f word price:2.5')",
}


@contextlib.contextmanager
def expected_format(path, fmt):
    """Add to a parser error that shows ``path`` is not ``fmt`` text at all (a CSV file, a plain
    table, a model file given as DATA) what the format looks like (and, for a model file, the
    argument order)."""
    from ..exceptions import DataFormatError

    try:
        yield
    except DataFormatError as exc:
        if fmt not in _EXPECTED or not any(m in str(exc) for m in _NOT_THIS_FORMAT):
            raise
        from ..model_io import is_model_file

        if not is_stdin(path) and is_model_file(path):
            raise click.ClickException(f"{path} is an l1scale model file, not {fmt} data") from None
        raise click.ClickException(f"{exc}: {_EXPECTED[fmt]}") from None


def check_vw_flags(fmt, path, *, hash_bits=None, zero_based=None, n_features=None):
    """Usage errors: --hash-bits for data that are not VW; --zero-based/--one-based or
    --n-features for VW data (hashed: the width is 2**b)."""
    if fmt != "vw":
        if hash_bits is not None:
            what = "the cache directory" if fmt == "cache" else "the svmlight file"
            raise click.BadParameter(
                f"applies to Vowpal Wabbit data (.vw, or --format vw), not to {what} {path}", param_hint="--hash-bits"
            )
        return
    if zero_based is not None:
        raise click.UsageError(
            f"--zero-based/--one-based apply to svmlight files, not to the Vowpal Wabbit "
            f"file {path} (its features are hashed)"
        )
    if n_features is not None:
        raise click.BadParameter(
            f"the width of the Vowpal Wabbit file {path} is 2**--hash-bits", param_hint="--n-features"
        )


def hash_bits_of_model(est, model):
    """b such that the model's width is 2**b: how VW data are hashed for it."""
    d = int(est.n_features_in_)
    if d < 2 or d & (d - 1):
        raise click.ClickException(
            f"the model {model} has {d} features, not 2**b: it was not trained on Vowpal Wabbit (hashed) data"
        )
    return d.bit_length() - 1


def too_wide(path, width, than):
    """The error for data with more features than the model / training data / --n-features."""
    return click.ClickException(f"{path} has {width} features, more than {than}")


def read_data(
    path, *, zero_based=None, n_features=None, width_of=None, fmt="auto", hash_bits=None, return_zero_based=False
):
    """A whole data set in memory: (X CSR, y, sample_weight or None).

    ``path`` is an svmlight file, a Vowpal Wabbit file (``fmt``: as ``--format``; hashed
    into 2**``hash_bits`` columns, default 18; the importances are the sample weights),
    a chunk-cache directory or ``-`` (standard input; svmlight read as one-based unless
    ``zero_based``).  With ``n_features``
    a narrower X is widened (its missing trailing columns are zero) and a wider
    one is an error naming the file and both widths (``width_of`` says whose
    width ``n_features`` is, e.g. "the 30 of the model m.bin").
    ``return_zero_based``: also return the index base svmlight text was read with
    (``zero_based=None``: detected), None for a cache or VW data.
    """
    fmt = data_format(path, fmt)
    with expected_format(path, fmt):
        X, y, w, base = _read_whole(path, zero_based, fmt, hash_bits)
    if X.shape[0] == 0:
        raise click.ClickException(f"{path}: no examples")
    if n_features is not None and X.shape[1] != n_features:
        if X.shape[1] > n_features:
            raise too_wide(path, X.shape[1], width_of or str(n_features))
        X.resize((X.shape[0], n_features))
    return (X, y, w, base) if return_zero_based else (X, y, w)


def _read_whole(path, zero_based, fmt, hash_bits):
    """read_data's reading: (X, y, sample_weight or None, svmlight index base or None)."""
    import scipy.sparse as sp

    from ..data import Stream, load_svmlight, load_vw

    base = None
    if fmt == "vw":
        check_vw_flags(fmt, path, zero_based=zero_based)
        X, y, w = load_vw(
            stdin_bytes() if is_stdin(path) else path, hash_bits=DEFAULT_HASH_BITS if hash_bits is None else hash_bits
        )
    elif fmt == "cache":
        check_no_layout_flag(zero_based, path)
        stream = Stream.from_cache(path)
        Xs, ys, ws = [], [], []
        for chunk in stream:
            Xs.append(sp.csr_matrix(chunk.X))
            ys.append(chunk.y)
            ws.append(chunk.sample_weight)
        width = stream.n_features
        X = sp.vstack(Xs, format="csr") if Xs else sp.csr_matrix((0, width))
        y = np.concatenate(ys) if ys else np.empty(0)
        w = None
        if any(v is not None for v in ws):
            w = np.concatenate([np.ones(len(c)) if v is None else v for c, v in zip(ys, ws)])
        if X.shape[1] != width:
            X.resize((X.shape[0], width))
    elif is_stdin(path):
        base = stdin_zero_based(zero_based)
        with zero_index_hint(path, base):
            X, y = load_svmlight(stdin_bytes(), zero_based=base)
        w = None
    else:
        X, y, base = load_svmlight(path, zero_based=zero_based_value(zero_based), return_zero_based=True)
        w = None
    return X, y, w, base


def stdin_zero_based(flag):
    """The index base of svmlight text on standard input: it cannot be pre-scanned (read
    once), so --zero-based/--one-based decide and one-based (the libsvm convention) is the
    default; an index 0 read as one-based is then an error that says so (zero_index_hint)."""
    return flag if isinstance(flag, bool) else False


@contextlib.contextmanager
def zero_index_hint(path, zero_based):
    """Add to the parser's "feature index 0 in a file read as one-based" error, for standard
    input read as one-based by default, how to read it as zero-based."""
    from ..exceptions import DataFormatError

    try:
        yield
    except DataFormatError as exc:
        if zero_based or not is_stdin(path) or "index 0" not in str(exc):
            raise
        raise click.ClickException(
            f"{exc}: standard input is read as one-based unless --zero-based is "
            "given (its index base cannot be detected before reading it)"
        ) from None


def iter_data(path, *, zero_based=None, n_features, width_of, fmt="auto", hash_bits=None, chunk_bytes=16 << 20):
    """DATA chunk by chunk (see :func:`_iter_chunks`); a file that is not in the format read at all
    (a CSV file, a model file) is an error saying what was expected."""
    fmt = data_format(path, fmt)
    with expected_format(path, fmt):
        yield from _iter_chunks(
            path,
            zero_based=zero_based,
            n_features=n_features,
            width_of=width_of,
            fmt=fmt,
            hash_bits=hash_bits,
            chunk_bytes=chunk_bytes,
        )


def _iter_chunks(path, *, zero_based, n_features, width_of, fmt, hash_bits, chunk_bytes):
    """DATA chunk by chunk in bounded memory: ``(X, y, sample_weight or None)`` with X CSR of
    exactly ``n_features`` columns (a narrower file is widened; a wider one is an error naming
    both widths, ``width_of`` says whose ``n_features`` is).

    ``path`` as in :func:`read_data`; ``zero_based``: True / False, or None: detected for an
    svmlight file (a pre-scan, which also finds its width before any chunk is read), one-based
    for standard input.  VW data are hashed into 2**``hash_bits`` columns (the caller checks
    that this is ``n_features``).
    """
    from ..data import Stream, iter_svmlight_chunks, iter_vw_chunks
    from ..data.svmlight import resolve_layout

    fmt = data_format(path, fmt)
    if fmt == "vw":
        check_vw_flags(fmt, path, zero_based=zero_based)
        source = stdin_bytes() if is_stdin(path) else path
        for chunk in iter_vw_chunks(
            source, hash_bits=DEFAULT_HASH_BITS if hash_bits is None else hash_bits, chunk_bytes=chunk_bytes
        ):
            yield chunk.X, chunk.y, chunk.sample_weight
        return
    if fmt == "cache":
        check_no_layout_flag(zero_based, path)
        width = Stream.from_cache(path).n_features
        if width > n_features:
            raise too_wide(path, width, width_of)
        for chunk in Stream.from_cache(path, n_features=n_features):
            yield chunk.X, chunk.y, chunk.sample_weight
        return
    if is_stdin(path):
        base = stdin_zero_based(zero_based)
        with zero_index_hint(path, base):
            # A feature beyond n_features: the parser's error, naming the line (stdin is read once).
            for X, y in iter_svmlight_chunks(
                stdin_bytes(), n_features=n_features, zero_based=base, chunk_bytes=chunk_bytes
            ):
                yield X, y, None
        return
    base, width = resolve_layout(path, zero_based_value(zero_based), None, chunk_bytes, need_width=True)
    if width > n_features:
        raise too_wide(path, width, width_of)
    for X, y in iter_svmlight_chunks(path, n_features=n_features, zero_based=base, chunk_bytes=chunk_bytes):
        yield X, y, None


# ------------------------------------------------------------------------- output paths


def check_output(path, option):
    """Fail before any work when ``path`` cannot be written (usage error, exit 2)."""
    if path is None:
        return
    if os.path.isdir(path):
        raise click.BadParameter(f"{path!r} is a directory", param_hint=option)
    _check_directory(path, os.path.dirname(os.path.abspath(path)), option)


def check_cache_dir(path, data):
    """Fail before any work when ``--cache`` cannot be a cache directory for DATA."""
    if path is None:
        return
    if os.path.isdir(data):
        raise click.BadParameter(f"DATA {data!r} is already a cache directory", param_hint="--cache")
    if os.path.abspath(path) == os.path.abspath(data):
        raise click.BadParameter("is DATA itself", param_hint="--cache")
    if os.path.exists(path) and not os.path.isdir(path):
        raise click.BadParameter(f"{path!r} exists and is not a directory", param_hint="--cache")
    target = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    _check_directory(path, target, "--cache", missing_verb="create")


def _check_directory(path, directory, option, missing_verb="write"):
    """``directory`` (where ``path`` goes) exists and is writable, else a usage error."""
    if not os.path.isdir(directory):
        raise click.BadParameter(
            f"cannot {missing_verb} {path!r}: directory {directory!r} does not exist", param_hint=option
        )
    if not os.access(directory, os.W_OK | os.X_OK):
        raise click.BadParameter(f"cannot write {path!r}: directory {directory!r} is not writable", param_hint=option)


def write_text_atomically(path, text):
    """Write ``text`` to ``path`` under a temporary name, then rename it into place."""
    with text_file_atomically(path) as fh:
        fh.write(text)


def text_file_atomically(path):
    """A text file to write piece by piece (predictions chunk by chunk), under a temporary
    name renamed to ``path`` only when the block completes: a failure leaves no partial file,
    a full disk raises DiskFullError naming ``path`` (``l1scale._atomic``)."""
    return atomic_file(path, text=True)
