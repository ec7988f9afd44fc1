"""l1scale.metrics against sklearn.metrics on generated inputs (ties, weights, labels)."""

import warnings

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from l1scale import metrics as m

LABEL_PAIRS = [(-1, 1), (0, 1), (3, 7), (-1.0, 1.0), ("no", "yes"), (False, True)]
TOL = dict(rel=1e-12, abs=1e-12)  # for pytest.approx
NP_TOL = dict(rtol=1e-12, atol=1e-12)  # for assert_allclose
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def binary_problem(draw, weighted=None, need_both=False):
    """(y_true, y_pred, y_score, weights or None, label pair) with many ties."""
    n = draw(st.integers(1, 60))
    neg, pos = draw(st.sampled_from(LABEL_PAIRS))
    bits = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    if need_both:
        assume(bits.any() and not bits.all())
    pred_bits = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    labels = np.array([neg, pos])
    tie_heavy = draw(st.booleans())
    elements = (
        st.integers(-3, 3).map(float) if tie_heavy else st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False)
    )
    score = np.array(draw(st.lists(elements, min_size=n, max_size=n)), dtype=float)
    if weighted is None:
        weighted = draw(st.booleans())
    w = None
    if weighted:
        w = np.array(draw(st.lists(st.floats(0.01, 10.0), min_size=n, max_size=n)))
    return labels[bits.astype(int)], labels[pred_bits.astype(int)], score, w, (neg, pos)


def _sk(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@SETTINGS
@given(binary_problem())
def test_accuracy(problem):
    y, yp, _, w, _ = problem
    assert m.accuracy(y, yp, sample_weight=w) == pytest.approx(skm.accuracy_score(y, yp, sample_weight=w), **TOL)


@SETTINGS
@given(binary_problem(need_both=True))
def test_roc_auc(problem):
    y, _, s, w, (neg, pos) = problem
    expected = skm.roc_auc_score(y, s, sample_weight=w)
    assert m.roc_auc(y, s, sample_weight=w) == pytest.approx(expected, **TOL)
    # The other label as positive: the curve for -s.
    assert m.roc_auc(y, -s, pos_label=neg, sample_weight=w) == pytest.approx(expected, **TOL)


@SETTINGS
@given(binary_problem(need_both=True))
def test_auprc(problem):
    y, _, s, w, (neg, pos) = problem
    for p in (pos, neg):
        expected = skm.average_precision_score(y, s, pos_label=p, sample_weight=w)
        got = m.auprc(y, s, pos_label=p, sample_weight=w)
        assert got == pytest.approx(expected, **TOL)
    assert m.auprc(y, s, sample_weight=w) == pytest.approx(
        skm.average_precision_score(y, s, pos_label=pos, sample_weight=w), **TOL
    )


@SETTINGS
@given(binary_problem())
def test_precision_recall_f1(problem):
    y, yp, _, w, (neg, pos) = problem
    present = np.unique(np.concatenate([y, yp]))
    # Default positive class: the larger label; 1 when only one numeric label occurs.
    default = present[-1] if present.size == 2 or isinstance(pos, str) else 1
    for p in (pos, neg):
        for ours, theirs in ((m.precision, skm.precision_score), (m.recall, skm.recall_score), (m.f1, skm.f1_score)):
            expected = _sk(theirs, y, yp, pos_label=p, sample_weight=w, zero_division=0.0)
            assert ours(y, yp, pos_label=p, sample_weight=w) == pytest.approx(expected, **TOL)
    assert m.f1(y, yp, sample_weight=w) == pytest.approx(
        _sk(skm.f1_score, y, yp, pos_label=default, sample_weight=w, zero_division=0.0), **TOL
    )


@SETTINGS
@given(binary_problem())
def test_confusion_matrix_binary(problem):
    y, yp, _, w, (neg, pos) = problem
    ours = m.confusion_matrix(y, yp, sample_weight=w)
    theirs = _sk(skm.confusion_matrix, y, yp, sample_weight=w)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, **NP_TOL)
    if (y == pos).any():  # reordered and partial label lists
        for labels in ([pos, neg], [pos]):
            np.testing.assert_allclose(
                m.confusion_matrix(y, yp, labels=labels, sample_weight=w),
                _sk(skm.confusion_matrix, y, yp, labels=labels, sample_weight=w),
                **NP_TOL,
            )


@SETTINGS
@given(
    st.integers(1, 80).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 4), min_size=n, max_size=n),
            st.lists(st.integers(0, 4), min_size=n, max_size=n),
            st.none() | st.lists(st.floats(0.0, 5.0), min_size=n, max_size=n),
        )
    )
)
def test_confusion_matrix_multiclass(data):
    y, yp, w = (None if v is None else np.array(v) for v in data)
    if w is not None and not w.any():
        with pytest.raises(ValueError, match="non-zero"):
            m.confusion_matrix(y, yp, sample_weight=w)
        return
    np.testing.assert_allclose(
        m.confusion_matrix(y, yp, sample_weight=w), _sk(skm.confusion_matrix, y, yp, sample_weight=w), **NP_TOL
    )
    labels = [4, 2, 0, 9]
    if np.isin(y, labels).any():
        np.testing.assert_allclose(
            m.confusion_matrix(y, yp, labels=labels, sample_weight=w),
            _sk(skm.confusion_matrix, y, yp, labels=labels, sample_weight=w),
            **NP_TOL,
        )


