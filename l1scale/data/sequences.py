"""DNA sequences as uint8 codes: text files, the LIBSVM splice matrix, synthetic splice sites.

Codes are A, C, G, T = 0, 1, 2, 3 (lowercase letters accepted on input), one row per
sequence, all of one length L: the input of :class:`~l1scale.data.feature_spaces.DNAPatterns`.

File format (:func:`load_sequences`, :func:`dump_sequences`): one example per line,
``label<whitespace>sequence``, e.g. ``+1 ACGTTGCA``; blank lines and lines whose first
non-blank character is ``#`` are skipped (they still count for line numbers). gzip, bzip2
and xz files are read by their magic bytes and written by their extension (``.gz``,
``.bz2``, ``.xz``), as for svmlight files.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from ..exceptions import DataFormatError
from ._svmlight_write import atomic_file
from .svmlight import open_source, source_name

__all__ = [
    "decode_sequences",
    "dump_sequences",
    "encode_sequences",
    "load_sequences",
    "make_splice_sites",
    "splice_sequences",
]

ALPHABET = "ACGT"
_BAD = 255
_TABLE = np.full(256, _BAD, dtype=np.uint8)  # byte -> code; 255 marks a letter outside ACGT
for _c, _ch in enumerate(ALPHABET):
    _TABLE[ord(_ch)] = _TABLE[ord(_ch.lower())] = _c
_LETTERS = np.frombuffer(ALPHABET.encode(), dtype=np.uint8)


def _encode_rows(seqs: list, error) -> np.ndarray:
    """Codes (n, L) of equal-length byte strings; ``error(i, what)`` builds the exception
    for sequence i (a ValueError naming the index, or a DataFormatError naming the line)."""
    n = len(seqs)
    if n == 0:
        return np.empty((0, 0), dtype=np.uint8)
    L = len(seqs[0])
    for i, s in enumerate(seqs):
        if len(s) != L:
            raise error(i, f"has length {len(s)}, the first has length {L}")
    codes = _TABLE[np.frombuffer(b"".join(seqs), dtype=np.uint8)].reshape(n, L)
    bad = np.flatnonzero(codes.ravel() == _BAD)
    if bad.size:
        i, pos = divmod(int(bad[0]), L)
        ch = seqs[i][pos : pos + 1].decode("latin-1")
        raise error(i, f"has character {ch!r} at position {pos}; expected one of A, C, G, T")
    return codes


def encode_sequences(seqs) -> np.ndarray:
    """Codes of equal-length DNA strings.

    Parameters
    ----------
    seqs : sequence of str
        Letters A, C, G, T (either case).

    Returns
    -------
    codes : ndarray of uint8, shape (n, L)
        A, C, G, T = 0, 1, 2, 3.

    Raises
    ------
    ValueError
        A letter outside ACGT (naming the sequence index, character and position), or
        lengths that differ.
    """
    seqs = list(seqs)
    raw = []
    for i, s in enumerate(seqs):
        if not isinstance(s, str):
            raise TypeError(f"sequence {i} is a {type(s).__name__}, expected str")
        b = s.encode("utf-8")
        if len(b) != len(s):  # a non-ASCII letter: report it by its own character
            ch = next(c for c in s if ord(c) > 127)
            raise ValueError(f"sequence {i} has character {ch!r} at position {s.index(ch)}; expected one of A, C, G, T")
        raw.append(b)
    return _encode_rows(raw, lambda i, what: ValueError(f"sequence {i} {what}"))


def decode_sequences(codes) -> list:
    """Strings of codes (n, L) (the inverse of :func:`encode_sequences`, uppercase)."""
    codes = _check_codes(codes)
    return [row.tobytes().decode("ascii") for row in _LETTERS[codes]]


def _check_codes(codes) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError(f"codes must be 2-D (n, L), got shape {codes.shape}")
    if codes.size and (not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0 or codes.max() > 3):
        raise ValueError("codes must be integers in 0..3 (A, C, G, T)")
    return np.ascontiguousarray(codes, dtype=np.uint8)


def load_sequences(path):
    """Read ``label sequence`` lines.

    Parameters
    ----------
    path : str, path-like or binary file object
        Plain, gzip, bzip2 or xz (detected from the magic bytes).

    Returns
    -------
    codes : ndarray of uint8, shape (n, L)
    y : ndarray of float64, shape (n,)

    Raises
    ------
    DataFormatError
        Naming the file and 1-based line: a line without exactly a label and a sequence,
        a label that is not a finite number (or has an underscore: ``1_0`` is not 10), a
        letter outside ACGT, or a length that differs from the first sequence's; naming
        the file: a file without any example (empty, or only blank and comment lines).
    """
    name = source_name(path)
    labels, seqs, line_nos = [], [], []
    line_no = 0
    with open_source(path) as f:
        for line_no, line in enumerate(f, start=1):
            text = line.strip()
            if not text or text.startswith(b"#"):
                continue
            parts = text.split()
            if len(parts) != 2:
                raise DataFormatError(f"expected 'label sequence', got {len(parts)} fields", path=name, line=line_no)
            try:
                # Python's float reads "1_0" as 10.0: a label is a plain number (as in svmlight and VW).
                if b"_" in parts[0]:
                    raise ValueError
                label = float(parts[0])
            except ValueError:
                raise DataFormatError(
                    f"label {parts[0].decode('latin-1')!r} is not a number", path=name, line=line_no
                ) from None
            if not np.isfinite(label):
                raise DataFormatError("label is NaN or infinite", path=name, line=line_no)
            if seqs and len(parts[1]) != len(seqs[0]):
                raise DataFormatError(
                    f"sequence has length {len(parts[1])}, the first has length {len(seqs[0])}", path=name, line=line_no
                )
            labels.append(label)
            seqs.append(parts[1])
            line_nos.append(line_no)
    if not seqs:  # as load_vw: a file without an example is an error, not an empty data set
        raise DataFormatError("no example in the file" + (" (it is empty)" if line_no == 0 else ""), path=name)
    codes = _encode_rows(seqs, lambda i, what: DataFormatError(f"sequence {what}", path=name, line=line_nos[i]))
    return codes, np.asarray(labels, dtype=np.float64)


def dump_sequences(path, codes, y) -> None:
    """Write ``label sequence`` lines atomically (the file appears only when complete).

    Parameters
    ----------
    path : str or path-like
        ``.gz``, ``.bz2`` and ``.xz`` names are compressed.
    codes : array of int, shape (n, L)
        Values 0..3.
    y : array-like of shape (n,)
        Finite labels; integral values are written without a decimal point, others as
        the shortest string that reads back to the same float64.
    """
    codes = _check_codes(codes)
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.shape[0] != codes.shape[0]:
        raise ValueError(f"codes has {codes.shape[0]} rows but y has {y.shape[0]} labels")
    if not np.isfinite(y).all():
        raise ValueError(f"y[{int(np.flatnonzero(~np.isfinite(y))[0])}] is NaN or infinite")
    letters = _LETTERS[codes]
    with atomic_file(path) as f:
        for label, row in zip(y, letters):
            text = str(int(label)) if label == int(label) else repr(float(label))
            f.write(text.encode() + b" " + row.tobytes() + b"\n")


_SPLICE_VALUES = np.array([-1.0, -1.0 / 3.0, 1.0 / 3.0, 1.0])


def splice_sequences(X) -> np.ndarray:
    """Codes of the LIBSVM ``splice_scale`` matrix.

    Parameters
    ----------
    X : array or sparse matrix, shape (n, 60)
        Values -1, -1/3, 1/3, 1 for A, C, G, T. The file stores 6 significant digits
        (-0.333333), so a value within 1e-4 of its level is accepted.

    Returns
    -------
    codes : ndarray of uint8, shape (n, 60)

    Raises
    ------
    ValueError
        A value (a stored zero included) that is none of the four, naming row and column.
    """
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    dist = np.abs(X[:, :, None] - _SPLICE_VALUES)
    codes = dist.argmin(axis=2).astype(np.uint8)
    bad = np.argwhere(~(dist.min(axis=2) < 1e-4))  # NaN compares False: caught too
    if bad.size:
        i, j = (int(v) for v in bad[0])
        raise ValueError(f"X[{i}, {j}] = {X[i, j]!r} is not a splice base value (-1, -1/3, 1/3, 1)")
    return codes


def make_splice_sites(n, L=60, d_motif=12, positive_rate=0.01, decoy_rate=0.5, random_state=None):
    """Synthetic acceptor-splice-site-like sequences with heavy class imbalance.

    Generative model (site ``s = L // 2``):

    1. exactly ``round(n * positive_rate)`` positives (at least 1 and at most n - 1 when
       n >= 2) at random rows, the rest negatives;
    2. every base of every sequence i.i.d. uniform over A, C, G, T;
    3. positives: the consensus ``AG`` at positions s, s+1 (the intron end); each of the
       ``d_motif`` positions s - d_motif .. s - 1 (the polypyrimidine tract) is redrawn
       uniformly from {C, T} with probability 0.6; position s + 2 is set to G with
       probability 0.4;
    4. negatives: a fraction ``decoy_rate`` of them also get ``AG`` at s, s+1 (decoy
       sites, as in real data where every candidate has the AG).

    So ``AG`` alone does not separate the classes, the preferences are weak and
    position-specific (patterns over several positions help), and a positive with a
    background-looking tract is indistinguishable from a decoy: the task is noisy.

    Parameters
    ----------
    n : int
        Number of sequences.
    L : int, default 60
        Sequence length; needs ``d_motif <= L // 2`` and ``L // 2 + 2 < L``.
    d_motif : int, default 12
        Length of the pyrimidine-rich region before the site.
    positive_rate : float in (0, 1), default 0.01
    decoy_rate : float in [0, 1], default 0.5
    random_state : int, RandomState, Generator or None
        The same seed gives the same data.

    Returns
    -------
    codes : ndarray of uint8, shape (n, L)
    y : ndarray of float64, shape (n,), values in {-1, +1}
    """
    for name, v in (("n", n), ("L", L), ("d_motif", d_motif)):
        if not isinstance(v, numbers.Integral) or v < (0 if name == "n" else 1):
            raise ValueError(f"{name} must be a non-negative integer, got {name}={v!r}")
    s = L // 2
    if d_motif > s or s + 2 >= L:
        raise ValueError(f"L={L} is too short for d_motif={d_motif}: need d_motif <= L // 2 and L >= 5")
    if not 0.0 < positive_rate < 1.0:
        raise ValueError(f"positive_rate must be in (0, 1), got positive_rate={positive_rate!r}")
    if not 0.0 <= decoy_rate <= 1.0:
        raise ValueError(f"decoy_rate must be in [0, 1], got decoy_rate={decoy_rate!r}")
    if isinstance(random_state, np.random.Generator):
        rng = random_state
    else:
        rng = np.random.default_rng(check_random_state(random_state).randint(0, 2**31 - 1))
    n_pos = round(n * positive_rate)
    if n >= 2:
        n_pos = min(max(n_pos, 1), n - 1)
    y = -np.ones(n)
    y[rng.permutation(n)[:n_pos]] = 1.0
    codes = rng.integers(0, 4, size=(n, L), dtype=np.uint8)
    pos = y > 0
    site = pos | ((rng.random(n) < decoy_rate) & ~pos)
    codes[site, s], codes[site, s + 1] = 0, 2  # A, G
    tract = codes[:, s - d_motif : s]
    redraw = (rng.random(tract.shape) < 0.6) & pos[:, None]
    tract[redraw] = rng.choice(np.array([1, 3], dtype=np.uint8), size=int(redraw.sum()))  # a view: writes codes
    codes[pos & (rng.random(n) < 0.4), s + 2] = 2
    return codes, y
