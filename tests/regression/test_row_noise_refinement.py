"""Per-row noise and weights with the basis refinement and the leave-one-out calibration.

References: the dense heteroscedastic Titsias bound and its central differences (the
refinement's objective), the leave-one-out NLPD of ``N(0, Q_ff + s2 diag(a / w))`` formed
densely row by row (the calibration), scikit-learn's ``GaussianProcessRegressor(alpha=s a)``
with nearly every row in the basis, the scalar-noise regressor (a noise array of ones) and the
rows repeated by their integer weights.
"""

import warnings

import numpy as np
import pytest
from scipy.linalg import cholesky, solve_triangular
from scipy.optimize import minimize_scalar
from scipy.stats import multivariate_normal
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression._noise_loo import loo_noise_variance
from skgpsparse.regression._partitioned_objectives import set_row_scale
from skgpsparse.regression._refine import objective_and_gradient
from skgpsparse.regression._row_noise import RowNoise
from skgpsparse.rows._store import LocalRows


def _data(n, seed=0, d=2):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, d))
    a = rng.uniform(0.2, 3.0, n)  # relative noise: a factor 15 between rows
    f = np.sin(2 * X[:, 0]) * (np.cos(X[:, 1]) if d > 1 else 1.0)
    y = f + np.sqrt(0.02 * a) * rng.randn(n)
    return X, y, a


