"""Strategies and checks of the property-based hostile-input suite (``tests/test_hostile_*``).

The four estimators are built with small budgets (a few basis functions, a few iterations) so
that a hypothesis example costs milliseconds; what is tested is the handling of the input, not
the quality of the fit.
"""

import copy
import inspect
import os
import warnings

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from skgpsparse import (
    RelevanceVectorClassifier,
    RelevanceVectorRegressor,
    SparseGPClassifier,
    SparseGPRegressor,
)

# Inputs X are multiplied by 10**k with |k| <= MAX_SCALE_EXPONENT, targets y (values up to
# 100) by 10**k with |k| <= MAX_TARGET_EXPONENT. Issue 22 asks for every finite scale from
# 1e-150 to 1e150 and beyond; at the time of writing main handles inputs over that range, and
# targets up to about 1e100: at |y| ~ 1e104 RelevanceVectorRegressor(method="batch_em") learns
# a NaN noise variance and predicts NaN standard deviations, and beyond 1e150 the other
# estimators fail too (SparseGPRegressor's marginal likelihood overflows, the RVR's standard
# deviations are infinite). Another branch rescales the targets internally; once it is merged,
# widen both limits (to 300, say): this suite then checks the whole range.
MAX_SCALE_EXPONENT = 150
MAX_TARGET_EXPONENT = 90

# One budget for every property: hypothesis's fixed seed (CI runs the same examples each time),
# no example database, no per-example deadline (a shared 2-core machine is slow at times).
# SKGPSPARSE_HOSTILE_EXAMPLES=500 runs a longer hunt locally.
PROPERTY = settings(
    max_examples=int(os.environ.get("SKGPSPARSE_HOSTILE_EXAMPLES", "12")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _with_defaults(cls, **defaults):
    return lambda **params: cls(**{**defaults, **params})


REGRESSORS = {
    "SparseGPRegressor": _with_defaults(
        SparseGPRegressor, max_basis=8, max_iter=2, random_state=0
    ),
    "RelevanceVectorRegressor": _with_defaults(
        RelevanceVectorRegressor, max_iter=20, random_state=0
    ),
}
CLASSIFIERS = {
    "SparseGPClassifier": _with_defaults(
        SparseGPClassifier, max_basis=8, max_iter=2, random_state=0
    ),
    "RelevanceVectorClassifier": _with_defaults(
        RelevanceVectorClassifier, max_iter=10, random_state=0
    ),
}
ESTIMATORS = {**REGRESSORS, **CLASSIFIERS}

# The options whose code paths differ most, drawn by the properties that fit many problems.
OPTIONS = {
    "SparseGPRegressor": {
        "selection": ["random", "exact", "matching_pursuit", "info_gain"],
        "hyperparameter_objective": ["dtc", "vfe"],
        "normalize_y": [False, True],
    },
    "RelevanceVectorRegressor": {"method": ["ssem", "batch_em"], "bias": [True, False]},
    "SparseGPClassifier": {
        "selection": ["adaptive", "nlp", "entropy", "info_gain", "random"],
        "site_update": ["moment_matching", "optimize"],
        "hyperparameter_objective": ["nlp", "evidence"],
    },
    "RelevanceVectorClassifier": {
        "method": ["ssem", "batch_em"],
        "cavity_variance": ["tap", "naive", "laplace"],
        "bias": [True, False],
    },
}


def estimators(name):
    """The estimator ``name`` with options drawn from :data:`OPTIONS`."""
    options = {param: st.sampled_from(values) for param, values in OPTIONS[name].items()}
    return st.fixed_dictionaries(options).map(lambda params: ESTIMATORS[name](**params))


_VALUES = st.floats(-100.0, 100.0, allow_nan=False, allow_infinity=False)


def _matrix(draw, n, d):
    return draw(hnp.arrays(np.float64, (n, d), elements=_VALUES))


@st.composite
def finite_inputs(draw, max_rows=60, max_features=6, min_rows=1):
    """``X`` of 1-60 rows and 1-6 columns at a random scale (or one per column), with
    duplicated rows and constant columns at random."""
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, max_features))
    X = _matrix(draw, n, d)
    n_unique = draw(st.integers(1, n))
    X = X[np.arange(n) % n_unique]  # rows beyond n_unique repeat the first ones
    for j in draw(st.sets(st.integers(0, d - 1), max_size=d)):
        X[:, j] = draw(_VALUES)
    exponent = st.integers(-MAX_SCALE_EXPONENT, MAX_SCALE_EXPONENT)
    if draw(st.booleans()):  # each column at a scale of its own
        return X * 10.0 ** np.array(draw(st.lists(exponent, min_size=d, max_size=d)))
    return X * 10.0 ** draw(exponent)


@st.composite
def regression_problems(draw, **kwargs):
    """``(X, y)``: random finite inputs and targets, each at its own scale."""
    X = draw(finite_inputs(**kwargs))
    y = draw(hnp.arrays(np.float64, len(X), elements=_VALUES))
    return X, y * 10.0 ** draw(st.integers(-MAX_TARGET_EXPONENT, MAX_TARGET_EXPONENT))


