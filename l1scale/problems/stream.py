"""The problem of :mod:`l1scale.problems.memory` over data that are streamed, never held.

    P(w, b) = (1/W) sum_i s_i loss(y_i, x_i . w + b) + lam (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2)

with W = sum_i s_i, exactly as :class:`~l1scale.problems.Problem`, but X and y come
from a :class:`~l1scale.data.stream.Stream`, one chunk of rows at a time. Streaming
solvers (MP, RMMP, Online) read it through :meth:`StreamProblem.chunks`, which turns
the stream's labels into {-1, +1}, applies sample and class weights, and checks every
chunk (NaN / infinity, unknown labels) with an error that names the rows.

A first pass, :func:`scan_stream`, reads the labels and weights (and counts the
nonzeros of X): it finds the classes, n, W and the intercept-only optimum b0 (closed
form for every loss solved here), so that the solver's first real pass starts at
(0, b0) and lam_max comes from that pass's gradient.

A classifier given its ``classes`` (declared, as scikit-learn's ``partial_fit`` takes
them) skips that pass: the first pass of the solver counts what the scan would have
(``scan`` is set at its end), so a one-pass solver reads the data once, which is what
a pipe allows. Only the solvers that need nothing before their first pass take such a
problem (``Solver.needs_label_pass`` False: truncated gradient, the Online algorithm):
no lam_ratio (lam_max needs a pass), no b0, no n or W up front.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtri

from ..data.memory import as_rows
from ..data.stream import Stream
from ..exceptions import DataFormatError
from ..losses import get_loss
from ..penalties import Regularization
from .base import Certificate
from .memory import gap_certificate, optimal_intercept

__all__ = ["StreamProblem", "StreamScan", "scan_stream"]


class StreamScan(NamedTuple):
    """What one pass over the labels tells.

    Attributes
    ----------
    n_samples : int
    n_features : int
    classes : ndarray
        Sorted distinct labels.
    counts : ndarray of int64
        Rows per class.
    weights : ndarray of float64
        Sum of sample weights per class.
    weight_sum : float
        sum_i s_i.
    label_weighted_sum : float
        sum_i s_i y_i (for the squared loss's intercept).
    nnz : int
        Nonzeros of X (stored entries of sparse chunks, nonzero entries of dense ones).

    A target with more than 1000 distinct values (regression) keeps no class table:
    ``classes``, ``counts`` and ``weights`` are then empty.
    """

    n_samples: int
    n_features: int
    classes: np.ndarray
    counts: np.ndarray
    weights: np.ndarray
    weight_sum: float
    label_weighted_sum: float
    nnz: int


_MAX_CLASSES = 1000


def _source_name(stream: Stream) -> str:
    return stream._source.describe()


def scan_stream(stream: Stream) -> StreamScan:
    """One pass over ``stream`` reading labels and weights, and counting the nonzeros of X."""
    found: dict | None = {}
    n = nnz = 0
    weight_sum = label_sum = 0.0
    for y, s, chunk_nnz in stream.label_pass():
        bad = ~np.isfinite(y)
        if bad.any():
            raise DataFormatError(
                f"label of row {n + int(np.flatnonzero(bad)[0])} is NaN or infinite", path=_source_name(stream)
            )
        s = np.ones_like(y) if s is None else s
        if not np.isfinite(s).all() or (s < 0).any():
            raise DataFormatError(
                f"sample weights of rows {n}..{n + y.shape[0] - 1} must be finite and non-negative",
                path=_source_name(stream),
            )
        if found is not None:
            values, inverse = np.unique(y, return_inverse=True)
            counts = np.bincount(inverse, minlength=values.shape[0])
            sums = np.bincount(inverse, weights=s, minlength=values.shape[0])
            for v, c, w in zip(values.tolist(), counts.tolist(), sums.tolist()):
                c0, w0 = found.get(v, (0, 0.0))
                found[v] = (c0 + c, w0 + w)
            if len(found) > _MAX_CLASSES:
                found = None  # a regression target
        weight_sum += float(s.sum())
        label_sum += float(s @ y)
        n += y.shape[0]
        nnz += chunk_nnz
    if n == 0:
        raise DataFormatError("the stream has no rows", path=_source_name(stream))
    if weight_sum <= 0:
        raise DataFormatError("the sample weights sum to zero", path=_source_name(stream))
    keys = sorted(found) if found is not None else []
    return StreamScan(
        n,
        int(stream.n_features),
        np.array(keys, dtype=np.float64),
        np.array([found[k][0] for k in keys], dtype=np.int64),
        np.array([found[k][1] for k in keys], dtype=np.float64),
        weight_sum,
        label_sum,
        nnz,
    )


def _check_class_labels(classes, stream):
    """The labels of a classifier as the in-memory estimators take them.

    In memory, scikit-learn's ``check_classification_targets`` rejects float labels that are
    not all integral ("continuous"): labels such as {-1, 1, 1.0000000000000002} are an error
    there, not three classes. A stream's labels are always float64, so the same test runs on
    the distinct labels of the scan (the type of target depends only on them), with the same
    message plus the labels at fault and the source.
    """
    from sklearn.utils.multiclass import check_classification_targets

    try:
        check_classification_targets(classes)
    except ValueError as exc:
        odd = classes[classes != np.round(classes)]
        raise ValueError(
            f"{exc} (labels that are not integers: {odd[:5].tolist()}; in {_source_name(stream)})"
        ) from None


class StreamProblem:
    """Loss + penalty + intercept over a Stream, validated chunk by chunk.

    A :class:`~l1scale.problems.base.ProblemLike` of kind ``"stream"``: solvers read it in passes
    (:meth:`chunks`); its objective, certificate (the KKT violation, as MP's) and lam_max each
    cost one pass.

    Parameters
    ----------
    stream : Stream, str or path-like
        Rows of X with labels (and optionally sample weights); a path is opened
        with :meth:`Stream.open`.
    loss : str or Loss
    lam : float, optional
        Strength in the mean-loss form. Give exactly one of ``lam`` and ``lam_ratio``.
    lam_ratio : float, optional
        lam as a fraction of lam_max; resolved by the solver's first pass
        (:meth:`resolve_lam`), which evaluates the gradient at (0, b0).
    l1_ratio : float, default 1.0
    fit_intercept : bool, default True
    positive_class : label, optional
        For classification losses: the label mapped to +1 (every other to -1). When
        None the labels must be two classes and the larger is positive.
    class_weight : dict, optional
        Multiplier of the sample weight per label.
    scan : StreamScan, optional
        A scan already made of this stream (saves its pass).
    classes : array-like of two labels, optional
        Classification only: the labels, declared instead of scanned (no label pass; needs
        ``lam``). A row with another label is a DataFormatError. Until the first pass
        ends, ``scan``, ``n_samples`` and ``weight_sum`` are None.
    """

    kind = "stream"
    distributed = False

    def __init__(
        self,
        stream,
        loss="logistic",
        lam=None,
        *,
        lam_ratio=None,
        l1_ratio=1.0,
        fit_intercept=True,
        positive_class=None,
        class_weight=None,
        scan=None,
        classes=None,
    ):
        self.stream = Stream.open(stream)
        self.loss = get_loss(loss)
        self.regularization = Regularization(lam, lam_ratio, l1_ratio)
        self.l1_ratio = self.regularization.l1_ratio
        self.lam_ratio = lam_ratio
        self.penalty = self.regularization.penalty()
        self.fit_intercept = bool(fit_intercept)
        self.class_weight = dict(class_weight or {})
        self._lam_max = None  # known once a pass has made it (lam_ratio's first pass, or lam_max())
        self._checked = False  # chunks() checks values and labels until one pass completes
        if classes is not None:
            self._declare(classes, scan, positive_class)
            return
        self.scan = scan_stream(self.stream) if scan is None else scan
        self.n_samples, self.n_features = self.scan.n_samples, self.scan.n_features
        self._set_labels(positive_class)

    def _declare(self, classes, scan, positive_class):
        """Declared classes: the labels without a label pass (see the module docstring)."""
        if scan is not None:
            raise ValueError("give classes or scan, not both")
        if not self.loss.is_classification:
            raise ValueError(f"classes apply to classification losses, not {self.loss.name!r}")
        if self.penalty is None:
            raise ValueError("declared classes need lam: lam_ratio needs lam_max, a pass over the data first")
        classes = np.unique(np.asarray(classes, dtype=np.float64))
        if classes.shape[0] != 2:
            raise ValueError(f"declare two classes (a binary problem), got {classes.tolist()}")
        _check_class_labels(classes, self.stream)
        if self.stream.n_features is None:
            raise ValueError(
                f"declared classes need the width of {_source_name(self.stream)} before the first pass: "
                "give n_features (e.g. Stream.from_svmlight(path, n_features=...))"
            )
        self.scan = self.n_samples = self.weight_sum = None
        self.n_features = int(self.stream.n_features)
        self._set_classes(classes, classes[1] if positive_class is None else positive_class)

    def _set_labels(self, positive_class):
        scan = self.scan
        self.classes = scan.classes
        if not self.loss.is_classification:
            if self.class_weight:
                raise ValueError("class_weight applies to classification losses only")
            self.positive_class = None
            self.weight_sum = scan.weight_sum
            return
        _check_class_labels(scan.classes, self.stream)
        if scan.classes.shape[0] < 2:
            raise ValueError(f"the labels have only one class ({scan.classes[:1].tolist()}); a classifier needs two")
        if positive_class is None:
            if scan.classes.shape[0] > 2:
                raise ValueError(
                    f"the labels have {scan.classes.shape[0]} classes; give positive_class "
                    "(the estimators fit one-vs-rest)"
                )
            positive_class = scan.classes[1]
        self._set_classes(scan.classes, positive_class)
        self._set_weights(scan)
        if self._positive_weight <= 0 or self._positive_weight >= self.weight_sum:
            raise ValueError("one class has zero total weight; a classifier needs both")

    def _set_classes(self, classes, positive_class):
        """The classes, the one mapped to +1, and each class's weight multiplier (looked up per
        row by searchsorted)."""
        if positive_class not in classes:
            raise ValueError(f"positive_class={positive_class!r} is not among the labels {classes.tolist()}")
        self.classes, self.positive_class = classes, positive_class
        self._class_multiplier = np.array([self.class_weight.get(c, 1.0) for c in classes.tolist()])

    def _set_weights(self, scan):
        """W and the positive class's weight, class weights applied, from a scan."""
        w = scan.weights * self._class_multiplier
        self.weight_sum = float(w.sum())
        self._positive_weight = float(w[scan.classes == self.positive_class].sum())

    # ------------------------------------------------------------------ lam
    @property
    def lam(self):
        return None if self.penalty is None else self.penalty.lam

    def resolve_lam(self, grad_at_start) -> float:
        """Set lam = lam_ratio * lam_max from the mean-form loss gradient at (0, b0)."""
        lam_max = float(np.max(np.abs(grad_at_start), initial=0.0)) / self.l1_ratio
        self._lam_max = lam_max
        if self.penalty is None:
            self.penalty = self.regularization.resolve(lam_max)
        return self.penalty.lam

    def lam_max(self) -> float:
        """The smallest lam for which w = 0 is optimal: ||gradient at (0, b0)||_inf / l1_ratio.
        Known after the pass that resolved ``lam_ratio``; otherwise one pass."""
        if self._lam_max is None:
            self._lam_max = float(np.max(np.abs(self.gradient_at_start()), initial=0.0)) / self.l1_ratio
        return self._lam_max

    def _resolved_penalty(self):
        """The penalty, ``lam_ratio`` resolved first when it is not yet (one pass)."""
        if self.penalty is None:
            self.resolve_lam(self.gradient_at_start())
        return self.penalty

    # ------------------------------------------------------------------ a pass at a point
    def loss_and_gradient(self, w, b=0.0) -> np.ndarray:
        """One pass at (w, b): ``[sum_i s_i loss_i, sum_i s_i loss'_i x_i (d values),
        sum_i s_i loss'_i, sum_i s_i]`` over every row (s the weights :meth:`chunks` gives), as one
        array, so that sums of parts (partitions) add."""
        w = np.asarray(w, dtype=np.float64)
        d = self.n_features
        out = np.zeros(d + 3)
        for rows, y, s, _ in self.chunks():
            X = _as_matrix(rows)
            z = np.asarray(X @ w, dtype=np.float64).reshape(-1) + b
            u = s * self.loss.derivative(y, z)
            out[0] += float(np.sum(s * self.loss.value(y, z)))
            out[1 : d + 1] += X.T @ u
            out[d + 1] += float(np.sum(u))
            out[d + 2] += float(np.sum(s))
        return out

    def _mean_sums(self, w, b):
        """(mean loss, mean-form loss gradient (d,), its intercept part) at (w, b): one pass."""
        sums = self.loss_and_gradient(w, b)
        d = self.n_features
        W = self.weight_sum if self.weight_sum is not None else sums[d + 2]
        return sums[0] / W, sums[1 : d + 1] / W, sums[d + 1] / W

    def objective(self, w, b=0.0) -> float:
        """P(w, b): one pass (two when ``lam_ratio`` is still to be resolved)."""
        pen = self._resolved_penalty()
        loss, _, _ = self._mean_sums(w, b)
        return float(loss + pen.value(np.asarray(w, dtype=np.float64)))

    def certificate(self, w, b=0.0) -> Certificate:
        """The KKT violation at (w, b), as MP and RMMP certify their points: the largest distance
        from minus the loss gradient to the penalty's subdifferential, and with an intercept
        |its gradient|; relative to lam * l1_ratio. One pass (two when ``lam_ratio`` is still to be
        resolved). ``b`` is taken as given (not made optimal)."""
        pen = self._resolved_penalty()
        w = np.asarray(w, dtype=np.float64)
        loss, v, vb = self._mean_sums(w, b)
        viol = float(np.max(pen.subdifferential_distance(w, v), initial=0.0))
        if self.fit_intercept:
            viol = max(viol, abs(float(vb)))
        return Certificate("kkt", viol, viol / pen.l1, float(loss + pen.value(w)))

    def duality_gap(self, w, b=0.0) -> tuple[Certificate, float]:
        """(the duality gap at (w, b*), b*), b* the intercept optimal for w (b without one), as
        :meth:`Problem.certificate <l1scale.problems.Problem.certificate>` gives it in memory: a
        bound on the relative suboptimality P(w, b*) / P* - 1, which the KKT violation of
        :meth:`certificate` is not (an online solver's weights hover near zero, where that
        violation is about lam whatever the objective). Two passes (the margins, then the loss
        gradient at b*), holding the margins, labels and weights of every row (24 bytes a row):
        for streams that fit in memory (the online solvers' ``tol`` check uses it for streams
        over arrays). Losses without a conjugate: :meth:`certificate`."""
        pen = self._resolved_penalty()
        if not self.loss.has_conjugate:
            return self.certificate(w, b), float(b)
        w = np.asarray(w, dtype=np.float64)
        margins, labels, weights = [], [], []
        for rows, y, s, _ in self.chunks():
            margins.append(np.asarray(_as_matrix(rows) @ w, dtype=np.float64).reshape(-1))
            labels.append(y)
            weights.append(s)
        z, y = np.concatenate(margins), np.concatenate(labels)
        c = np.concatenate(weights)
        c = c / c.sum()  # the mean form: c_i = s_i / sum_k s_k
        if self.fit_intercept:
            b = optimal_intercept(self.loss, y, c, z, float(b))
        z += b
        u = c * self.loss.derivative(y, z)
        v = np.zeros(self.n_features)
        start = 0
        for rows, _, s, _ in self.chunks():  # every pass yields the same chunks (the Stream contract)
            v += _as_matrix(rows).T @ u[start : start + s.shape[0]]
            start += s.shape[0]
        return gap_certificate(self.loss, pen, y, c, z, w, v), float(b)

    def gradient_at_start(self) -> np.ndarray:
        """One pass: the mean-form loss gradient X^T (c * loss'(y, b0)) at (0, b0)."""
        b0 = self.intercept_only()
        grad = np.zeros(self.n_features)
        for rows, y, s, _ in self.chunks():
            X = _as_matrix(rows)
            grad += X.T @ (s * self.loss.derivative(y, np.full(y.shape[0], b0)))
        return grad / self.weight_sum

    def intercept_only(self) -> float:
        """b0: the optimal intercept when w = 0 (0 without an intercept)."""
        if not self.fit_intercept:
            return 0.0
        if self.scan is None:
            raise ValueError(
                "b0 needs the label pass: this problem's classes are declared (a solver with "
                "needs_label_pass=False starts at b = 0)"
            )
        name = self.loss.name
        if name == "squared":
            return self.scan.label_weighted_sum / self.scan.weight_sum
        p = self._positive_weight / self.weight_sum
        if name == "logistic":
            return float(np.log(p / (1.0 - p)))
        if name == "probit":
            return float(ndtri(p))
        return 0.0  # other losses: the solver's passes find b

    # ------------------------------------------------------------------ data
    def chunks(self):
        """One pass: ``(rows, y, s, first_row)`` per chunk.

        ``rows`` is a :class:`~l1scale.data.memory.Matrix` in row layout, ``y`` in {-1, +1}
        (classification) or the targets, ``s`` the raw weights (sample x class weight).
        With declared classes, the first complete pass also makes the scan.
        """
        first = 0
        where = _source_name(self.stream)
        classification = self.loss.is_classification
        classes = self.classes
        # Every pass yields the same chunks (the Stream contract; caches are rebuilt when their
        # source changes), so the values and labels are checked during the first complete pass only.
        check = not self._checked
        tally = _Tally(classes) if self.scan is None else None
        for chunk in self.stream:
            X, y = chunk.X, chunk.y
            rows = y.shape[0]
            if X.shape[1] != self.n_features:
                raise DataFormatError(
                    f"rows {first}..{first + rows - 1} have {X.shape[1]} features, the stream has {self.n_features}",
                    path=where,
                )
            values = X.data if sp.issparse(X) else X
            if check and not np.isfinite(values).all():
                raise DataFormatError(f"rows {first}..{first + rows - 1} contain NaN or infinite values", path=where)
            s = np.ones(rows) if chunk.sample_weight is None else np.asarray(chunk.sample_weight, dtype=np.float64)
            if classification:
                known = np.isin(y, classes) if check else None
                if check and not known.all():
                    bad = int(np.flatnonzero(~known)[0])
                    raise DataFormatError(
                        f"row {first + bad} has label {float(y[bad])!r}, not among the declared classes {classes.tolist()}"
                        if tally is not None
                        else f"row {first + bad} has a label not seen by the first pass (the stream changed between "
                        "passes)",
                        path=where,
                    )
                if tally is not None:
                    tally.add(X, y, s, first, where)
                if self.class_weight:  # labels are among the classes (checked above, first pass)
                    s = s * self._class_multiplier[np.searchsorted(classes, y)]
                y = np.where(y == self.positive_class, 1.0, -1.0)
            yield as_rows(X), np.ascontiguousarray(y, dtype=np.float64), s, first
            first += rows
        self._checked = True
        if tally is not None:
            self._set_scan(tally.scan(self.n_features, where))

    def _set_scan(self, scan):
        """The scan a declared-classes problem made during its first pass."""
        self.scan, self.n_samples = scan, scan.n_samples
        self._set_weights(scan)

    def describe(self) -> dict:
        """What identifies this problem (for checkpoints)."""
        return {
            "loss": self.loss.name,
            "lam": self.lam,
            "lam_ratio": self.lam_ratio,
            "l1_ratio": self.l1_ratio,
            "fit_intercept": self.fit_intercept,
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "positive_class": None if self.positive_class is None else _plain(self.positive_class),
            "weight_sum": self.weight_sum,
        }


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def _as_matrix(rows):
    """The chunk's rows (a row-layout Matrix) as a matrix over its arrays, for products."""
    if rows.dense:
        return rows.data.reshape(rows.shape)
    return sp.csr_matrix((rows.data, rows.indices, rows.indptr), shape=rows.shape)


class _Tally:
    """What :func:`scan_stream` counts, counted chunk by chunk during a pass over declared classes."""

    def __init__(self, classes):
        self.classes = classes
        self.counts = np.zeros(classes.shape[0], dtype=np.int64)
        self.weights = np.zeros(classes.shape[0])
        self.label_sum = 0.0
        self.nnz = 0

    def add(self, X, y, s, first, where):
        if not np.isfinite(s).all() or (s < 0).any():
            raise DataFormatError(
                f"sample weights of rows {first}..{first + y.shape[0] - 1} must be finite and non-negative", path=where
            )
        k = np.searchsorted(self.classes, y)
        self.counts += np.bincount(k, minlength=self.classes.shape[0])
        self.weights += np.bincount(k, weights=s, minlength=self.classes.shape[0])
        self.label_sum += float(s @ y)
        self.nnz += int(X.nnz) if sp.issparse(X) else int(np.count_nonzero(X))

    def scan(self, n_features, where) -> StreamScan:
        n = int(self.counts.sum())
        if n == 0:
            raise DataFormatError("the stream has no rows", path=where)
        return StreamScan(
            n,
            int(n_features),
            self.classes,
            self.counts,
            self.weights,
            float(self.weights.sum()),
            self.label_sum,
            self.nnz,
        )
