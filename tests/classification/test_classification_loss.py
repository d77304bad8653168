"""Tests for the sparse classifier's NLP loss (validation paper eq. 2.8) and its gradient."""

import warnings

import numpy as np
import pytest
from _support.dense_adf import dense_posterior
from scipy.stats import norm
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgpsparse.latent.objectives._nlp_loss import nlp_loss
from skgpsparse.likelihoods import Probit

C = ConstantKernel


def _problem(n=40, d=2, p=8, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.where(X[:, 0] + 0.5 * rng.randn(n) > 0, 1.0, -1.0)
    basis = rng.choice(n, p, replace=False)
    site_mean = 2.0 * y[basis] + 0.3 * rng.randn(p)
    site_precision = rng.uniform(0.2, 3.0, p)
    return X, y, basis, site_mean, site_precision


def _dense_full(kernel, X, y, bias, basis, site_mean, site_precision):
    """NLP from the full n x n posterior: A = K - K S B^-1 S K, f = A Pi m (sites 0 off u)."""
    n = X.shape[0]
    f, A = dense_posterior(kernel, X, basis, site_precision, site_mean)
    rest = np.setdiff1d(np.arange(n), basis)
    z = y[rest] * (f[rest] + bias) / np.sqrt(1.0 + np.diag(A)[rest])
    return -np.mean(norm.logcdf(z))


def _dense_basis(kernel, X, y, bias, basis, site_mean, site_precision):
    """NLP from the basis formulas with explicit inverses: f = k_iu S B^-1 S m_u."""
    n = X.shape[0]
    rest = np.setdiff1d(np.arange(n), basis)
    s = np.sqrt(site_precision)
    K_uu = kernel(X[basis])
    K_ru = kernel(X[rest], X[basis])
    Binv = np.linalg.inv(np.eye(len(basis)) + s[:, None] * K_uu * s[None, :])
    Cm = s[:, None] * Binv * s[None, :]
    f = K_ru @ Cm @ site_mean
    A = kernel.diag(X[rest]) - np.einsum("ij,jk,ik->i", K_ru, Cm, K_ru)
    z = y[rest] * (f + bias) / np.sqrt(1.0 + A)
    return -np.mean(norm.logcdf(z))


KERNELS = {
    "c-rbf": C(1.7) * RBF(0.9),
    "rbf-ard": RBF([0.8, 1.6]),
    "matern1.5-ard": Matern([0.7, 1.4], nu=1.5),
    "c-rbf-white": C(1.3) * RBF(1.1) + WhiteKernel(0.4),
    "c-matern2.5": C(0.8) * Matern(1.2, nu=2.5),
}


@pytest.mark.parametrize("name", KERNELS)
def test_value_matches_dense(name):
    kernel = KERNELS[name]
    X, y, basis, m, p = _problem()
    bias = 0.3
    value = nlp_loss(kernel, X, y, bias, basis, m, p, likelihood=Probit())
    full = _dense_full(kernel, X, y, bias, basis, m, p)
    via_basis = _dense_basis(kernel, X, y, bias, basis, m, p)
    assert np.isclose(full, via_basis, rtol=1e-10)
    assert np.isclose(value, full, rtol=1e-10)
    value2, _ = nlp_loss(kernel, X, y, bias, basis, m, p, eval_gradient=True, likelihood=Probit())
    assert np.isclose(value2, value, rtol=1e-12)


def _finite_difference(kernel, X, y, bias, basis, m, p, h=1e-5):
    params = np.append(kernel.theta, bias)
    grad = np.empty_like(params)
    for k in range(params.size):
        vals = []
        for sign in (1.0, -1.0):
            q = params.copy()
            q[k] += sign * h
            vals.append(nlp_loss(kernel.clone_with_theta(q[:-1]), X, y, q[-1], basis, m, p,
                                 likelihood=Probit()))
        grad[k] = (vals[0] - vals[1]) / (2 * h)
    return grad


@pytest.mark.parametrize("name", KERNELS)
def test_gradient_matches_finite_differences(name):
    kernel = KERNELS[name]
    X, y, basis, m, p = _problem(seed=1)
    bias = -0.4
    _, grad = nlp_loss(kernel, X, y, bias, basis, m, p, eval_gradient=True, likelihood=Probit())
    fd = _finite_difference(kernel, X, y, bias, basis, m, p)
    assert grad.shape == (kernel.n_dims + 1,)
    # every component, relative to the gradient's scale
    assert np.max(np.abs(grad - fd)) <= 1e-5 * np.max(np.abs(fd))
    # and each component relative to itself where it is not tiny
    big = np.abs(fd) > 1e-3 * np.max(np.abs(fd))
    assert np.all(np.abs(grad - fd)[big] <= 1e-5 * np.abs(fd)[big] + 1e-9)


def test_gradient_with_misclassified_points_and_large_bias():
    # large |z| on both sides exercises the stable N/Phi ratio
    kernel = C(4.0) * RBF(0.6)
    X, y, basis, m, p = _problem(seed=2)
    m = -m  # sites point the wrong way: many negative margins
    for bias in (-3.0, 2.5):
        _, grad = nlp_loss(kernel, X, y, bias, basis, m, p, eval_gradient=True,
                           likelihood=Probit())
        fd = _finite_difference(kernel, X, y, bias, basis, m, p)
        assert np.max(np.abs(grad - fd)) <= 1e-5 * np.max(np.abs(fd))


@pytest.mark.parametrize("chunk_size", [1, 7, None])
def test_chunk_size_independence(chunk_size):
    kernel = C(1.2) * RBF([0.9, 1.3])
    X, y, basis, m, p = _problem(n=53, seed=3)
    ref_value, ref_grad = nlp_loss(kernel, X, y, 0.1, basis, m, p, eval_gradient=True,
                                   likelihood=Probit())
    value, grad = nlp_loss(
        kernel, X, y, 0.1, basis, m, p, eval_gradient=True, chunk_size=chunk_size,
        likelihood=Probit()
    )
    value_only = nlp_loss(kernel, X, y, 0.1, basis, m, p, chunk_size=chunk_size,
                          likelihood=Probit())
    assert np.isclose(value, ref_value, rtol=1e-12)
    assert np.isclose(value_only, ref_value, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-14)


def test_zero_site_precision_is_finite_and_inert():
    kernel = C(1.5) * RBF(1.0)
    X, y, basis, m, p = _problem(seed=4)
    p = p.copy()
    p[2] = 0.0
    value, grad = nlp_loss(kernel, X, y, 0.2, basis, m, p, eval_gradient=True, likelihood=Probit())
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    assert np.isclose(value, _dense_full(kernel, X, y, 0.2, basis, m, p), rtol=1e-10)
    fd = _finite_difference(kernel, X, y, 0.2, basis, m, p)
    assert np.max(np.abs(grad - fd)) <= 1e-5 * np.max(np.abs(fd))
    # a zero-precision site contributes nothing: its mean is irrelevant
    m2 = m.copy()
    m2[2] = 1e3
    assert np.isclose(nlp_loss(kernel, X, y, 0.2, basis, m2, p,
                               likelihood=Probit()), value, rtol=1e-12)
    # all precisions zero: prior predictive, f = 0 and A = k_ii
    zero = np.zeros_like(p)
    rest = np.setdiff1d(np.arange(X.shape[0]), basis)
    expected = -np.mean(norm.logcdf(y[rest] * 0.2 / np.sqrt(1.0 + kernel.diag(X[rest]))))
    assert np.isclose(nlp_loss(kernel, X, y, 0.2, basis, m, zero,
                               likelihood=Probit()), expected, rtol=1e-12)


def test_empty_basis():
    kernel = C(2.0) * RBF(1.0)
    X, y, _, _, _ = _problem(seed=5)
    empty = np.array([], dtype=int)
    value, grad = nlp_loss(kernel, X, y, 0.5, empty, [], [], eval_gradient=True,
                           likelihood=Probit())
    expected = -np.mean(norm.logcdf(y * 0.5 / np.sqrt(3.0)))
    assert np.isclose(value, expected, rtol=1e-12)
    fd = _finite_difference(kernel, X, y, 0.5, empty, np.zeros(0), np.zeros(0))
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-10)