LABEL_KINDS = {
    "int": np.array([-7, 0, 3, 12]),
    "str": np.array(["cat", "dog", "eel", "yak"]),
    "bool": np.array([False, True]),
}


@st.composite
def labels(draw, n, n_classes):
    """``n`` labels of a random kind holding every one of ``n_classes`` classes (``n_classes``
    <= ``n``); a class may have a single row."""
    kind = draw(st.sampled_from(sorted(LABEL_KINDS)))
    values = LABEL_KINDS[kind][:n_classes]
    codes = draw(hnp.arrays(np.int64, n, elements=st.integers(0, len(values) - 1)))
    codes[draw(st.permutations(range(n)))[: len(values)]] = np.arange(len(values))
    return values[codes]


@st.composite
def classification_problems(draw, max_classes=4, **kwargs):
    """``(X, y)``: random finite inputs and labels of 2 to ``max_classes`` classes."""
    X = draw(finite_inputs(min_rows=2, **kwargs))
    n_classes = draw(st.integers(2, min(max_classes, len(X))))
    return X, draw(labels(len(X), n_classes))


@st.composite
def problems(draw, max_classes=4):
    """``(X, y, labels)``: random finite inputs, targets and labels of 2 to ``max_classes``
    classes (``None`` for a single row), so that one example serves all four estimators."""
    X, y = draw(regression_problems())
    if len(X) < 2:
        return X, y, None
    return X, y, draw(labels(len(X), draw(st.integers(2, min(max_classes, len(X))))))


def fit_quietly(estimator, X, y):
    """Fit, ignoring warnings (a basis that stops growing, a bound reached, ...)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X, y)


class Frozen:
    """Deep copies of a call's arguments, to check after the call that none was modified."""

    def __init__(self, *args):
        self.args, self.copies = args, copy.deepcopy(args)

    def assert_unchanged(self):
        for arg, saved in zip(self.args, self.copies):
            if isinstance(arg, pd.DataFrame):
                pd.testing.assert_frame_equal(arg, saved, check_exact=True)
            elif isinstance(arg, pd.Series):
                pd.testing.assert_series_equal(arg, saved, check_exact=True)
            elif isinstance(arg, np.ndarray):
                assert arg.dtype == saved.dtype and arg.flags.writeable == saved.flags.writeable
                np.testing.assert_array_equal(arg, saved, strict=True)
            else:
                assert arg == saved


def _rows(X, rows):
    return X.iloc[rows] if isinstance(X, pd.DataFrame) else X[rows]


def assert_regressor_output(est, X):
    """Shapes of scikit-learn's GPR for a 1-D target; finite means, finite non-negative stds;
    a single row predicted as it is within the batch."""
    m = len(X)
    mean = est.predict(X)
    mean_std, std = est.predict(X, return_std=True)
    assert mean.shape == std.shape == (m,)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std >= 0)
    np.testing.assert_array_equal(mean, mean_std)
    if "return_cov" in inspect.signature(est.predict).parameters:
        mean_cov, cov = est.predict(X, return_cov=True)
        assert cov.shape == (m, m) and np.all(np.isfinite(cov))
        np.testing.assert_array_equal(mean_cov, mean)
        np.testing.assert_allclose(np.diag(cov), std**2, rtol=1e-9, atol=1e-300)
    # One row as within the batch, to round-off. The variance is a difference of terms of the
    # order of the targets' square (prior minus explained variance), so its round-off is
    # measured against that scale, not against the (possibly tiny) variance itself.
    first_mean, first_std = est.predict(_rows(X, slice(1)), return_std=True)
    scale = max(np.abs(mean).max(), std.max())
    np.testing.assert_allclose(first_mean, mean[:1], rtol=1e-9, atol=1e-9 * scale)
    np.testing.assert_allclose(first_std**2, std[:1] ** 2, rtol=1e-9, atol=1e-10 * scale**2)
    if hasattr(est, "sample_y"):
        draws = est.sample_y(X, n_samples=2, random_state=0)
        assert draws.shape == (m, 2) and np.all(np.isfinite(draws))


def assert_classifier_output(est, X, y):
    """Shapes of scikit-learn's GPC; probabilities in [0, 1] summing to 1; predictions the most
    probable of the fitted classes, of the labels' kind; a single row as within the batch."""
    m, k = len(X), len(est.classes_)
    np.testing.assert_array_equal(est.classes_, np.unique(y))
    proba = est.predict_proba(X)
    assert proba.shape == (m, k) and np.all(np.isfinite(proba))
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    predicted = est.predict(X)
    assert predicted.shape == (m,) and predicted.dtype == est.classes_.dtype
    np.testing.assert_array_equal(predicted, est.classes_[np.argmax(proba, axis=1)])
    np.testing.assert_allclose(
        est.predict_proba(_rows(X, slice(1))), proba[:1], rtol=1e-9, atol=1e-12
    )
    if hasattr(est, "decision_function"):
        margin = est.decision_function(X)
        assert margin.shape == ((m,) if k == 2 else (m, k)) and np.all(np.isfinite(margin))


def assert_well_formed(est, X, y):
    if hasattr(est, "predict_proba"):
        assert_classifier_output(est, X, y)
    else:
        assert_regressor_output(est, X)
