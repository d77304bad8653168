"""Tests for the DTC / projected-process log marginal likelihood (GPML eq. 8.17)."""

import numpy as np
import pytest
from numpy.linalg import LinAlgError
from scipy.stats import multivariate_normal
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, DotProduct, Matern, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse.regression._dtc import dtc_log_marginal_likelihood

KERNELS = {
    "c-rbf": C(1.5) * RBF(1.2),
    "c-rbf-ard": C(0.8) * RBF([0.9, 2.0, 0.6]),
    "matern-ard": Matern([1.0, 2.0, 0.5], nu=1.5),
    "rbf+dot": RBF(1.0) + DotProduct(0.5),
    "fixed-c-matern": C(2.0, constant_value_bounds="fixed") * Matern(1.3, nu=2.5),
}


def _data(n=40, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.randn(n)
    return X, y


def _dense_lml(kernel, X, y, X_basis, s2, jitter):
    """log N(y | 0, Q_ff + s2 I) with the n x n matrix formed explicitly."""
    K_uu = kernel(X_basis, X_basis) + jitter * np.eye(len(X_basis))
    K_fu = kernel(X, X_basis)
    Q = K_fu @ np.linalg.solve(K_uu, K_fu.T)
    cov = Q + s2 * np.eye(len(X))
    return multivariate_normal(np.zeros(len(X)), cov).logpdf(y)


def _finite_difference(kernel, X, y, X_basis, s2, jitter, h=1e-5):
    theta = np.r_[kernel.theta, np.log(s2)]
    grad = np.empty_like(theta)
    for i in range(len(theta)):
        values = []
        for step in (h, -h):
            t = theta.copy()
            t[i] += step
            values.append(
                dtc_log_marginal_likelihood(
                    kernel.clone_with_theta(t[:-1]), X, y, X_basis, np.exp(t[-1]), jitter=jitter
                )
            )
        grad[i] = (values[0] - values[1]) / (2 * h)
    return grad


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("n, p", [(40, 8), (40, 1), (5, 9)])
def test_value_matches_dense_formula(name, n, p):
    kernel = KERNELS[name]
    X, y = _data(n)
    X_basis = np.random.RandomState(1).randn(p, X.shape[1])
    expected = _dense_lml(kernel, X, y, X_basis, 0.05, 1e-6)
    value = dtc_log_marginal_likelihood(kernel, X, y, X_basis, 0.05, jitter=1e-6)
    assert value == pytest.approx(expected, rel=1e-9, abs=1e-9)
    # the same value is returned with the gradient
    value_g, _ = dtc_log_marginal_likelihood(
        kernel, X, y, X_basis, 0.05, jitter=1e-6, eval_gradient=True
    )
    assert value_g == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("name", ["c-rbf", "c-rbf-ard", "matern-ard", "rbf+dot"])
@pytest.mark.parametrize("multi_output", [False, True])
def test_full_basis_equals_sklearn_gpr(name, multi_output):
    # with X_basis = X, Q_ff = K_ff (up to the jitter), i.e. the exact GP
    kernel = KERNELS[name]
    X, y = _data(25)
    if multi_output:
        y = np.c_[y, 2.0 * y + 1.0, np.cos(X[:, 2])]
    s2 = 0.1
    gpr = GaussianProcessRegressor(kernel, alpha=s2, optimizer=None).fit(X, y)
    expected, expected_grad = gpr.log_marginal_likelihood(kernel.theta, eval_gradient=True)
    value, grad = dtc_log_marginal_likelihood(
        kernel, X, y, X, s2, jitter=1e-10, eval_gradient=True
    )
    assert value == pytest.approx(gpr.log_marginal_likelihood_value_, rel=1e-6)
    assert value == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(grad[:-1], expected_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("s2", [0.01, 0.3])
def test_gradient_matches_finite_differences(name, s2):
    kernel = KERNELS[name]
    X, y = _data(40)
    X_basis = X[::5] + 0.05
    _, grad = dtc_log_marginal_likelihood(
        kernel, X, y, X_basis, s2, jitter=1e-8, eval_gradient=True
    )
    assert grad.shape == (kernel.n_dims + 1,)
    fd = _finite_difference(kernel, X, y, X_basis, s2, 1e-8)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5 * np.max(np.abs(fd)))


def test_gradient_multi_output_and_fixed_kernel():
    X, y = _data(30)
    Y = np.c_[y, np.cos(X[:, 1])]
    X_basis = X[:6]
    kernel = C(1.5) * RBF([1.0, 0.7, 2.0])
    value, grad = dtc_log_marginal_likelihood(
        kernel, X, Y, X_basis, 0.05, jitter=1e-8, eval_gradient=True
    )
    # outputs are independent: the multi-output likelihood and gradient are sums
    parts = [
        dtc_log_marginal_likelihood(
            kernel, X, Y[:, k], X_basis, 0.05, jitter=1e-8, eval_gradient=True
        )
        for k in range(2)
    ]
    assert value == pytest.approx(parts[0][0] + parts[1][0], rel=1e-12)
    np.testing.assert_allclose(grad, parts[0][1] + parts[1][1], rtol=1e-10)
    np.testing.assert_allclose(
        grad, _finite_difference(kernel, X, Y, X_basis, 0.05, 1e-8), rtol=1e-5
    )
    # all kernel hyperparameters fixed: only the noise derivative remains
    fixed = RBF(1.0, length_scale_bounds="fixed")
    value, grad = dtc_log_marginal_likelihood(fixed, X, y, X_basis, 0.05, eval_gradient=True)
    assert grad.shape == (1,)
    h = 1e-5
    fd = (
        dtc_log_marginal_likelihood(fixed, X, y, X_basis, 0.05 * np.exp(h))
        - dtc_log_marginal_likelihood(fixed, X, y, X_basis, 0.05 * np.exp(-h))
    ) / (2 * h)
    assert grad[0] == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("name", ["c-rbf-ard", "rbf+dot"])
def test_chunk_size_does_not_change_the_result(name):
    kernel = KERNELS[name]
    X, y = _data(23)
    X_basis = X[:7] * 0.9
    results = [
        dtc_log_marginal_likelihood(
            kernel, X, y, X_basis, 0.05, eval_gradient=True, chunk_size=chunk
        )
        for chunk in (1, 5, None)
    ]
    for value, grad in results[:-1]:
        assert value == pytest.approx(results[-1][0], rel=1e-12)
        np.testing.assert_allclose(grad, results[-1][1], rtol=1e-10, atol=1e-12)


def test_white_kernel_is_ignored_and_default_jitter_handles_repeats():
    X, y = _data(20)
    X_basis = np.r_[X[:4], X[:4]]  # repeated basis vectors: K_uu singular
    kernel = RBF(1.0)
    with pytest.raises(LinAlgError, match="jitter"):
        dtc_log_marginal_likelihood(kernel, X, y, X_basis, 0.1, jitter=0.0)
    # the default jitter (1e-8 * mean diag K_uu) regularises; repeats add nothing to Q_ff
    value = dtc_log_marginal_likelihood(kernel, X, y, X_basis, 0.1)
    assert value == pytest.approx(dtc_log_marginal_likelihood(kernel, X, y, X[:4], 0.1), rel=1e-6)
    # a WhiteKernel term contributes nothing to the cross-covariances Q_ff is built from
    with_white = dtc_log_marginal_likelihood(kernel + WhiteKernel(0.5), X, y, X[:4], 0.1)
    assert with_white == pytest.approx(
        dtc_log_marginal_likelihood(kernel, X, y, X[:4], 0.1), rel=1e-12
    )


def test_more_basis_points_improve_the_fit():
    # the lml with the basis equal to the data dominates a 2-point basis on smooth data
    X, y = _data(40)
    kernel = C(1.0) * RBF(1.5)
    small = dtc_log_marginal_likelihood(kernel, X, y, X[:2], 0.01)
    full = dtc_log_marginal_likelihood(kernel, X, y, X, 0.01, jitter=1e-10)
    assert full > small


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"noise_variance": 0.0}, "noise_variance must be a finite real number > 0, got 0.0"),
        ({"noise_variance": -1.0}, "noise_variance"),
        ({"noise_variance": np.nan}, "noise_variance"),
        ({"jitter": -1e-3}, "jitter must be None or a finite real number >= 0"),
        ({"y": np.zeros(7)}, r"y must have shape \(10,\)"),
        ({"y": np.zeros((10, 2, 2))}, "y must have shape"),
        ({"X": np.zeros(10)}, "X must be a 2-D array"),
        ({"X_basis": np.zeros((3, 4))}, "X_basis must be a 2-D array"),
        ({"X_basis": np.zeros((0, 2))}, "X_basis must be a 2-D array"),
        ({"y": np.r_[np.nan, np.zeros(9)]}, "y must contain only finite values"),
    ],
)
def test_invalid_arguments(kwargs, match):
    args = {
        "X": np.zeros((10, 2)),
        "y": np.zeros(10),
        "X_basis": np.zeros((3, 2)),
        "noise_variance": 0.1,
    }
    jitter = kwargs.pop("jitter", None)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        dtc_log_marginal_likelihood(
            RBF(), args["X"], args["y"], args["X_basis"], args["noise_variance"], jitter=jitter
        )
    with pytest.raises(TypeError, match="kernel must be a scikit-learn Kernel"):
        dtc_log_marginal_likelihood("rbf", np.zeros((3, 1)), np.zeros(3), np.zeros((1, 1)), 1.0)
