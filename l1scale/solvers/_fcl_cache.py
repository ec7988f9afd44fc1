"""The column cache of feature cached loops (``fcl.py``) and memory sizes.

The cache is an arena of ``cache_bytes`` (12 bytes per cached nonzero: int32 row, float64
value) and one slot per cached column; the jitted parts (insert, evict, compact, and the
trainer's work on the slots) are in ``_fcl_kernels``. A thread changes it only under
``FeatureCache.lock``.

Any cached column may be evicted to make room (the paper's writer evicts random columns).
A column evicted with a nonzero weight keeps its weight in the side table of *parked*
weights (``parked_feature``, ``parked_w``; ``slot_of`` is -2 - k for the k-th): its
contribution stays in the margins, it is part of the model (``coef``) and of the penalty,
and the writer inserts it again, with its weight, when it violates optimality.
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
    candidates), 32 per cached column and 16 per parked weight (a nonzero weight whose column
    was evicted). Row numbers are int32: the feature space refuses more than 2**31 - 1
    examples (``feature_spaces.check_row_count``).
    """

    def __init__(self, n_candidates: int, cache_bytes: int, random_state=None):
        self.capacity = int(cache_bytes) // _ENTRY_BYTES
        self.rows = np.empty(self.capacity, dtype=np.int32)
        self.vals = np.empty(self.capacity, dtype=np.float64)
        self.slot_of = np.full(int(n_candidates), -1, dtype=slot_dtype(n_candidates))
        self._slots(1024)
        self.counts = np.zeros(5, dtype=np.int64)  # n_slots, live nonzeros, updates, evicted, nonzeros read
        self.end = 0  # the arena is used up to here (live columns and holes)
        self.inserted = self.dropped = self.evicted_for_room = self.evicted_nonzero = 0
        self.parked_feature = np.zeros(64, np.int64)
        self.parked_w = np.zeros(64)
        self.n_parked = 0
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
        """What the trainer's kernel takes: the arena, the slots, the slot map and ``counts``."""
        return self.rows, self.vals, self.start, self.length, self.feature, self.w, self.slot_of, self.counts

    # ------------------------------------------------------------------ parked weights
    def weight(self, j) -> float:
        """Candidate j's weight: cached, parked or 0."""
        s = int(self.slot_of[j])
        if s >= 0:
            return float(self.w[s])
        return float(self.parked_w[-2 - s]) if s <= -2 else 0.0

    def park(self, j, w):
        """Keep the nonzero weight w of the uncached candidate j (slot_of[j] == -1) in the side table."""
        k = self.n_parked
        if k == self.parked_w.shape[0]:
            # New arrays (never resized in place): a writer screening against the old table
            # reads stale weights, never past its end.
            self.parked_feature = np.concatenate([self.parked_feature, np.zeros(k, np.int64)])
            self.parked_w = np.concatenate([self.parked_w, np.zeros(k)])
        self.parked_feature[k], self.parked_w[k] = j, w
        self.slot_of[j] = -2 - k
        self.n_parked = k + 1

    def unpark(self, j) -> float:
        """Take candidate j out of the side table (slot_of[j] becomes -1); returns its weight."""
        k = -2 - int(self.slot_of[j])
        w = float(self.parked_w[k])
        last = self.n_parked - 1
        if k != last:
            moved = int(self.parked_feature[last])
            self.parked_feature[k], self.parked_w[k] = moved, self.parked_w[last]
            self.slot_of[moved] = -2 - k
        self.n_parked = last
        self.slot_of[j] = -1
        return w

    def set_uncached_weight(self, j, w):
        """The new weight of an uncached candidate (a CDN step on a column that does not fit)."""
        s = int(self.slot_of[j])
        if s <= -2:
            if w == 0.0:
                self.unpark(j)
            else:
                self.parked_w[-2 - s] = w
        elif w != 0.0:
            self.park(j, w)

    # ------------------------------------------------------------------ columns
    def add(self, j0, indptr, rows, vals, chosen):
        """Insert the block's columns ``chosen`` (candidates j0 + m) that are not cached yet,
        with their weights (0, or the parked weight), evicting random columns when the budget
        is full. Hold the lock. Returns how many were inserted and the list of the chosen
        columns m that do not fit even in an emptied cache (counted in ``dropped``)."""
        chosen = [m for m in chosen if self.slot_of[j0 + m] < 0]
        # A column longer than the whole arena makes no room worth evicting for.
        sizes = [int(indptr[m + 1] - indptr[m]) for m in chosen]
        need = sum(size for size in sizes if size <= self.capacity)
        free = self.capacity - int(self.counts[1])
        if need > free:
            self._evict_for_room(need - free)
        done, dropped = 0, []
        for m in chosen:
            a, b = indptr[m], indptr[m + 1]
            size = int(b - a)
            if self.counts[1] + size > self.capacity:
                self.dropped += 1
                dropped.append(m)
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
                self.unpark(j0 + m) if self.slot_of[j0 + m] <= -2 else 0.0,
            )
            self.end += size
            done += 1
        self.inserted += done
        return done, dropped

    def _evict_for_room(self, amount):
        """The paper's random eviction: random columns of weight 0 first (they lose nothing but
        a generated column), then random nonzero ones, whose weights are parked."""
        n = self.n_slots
        w = self.w[:n]
        order = np.concatenate(
            [self.rng.permutation(np.flatnonzero(w == 0.0)), self.rng.permutation(np.flatnonzero(w != 0.0))]
        )
        freed = 0
        victims = []
        for s in order:
            if freed >= amount:
                break
            victims.append(int(s))
            freed += int(self.length[s])
        # Evict from the highest slot down: a swap-with-last then never moves a victim.
        for s in sorted(victims, reverse=True):
            j, wj = int(self.feature[s]), float(self.w[s])
            n, gone = K.evict(s, n, self.start, self.length, self.feature, self.w, self.slot_of)
            if wj != 0.0:  # the weight survives its column, its contribution stays in the margins
                self.park(j, wj)
                self.evicted_nonzero += 1
            self.counts[1] -= gone
        self.counts[0] = n
        self.evicted_for_room += len(victims)

    @property
    def parked(self):
        """(candidates, weights) of the parked weights."""
        k = self.n_parked
        return self.parked_feature[:k], self.parked_w[:k]

    def l1(self) -> float:
        """||w||_1 over the cached and the parked weights."""
        return float(np.abs(self.w[: self.n_slots]).sum() + np.abs(self.parked_w[: self.n_parked]).sum())

    def coef(self, p) -> np.ndarray:
        coef = np.zeros(p)
        n = self.n_slots
        coef[self.feature[:n]] = self.w[:n]
        j, w = self.parked
        coef[j] = w
        return coef