def test_no_clipping_warning_on_well_posed_problem():
    X, y, basis, m, p = _problem(seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nlp_loss(C(1.0) * RBF(1.0), X, y, 0.0, basis, m, p, eval_gradient=True,
                 likelihood=Probit())


@pytest.mark.parametrize(
    "change, match",
    [
        ({"y": np.zeros(40)}, "y must contain only -1 and"),
        ({"y": np.ones(39)}, r"y must have shape \(40,\)"),
        ({"site_mean": np.zeros(7)}, r"site_mean must have shape \(8,\)"),
        ({"site_precision": -np.ones(8)}, "site_precision must be non-negative"),
        ({"site_precision": np.full(8, np.nan)}, "site_precision must be finite"),
        ({"basis_indices": np.array([0, 0, 1, 2, 3, 4, 5, 6])}, "duplicates"),
        ({"basis_indices": np.arange(35, 43)}, r"basis_indices must lie in \[0, 40\)"),
        ({"basis_indices": np.arange(8.0)}, "integer indices"),
        ({"X": np.zeros(40)}, "X must be a 2-D array"),
        ({"bias": np.inf}, "bias must be finite"),
    ],
)
def test_input_validation(change, match):
    X, y, basis, m, p = _problem()
    args = {
        "X": X,
        "y": y,
        "bias": 0.0,
        "basis_indices": basis,
        "site_mean": m,
        "site_precision": p,
    }
    args.update(change)
    with pytest.raises(ValueError, match=match):
        nlp_loss(RBF(), **args, likelihood=Probit())


def test_all_points_in_basis_is_an_error():
    X, y, _, _, _ = _problem(n=5, p=2)
    with pytest.raises(ValueError, match="outside the basis"):
        nlp_loss(RBF(), X, y, 0.0, np.arange(5), np.zeros(5), np.ones(5), likelihood=Probit())