@SETTINGS
@given(binary_problem(need_both=True), st.floats(0.0, 1.0))
def test_log_loss_binary(problem, extreme):
    y, _, s, w, _ = problem
    proba = 1.0 / (1.0 + np.exp(-s / 50.0))
    proba[::3] = extreme  # exact 0 / 1 values exercise the clipping
    assert m.log_loss(y, proba, sample_weight=w) == pytest.approx(_sk(skm.log_loss, y, proba, sample_weight=w), **TOL)


@SETTINGS
@given(
    st.integers(3, 40).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 2), min_size=n, max_size=n),
            st.lists(st.floats(0.0, 1.0), min_size=3 * n, max_size=3 * n),
        )
    )
)
def test_log_loss_multiclass(data):
    y, raw = np.array(data[0]), np.array(data[1]).reshape(-1, 3) + 1e-3
    proba = raw / raw.sum(axis=1, keepdims=True)
    labels = [0, 1, 2]
    assert m.log_loss(y, proba, labels=labels) == pytest.approx(_sk(skm.log_loss, y, proba, labels=labels), **TOL)


def test_log_loss_one_class_needs_labels():
    with pytest.raises(ValueError, match="only one label"):
        m.log_loss([1, 1], [0.2, 0.9])
    assert m.log_loss([1, 1], [0.2, 0.9], labels=[-1, 1]) == pytest.approx(
        skm.log_loss([1, 1], [0.2, 0.9], labels=[-1, 1]), **TOL
    )
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        m.log_loss([0, 1], [0.2, 1.5])


def test_large_input_matches_and_is_fast_enough():
    rng = np.random.default_rng(0)
    y = rng.choice([-1, 1], size=200_000)
    s = np.round(rng.standard_normal(200_000) + 0.5 * y, 2)  # many ties
    w = rng.random(200_000)
    assert m.roc_auc(y, s, sample_weight=w) == pytest.approx(skm.roc_auc_score(y, s, sample_weight=w), rel=1e-12)
    assert m.auprc(y, s) == pytest.approx(skm.average_precision_score(y, s), rel=1e-12)


def test_one_class_auc_is_a_clear_error():
    with pytest.raises(ValueError, match="only one class"):
        m.roc_auc([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="only one class"):  # the other class weighs nothing
        m.roc_auc([1, -1, 1], [0.1, 0.2, 0.3], sample_weight=[1, 0, 1])
    with pytest.raises(ValueError, match="no samples of pos_label"):
        m.auprc([-1, -1], [0.1, 0.2])
    assert m.auprc([1, 1], [0.1, 0.2]) == 1.0


@pytest.mark.parametrize("fn", [m.roc_auc, m.auprc, m.log_loss])
def test_nan_scores_rejected(fn):
    with pytest.raises(ValueError, match="NaN"):
        fn([0, 1, 1], [0.1, np.nan, 0.3])


@pytest.mark.parametrize(
    "fn", [m.accuracy, m.roc_auc, m.auprc, m.precision, m.recall, m.f1, m.confusion_matrix, m.log_loss]
)
def test_length_mismatch_and_empty(fn):
    with pytest.raises(ValueError, match="samples"):
        fn([0, 1, 1], [0.1, 0.3])
    with pytest.raises(ValueError, match="empty"):
        fn([], [])


def test_label_errors():
    with pytest.raises(ValueError, match="3 classes"):
        m.precision([0, 1, 2], [0, 1, 1])
    with pytest.raises(ValueError, match="pos_label"):
        m.recall([0, 1], [0, 1], pos_label=5)
    with pytest.raises(ValueError, match="mix"):
        m.accuracy(["a", "b"], [0, 1])
    with pytest.raises(ValueError, match="sample_weight"):
        m.accuracy([0, 1], [0, 1], sample_weight=[1.0])
    with pytest.raises(ValueError, match="non-zero"):
        m.accuracy([0, 1], [0, 1], sample_weight=[0.0, 0.0])


def test_default_pos_label_single_class():
    # Only -1 present: the positive class is still 1, as scikit-learn's default.
    assert m.precision([-1, -1], [-1, -1]) == skm.precision_score([-1, -1], [-1, -1], zero_division=0.0)
    assert m.recall(["a", "a"], ["a", "a"]) == 1.0


def test_classification_report():
    rng = np.random.default_rng(1)
    y = rng.choice([-1, 1], size=500)
    s = rng.standard_normal(500) + y
    yp = np.where(s > 0, 1, -1)
    r = m.classification_report(y, yp, s)
    assert r["labels"] == [-1, 1] and r["pos_label"] == 1 and r["n_samples"] == 500
    assert r["accuracy"] == pytest.approx(skm.accuracy_score(y, yp), **TOL)
    assert r["auc"] == pytest.approx(skm.roc_auc_score(y, s), **TOL)
    assert r["auprc"] == pytest.approx(skm.average_precision_score(y, s), **TOL)
    assert r["f1"] == pytest.approx(skm.f1_score(y, yp), **TOL)
    assert r["confusion"] == skm.confusion_matrix(y, yp).tolist()
    import json

    json.dumps(r)  # ready for the CLI
    no_score = m.classification_report(y, yp)
    assert no_score["auc"] is None and no_score["precision"] == r["precision"]
    one_class = m.classification_report(np.ones(4), np.array([1, 1, -1, 1.0]), np.arange(4.0))
    assert one_class["auc"] is None and one_class["recall"] == 0.75
    multi = m.classification_report([0, 1, 2], [0, 2, 2])
    assert multi["f1"] is None and multi["accuracy"] == pytest.approx(2 / 3)
