"""What the two estimators share: parameter checks, the solver choice, fitting in memory,
over a stream or a Dask data set, warm starts, partial_fit and saving (``estimators.py``
holds the estimators themselves)."""

from __future__ import annotations

import copy
import dataclasses
import numbers
import os
import warnings

import numpy as np
import scipy.sparse as sp
from joblib import delayed
from sklearn.base import BaseEstimator
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from . import _generated_fit
from ._generated_fit import GENERATED_SOLVERS
from ._threads import check_n_jobs, run_in_threads
from .data.memory import as_rows, column_matrix, row_matrix
from .data.stream import Stream
from .data.validation import validate_data
from .losses import get_loss
from .model_io import save_model
from .penalties import DEFAULT_LAM_RATIO
from .problems.memory import Problem
from .problems.stream import StreamProblem, scan_stream
from .solvers import SOLVERS
from .solvers.base import EstimatorSettings, Solver
from .solvers.bm_online import OnlineSketch
from .solvers.registry import names

# Solvers that read the data in passes over a Stream (the others need it in memory).
STREAMING_SOLVERS = names(data="stream")


def resumable_solvers() -> list:
    """The names of the solvers that take ``checkpoint=`` (the multi-pass ones; sorted)."""
    return sorted(names(resumable=True))


def _is_stream_input(X) -> bool:
    """A Stream, or a path to an svmlight file or a chunk cache: read in passes, never loaded."""
    return isinstance(X, (Stream, str, os.PathLike))


def is_dask_dataset(X) -> bool:
    """An ``l1scale.distributed.DaskDataset`` (recognised without importing dask)."""
    return getattr(X, "_l1scale_dask", False) is True


# Solvers that run distributed passes over a DaskDataset (l1scale.distributed.distributed_solver).
_DISTRIBUTED = names(distributed=True)


def label_scan(stream):
    """The label scan of a Stream (one pass), or the one a DaskDataset made on its workers."""
    return stream.scan if is_dask_dataset(stream) else scan_stream(stream)


def _stream_problem(stream, *args, **kw):
    """StreamProblem, or the DaskProblem over a DaskDataset's partitions."""
    if is_dask_dataset(stream):
        from .distributed import DaskProblem

        return DaskProblem(stream, *args, **kw)
    return StreamProblem(stream, *args, **kw)


