"""Inputs that failed with a message naming none of the user's arguments (issue 48, point 6)."""

import warnings

import numpy as np
import pytest

from skgpsparse import RelevanceVectorClassifier, RelevanceVectorRegressor, SparseGPClassifier


def _X(n=40):
    return np.random.default_rng(0).normal(size=(n, 2))


@pytest.mark.parametrize(
    "estimator", [SparseGPClassifier(max_basis=5), RelevanceVectorClassifier()],
    ids=["sparse", "rvm"],
)
def test_mixed_label_types_are_refused_naming_y(estimator):
    labels = np.array(["a", 1] * 20, dtype=object)
    with pytest.raises(TypeError, match=r"y mixes class labels of types \['int', 'str'\]"):
        estimator.fit(_X(), labels)


def test_relevance_vector_regressor_takes_numeric_strings_as_numbers():
    X = _X()
    y = np.sin(X[:, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        as_text = RelevanceVectorRegressor(random_state=0).fit(X, y.astype(str))
        as_numbers = RelevanceVectorRegressor(random_state=0).fit(X, y.astype(str).astype(float))
    np.testing.assert_array_equal(as_text.predict(X), as_numbers.predict(X))


def test_relevance_vector_regressor_refuses_text_targets_naming_y():
    with pytest.raises(ValueError, match="y must be numeric for regression"):
        RelevanceVectorRegressor().fit(_X(), np.array(["a"] * 40))
