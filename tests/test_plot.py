"""l1scale.plot: the path, the CV curve and a solve's convergence, checked by their axes and contents."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt

from l1scale import SparseLogisticRegression
from l1scale.path import SparseLogisticRegressionCV, regularization_path
from l1scale.plot import path_figure, plot_cv, plot_history, plot_path


@pytest.fixture(scope="module")
def fitted():
    X, y = make_classification(n_samples=400, n_features=25, n_informative=5, random_state=0)
    cv = SparseLogisticRegressionCV(n_lams=10, cv=4, rule="1se").fit(X, y)
    path = regularization_path(X, np.where(y == 1, 1.0, -1.0), lams=cv.lams_)
    yield X, y, cv, path
    plt.close("all")


def _vertical_lines(ax):
    """x of the vertical lines drawn with axvline (two points, same x, spanning the axes)."""
    xs = []
    for line in ax.get_lines():
        x = np.asarray(line.get_xdata(), dtype=float)
        if x.size == 2 and x[0] == x[1] and list(line.get_ydata()) == [0, 1]:
            xs.append(float(x[0]))
    return xs


def test_plot_path_draws_a_line_per_feature_that_enters(fitted):
    _, _, cv, path = fitted
    ax = plot_path(path, lam_min=cv.lam_min_[0], lam_1se=cv.lam_1se_[0])
    entering = int(np.any(path.coefs != 0, axis=0).sum())
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) == path.lams.size]
    assert len(curves) == entering
    np.testing.assert_array_equal(curves[0].get_xdata(), path.lams)
    used = np.flatnonzero(np.any(path.coefs != 0, axis=0))
    np.testing.assert_array_equal(np.column_stack([c.get_ydata() for c in curves]), path.coefs[:, used])
    assert sorted(_vertical_lines(ax)) == sorted([cv.lam_min_[0], cv.lam_1se_[0]])
    assert ax.get_xscale() == "log" and ax.xaxis_inverted()  # lam_max on the left
    assert ax.get_xlabel() == "lam" and ax.get_ylabel() == "coefficient"
    assert f"{entering} features enter" in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].startswith("lam_min =") and labels[1].startswith("lam_1se =")


def test_plot_cv_draws_mean_and_standard_error_with_the_chosen_lams(fitted):
    _, _, cv, _ = fitted
    ax = plot_cv(cv)
    (bars,) = ax.containers  # one errorbar
    data_line, _, (segments,) = bars.lines
    np.testing.assert_allclose(data_line.get_xdata(), cv.lams_)
    np.testing.assert_allclose(data_line.get_ydata(), cv.cv_mean_)
    spans = np.array([np.ptp(seg[:, 1]) for seg in segments.get_segments()])
    np.testing.assert_allclose(spans, 2 * cv.cv_se_)  # +- one standard error
    assert sorted(_vertical_lines(ax)) == sorted([cv.lam_min_[0], cv.lam_1se_[0]])
    assert ax.get_ylabel() == "CV neg_log_loss" and "higher is better" in ax.get_title()
    assert "'1se'" in ax.get_title()
    with pytest.raises(ValueError, match="class_index"):
        plot_cv(cv, class_index=1)


def test_plot_cv_one_vs_rest_draws_the_class_asked_for():
    X, y = make_classification(n_samples=300, n_features=15, n_informative=6, n_classes=3, random_state=1)
    cv = SparseLogisticRegressionCV(n_lams=5, cv=3, multi_class="ovr").fit(X, y)
    ax = plot_cv(cv, class_index=2)
    np.testing.assert_allclose(ax.containers[0].lines[0].get_ydata(), cv.cv_mean_[2])
    assert ax.get_title().startswith("class 2:")
    plt.close("all")


def test_plot_history_objective_and_certificate(fitted):
    X, y, _, _ = fitted
    est = SparseLogisticRegression(lam_ratio=0.01, tol=1e-10).fit(X, y)
    history = est.result_.history
    ax_obj, ax_cert = plot_history(est)
    (obj,) = ax_obj.get_lines()
    np.testing.assert_allclose(obj.get_xdata(), history.time)
    np.testing.assert_allclose(obj.get_ydata(), history.objective)
    (cert,) = ax_cert.get_lines()
    computed = np.isfinite(history.certificate) & (np.asarray(history.certificate) > 0)
    np.testing.assert_allclose(cert.get_ydata(), np.asarray(history.certificate)[computed])
    assert ax_cert.get_yscale() == "log" and ax_cert.get_ylabel() == "duality gap"
    assert ax_cert.get_xlabel() == "seconds" and ax_obj.get_ylabel() == "objective"
    ax_obj, _ = plot_history(est.result_.history, x="iteration")
    np.testing.assert_array_equal(ax_obj.get_lines()[0].get_xdata(), np.arange(len(history)))
    with pytest.raises(ValueError, match="x="):
        plot_history(history, x="passes")


def test_path_figure_stacks_path_and_cv_and_saves(fitted, tmp_path):
    _, _, cv, path = fitted
    fig = path_figure(path, cv)
    top, bottom = fig.axes
    assert top.get_ylabel() == "coefficient" and bottom.get_ylabel() == "CV neg_log_loss"
    assert bottom.get_xlabel() == "lam" and top.get_shared_x_axes().joined(top, bottom)
    assert bottom.xaxis_inverted()  # inverted once for both (shared)
    fig.savefig(tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    (alone,) = path_figure(path).axes
    assert _vertical_lines(alone) == []


def test_plot_path_of_a_multinomial_model_counts_class_feature_weights():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    path = regularization_path(X / X.std(axis=0), y, "multinomial", n_lams=6, lam_min_ratio=0.05)
    ax = plot_path(path)
    entering = int(np.any(path.coefs.reshape(path.lams.size, -1) != 0, axis=0).sum())
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) == path.lams.size]
    assert len(curves) == entering  # a line per (class, feature) weight
    assert f"{entering} (class, feature) weights enter" in ax.get_title()
