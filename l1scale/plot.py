"""Plots of a regularisation path, a cross-validation curve and a solver's convergence.

matplotlib is optional (``pip install 'l1scale[plot]'``); it is imported when a function is
called. Each function draws on the ``ax`` (or ``axes``) it is given, or on new ones, and
returns what it drew on, to be labelled, saved or shown as matplotlib users do::

    from l1scale import SparseLogisticRegressionCV, regularization_path
    from l1scale.plot import plot_cv, plot_path

    cv = SparseLogisticRegressionCV(rule="1se").fit(X, y)
    plot_cv(cv)  # mean held-out score per lam, one standard error bars, lam_min and lam_1se
    plot_path(regularization_path(X, y, lams=cv.lams_), lam_min=cv.lam_min_[0], lam_1se=cv.lam_1se_[0])

The x axis of the path and CV plots is lam on a log scale, decreasing to the right (from
lam_max, the empty model, to the densest), as a path is computed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["path_figure", "plot_cv", "plot_history", "plot_path"]

#: How the chosen lams are marked (a vertical line each), in the path and CV plots.
_MARKS = {"lam_min": dict(color="tab:red", ls="--", lw=1.0), "lam_1se": dict(color="tab:blue", ls=":", lw=1.2)}


def _new_axes(n=1):
    """n new Axes stacked on a pyplot figure (matplotlib's error made actionable)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is in the dev extra
        raise ImportError("l1scale.plot needs matplotlib: pip install 'l1scale[plot]'") from exc
    _, axes = plt.subplots(n, 1, sharex=True, squeeze=False, figsize=(7, 3.2 * n), layout="constrained")
    return list(axes[:, 0])


def _lam_axis(ax):
    """lam on a log scale, decreasing to the right."""
    ax.set_xscale("log")
    if not ax.xaxis_inverted():
        ax.invert_xaxis()
    ax.set_xlabel("lam")


def _mark(ax, lam_min=None, lam_1se=None):
    """Vertical lines at the chosen lams (labelled for the legend); returns how many were drawn."""
    drawn = 0
    for name, lam in (("lam_min", lam_min), ("lam_1se", lam_1se)):
        if lam is not None:
            ax.axvline(float(np.ravel(lam)[0]), label=f"{name} = {float(np.ravel(lam)[0]):.3g}", **_MARKS[name])
            drawn += 1
    return drawn


def plot_path(path, *, ax=None, lam_min=None, lam_1se=None):
    """The coefficients along a regularisation path: one line per feature nonzero at some lam.

    Parameters
    ----------
    path : PathResult
        From :func:`~l1scale.path.regularization_path` (or a CV estimator's ``path_``).
    ax : matplotlib Axes, optional
        Where to draw; default a new figure.
    lam_min, lam_1se : float, optional
        Marked with a vertical line each (e.g. a CV estimator's ``lam_min_[0]``, ``lam_1se_[0]``).

    Returns
    -------
    matplotlib Axes
    """
    ax = _new_axes()[0] if ax is None else ax
    lams = np.asarray(path.lams)
    what = "features" if len(path.coef_shape) == 1 else "(class, feature) weights"
    # The columns of the sparse path that are nonzero at some lam: a multinomial path's are
    # (class, feature) pairs. Only those are made dense (news20's whole path would be 235 MB).
    used = np.unique(path.coef_path.indices)
    if used.size:
        ax.plot(lams, path.coef_path[:, used].toarray(), lw=0.9)
    ax.axhline(0.0, color="0.6", lw=0.6, zorder=0)
    _lam_axis(ax)
    ax.set_ylabel("coefficient")
    ax.set_title(f"regularisation path: {used.size} {what} enter, {int(path.nnz[-1])} nonzero at the smallest lam")
    if _mark(ax, lam_min, lam_1se):
        ax.legend(loc="best", fontsize="small")
    return ax


def plot_cv(cv, *, ax=None, class_index=0):
    """The cross-validated score per lam: the mean over the folds with one standard error bars,
    lam_min (the best mean) and lam_1se (the largest lam within one standard error of it) marked.

    Parameters
    ----------
    cv : SparseLogisticRegressionCV
        Fitted.
    ax : matplotlib Axes, optional
        Where to draw; default a new figure.
    class_index : int, default 0
        The class whose curve is drawn, for more than two classes (one-vs-rest).

    Returns
    -------
    matplotlib Axes
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(cv, "cv_mean_")
    ax = _new_axes()[0] if ax is None else ax
    one_vs_rest = np.ndim(cv.cv_mean_) == 2
    if not one_vs_rest and class_index != 0:
        raise ValueError(f"class_index={class_index!r}: a binary model has one curve (class_index=0)")
    pick = (lambda a: np.asarray(a)[class_index]) if one_vs_rest else np.asarray
    lams, mean, se = pick(cv.lams_), pick(cv.cv_mean_), pick(cv.cv_se_)
    ax.errorbar(lams, mean, yerr=se, fmt="o-", ms=3, lw=1.0, capsize=2, color="0.25", ecolor="0.6")
    _mark(ax, pick(cv.lam_min_), pick(cv.lam_1se_))
    _lam_axis(ax)
    scoring = cv.scoring if isinstance(cv.scoring, str) else getattr(cv.scoring, "__name__", "score")
    scoring = {"log_loss": "neg_log_loss"}.get(scoring, scoring)
    n_folds = np.shape(cv.scores_)[-2]
    ax.set_ylabel(f"CV {scoring}")
    title = f"{n_folds}-fold CV: mean {scoring} (higher is better) ± 1 s.e.; refit at {cv.rule!r}"
    if one_vs_rest:
        label = cv.classes_[class_index]
        title = f"class {label.item() if isinstance(label, np.generic) else label}: " + title
    ax.set_title(title, fontsize="medium")
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_history(history, *, axes=None, x="time"):
    """A solve's convergence: the objective and the certificate (duality gap or KKT
    violation, log scale; the iterations where the solver computed one) against time.

    Parameters
    ----------
    history : History, Result or fitted estimator
        A :class:`~l1scale.solvers.base.History`, a ``Result`` (its ``history``), or an
        estimator fitted on one binary problem (its ``result_``).
    axes : pair of matplotlib Axes, optional
        Where to draw the objective and the certificate; default a new figure.
    x : {"time", "iteration", "data_accesses"}, default "time"
        The horizontal axis: seconds, iterations (or passes), or nonzeros of X read.

    Returns
    -------
    (Axes, Axes)
        The objective's and the certificate's.
    """
    certificate_name = "certificate"
    if hasattr(history, "result_"):
        if history.result_ is None or isinstance(history.result_, list):
            raise ValueError("plot_history: the estimator keeps no single result_ (one-vs-rest or a CV estimator)")
        history = history.result_
    if hasattr(history, "history"):
        certificate_name = getattr(history, "certificate_name", certificate_name)
        history = history.history
    xs = {
        "time": (history.time, "seconds"),
        "iteration": (np.arange(len(history.objective)), "iteration"),
        "data_accesses": (history.data_accesses, "nonzeros of X read"),
    }
    if x not in xs:
        raise ValueError(f"x={x!r}; choose one of {sorted(xs)}")
    t, x_label = np.asarray(xs[x][0], dtype=np.float64), xs[x][1]
    objective = np.asarray(history.objective, dtype=np.float64)
    certificate = np.asarray(history.certificate, dtype=np.float64)
    if t.shape != objective.shape:
        raise ValueError(f"x={x!r}: this History does not record it at every row")
    if axes is None:
        axes = _new_axes(2)
    ax_obj, ax_cert = axes
    shown = np.isfinite(objective)
    ax_obj.plot(t[shown], objective[shown], "o-", ms=3, lw=1.0)
    ax_obj.set_ylabel("objective")
    ax_obj.set_title(f"convergence: {len(objective)} rows", fontsize="medium")
    computed = np.isfinite(certificate) & (certificate > 0)
    ax_cert.semilogy(t[computed], certificate[computed], "o-", ms=3, lw=1.0, color="tab:orange")
    ax_cert.set_ylabel(certificate_name.replace("_", " "))
    ax_cert.set_xlabel(x_label)
    return ax_obj, ax_cert


def path_figure(path, cv=None):
    """The figure ``l1scale path --plot`` saves: :func:`plot_path` above :func:`plot_cv` (when
    cross-validated), lam_min and lam_1se marked on both.

    A ``matplotlib.figure.Figure`` made without pyplot (no window, no backend to choose):
    save it with ``fig.savefig(...)``.

    Parameters
    ----------
    path : PathResult
        The path over the CV's grid.
    cv : SparseLogisticRegressionCV, optional
        Fitted on a binary problem.

    Returns
    -------
    matplotlib.figure.Figure
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - matplotlib is in the dev extra
        raise ImportError("l1scale.plot needs matplotlib: pip install 'l1scale[plot]'") from exc
    panels = 1 if cv is None else 2
    fig = Figure(figsize=(7, 3.4 * panels), layout="constrained")
    axes = fig.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    marks = {} if cv is None else {"lam_min": cv.lam_min_[0], "lam_1se": cv.lam_1se_[0]}
    plot_path(path, ax=axes[0], **marks)
    if cv is not None:
        plot_cv(cv, ax=axes[1])
        axes[0].set_xlabel("")
    return fig
