"""fit replaces every fitted attribute: refits across class counts, features and label types."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from skgpsparse import (
    RelevanceVectorClassifier,
    RelevanceVectorRegressor,
    SparseGPClassifier,
    SparseGPRegressor,
)


def _same_state(a, b):
    """The fitted attributes of two estimators are the same names with equal values."""
    assert sorted(vars(a)) == sorted(vars(b))
    for name, value in vars(a).items():
        other = vars(b)[name]
        if "time" in name:  # timings differ from run to run
            continue
        if isinstance(value, np.ndarray) and value.dtype.kind in "fiub":
            np.testing.assert_array_equal(value, other, err_msg=name)
        elif isinstance(value, (str, int, float, bool, np.number)):
            assert value == other, name


def _problems():
    X3, y3 = make_blobs(n_samples=90, n_features=4, centers=3, random_state=0)
    X2, y2 = make_blobs(n_samples=60, n_features=2, centers=2, random_state=1)
    return [
        (X3, y3),  # three integer classes, four features
        (X2, np.array(["no", "yes"])[y2]),  # two string classes, two features
        (X3[:, :3], np.array(["a", "b", "c"])[y3]),  # three string classes, three features
        (X2, y2),
    ]


@pytest.mark.parametrize(
    "make",
    [
        lambda: SparseGPClassifier(max_basis=8, max_iter=2, random_state=0),
        lambda: RelevanceVectorClassifier(max_iter=20, random_state=0),
    ],
    ids=["SparseGPClassifier", "RelevanceVectorClassifier"],
)
def test_classifier_refit_equals_a_fresh_fit(make):
    model = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for X, y in _problems():
            model.fit(X, y)
            _same_state(model, make().fit(X, y))


@pytest.mark.parametrize(
    "make",
    [
        lambda: SparseGPRegressor(max_basis=8, max_iter=2, random_state=0),
        lambda: RelevanceVectorRegressor(max_iter=20, random_state=0),
    ],
    ids=["SparseGPRegressor", "RelevanceVectorRegressor"],
)
def test_regressor_refit_equals_a_fresh_fit(make):
    model = make()
    problems = [(X, np.sin(X[:, 0]) + X[:, -1]) for X, _ in _problems()]
    if isinstance(model, SparseGPRegressor):  # several targets, then one again
        X, y = problems[0]
        problems.insert(1, (X, np.c_[y, 2 * y]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for X, y in problems:
            model.fit(X, y)
            _same_state(model, make().fit(X, y))
