"""The column cache of feature cached loops (``fcl.py``) and memory sizes.

The cache is an arena of ``cache_bytes`` (12 bytes per cached nonzero: int32 row, float64
value) and one slot per cached column; the jitted parts (insert, evict, compact, and the
trainer's work on the slots) are in ``_fcl_kernels``. A thread changes it only under
``FeatureCache.lock``.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _fcl_kernels as K

__all__ = ["FeatureCache", "parse_bytes"]

_ENTRY_BYTES = 12  # one cached nonzero: int32 row + float64 value


def parse_bytes(value) -> int:
    """A memory size: an int (bytes) or a string such as "512MB", "2GB", "1.5GiB"."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        size = int(value)
    elif isinstance(value, str):
        text = value.strip().upper().replace(" ", "")
        units = {
            "KIB": 2**10,
            "MIB": 2**20,
            "GIB": 2**30,
            "TIB": 2**40,
            "KB": 10**3,
            "MB": 10**6,
            "GB": 10**9,
            "TB": 10**12,
            "K": 2**10,
            "M": 2**20,
            "G": 2**30,
            "B": 1,
        }
        for unit, factor in units.items():
            if text.endswith(unit):
                number, scale = text[: -len(unit)], factor
                break
        else:
            number, scale = text, 1
        try:
            size = int(float(number) * scale)
        except ValueError:
            raise ValueError(f"cannot read a memory size from {value!r} (e.g. 2GB, 512MiB, 1000000)") from None
    else:
        raise ValueError(f"a memory size is an int or a string such as '2GB', got {value!r}")  # noqa: TRY004 - one error type for every bad size (the CLI reports ValueError)
    if size < _ENTRY_BYTES:
        raise ValueError(f"memory size {value!r} is too small")
    return size


def slot_dtype(n_candidates):
    """dtype of the candidate -> slot map: int32 (4 bytes per candidate) while a slot number
    (at most one slot per candidate) fits, int64 beyond 2**31 - 1 candidates, where int32
    slot numbers would wrap."""
    return np.int32 if int(n_candidates) <= np.iinfo(np.int32).max else np.int64


class FeatureCache:
    """The trainer's columns: an arena of ``cache_bytes`` (12 bytes per nonzero) and one slot
    per cached column (see ``_fcl_kernels``). Lock it (``with cache.lock``) to change it.

    Besides the arena, the cache keeps 4 bytes per candidate (the slot map; 8 past 2**31 - 1
    candidates) and 32 per cached column. Row numbers are int32: the feature space refuses
    more than 2**31 - 1 examples (``feature_spaces.check_row_count``).
    """

    def __init__(self, n_candidates: int, cache_bytes: int, random_state=None):
        self.capacity = int(cache_bytes) // _ENTRY_BYTES
        self.rows = np.empty(self.capacity, dtype=np.int32)
        self.vals = np.empty(self.capacity, dtype=np.float64)
        self.slot_of = np.full(int(n_candidates), -1, dtype=slot_dtype(n_candidates))
        self._slots(1024)
        self.counts = np.zeros(5, dtype=np.int64)  # n_slots, live nonzeros, updates, evicted, nonzeros read
        self.end = 0  # the arena is used up to here (live columns and holes)
        self.inserted = self.dropped = self.evicted_for_room = 0
        self.lock = threading.Lock()
        self.rng = np.random.default_rng(random_state)

    def _slots(self, size):
        old = getattr(self, "start", None)
        new = {
            "start": np.zeros(size, np.int64),
            "length": np.zeros(size, np.int64),
            "feature": np.zeros(size, np.int64),
            "w": np.zeros(size),
        }
        for name, array in new.items():
            if old is not None:
                array[: len(old)] = getattr(self, name)
            setattr(self, name, array)

    @property
    def n_slots(self) -> int:
        return int(self.counts[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the live columns."""
        return int(self.counts[1]) * _ENTRY_BYTES

    def arrays(self):
        return self.rows, self.vals, self.start, self.length, self.feature, self.w, self.slot_of, self.counts

    def add(self, j0, indptr, rows, vals, chosen) -> int:
        """Insert the block's columns ``chosen`` (candidates j0 + m) that are not cached yet,
        evicting random zero-weight columns when the budget is full. Hold the lock.
        Returns how many were inserted (the others are counted in ``dropped``)."""
        chosen = [m for m in chosen if self.slot_of[j0 + m] < 0]
        need = int(sum(indptr[m + 1] - indptr[m] for m in chosen))
        free = self.capacity - int(self.counts[1])
        if need > free:
            self._evict_for_room(need - free)
        done = 0
        for m in chosen:
            a, b = indptr[m], indptr[m + 1]
            size = int(b - a)
            if self.counts[1] + size > self.capacity:
                self.dropped += 1
                continue
            if self.end + size > self.capacity:
                self.end = K.compact(self.rows, self.vals, self.start, self.length, self.counts[0])
            if self.counts[0] == self.start.shape[0]:
                self._slots(2 * self.start.shape[0])
            K.insert(
                self.rows,
                self.vals,
                self.start,
                self.length,
                self.feature,
                self.w,
                self.slot_of,
                self.counts,
                self.end,
                rows[a:b],
                vals[a:b],
                j0 + m,
            )
            self.end += size
            done += 1
        self.inserted += done
        return done

    def _evict_for_room(self, amount):
        """The paper's random eviction, restricted to columns whose weight is 0."""
        n = self.n_slots
        zero = np.flatnonzero(self.w[:n] == 0.0)
        freed = 0
        victims = []
        for s in self.rng.permutation(zero):
            if freed >= amount:
                break
            victims.append(s)
            freed += int(self.length[s])
        # Evict from the highest slot down: a swap-with-last then never moves a victim.
        for s in sorted(victims, reverse=True):
            n, gone = K.evict(s, n, self.start, self.length, self.feature, self.w, self.slot_of)
            self.counts[1] -= gone
        self.counts[0] = n
        self.evicted_for_room += len(victims)

    def coef(self, p) -> np.ndarray:
        coef = np.zeros(p)
        n = self.n_slots
        coef[self.feature[:n]] = self.w[:n]
        return coef
