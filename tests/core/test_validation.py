"""The cheap check of prediction inputs against scikit-learn's validate_data."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data

from skgpsparse._validation import plain_float_rows


class _Fitted(BaseEstimator):
    """An estimator that has seen 3 features (with names when given a dataframe)."""

    def fit(self, X):
        validate_data(self, X)
        return self


@pytest.fixture
def fitted():
    return _Fitted().fit(np.zeros((5, 3)))


@pytest.mark.parametrize("n_rows", [1, 2, 64, 5000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
def test_plain_rows_are_what_validate_data_returns(fitted, n_rows, dtype, order):
    X = np.asarray(np.random.default_rng(0).normal(size=(n_rows, 3)), dtype=dtype, order=order)
    got = plain_float_rows(fitted, X)
    expected = validate_data(fitted, X, reset=False, dtype=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)
    if dtype == np.float64:
        assert got is X  # no copy, as validate_data (and never written to)


@pytest.mark.parametrize(
    "X",
    [
        np.array([[0.0, 1e308, 1e308]]),  # a sum that overflows: left to validate_data
        np.zeros((0, 3)),
        np.zeros(3),
        np.zeros((1, 3, 1)),
        np.zeros((1, 2)),
        np.array([[0.0, np.nan, 1.0]]),
        np.array([[0.0, -np.inf, 1.0]]),
        np.zeros((1, 3), dtype=int),
        np.zeros((1, 3), dtype=np.float16),
        np.zeros((1, 3), dtype=complex),
        np.zeros((1, 3), dtype=">f8"),  # not the native byte order
        np.zeros((1, 3), dtype=object),
        np.zeros((1, 3)).tolist(),
        pd.DataFrame(np.zeros((1, 3))),
        np.asmatrix(np.zeros((1, 3))),
    ],
    ids=lambda X: f"{type(X).__name__}-{getattr(X, 'dtype', '')}-{np.shape(X)}",
)
def test_every_other_input_is_left_to_validate_data(fitted, X):
    assert plain_float_rows(fitted, X) is None


def test_an_estimator_fitted_with_feature_names_validates_plain_arrays(fitted):
    # scikit-learn warns when an array meets a model fitted on named columns
    named = _Fitted().fit(pd.DataFrame(np.zeros((5, 3)), columns=["a", "b", "c"]))
    assert plain_float_rows(named, np.zeros((1, 3))) is None
    assert plain_float_rows(fitted, np.zeros((1, 3))) is not None
    assert plain_float_rows(_Fitted(), np.zeros((1, 3))) is None  # not fitted: no width