def _fit(model, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bounds
        return clone(model).fit(*args, **kwargs)


# ------------------------------------------------------------------ the refinement's objective
def _dense_bound(kernel, X, y, Z, s2, jitter, a):
    """Titsias' bound with the noise ``s2 a_i`` on row ``i``, formed densely:
    ``log N(y; 0, Q + s2 diag(a)) - sum_i (k_ii - q_ii) / (2 s2 a_i)``."""
    K_uf = kernel(Z, X)
    Q = K_uf.T @ np.linalg.solve(kernel(Z) + jitter * np.eye(len(Z)), K_uf)
    gap = np.diag(kernel(X)) - np.diag(Q)
    log_n = multivariate_normal(np.zeros(len(y)), Q + s2 * np.diag(a)).logpdf(y)
    return log_n - np.sum(gap / a) / (2.0 * s2)


@pytest.mark.parametrize("kernel", [C(1.3) * RBF([0.8, 1.5]), Matern(1.0, nu=2.5) + C(0.1)])
def test_the_refinements_objective_with_row_noise_is_the_dense_heteroscedastic_bound(kernel):
    # RBF: the gradient from the K_fu the objective holds; Matern: the kernel's own contraction
    X, y, a = _data(60)
    Z, s2, jitter = X[:7] + 0.05, 0.05, 1e-6
    row_noise = RowNoise(a, np.ones(len(y)))
    value, g_theta, g_noise, g_Z = objective_and_gradient(
        kernel, X, y[:, None], Z, s2, jitter, "vfe", row_noise=row_noise
    )
    assert value == pytest.approx(_dense_bound(kernel, X, y, Z, s2, jitter, a), rel=1e-10)

    log_s2 = np.log(s2)

    def dense(theta=kernel.theta, log_s2=log_s2, Z=Z):
        return _dense_bound(kernel.clone_with_theta(theta), X, y, Z, np.exp(log_s2), jitter, a)

    h = 1e-6
    fd_theta = [(dense(theta=kernel.theta + h * e) - dense(theta=kernel.theta - h * e)) / (2 * h)
                for e in np.eye(kernel.n_dims)]
    fd_noise = (dense(log_s2=np.log(s2) + h) - dense(log_s2=np.log(s2) - h)) / (2 * h)
    fd_Z = np.zeros_like(Z)
    for j in range(Z.shape[0]):
        for k in range(Z.shape[1]):
            step = np.zeros_like(Z)
            step[j, k] = h
            fd_Z[j, k] = (dense(Z=Z + step) - dense(Z=Z - step)) / (2 * h)
    np.testing.assert_allclose(g_theta, fd_theta, rtol=1e-5, atol=1e-5)
    assert g_noise == pytest.approx(fd_noise, rel=1e-5, abs=1e-5)
    np.testing.assert_allclose(g_Z, fd_Z, rtol=0, atol=1e-5 * np.abs(fd_Z).max())


# ------------------------------------------------------------------ the calibration
def _dense_loo_nlpd(kernel, X, y, V, s2, a, w):
    """Leave each row out of ``N(0, Q + s2 diag(a / w))`` explicitly (with its own noise in
    its predictive variance) and add ``k_ii - q_ii``; the mean over rows counted ``w_i``
    times."""
    n = X.shape[0]
    C_ = V.T @ V + s2 * np.diag(a / w)
    kq = np.diag(kernel(X)) - np.sum(V * V, axis=0)
    total = 0.0
    for i in range(n):
        keep = np.arange(n) != i
        b = np.linalg.solve(C_[np.ix_(keep, keep)], C_[keep, i])
        var = C_[i, i] - C_[i, keep] @ b + kq[i]
        res = y[i] - b @ y[keep]
        total += w[i] * (0.5 * np.log(2 * np.pi * var) + 0.5 * res**2 / var)
    return total / np.sum(w)


@pytest.mark.parametrize("weighted", [False, True])
def test_the_calibration_with_row_noise_minimises_the_dense_leave_one_out_nlpd(weighted):
    X, y, a = _data(50, seed=1)
    w = np.random.RandomState(2).randint(1, 4, len(y)).astype(float) if weighted \
        else np.ones(len(y))
    row_noise = RowNoise(a, w)
    kernel, p, jitter = C(1.3) * RBF([0.9, 1.4]), 7, 1e-8
    X_basis = X[:p]
    L = cholesky(kernel(X_basis) + jitter * np.eye(p), lower=True)
    V = solve_triangular(L, kernel(X_basis, X), lower=True)
    V_w, y_w = V * row_noise.scale, row_noise.whiten(y)  # what the fit's factors hold
    s2 = 0.3  # the true scale is 0.02
    s2_loo, c, (before, after) = loo_noise_variance(
        kernel, X, y[:, None], X_basis, L, V_w @ V_w.T, V_w @ y_w, s2, (1e-6, 1e2),
        row_noise=row_noise,
    )
    assert c == 1.0
    assert before == pytest.approx(_dense_loo_nlpd(kernel, X, y, V, s2, a, w), rel=1e-9)
    reference = minimize_scalar(
        lambda t: _dense_loo_nlpd(kernel, X, y, V, np.exp(t), a, w),
        bounds=(np.log(s2) - 9, np.log(s2) + 2), method="bounded", options={"xatol": 1e-6},
    )
    # the grid (about 10 % apart) refined by a parabola: the minimiser to a few per cent
    assert np.log(s2_loo) == pytest.approx(reference.x, abs=0.03)
    assert _dense_loo_nlpd(kernel, X, y, V, s2_loo, a, w) == pytest.approx(reference.fun,
                                                                           abs=1e-4)
    assert after < before
    # the partitions, holding the rows' scales and weights, give the same search
    rows = LocalRows(X, y, partition_rows=15)
    set_row_scale(rows, row_noise.scale, row_noise.weight)
    s2_rows, _, nlpd_rows = loo_noise_variance(
        kernel, rows, None, X_basis, L, V_w @ V_w.T, V_w @ y_w, s2, (1e-6, 1e2),
        row_noise=row_noise,
    )
    assert s2_rows == pytest.approx(s2_loo, rel=1e-10)
    np.testing.assert_allclose(nlpd_rows, (before, after), rtol=1e-12)


# ------------------------------------------------------------------ the estimator
def test_a_noise_array_of_ones_is_the_scalar_noise_model():
    X, y, _ = _data(300, seed=3)
    X_test = _data(50, seed=4)[0]
    kw = {"max_basis": 15, "random_state": 0}
    ones = _fit(SparseGPRegressor(noise_variance=np.ones(len(y)), **kw), X, y)
    # the scalar started where the array's common scale starts (1): the same arithmetic
    scalar = _fit(SparseGPRegressor(noise_variance=1.0, **kw), X, y)
    assert ones.n_refine_iter_ > 0  # refined, as the scalar default
    assert ones.n_refine_iter_ == scalar.n_refine_iter_
    np.testing.assert_array_equal(ones.basis_vectors_, scalar.basis_vectors_)
    np.testing.assert_array_equal(ones.kernel_.theta, scalar.kernel_.theta)
    np.testing.assert_array_equal(ones.noise_variance_, np.full(len(y), scalar.noise_variance_))
    for got, want in zip(ones.predict(X_test, return_std=True),
                         scalar.predict(X_test, return_std=True)):
        np.testing.assert_array_equal(got, want)
    # the default's start (noise 0.01) leads to the same optimum, to the optimizers' tolerance
    default = _fit(SparseGPRegressor(**kw), X, y)
    np.testing.assert_allclose(ones.predict(X_test), default.predict(X_test), rtol=0, atol=1e-4)
    assert ones.noise_variance_[0] == pytest.approx(default.noise_variance_, rel=1e-3)


# basis sizes of 60 rows on a line: 15 (refined: the full GP to 1e-4) and 30 (the refinement
# finds nothing to gain: the full GP to rounding)
@pytest.mark.parametrize("max_basis,refined,tol", [(15, True, 1e-3), (30, False, 1e-8)])
def test_a_noise_array_in_the_full_basis_limit_is_the_dense_heteroscedastic_gp(
        max_basis, refined, tol):
    # a basis that spans the kernel on the data: the projected process is the full GP,
    # refined and calibrated; the reference is the dense GP with alpha = s a at the fitted
    # kernel and scale
    X, y, a = _data(60, seed=5, d=1)
    X_test = np.linspace(-3, 3, 25)[:, None]
    kw = {"kernel": C(1.0) * RBF(1.0), "max_basis": max_basis, "random_state": 0}
    model = _fit(SparseGPRegressor(noise_variance=3.0 * a, **kw), X, y)
    assert (model.n_refine_iter_ > 0) == refined
    scale = model.noise_variance_ / (3.0 * a)
    np.testing.assert_allclose(scale, scale[0], rtol=1e-12)
    gp = GaussianProcessRegressor(model.kernel_, alpha=model.noise_variance_, optimizer=None)
    mean, std = gp.fit(X, y).predict(X_test, return_std=True)
    got_mean, got_std = model.predict(X_test, return_std=True)
    np.testing.assert_allclose(got_mean, mean, rtol=0, atol=tol)
    np.testing.assert_allclose(got_std, std, rtol=2 * tol, atol=0)
    # the calibration moved the scale: the fit without it keeps the bound's
    bound = _fit(SparseGPRegressor(noise_variance=3.0 * a, noise_calibration=None, **kw), X, y)
    assert bound.noise_variance_[0] != model.noise_variance_[0]
    # the learned s a_i is the noise simulated (0.02 a_i), to the sampling error of 60 rows
    assert 0.5 < model.noise_variance_[0] / (0.02 * a[0]) < 2.0


def test_the_refinements_objective_with_integer_weights_is_the_repeated_rows():
    # (end to end, weighted and repeated fits start the refinement from hyperparameters
    # equal to the subset start's optimizer tolerance, and L-BFGS paths part from there)
    X, y, _ = _data(30, seed=6, d=1)
    w = np.random.RandomState(7).randint(1, 4, len(y))
    kernel, Z = C(1.0) * RBF(1.0), X[:8] + 0.05
    weighted = objective_and_gradient(kernel, X, y[:, None], Z, 0.05, 1e-6, "vfe",
                                      row_noise=RowNoise(np.ones(len(y)), w.astype(float)))
    repeated = objective_and_gradient(kernel, np.repeat(X, w, axis=0),
                                      np.repeat(y, w)[:, None], Z, 0.05, 1e-6, "vfe")
    assert weighted[0] == pytest.approx(repeated[0], rel=1e-12)
    for got, want in zip(weighted[1:], repeated[1:]):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_weights_are_calibrated_and_leave_the_arrays_alone():
    X, y, _ = _data(200, seed=8)
    w = np.random.RandomState(9).uniform(0.5, 2.0, len(y))
    X0, y0, w0 = X.copy(), y.copy(), w.copy()
    kw = {"max_basis": 10, "random_state": 0}
    calibrated = _fit(SparseGPRegressor(**kw), X, y, sample_weight=w)
    bound = _fit(SparseGPRegressor(noise_calibration=None, **kw), X, y, sample_weight=w)
    assert calibrated.n_refine_iter_ > 0
    assert calibrated.noise_variance_ != bound.noise_variance_
    for got, want in ((X, X0), (y, y0), (w, w0)):
        np.testing.assert_array_equal(got, want)
