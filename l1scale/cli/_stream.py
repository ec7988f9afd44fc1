"""The training data of ``train`` with a streaming solver (mp, rmmp, online, truncated_gradient,
sgd_cumulative, smidas) as a Stream, read in passes."""

from __future__ import annotations

from ..data import Stream
from ._data import data_format, too_wide
from ._params import DEFAULT_HASH_BITS, check_no_layout_flag, zero_based_value


class _WidthKnown(Stream):
    """A Stream that calls ``on_width(n_features)`` once, at the first chunk it yields:
    the moment an svmlight file's width is known (the estimator's label scan), before
    any pass is solved."""

    on_width = None

    def __iter__(self):
        for chunk in super().__iter__():
            if self.on_width is not None:
                hook, self.on_width = self.on_width, None
                hook(self.n_features)
            yield chunk


def train_stream(path, *, zero_based=None, n_features=None, cache=None, on_width=None, fmt="auto",
                 hash_bits=None):
    """The training data as a :class:`~l1scale.data.Stream` (never loaded whole).

    An svmlight file is read with ``Stream.from_svmlight`` (``cache``: the binary chunk
    cache its first pass writes and later passes read); a cache directory with
    ``Stream.from_cache`` (a narrower one is widened to ``n_features``); a Vowpal Wabbit
    file (``fmt``: as ``--format``) with ``Stream.from_vw``, hashed into 2**``hash_bits``
    columns (default 18), with the same ``cache``.
    ``on_width(n_features)`` is called once, when the width is known (the first chunk).
    The fitted estimator's ``stream_scan_`` has the size, nonzeros and labels of the data.
    """
    fmt = data_format(path, fmt)
    if fmt == "vw":
        stream = _WidthKnown.from_vw(path, DEFAULT_HASH_BITS if hash_bits is None else hash_bits, cache=cache)
    elif fmt == "cache":
        check_no_layout_flag(zero_based, path)
        width = Stream.from_cache(path).n_features
        if n_features is not None and width > n_features:
            raise too_wide(path, width, f"--n-features {n_features}")
        stream = _WidthKnown.from_cache(path, n_features=n_features)
    else:
        stream = _WidthKnown.from_svmlight(path, n_features=n_features,
                                           zero_based=zero_based_value(zero_based), cache=cache)
    stream.on_width = on_width
    return stream
