"""Tests for the sparse GP classifier: the ADF state against dense formulas, then the estimator."""

import copy
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

from skgpsparse._adf import ADFState, moment_matching

C = ConstantKernel


def _problem(n=30, d=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.where(X[:, 0] + 0.4 * rng.randn(n) > 0, 1.0, -1.0)
    return X, y


def _dense_posterior(kernel, X, basis, site_precision, site_mean):
    """A = (K^-1 + Pi)^-1 = K - K S B^-1 S K and f = A Pi m, with S = Pi^1/2, B = I + S K S."""
    n = X.shape[0]
    K = kernel(X)
    pi = np.zeros(n)
    m = np.zeros(n)
    pi[basis] = site_precision
    m[basis] = site_mean
    s = np.sqrt(pi)
    B = np.eye(n) + s[:, None] * K * s[None, :]
    A = K - K @ (s[:, None] * np.linalg.solve(B, s[:, None] * K))
    return A @ (pi * m), A


def _paper_site_update(f, a, y, b):
    """Additive-model paper eq. (2), written literally with scipy.stats.norm."""
    z = y * (f + b) / np.sqrt(1 + a)
    alpha = y * norm.pdf(z) / norm.cdf(z) / np.sqrt(1 + a)
    nu = alpha * (alpha + (f + b) / (1 + a))
    return nu / (1 - a * nu), f + alpha / nu


def _check_against_dense(state, rtol=1e-8, atol=1e-9):
    p = state.size
    f, A = _dense_posterior(
        state.kernel, state.X, state.basis[:p], state.site_precision[:p], state.site_mean[:p]
    )
    np.testing.assert_allclose(state.f_hat, f, rtol=rtol, atol=atol)
    np.testing.assert_allclose(state.diag_A, np.diag(A), rtol=rtol, atol=atol)
    # A = K - M^T M and f_hat = M^T beta with the stored factors
    M = state.M[:p]
    np.testing.assert_allclose(state.k_diag - np.sum(M * M, axis=0), np.diag(A), atol=atol)
    np.testing.assert_allclose(M.T @ state.beta[:p], f, rtol=rtol, atol=atol)
    # L is the Cholesky factor of B = I + S K_uu S
    s = np.sqrt(state.site_precision[:p])
    Xu = state.X[state.basis[:p]]
    B = np.eye(p) + s[:, None] * state.kernel(Xu) * s[None, :]
    np.testing.assert_allclose(state.L[:p, :p] @ state.L[:p, :p].T, B, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------- the ADF state
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_add=st.integers(1, 12),
    bias=st.floats(-1.0, 1.0),
    length_scale=st.floats(0.3, 3.0),
)
def test_incremental_state_equals_dense_posterior(seed, n_add, bias, length_scale):
    X, y = _problem(n=25, seed=seed)
    kernel = C(1.5) * RBF(length_scale)
    state = ADFState(kernel, X, y, bias, max_basis=n_add)
    order = np.random.RandomState(seed).permutation(len(y))[:n_add]
    for j in order:
        state.add(j)
    _check_against_dense(state)
    assert np.all(state.site_precision[:n_add] > 0) and np.all(state.site_precision <= 1)


def test_site_update_matches_equation_2():
    X, y = _problem(n=40, seed=3)
    state = ADFState(Matern(0.8, nu=1.5), X, y, 0.3, max_basis=10)
    for j in (0, 7, 11, 20, 33):
        f_j, a_j = state.f_hat[j], state.diag_A[j]
        p_ref, m_ref = _paper_site_update(f_j, a_j, y[j], 0.3)
        state.add(j)
        k = state.size - 1
        np.testing.assert_allclose(state.site_precision[k], p_ref, rtol=1e-10)
        np.testing.assert_allclose(state.site_mean[k], m_ref, rtol=1e-10)


def test_moment_matching_extreme_margins_are_finite():
    z = np.array([-1e12, -1e6, -200.0, -40.0, -5.0, 0.0, 5.0, 40.0, 200.0, 1e6])
    for a in (0.0, 1e-12, 1.0, 1e8):
        p, dm, alpha, nu = moment_matching(z, np.full_like(z, a), np.ones_like(z), 0.0)
        for v in (p, dm, alpha, nu):
            assert np.all(np.isfinite(v))
        assert np.all((p >= 0) & (p <= 1))
    # against the literal formula where it is well conditioned
    f = np.linspace(-6, 6, 13)
    p, dm, _, _ = moment_matching(f, np.full(13, 0.7), -np.ones(13), 0.2)
    p_ref, m_ref = _paper_site_update(f, 0.7, -1.0, 0.2)
    np.testing.assert_allclose(p, p_ref, rtol=1e-9)
    np.testing.assert_allclose(f + dm, m_ref, rtol=1e-9)


def test_fixed_sites_and_removal_equal_dense_posterior():
    X, y = _problem(n=30, seed=5)
    kernel = C(2.0) * RBF(1.2)
    rng = np.random.RandomState(0)
    basis = rng.choice(30, 8, replace=False)
    prec, mean = rng.uniform(0.1, 1.0, 8), rng.randn(8) * 2
    state = ADFState(kernel, X, y, -0.2, max_basis=8)
    for j, p, m in zip(basis, prec, mean):
        state.add(j, p, m)
    _check_against_dense(state)
    for k in (3, 0, 5):  # positions in the current basis order
        state.remove(k)
        assert not state.in_basis[basis[k]]
        basis, prec, mean = (np.delete(a, k) for a in (basis, prec, mean))
        np.testing.assert_array_equal(state.basis_indices, basis)
        _check_against_dense(state)
    state.add(int(np.setdiff1d(np.arange(30), basis)[0]))  # grows again after deletions
    _check_against_dense(state)


@pytest.mark.parametrize("criterion", ["entropy", "info_gain", "nlp", "nlp_all"])
def test_batched_criteria_equal_brute_force(criterion):
    X, y = _problem(n=35, seed=7)
    kernel = C(1.3) * RBF(0.9)
    state = ADFState(kernel, X, y, 0.25, max_basis=7, chunk_size=8)  # several row blocks
    for j in (1, 4, 9, 16):
        state.add(j)
    J = state.candidates()
    batched = state.score(criterion, J)
    brute = []
    for j in J:
        new = copy.deepcopy(state)
        new.add(j)
        f_old, a_old = state.f_hat[j], state.diag_A[j]
        f_new, a_new = new.f_hat[j], new.diag_A[j]
        if criterion == "entropy":
            brute.append(np.log(a_new / a_old))  # log(1 - nu A) = log(A'/A)
        elif criterion == "info_gain":
            kl = 0.5 * (a_new / a_old - 1 - np.log(a_new / a_old) + (f_new - f_old) ** 2 / a_old)
            brute.append(-kl)
        else:
            brute.append(new.nlp(all_points=criterion == "nlp_all"))
    np.testing.assert_allclose(batched, brute, rtol=1e-7, atol=1e-10)
    assert np.all(np.isfinite(batched))


def test_sampling_weights_equation_11():
    X, y = _problem(n=20, seed=2)
    state = ADFState(RBF(1.0), X, y, 0.1, max_basis=3)
    state.add(0)
    J = state.candidates()
    z = y[J] * (state.f_hat[J] + 0.1) / np.sqrt(1 + state.diag_A[J])
    np.testing.assert_allclose(state.sampling_weights(J), 1 - norm.cdf(z), rtol=1e-12)


def test_duplicate_points_give_a_regular_factor():
    X, y = _problem(n=12, seed=1)
    X = np.vstack([X, X, X])
    y = np.concatenate([y, y, y])
    state = ADFState(RBF(1.0), X, y, 0.0, max_basis=20)
    for j in (0, 12, 24, 1, 13):  # the same points three times over
        state.add(j)
    _check_against_dense(state, atol=1e-8)
    assert np.all(np.diag(state.L[:5, :5]) >= 1.0 - 1e-12)  # B >= I
    for criterion in ("entropy", "info_gain", "nlp", "nlp_all"):
        assert not np.any(np.isnan(state.score(criterion, state.candidates())))
