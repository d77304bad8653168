"""The default regressor kernel's choice between one length scale and one per feature.

With ``kernel=None`` the regressor's subset start learns the full GP with ``C(1) * RBF(1)``
and with one length scale per feature from ``sqrt(d) std_j``, and keeps the latter only when
its log marginal likelihood exceeds the single length scale's by the BIC charge
``(d - 1) / 2 * log(m)`` on the ``m`` subset rows (:mod:`skgpsparse.regression._kernel_choice`).
With every row in the basis the subset is every row and each fit is the exact GP, so the two
candidates are refitted here by hand as user kernels and the decision recomputed from their
log marginal likelihoods.
"""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression._kernel_choice import feature_std
from skgpsparse.rows._store import LocalRows

N, D = 80, 5


def _data(relevance):
    rng = np.random.RandomState(0)
    X = rng.randn(N, D)
    if relevance == "one":  # only the first feature matters
        f = np.sin(2.0 * X[:, 0])
    else:  # every feature alike
        f = np.sin(X.sum(axis=1) / np.sqrt(D))
    return X, f + 0.1 * rng.randn(N)


def _fit(kernel, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SparseGPRegressor(kernel, max_basis=N, random_state=0, **kwargs).fit(X, y)


@pytest.mark.parametrize("relevance", ["one", "all"])
def test_default_kernel_follows_the_bic_decision_of_the_two_fits(relevance):
    X, y = _data(relevance)
    default = _fit(None, X, y)
    one = _fit(C(1.0) * RBF(1.0), X, y)
    per_feature = _fit(C(1.0) * RBF(np.sqrt(D) * X.std(axis=0)), X, y)
    gain = per_feature.log_marginal_likelihood_value_ - one.log_marginal_likelihood_value_
    keep = gain > 0.5 * (D - 1) * np.log(N)
    assert keep == (relevance == "one")  # a clear-cut decision either way
    chosen = per_feature if keep else one
    assert np.ndim(default.kernel_.k2.length_scale) == (1 if keep else 0)
    np.testing.assert_allclose(default.kernel_.theta, chosen.kernel_.theta, rtol=0, atol=1e-4)
    np.testing.assert_allclose(
        default.log_marginal_likelihood_value_, chosen.log_marginal_likelihood_value_,
        rtol=1e-6,
    )
    if keep:  # the irrelevant features' length scales end far above the relevant one's
        scales = default.kernel_.k2.length_scale
        assert scales[0] < 0.1 * np.min(scales[1:])


def test_user_kernels_are_kept_as_given():
    X, y = _data("one")
    model = _fit(C(1.0) * RBF(1.0), X, y)
    assert np.ndim(model.kernel_.k2.length_scale) == 0
    fixed = _fit(None, X, y, optimizer=None)  # nothing learned: the default kernel as is
    assert str(fixed.kernel_) == str(C(1.0) * RBF(1.0))


def test_feature_std_of_row_partitions_equals_numpy():
    X = np.random.RandomState(1).randn(53, 4) * [1.0, 2.0, 0.5, 3.0] + 7.0
    rows = LocalRows(X, np.zeros(53), 20)
    np.testing.assert_allclose(feature_std(rows), np.std(X, axis=0), rtol=1e-12)
    np.testing.assert_allclose(feature_std(X), np.std(X, axis=0), rtol=0)


def test_a_fit_that_keeps_one_length_scale_is_the_user_kernels_fit():
    # the decision's subset (10 rows per hyperparameter: 140) extends the 100 rows the
    # subset start draws otherwise, so keeping one length scale changes nothing
    rng = np.random.RandomState(2)
    X = rng.randn(300, 12)
    y = np.sin(X.sum(axis=1) / np.sqrt(12)) + 0.3 * rng.randn(300)
    kw = dict(max_basis=15, max_iter=2, refine_basis=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = SparseGPRegressor(**kw).fit(X, y)
        user = SparseGPRegressor(C(1.0) * RBF(1.0), **kw).fit(X, y)
    assert np.ndim(default.kernel_.k2.length_scale) == 0
    np.testing.assert_array_equal(default.basis_indices_, user.basis_indices_)
    np.testing.assert_allclose(default.kernel_.theta, user.kernel_.theta, rtol=0, atol=0)
    np.testing.assert_allclose(default.predict(X[:20]), user.predict(X[:20]), rtol=0, atol=0)
