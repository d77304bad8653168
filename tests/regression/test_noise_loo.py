"""The noise variance and amplitude by leave-one-out (``noise_calibration``), against dense
formulas."""

import warnings

import numpy as np
import pytest
from scipy.linalg import cholesky, solve_triangular
from scipy.optimize import minimize, minimize_scalar
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression._noise_loo import kernel_amplitude, loo_noise_variance
from skgpsparse.rows._store import LocalRows


def _data(n=300, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.randn(n)
    return X, y


def _problem(n=40, p=6, m=1, seed=0, amplitude=1.3):
    X, y = _data(n, seed)
    Y = np.column_stack([y] + [np.cos(X[:, 0]) * (t + 1) for t in range(m - 1)])
    kernel = C(amplitude) * RBF([0.9, 1.4])
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
    s2_loo, scale, (before, after) = loo_noise_variance(
        kernel, X, Y, X_basis, L, V @ V.T, V @ Y, s2, (1e-6, 1e2)
    )
    assert scale == 1.0
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


def _dense_scaled_nlpd(amplitude, c, s2):
    """:func:`_dense_loo_nlpd` of :func:`_problem` with the kernel ``C(c * amplitude) * RBF``,
    from scratch."""
    kernel, X, Y, _, _, V = _problem(amplitude=c * amplitude)
    return _dense_loo_nlpd(kernel, X, Y, V, s2)


def test_the_joint_search_minimises_the_dense_nlpd_over_noise_and_amplitude():
    # an inflated amplitude (5 where about 0.3 fits): the noise alone cannot narrow k - q
    kernel, X, Y, X_basis, L, V = _problem(amplitude=5.0)
    s2 = 0.3
    args = (kernel, X, Y, X_basis, L, V @ V.T, V @ Y, s2, (1e-6, 1e2))
    _, _, (_, noise_only) = loo_noise_variance(*args)
    s2_loo, c, (before, after) = loo_noise_variance(*args, scale_bounds=(1e-4, 1e4))
    assert before == pytest.approx(_dense_scaled_nlpd(5.0, 1.0, s2), rel=1e-9)
    # the reported minimum is the dense leave-one-out NLPD of the scaled model it returns
    assert after == pytest.approx(_dense_scaled_nlpd(5.0, c, s2_loo), rel=1e-6)
    assert c < 0.5 and after < noise_only - 0.01
    reference = minimize(
        lambda t: _dense_scaled_nlpd(5.0, np.exp(t[1]), np.exp(t[0])),
        [np.log(s2), 0.0], method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-9},
    )
    assert after == pytest.approx(reference.fun, abs=1e-4)
    assert np.log(c) == pytest.approx(reference.x[1], abs=0.05)


def test_the_joint_search_keeps_the_amplitude_and_noise_within_their_bounds():
    kernel, X, Y, X_basis, L, V = _problem(amplitude=5.0)
    s2_loo, c, (before, after) = loo_noise_variance(
        kernel, X, Y, X_basis, L, V @ V.T, V @ Y, 0.3, (0.05, 1.0), scale_bounds=(0.5, 2.0)
    )
    assert 0.5 <= c <= 2.0 and 0.05 <= s2_loo <= 1.0 and after <= before


def test_the_amplitude_is_a_learned_constant_factor_of_a_product():
    name, value, bounds = kernel_amplitude(C(2.0, (1e-3, 1e3)) * RBF(1.0))
    assert (name, value) == ("k1__constant_value", 2.0)
    np.testing.assert_allclose(bounds, (5e-4, 5e2))
    assert kernel_amplitude(RBF(1.0) * C(2.0))[0] == "k2__constant_value"
    assert kernel_amplitude(RBF(1.0)) is None
    assert kernel_amplitude(C(2.0, "fixed") * RBF(1.0)) is None
    assert kernel_amplitude(C(2.0) * RBF(1.0) + WhiteKernel()) is None


def test_the_search_stays_within_the_noise_bounds_and_keeps_a_better_s2():
    kernel, X, Y, X_basis, L, V = _problem()
    s2_loo, _, _ = loo_noise_variance(kernel, X, Y, X_basis, L, V @ V.T, V @ Y, 0.3, (0.1, 1.0))
    assert 0.1 <= s2_loo <= 1.0
    best = minimize_scalar(lambda t: _dense_loo_nlpd(kernel, X, Y, V, np.exp(t)),
                           bounds=(-9, 2), method="bounded").x
    # started at the minimiser, nothing on the grid beats it
    s2_same, _, (before, after) = loo_noise_variance(
        kernel, X, Y, X_basis, L, V @ V.T, V @ Y, float(np.exp(best)), (1e-6, 1e2)
    )
    assert s2_same == pytest.approx(np.exp(best), rel=0.05)
    assert after <= before


