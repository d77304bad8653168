"""The noise variance by leave-one-out (``noise_calibration="loo"``), against dense formulas."""

import warnings

import numpy as np
import pytest
from scipy.linalg import cholesky, solve_triangular
from scipy.optimize import minimize_scalar
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse._rows import LocalRows
from skgpsparse.regression._noise_loo import loo_noise_variance


def _data(n=300, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.randn(n)
    return X, y


def _problem(n=40, p=6, m=1, seed=0):
    X, y = _data(n, seed)
    Y = np.column_stack([y] + [np.cos(X[:, 0]) * (t + 1) for t in range(m - 1)])
    kernel = C(1.3) * RBF([0.9, 1.4])
    X_basis = X[:p]
    jitter = 1e-8
    L = cholesky(kernel(X_basis) + jitter * np.eye(p), lower=True)
    V = solve_triangular(L, kernel(X_basis, X), lower=True)
    return kernel, X, Y, X_basis, L, V


def _dense_loo_nlpd(kernel, X, Y, V, s2):
    """Leave each row out of ``N(0, Q + s2 I)`` explicitly; add ``k_ii - q_ii``."""
    n = X.shape[0]
    C_ = V.T @ V + s2 * np.eye(n)
    kq = np.diag(kernel(X)) - np.sum(V * V, axis=0)
    total = 0.0
    for i in range(n):
        keep = np.arange(n) != i
        w = np.linalg.solve(C_[np.ix_(keep, keep)], C_[keep, i])
        var = C_[i, i] - C_[i, keep] @ w + kq[i]
        for t in range(Y.shape[1]):
            res = Y[i, t] - w @ Y[keep, t]
            total += 0.5 * np.log(2 * np.pi * var) + 0.5 * res**2 / var
    return total / Y.size


@pytest.mark.parametrize("m", [1, 2])
def test_the_search_minimises_the_dense_leave_one_out_nlpd(m):
    kernel, X, Y, X_basis, L, V = _problem(m=m)
    s2 = 0.3  # an over-estimate: the true noise variance is 0.01
    s2_loo, (before, after) = loo_noise_variance(
        kernel, X, Y, X_basis, L, V @ V.T, V @ Y, s2, (1e-6, 1e2)
    )
    assert before == pytest.approx(_dense_loo_nlpd(kernel, X, Y, V, s2), rel=1e-9)
    assert after < before
    reference = minimize_scalar(
        lambda t: _dense_loo_nlpd(kernel, X, Y, V, np.exp(t)),
        bounds=(np.log(s2) - 9, np.log(s2) + 2), method="bounded", options={"xatol": 1e-6},
    )
    # the grid (about 10 % apart) refined by a parabola: the minimiser to a few per cent,
    # the minimum to far less
    assert np.log(s2_loo) == pytest.approx(reference.x, abs=0.03)
    assert _dense_loo_nlpd(kernel, X, Y, V, s2_loo) == pytest.approx(reference.fun, abs=1e-4)


def test_the_search_stays_within_the_noise_bounds_and_keeps_a_better_s2():
    kernel, X, Y, X_basis, L, V = _problem()
    s2_loo, _ = loo_noise_variance(kernel, X, Y, X_basis, L, V @ V.T, V @ Y, 0.3, (0.1, 1.0))
    assert 0.1 <= s2_loo <= 1.0
    best = minimize_scalar(lambda t: _dense_loo_nlpd(kernel, X, Y, V, np.exp(t)),
                           bounds=(-9, 2), method="bounded").x
    # started at the minimiser, nothing on the grid beats it
    s2_same, (before, after) = loo_noise_variance(
        kernel, X, Y, X_basis, L, V @ V.T, V @ Y, float(np.exp(best)), (1e-6, 1e2)
    )
    assert s2_same == pytest.approx(np.exp(best), rel=0.05)
    assert after <= before


def test_partitions_give_the_in_memory_result():
    kernel, X, Y, X_basis, L, V = _problem(n=90)
    args = (X_basis, L, V @ V.T, V @ Y, 0.3, (1e-6, 1e2))
    s2, nlpd = loo_noise_variance(kernel, X, Y, *args)
    rows = LocalRows(X, Y[:, 0], partition_rows=25)
    s2_rows, nlpd_rows = loo_noise_variance(kernel, rows, None, *args)
    assert s2_rows == pytest.approx(s2, rel=1e-10)
    np.testing.assert_allclose(nlpd_rows, nlpd, rtol=1e-12)


def _test_nlpd(model, X, y):
    mean, std = model.predict(X, return_std=True)
    var = std**2 + model.noise_variance_
    return float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (y - mean) ** 2 / var))


@pytest.mark.parametrize("refine_basis", [0, 20])
def test_calibrated_noise_lowers_the_test_nlpd(refine_basis):
    # 30 basis vectors for a function that needs more: the bound's noise is too large
    X, y = _data(300)
    X_test, y_test = _data(2000, seed=7)
    kw = {"max_basis": 30, "random_state": 0, "refine_basis": refine_basis}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loo = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), **kw).fit(X, y)
        bound = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), noise_calibration=None, **kw)
        bound.fit(X, y)
    assert loo.noise_variance_ < bound.noise_variance_
    assert _test_nlpd(loo, X_test, y_test) < _test_nlpd(bound, X_test, y_test) - 0.01
    # the same kernel and basis: only the noise variance and the factors that hold it moved
    np.testing.assert_allclose(loo.kernel_.theta, bound.kernel_.theta)
    np.testing.assert_allclose(loo.basis_vectors_, bound.basis_vectors_)
    # the reported objective is the bound at the calibrated noise
    assert loo.log_marginal_likelihood_value_ == pytest.approx(
        loo.log_marginal_likelihood(loo.kernel_.theta), rel=1e-10
    )


def test_without_learning_or_with_every_row_in_the_basis_the_noise_is_kept():
    X, y = _data(60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fixed = SparseGPRegressor(max_basis=10, optimizer=None, noise_variance=0.3).fit(X, y)
        full = SparseGPRegressor(max_basis=60, random_state=0).fit(X, y)
        full_none = SparseGPRegressor(max_basis=60, random_state=0, noise_calibration=None)
        full_none.fit(X, y)
        pinned = SparseGPRegressor(
            max_basis=10, noise_variance=0.3, noise_variance_bounds="fixed", random_state=0
        ).fit(X, y)
    assert fixed.noise_variance_ == 0.3 and pinned.noise_variance_ == 0.3
    assert full.noise_variance_ == full_none.noise_variance_


def test_noise_calibration_is_validated():
    X, y = _data(30)
    with pytest.raises(ValueError, match="noise_calibration"):
        SparseGPRegressor(noise_calibration="cv").fit(X, y)
