"""ONNX export of the fitted estimators, through a converter registered with skl2onnx.

Needs the optional extra ``onnx`` (``pip install "l1scale[onnx]"``: skl2onnx, and onnxruntime
to run the graphs). :func:`register` makes :class:`~l1scale.SparseLogisticRegression` and
:class:`~l1scale.SparseLinearRegression` known to ``skl2onnx.convert_sklearn`` (so they also
convert inside a scikit-learn Pipeline); :func:`to_onnx` (and the estimators' ``to_onnx()``,
and ``l1scale export --format onnx``) registers the estimator's class and converts.

The graph computes what the estimator computes: margins ``X @ coef_.T + intercept_``
(MatMul, Add), then

* a classifier's ``label``: ``classes_[1]`` where the margin is positive (two classes), else
  the class of the largest one-vs-rest margin (ArgMax, Gather over the classes); integer-valued
  labels (e.g. -1.0 / 1.0 read from svmlight) are int64, text labels strings, other numbers
  double;
* ``probabilities`` (n, n_classes): the logistic (Sigmoid) or probit (``(1 + Erf(z/sqrt 2)) / 2``,
  Erf computed in float32, the only type onnxruntime implements it in) link of the margins, ``[1 - p, p]`` for two classes, normalised to sum to one over the
  one-vs-rest classes; a squared-hinge classifier, which has no probabilities, outputs its
  margins there instead (``[-z, z]`` for two classes);
* a regression's ``variable`` (n, 1).

Input: one dense tensor ``X`` of shape (n, n_features), float64 by default (the 1e-6 agreement
with the estimator is tested in float64; float32 halves the size and loses about 7 digits).
ONNX's standard operators have no sparse input: serve sparse rows by densifying each batch
(``X[batch].toarray()``); an L1 model's zero weights cost multiplications but change nothing.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["register", "to_onnx"]

_REGISTERED = []


def _require_skl2onnx():
    try:
        import skl2onnx
    except ImportError as exc:  # the optional extra
        raise ImportError('ONNX export needs skl2onnx: pip install "l1scale[onnx]" (skl2onnx and onnxruntime)') from exc
    return skl2onnx


def register(*classes):
    """Register converters with skl2onnx for the given estimator classes (each once).

    Parameters
    ----------
    *classes : type
        :class:`~l1scale.SparseLogisticRegression`, :class:`~l1scale.SparseLinearRegression`
        (or subclasses): ``register(SparseLogisticRegression, SparseLinearRegression)`` before
        ``skl2onnx.convert_sklearn`` of a Pipeline that holds them. :func:`to_onnx` registers
        the class it converts by itself.

    Raises
    ------
    ImportError
        skl2onnx is not installed (the ``onnx`` extra).
    """
    skl2onnx = _require_skl2onnx()
    from skl2onnx.common.shape_calculator import (
        calculate_linear_classifier_output_shapes,
        calculate_linear_regressor_output_shapes,
    )
    from sklearn.base import ClassifierMixin

    for cls in classes:
        if cls in _REGISTERED:
            continue
        if issubclass(cls, ClassifierMixin):
            skl2onnx.update_registered_converter(
                cls,
                f"L1scale{cls.__name__}",
                calculate_linear_classifier_output_shapes,
                _convert,
                options={"zipmap": [True, False, "columns"], "nocl": [True, False]},
            )
        else:
            skl2onnx.update_registered_converter(
                cls, f"L1scale{cls.__name__}", calculate_linear_regressor_output_shapes, _convert
            )
        _REGISTERED.append(cls)


def to_onnx(estimator, *, dtype=np.float64, target_opset=None):
    """The fitted ``estimator`` as an ONNX model (see the module docstring for the graph).

    Parameters
    ----------
    estimator : SparseLogisticRegression or SparseLinearRegression
        Fitted in memory (a model over a generated feature space, ``features=``, has no
        ONNX form: its features are computed from raw inputs).
    dtype : numpy.float64 or numpy.float32
        The type of the input ``X`` and of the outputs' numbers.
    target_opset : int, optional
        The ONNX opset (default: the newest skl2onnx supports; 13 at least).

    Returns
    -------
    onnx.ModelProto
        Input ``X``; outputs ``label`` and ``probabilities`` (classifier, no ZipMap) or
        ``variable`` (regression). Write it with ``model.SerializeToString()``.

    Raises
    ------
    ImportError
        skl2onnx is not installed.
    ValueError
        An unfitted estimator, one over a generated feature space, or another dtype.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator)
    if getattr(estimator, "features_", None) is not None:
        raise ValueError("a model over a generated feature space (features=) has no ONNX form")
    dtype = np.dtype(dtype)
    if dtype not in (np.float64, np.float32):
        raise ValueError(f"dtype must be float64 or float32, got dtype={dtype}")
    register(type(estimator))
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    tensor = DoubleTensorType if dtype == np.float64 else FloatTensorType
    options = {id(estimator): {"zipmap": False}} if hasattr(estimator, "classes_") else None
    opset = target_opset
    if opset is None:
        from skl2onnx import get_latest_tested_opset_version

        opset = get_latest_tested_opset_version()
    return convert_sklearn(
        estimator,
        initial_types=[("X", tensor([None, int(estimator.n_features_in_)]))],
        options=options,
        target_opset=opset,
    )