class SparseLinearModel(BaseEstimator):
    """What the classifier and the regressor share: parameters, solving, saving."""

    _losses: tuple = ()

    def _check_params(self, streaming=False):
        """Validate the parameters; returns the solver's name (``"auto"`` resolved)."""
        if self.loss not in self._losses:
            raise ValueError(
                f"loss={self.loss!r} is not supported by {type(self).__name__}; choose one of {list(self._losses)}"
            )
        features = getattr(self, "features", None)
        if isinstance(self.solver, Solver):
            solver = self.solver.name
        elif features is not None and self.solver == "auto":
            solver = "fcl"  # a generated space: feature cached loops, never materialised
        elif self.solver != "auto" and self.solver not in SOLVERS:
            raise ValueError(f"solver={self.solver!r} is not a known solver; choose 'auto' or one of {sorted(SOLVERS)}")
        else:
            # "auto": data held in memory go to the certified CD solver; streamed data
            # (a path or a Stream) to RMMP, whose memory does not grow with n.
            solver = ("rmmp" if streaming else "cd") if self.solver == "auto" else self.solver
        if solver in GENERATED_SOLVERS and features is None:
            raise ValueError(
                f"solver={solver!r} trains over a generated feature space: give features= "
                "(e.g. l1scale.data.DNAPatterns(d=8))"
            )
        if features is not None and (streaming or solver in STREAMING_SOLVERS):
            raise ValueError(
                f"features= takes raw inputs in memory; solver={solver!r} and streamed data do not "
                "apply (use solver='fcl')"
            )
        if self.lam is not None and self.lam_ratio is not None:
            raise ValueError("give lam or lam_ratio, not both")
        for name in ("lam", "lam_ratio"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0):
                raise ValueError(f"{name} must be a finite number > 0, got {name}={value!r}")
        if not isinstance(self.l1_ratio, numbers.Real) or not 0 < self.l1_ratio <= 1:
            raise ValueError(f"l1_ratio must be in (0, 1], got l1_ratio={self.l1_ratio!r}")
        if not isinstance(self.tol, numbers.Real) or not self.tol > 0:
            raise ValueError(f"tol must be > 0, got tol={self.tol!r}")
        if not isinstance(self.max_iter, numbers.Integral) or self.max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, got max_iter={self.max_iter!r}")
        if self.two_stage is not None and (not isinstance(self.two_stage, numbers.Real) or not 0 < self.two_stage <= 1):
            raise ValueError(
                f"two_stage must be None or a ratio in (0, 1] (lam2 = two_stage * lam), "
                f"got two_stage={self.two_stage!r}"
            )
        if self.two_stage is not None and streaming:
            raise ValueError("two_stage re-solves on the support in memory; it does not apply to streamed data")
        if self.max_active is not None and (not isinstance(self.max_active, numbers.Integral) or self.max_active < 1):
            raise ValueError(f"max_active must be an integer >= 1, got max_active={self.max_active!r}")
        if streaming == "dask" and solver not in _DISTRIBUTED:
            raise ValueError(
                f"solver={solver!r} has no distributed version; a DaskDataset is fitted by one of {list(_DISTRIBUTED)}"
            )
        if streaming is True and solver not in STREAMING_SOLVERS:
            raise ValueError(
                f"solver={solver!r} needs the data in memory; a path or Stream is read by "
                f"one of {list(STREAMING_SOLVERS)} (or load it with l1scale.data.load_svmlight)"
            )
        check_n_jobs(getattr(self, "n_jobs", None))
        if getattr(self, "checkpoint", None) is not None and solver not in resumable_solvers():
            raise ValueError(
                f"checkpoint= is not supported by solver={solver!r}; the resumable (multi-pass) solvers "
                f"are {resumable_solvers()}"
            )
        if getattr(self, "checkpoint", None) is not None and streaming == "dask" and solver not in ("mp", "rmmp"):
            # the distributed drivers of the other solvers keep their state on the workers
            raise ValueError(f"checkpoint= with a DaskDataset applies to solver='mp' or 'rmmp', not {solver!r}")
        return solver

    def _ignore_n_jobs(self, how, stacklevel):
        """Warn that n_jobs > 1 does not apply to this fit (streamed data, a DaskDataset,
        a generated feature space: they keep their own passes), as scikit-learn does."""
        n_jobs = getattr(self, "n_jobs", None)
        if n_jobs not in (None, 1):
            warnings.warn(
                f"n_jobs={n_jobs} has no effect on {how}: the binary problems are solved one after "
                "the other (n_jobs applies to in-memory solvers)",
                UserWarning,
                stacklevel=stacklevel + 1,
            )

    def _make_solver(self, k=0, n_problems=1, stage="", in_memory=True):
        """The Solver instance for binary problem k (of ``n_problems``); ``stage`` names a second
        solve of the same problem (two_stage), which keeps its own checkpoint file;
        ``in_memory``: whether the data are held in memory (a Stream over arrays included)."""
        # One checkpoint file per binary problem (PATH.k) and per stage (PATH.stage2).
        checkpoint = self.checkpoint
        if checkpoint is not None and n_problems > 1:
            checkpoint = f"{os.fspath(checkpoint)}.{k}"
        if checkpoint is not None and stage:
            checkpoint = f"{os.fspath(checkpoint)}.{stage}"
        if isinstance(self.solver, Solver):
            solver = self.solver
            if checkpoint is None and getattr(solver, "checkpoint", None) is not None and (n_problems > 1 or stage):
                # the instance's own checkpoint, one file per problem and stage
                checkpoint = (
                    os.fspath(solver.checkpoint) + (f".{k}" if n_problems > 1 else "") + (f".{stage}" if stage else "")
                )
            if checkpoint is not None and getattr(solver, "resumable", False):
                solver = copy.copy(solver)  # the estimator's checkpoint= applies to a solver instance too
                solver.checkpoint = checkpoint
            return solver
        settings = EstimatorSettings(
            tol=self.tol,
            max_iter=self.max_iter,
            random_state=self.random_state,
            checkpoint=checkpoint,
            callback=self.callback,
            verbose=self.verbose,
            max_active=self.max_active,
            cache_bytes=getattr(self, "cache_bytes", None),
            in_memory=in_memory,
        )
        return SOLVERS[self.solver_].from_estimator(settings)

    def _solve(self, X, y, sample_weight, coef_init, intercept_init, k=0, n_problems=1):
        """One binary (or regression) problem held in memory (problem k of ``n_problems``);
        returns (Result, lam)."""
        if self.lam is not None:
            problem = Problem(
                X,
                y,
                self.loss,
                self.lam,
                l1_ratio=self.l1_ratio,
                fit_intercept=self.fit_intercept,
                sample_weight=sample_weight,
            )
        else:
            ratio = DEFAULT_LAM_RATIO if self.lam_ratio is None else self.lam_ratio
            problem = Problem(
                X,
                y,
                self.loss,
                lam_ratio=ratio,
                l1_ratio=self.l1_ratio,
                fit_intercept=self.fit_intercept,
                sample_weight=sample_weight,
            )
        result = self._own_solver(k, n_problems).solve(problem, coef_init, intercept_init)
        if self.two_stage is not None:
            result = self._second_stage(X, y, sample_weight, problem.lam, result, k, n_problems)
        return result, problem.lam

    def _own_solver(self, k=0, n_problems=1, stage=""):
        """The solver of one in-memory solve: a copy of a Solver instance given as ``solver``,
        since solvers keep per-solve state (scd's generator) and solves may run in threads."""
        solver = self._make_solver(k, n_problems, stage)
        return copy.copy(solver) if solver is self.solver else solver

    def _solve_all(self, X, targets, sample_weight, coef_init, intercept_init, checked=False):
        """The problems (X, y_k), y_k in ``targets``, held in memory: [(Result, lam)] in the
        order of ``targets``. With more than one they run in threads over ``n_jobs``
        (joblib's conventions; the kernels release the GIL); each solve is seeded alike, so the
        results do not depend on n_jobs. X is converted to the column layout once, for every
        problem; ``checked``: X has just been validated (``validate_data``), so the problems
        built on it do not scan it again."""

        def warm(k):
            return (None if coef_init is None else coef_init[k], None if intercept_init is None else intercept_init[k])

        if len(targets) == 1:
            # One problem: a CSR X stays CSR, and the Problem converts what its solver reads
            # (CD's row start at a large lam reads a few columns).
            if sp.issparse(X) and X.format == "csr":
                X = row_matrix(X, checked=checked)
            else:
                X = column_matrix(X, checked=checked)
            return [self._solve(X, targets[0], sample_weight, *warm(0))]
        X = column_matrix(X, checked=checked)  # shared by every problem: Problem(X, ...) copies nothing
        return run_in_threads(
            (delayed(self._solve)(X, y_k, sample_weight, *warm(k), k, len(targets)) for k, y_k in enumerate(targets)),
            getattr(self, "n_jobs", None),
        )

    def _second_stage(self, X, y, sample_weight, lam, first, k=0, n_problems=1):
        """Qin et al.'s two-stage active set (sec. 3.2): re-solve on the first solution's
        support only, at lam2 = two_stage * lam (warm-started); the coefficients off the
        support stay 0. The Result is the second solve's, in the full width."""
        support = np.flatnonzero(first.coef)
        if support.size == 0:
            return first
        sub = Problem(
            X[:, support],
            y,
            self.loss,
            self.two_stage * lam,
            l1_ratio=self.l1_ratio,
            fit_intercept=self.fit_intercept,
            sample_weight=sample_weight,
        )
        second = self._own_solver(k, n_problems, "stage2").solve(sub, first.coef[support], first.intercept)
        coef = np.zeros_like(first.coef)
        coef[support] = second.coef
        return dataclasses.replace(second, coef=coef)

    def _fit_stream(self, stream, positives, class_weight, scan, classes=None):
        """Each binary problem (one per positive class; [None] for regression) over the stream;
        ``classes``: declared instead of ``scan`` (no label pass; ``stream_scan_`` is then the
        one the first pass counted)."""
        self._ignore_n_jobs("streamed data or a DaskDataset", stacklevel=4)
        self.stream_scan_ = scan  # before any solving: a callback may read it
        results, lams, states = [], [], []
        coef_init, intercept_init = self._warm(len(positives), stream.n_features)
        for k, positive in enumerate(positives):
            lam_ratio = (DEFAULT_LAM_RATIO if self.lam_ratio is None else self.lam_ratio) if self.lam is None else None
            problem = _stream_problem(
                stream,
                self.loss,
                self.lam,
                lam_ratio=lam_ratio,
                l1_ratio=self.l1_ratio,
                fit_intercept=self.fit_intercept,
                positive_class=positive,
                class_weight=class_weight,
                scan=scan,
                **({} if classes is None else {"classes": classes}),
            )
            solver = self._make_solver(k, len(positives), in_memory=getattr(stream, "in_memory", False))
            if is_dask_dataset(stream):
                from .distributed import distributed_solver

                solver = distributed_solver(solver)
            if isinstance(solver, OnlineSketch):
                if problem.penalty is None:
                    problem.resolve_lam(problem.gradient_at_start())  # lam_max: one pass first
                result = solver.solve(problem)
            else:
                result = solver.solve(
                    problem,
                    None if coef_init is None else coef_init[k],
                    None if intercept_init is None else intercept_init[k],
                )
            if hasattr(solver, "state_"):
                states.append(solver.state_)
            results.append(result)
            lams.append(problem.lam)
            if scan is None:
                self.stream_scan_ = problem.scan  # counted by the first pass (declared classes)
        # partial_fit after fit continues the Online algorithm from where fit left it.
        self.__dict__.pop("_online_states", None)
        if states:
            self._online_states = states
        return results, lams

    def _is_online(self):
        """Whether the solver learns example by example (then ``partial_fit`` exists)."""
        if isinstance(self.solver, Solver):
            return hasattr(self.solver, "partial_fit")
        return self.solver in SOLVERS and hasattr(SOLVERS[self.solver], "partial_fit")

    def _partial_fit(self, X, y, sample_weight, positives_of):
        """Continue the Online algorithm with the rows of X (see ``partial_fit``)."""
        if getattr(self, "standardize", False):
            raise ValueError(
                "standardize=True is not supported by partial_fit (the Online algorithm sees rows one by one)"
            )
        first = not hasattr(self, "_online_states")
        if self.lam is not None:
            lam = float(self.lam)
        elif not first:
            lam = float(np.ravel(self.lam_)[0])  # continuing a fit: its lam
        else:
            raise ValueError("partial_fit needs lam: lam_ratio needs lam_max, which needs all the data first")
        self.solver_ = self._check_params()
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse=("csr", "csc"),
            dtype=(np.float64, np.float32),
            reset=first,
            y_numeric=self.loss == "squared",
        )
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
        targets = positives_of(y, first)
        solver = self._make_solver()
        if first:
            self._online_states = [solver.new_state(X.shape[1], self.fit_intercept) for _ in targets]
        pen_l1, pen_l2 = lam * self.l1_ratio, lam * (1.0 - self.l1_ratio)
        rows = as_rows(X)
        kind = get_loss(self.loss).kernel_id
        for state, (y_k, s_k) in zip(self._online_states, targets):
            solver.partial_fit(state, rows, y_k, s_k * sample_weight, kind=kind, l1=pen_l1, l2=pen_l2)
        self.lam_ = lam
        return self._online_states

    def _set_stream_width(self, stream, scan):
        """n_features_in_ for data given as a path or Stream (arrays set it in validate_data)."""
        self.n_features_in_ = scan.n_features if scan is not None else stream.n_features
        self.__dict__.pop("feature_names_in_", None)

    def _stream_for(self, X, y, sample_weight):
        """The Stream a streaming solver reads: X itself, a path opened, or arrays in chunks."""
        if isinstance(X, Stream) or is_dask_dataset(X):
            stream = X
        elif isinstance(X, (str, os.PathLike)):
            stream = Stream.open(X)
        else:
            return None
        if y is not None or sample_weight is not None:
            raise ValueError(
                "with a path or Stream as X, labels and weights come from it: give y=None and sample_weight=None"
            )
        return stream

    def _warm(self, n_rows, n_features):
        if self.warm_start and hasattr(self, "coef_") and self.coef_.shape == (n_rows, n_features):
            return self._dense_coef(), self.intercept_
        return None, None

    def save(self, path, metadata=None):
        """Write the fitted model to ``path`` (portable, versioned, written atomically).

        Besides the coefficients it keeps the parameters (a ``class_weight`` dict with its keys'
        types), the classes, the feature names (:attr:`feature_names_`), ``n_iter_`` and a
        summary of ``result_`` (objective, certificate, stop reason, iterations per problem).

        ``metadata``: more JSON facts stored with the model (the CLI records how its training
        data were read, e.g. ``{"data": {"zero_based": True}}``); they never replace the
        estimator's own keys.
        """
        check_is_fitted(self)
        coef = self._dense_coef()
        meta = {
            **dict(metadata or {}),
            "estimator": type(self).__name__,
            "params": _json_params(self.get_params()),
            "loss": self.loss,
            "lam": np.atleast_1d(self.lam_).tolist(),
            "l1_ratio": self.l1_ratio,
            "fit_intercept": self.fit_intercept,
            "n_features": int(np.shape(coef)[-1]),
        }
        if hasattr(self, "classes_"):
            meta["classes"] = self.classes_.tolist()
        if isinstance(getattr(self, "class_weight", None), dict):
            meta["class_weight_items"] = [[_plain(k), float(v)] for k, v in self.class_weight.items()]
        names = self.feature_names_
        if names is not None:
            meta["feature_names"] = [str(n) for n in names]
            meta["feature_names_source"] = "columns" if hasattr(self, "feature_names_in_") else "vocabulary"
        if hasattr(self, "n_iter_"):
            meta["n_iter"] = np.atleast_1d(self.n_iter_).astype(int).tolist()
        results = getattr(self, "result_", None)
        if results is not None:
            meta["result"] = [_result_summary(r) for r in (results if isinstance(results, list) else [results])]
        if getattr(self, "features_", None) is not None:
            meta["features"] = _generated_fit.space_spec(self.features_)
        if getattr(self, "multi_class_", "ovr") == "multinomial":  # one softmax problem: one result summary
            meta["multi_class"] = "multinomial"
        save_model(path, coef=coef, intercept=self.intercept_, metadata=meta)

    # ------------------------------------------------------------ names, sparse coef_, ONNX

    @property
    def feature_names_(self):
        """The names of the columns of ``coef_``, or None when unknown: ``feature_names_in_``
        (a DataFrame's columns, checked at predict as scikit-learn does), else the names given
        to :meth:`set_feature_names` (a vocabulary: the CLI's ``--feature-names``, kept in the
        model file). Names whose number is not the model's width (after a refit) are not shown."""
        names = self.__dict__.get("feature_names_in_")
        if names is None:
            names = self.__dict__.get("_vocabulary_names")
        if names is None or not hasattr(self, "coef_") or len(names) != np.shape(self.coef_)[-1]:
            return None
        return names

    def set_feature_names(self, names):
        """Name the columns of the fitted ``coef_`` (a vocabulary for data without column names).

        Parameters
        ----------
        names : sequence of str or None
            One name per column (``""`` for a column without a name, e.g. a hashed slot no
            known feature falls into); None forgets them.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            The number of names is not the number of columns of ``coef_``, or a name is not a string.
        """
        check_is_fitted(self)
        if names is None:
            self.__dict__.pop("_vocabulary_names", None)
            return self
        names = np.asarray(list(names), dtype=object)
        width = np.shape(self.coef_)[-1]
        if names.ndim != 1 or names.shape[0] != width:
            raise ValueError(f"names: {names.shape[0] if names.ndim else 0} names for the {width} columns of coef_")
        if not all(isinstance(n, str) for n in names):
            raise ValueError("names: every feature name must be a string")
        self._vocabulary_names = names
        return self

    def sparsify(self):
        """Store ``coef_`` as a scipy.sparse CSR matrix (as scikit-learn's linear models do).

        Predictions are unchanged; for an L1 model with few nonzero weights the matrix holds
        only those, and ``decision_function`` multiplies by them alone. ``save``, ``to_onnx``
        and warm starts work on a sparsified model; ``partial_fit`` needs :meth:`densify` first.

        Returns
        -------
        self
        """
        check_is_fitted(self)
        if not sp.issparse(self.coef_):
            self.coef_ = sp.csr_matrix(np.atleast_2d(self.coef_))
        return self

    def densify(self):
        """Store ``coef_`` as a numpy array again (the default layout), undoing :meth:`sparsify`.

        Returns
        -------
        self
        """
        check_is_fitted(self)
        if sp.issparse(self.coef_):
            dense = self.coef_.toarray()
            self.coef_ = dense.ravel() if np.ndim(self.intercept_) == 0 else dense
        return self

    def _dense_coef(self):
        """``coef_`` as a numpy array whatever its layout (sparsify keeps it as CSR)."""
        if not sp.issparse(self.coef_):
            return self.coef_
        dense = self.coef_.toarray()
        return dense.ravel() if np.ndim(self.intercept_) == 0 else dense

    def to_onnx(self, *, dtype=np.float64, target_opset=None):
        """The fitted model as an ONNX graph (needs the optional ``onnx`` extra: skl2onnx).

        Input ``X``: a dense (n, n_features) tensor of ``dtype``. Outputs: a classifier's
        ``label`` and ``probabilities`` (a squared-hinge classifier's margins instead), a
        regression's ``variable``; the same numbers as ``predict`` / ``predict_proba``.
        See :func:`l1scale.onnx.to_onnx`.

        Returns
        -------
        onnx.ModelProto
        """
        from .onnx import to_onnx

        return to_onnx(self, dtype=dtype, target_opset=target_opset)


def _plain(value):
    """A numpy scalar as the Python value JSON writes (other values unchanged)."""
    return value.item() if isinstance(value, np.generic) else value


def _result_summary(result):
    """What a model file keeps of a solver Result: its numbers, not its arrays or History."""
    return {
        "objective": float(result.objective),
        "certificate_name": result.certificate_name,
        "certificate": float(result.certificate),
        "relative_certificate": float(result.relative_certificate),
        "converged": bool(result.converged),
        "stop_reason": result.stop_reason,
        "n_iter": int(result.n_iter),
    }


def _json_params(params):
    """The JSON-representable parameters (a dict's keys as strings: ``class_weight_items``
    keeps class_weight's keys with their types)."""
    out = {k: v for k, v in params.items() if v is None or isinstance(v, (str, bool, int, float))}
    out.update({k: {str(_plain(key)): val for key, val in v.items()} for k, v in params.items() if isinstance(v, dict)})
    return out