def test_partitions_give_the_in_memory_result():
    kernel, X, Y, X_basis, L, V = _problem(n=90)
    args = (X_basis, L, V @ V.T, V @ Y, 0.3, (1e-6, 1e2))
    rows = LocalRows(X, Y[:, 0], partition_rows=25)
    for scale_bounds in (None, (1e-3, 1e3)):
        s2, c, nlpd = loo_noise_variance(kernel, X, Y, *args, scale_bounds=scale_bounds)
        s2_rows, c_rows, nlpd_rows = loo_noise_variance(
            kernel, rows, None, *args, scale_bounds=scale_bounds
        )
        assert s2_rows == pytest.approx(s2, rel=1e-10) and c_rows == pytest.approx(c, rel=1e-10)
        np.testing.assert_allclose(nlpd_rows, nlpd, rtol=1e-12)


def _test_nlpd(model, X, y):
    mean, std = model.predict(X, return_std=True)
    var = std**2 + model.noise_variance_
    return float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (y - mean) ** 2 / var))


@pytest.mark.parametrize("refine_basis", [0, 20])
@pytest.mark.parametrize("calibration", ["loo", "loo_noise"])
def test_calibrated_noise_lowers_the_test_nlpd(refine_basis, calibration):
    # 30 basis vectors for a function that needs more: the bound's noise is too large
    X, y = _data(300)
    X_test, y_test = _data(2000, seed=7)
    kw = {"max_basis": 30, "random_state": 0, "refine_basis": refine_basis}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loo = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), noise_calibration=calibration, **kw)
        loo.fit(X, y)
        bound = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), noise_calibration=None, **kw)
        bound.fit(X, y)
    assert loo.noise_variance_ < bound.noise_variance_
    assert _test_nlpd(loo, X_test, y_test) < _test_nlpd(bound, X_test, y_test) - 0.01
    # the same length scales and basis: only the noise variance (and with "loo" the
    # amplitude, theta[0]) and the factors that hold them moved
    moved = 1 if calibration == "loo" else 0
    np.testing.assert_allclose(loo.kernel_.theta[moved:], bound.kernel_.theta[moved:])
    np.testing.assert_allclose(loo.basis_vectors_, bound.basis_vectors_)
    # the reported objective is the bound at the calibrated values
    assert loo.log_marginal_likelihood_value_ == pytest.approx(
        loo.log_marginal_likelihood(loo.kernel_.theta), rel=1e-10
    )


def test_the_amplitude_by_leave_one_out_narrows_the_dtc_error_bars():
    # the DTC evidence inflates the amplitude when the basis is small; the noise alone
    # cannot narrow the unexplained variance k - q that comes with it
    X, y = _data(400)
    X_test, y_test = _data(2000, seed=7)
    kw = {"max_basis": 20, "random_state": 0, "hyperparameter_objective": "dtc"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = {
            c: SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), noise_calibration=c, **kw).fit(X, y)
            for c in ("loo", "loo_noise")
        }
    both, noise = fits["loo"], fits["loo_noise"]
    assert both.kernel_.k1.constant_value < noise.kernel_.k1.constant_value
    np.testing.assert_allclose(both.kernel_.k2.theta, noise.kernel_.k2.theta)
    assert _test_nlpd(both, X_test, y_test) < _test_nlpd(noise, X_test, y_test) - 0.01

    def z2(model):
        mean, std = model.predict(X_test, return_std=True)
        return np.mean((y_test - mean) ** 2 / (std**2 + model.noise_variance_))

    assert abs(np.log(z2(both))) < abs(np.log(z2(noise)))
    # the scaled factors are the model's own: the projected-process prediction (GPML eqs.
    # (8.26)-(8.27)) of the calibrated kernel and noise, formed densely
    k, s2, Z = both.kernel_, both.noise_variance_, both.basis_vectors_
    K_uf, K_su = k(Z, X), k(X_test[:50], Z)  # normalize_y=False: the targets as given
    Sigma = s2 * k(Z) + K_uf @ K_uf.T
    mean = K_su @ np.linalg.solve(Sigma, K_uf @ y)
    q = np.sum(K_su * np.linalg.solve(k(Z), K_su.T).T, axis=1)
    var = k.diag(X_test[:50]) - q + s2 * np.sum(K_su * np.linalg.solve(Sigma, K_su.T).T, axis=1)
    mean_fit, std_fit = both.predict(X_test[:50], return_std=True)
    np.testing.assert_allclose(mean_fit, mean, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(std_fit, np.sqrt(var), rtol=1e-5)


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
