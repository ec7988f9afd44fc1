"""The training data of ``train --solver mp|rmmp|online`` as a Stream, read in passes."""

from __future__ import annotations

import os

from ..data import Stream
from ._data import too_wide
from ._params import check_no_layout_flag, zero_based_value


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


def train_stream(path, *, zero_based=None, n_features=None, cache=None, on_width=None):
    """The training data as a :class:`~l1scale.data.Stream` (never loaded whole).

    An svmlight file is read with ``Stream.from_svmlight`` (``cache``: the binary chunk
    cache its first pass writes and later passes read); a cache directory with
    ``Stream.from_cache`` (a narrower one is widened to ``n_features``).
    ``on_width(n_features)`` is called once, when the width is known (the first chunk).
    The fitted estimator's ``stream_scan_`` has the size, nonzeros and labels of the data.
    """
    if os.path.isdir(path):
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