def _label_tensor(classes):
    """The classes as an ONNX tensor's values and type: int64 for integer values (whatever
    their dtype), strings for text, else double."""
    from skl2onnx.proto import onnx_proto

    classes = np.asarray(classes)
    if classes.dtype.kind in "iub" or (
        classes.dtype.kind == "f" and np.all(np.isfinite(classes)) and np.all(classes == np.round(classes))
    ):
        return onnx_proto.TensorProto.INT64, classes.astype(np.int64).tolist()
    if classes.dtype.kind == "f":
        return onnx_proto.TensorProto.DOUBLE, classes.astype(np.float64).tolist()
    return onnx_proto.TensorProto.STRING, [str(c).encode("utf-8") for c in classes.tolist()]


def _convert(scope, operator, container):
    """skl2onnx converter: the margins, then the label and probabilities (or the value)."""
    from skl2onnx.common.data_types import guess_proto_type

    est = operator.raw_operator
    proto = guess_proto_type(operator.inputs[0].type)
    dtype = np.float64 if proto == 11 else np.float32  # TensorProto.DOUBLE is 11
    coef = est.coef_.toarray() if hasattr(est.coef_, "toarray") else est.coef_  # sparsified or not
    coef = np.atleast_2d(coef).astype(np.float64)
    intercept = np.atleast_1d(np.asarray(est.intercept_, dtype=np.float64))

    def constant(name, values, shape, tensor_type=proto):
        unique = scope.get_unique_variable_name(name)
        container.add_initializer(unique, tensor_type, shape, np.asarray(values).ravel().tolist())
        return unique

    def node(op_type, inputs, output=None, **attrs):
        output = output or scope.get_unique_variable_name(op_type.lower())
        container.add_node(op_type, inputs, output, name=scope.get_unique_operator_name(op_type), **attrs)
        return output

    weights = constant("coef", coef.T.astype(dtype), list(coef.T.shape))
    bias = constant("intercept", intercept.astype(dtype), [intercept.shape[0]])
    margins = node("Add", [node("MatMul", [operator.inputs[0].full_name, weights]), bias])
    if not hasattr(est, "classes_"):
        node("Identity", [margins], operator.outputs[0].full_name)
        return
    label_type, labels = _label_tensor(est.classes_)
    classes = constant("classes", labels, [len(labels)], label_type)
    if coef.shape[0] == 1:  # two classes: classes_[margin > 0]
        positive = node("Greater", [margins, constant("zero", [0.0], [1])])
        index = node("Cast", [node("Flatten", [positive], axis=0)], to=7)  # INT64
        index = node("Reshape", [index, constant("flat", [-1], [1], 7)])
    else:
        index = node("ArgMax", [margins], axis=1, keepdims=0)
    node("Gather", [classes, index], operator.outputs[0].full_name, axis=0)
    if getattr(est, "multi_class_", "ovr") == "multinomial":  # the softmax of the margins (sums to one)
        p = node("Softmax", [margins], axis=1)
    elif est.loss == "logistic":
        p = node("Sigmoid", [margins])
    elif est.loss == "probit":  # Phi(z) = (1 + erf(z / sqrt 2)) / 2
        scaled = node("Mul", [margins, constant("rsqrt2", [1.0 / math.sqrt(2.0)], [1])])
        if dtype == np.float64:  # onnxruntime has Erf in float32 only: about 1e-7 off, within the 1e-6 tested
            erf = node("Cast", [node("Erf", [node("Cast", [scaled], to=1)])], to=11)
        else:
            erf = node("Erf", [scaled])
        p = node("Mul", [node("Add", [erf, constant("one", [1.0], [1])]), constant("half", [0.5], [1])])
    else:  # squared hinge: no probabilities; the margins stand in their place
        p = margins
    if coef.shape[0] == 1:
        other = node("Sub", [constant("one", [1.0], [1]), p]) if p is not margins else node("Neg", [p])
        node("Concat", [other, p], operator.outputs[1].full_name, axis=1)
    elif p is margins:
        node("Identity", [p], operator.outputs[1].full_name)
    else:
        total = node("ReduceSum", [p, constant("axis", [1], [1], 7)], keepdims=1)
        node("Div", [p, total], operator.outputs[1].full_name)
