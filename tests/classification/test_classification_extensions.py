"""Tests for the classifier's site optimisation, evidence objective and exchange steps."""

import copy

import numpy as np
from _support.dense_adf import binary_problem, dense_posterior
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.stats import norm
from sklearn.datasets import make_moons
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgpsparse.classification._estimator import SparseGPClassifier
from skgpsparse.inference._adf import ADFState
from skgpsparse.inference._site_optimization import _objective, optimize_sites
from skgpsparse.likelihoods import Probit

C = ConstantKernel


def _nlp_all(f, A_diag, y, bias):
    return float(np.mean(-norm.logcdf(y * (f + bias) / np.sqrt(1.0 + A_diag))))


def _grown_state(n=30, p=6, seed=0, bias=0.1, **kwargs):
    X, y = binary_problem(n=n, seed=seed)
    state = ADFState(C(1.5) * RBF(0.9), X, y, bias, max_basis=p + 3, **kwargs, likelihood=Probit())
    for j in np.random.RandomState(seed).choice(n, p, replace=False):
        state.add(j)
    return state


# ----------------------------------------------------------------------- site optimisation
def test_site_objective_gradient_matches_finite_differences():
    state = _grown_state(seed=1)
    J = state.candidates()[:3]
    T = state.posterior_columns(J)
    weights = np.full(T.shape, 1.0 / state.n_samples)
    args = (T, state.f_hat, state.diag_A, state.y, state.bias, state.diag_A[J], weights,
            Probit())
    x = np.array([0.3, 0.4, 0.05, 0.5, -1.0, 2.0])  # (eta, alpha) of three candidates
    _, grad = _objective(x, *args)
    eps = 1e-6
    num = [
        (np.sum(_objective(x + eps * e, *args)[0]) - np.sum(_objective(x - eps * e, *args)[0]))
        / (2 * eps)
        for e in np.eye(x.size)
    ]
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-9)


def test_optimized_sites_beat_moment_matching_and_match_the_dense_update():
    state = _grown_state(seed=2, site_update="optimize")
    mm = _grown_state(seed=2)
    J = state.candidates()[:5]
    opt_scores = state.score("nlp_all", J)
    assert np.all(opt_scores <= mm.score("nlp_all", J) + 1e-12)
    assert np.any(opt_scores < mm.score("nlp_all", J) - 1e-4)
    j = int(J[np.argmin(opt_scores)])
    p_j, m_j = state._site_cache[j]
    state.add(j)  # uses the cached optimised site
    assert state.site_precision[state.size - 1] == p_j
    assert state.site_mean[state.size - 1] == m_j
    f, A = dense_posterior(
        state.kernel,
        state.X,
        state.basis_indices,
        state.site_precision[: state.size],
        state.site_mean[: state.size],
    )
    np.testing.assert_allclose(state.f_hat, f, atol=1e-8)
    np.testing.assert_allclose(state.diag_A, np.diag(A), atol=1e-8)
    assert np.isclose(_nlp_all(f, np.diag(A), state.y, state.bias), opt_scores.min(), rtol=1e-9)


def test_optimized_site_agrees_with_an_independent_optimiser():
    state = _grown_state(n=25, seed=3)
    j = int(state.candidates()[0])
    T = state.posterior_columns([j])
    w = np.full((25, 1), 1.0 / 25)
    p0, m0 = np.array([0.5]), np.array([state.f_hat[j]])
    _, _, loss = optimize_sites(
        T, state.f_hat, state.diag_A, state.y, state.bias, [j], p0, m0, w, max_fun=200,
        likelihood=Probit()
    )

    def dense(x):  # the same NLP_a through the dense posterior with the new site
        basis = np.append(state.basis_indices, j)
        # p within the optimiser's box [1e-3, 1e2]
        prec = np.append(
            state.site_precision[: state.size], np.exp(np.clip(x[0], np.log(1e-3), np.log(1e2)))
        )
        mean = np.append(state.site_mean[: state.size], x[1])
        f, A = dense_posterior(state.kernel, state.X, basis, prec, mean)
        return _nlp_all(f, np.diag(A), state.y, state.bias)

    ref = min(
        minimize(dense, [t, m0[0]], method="Nelder-Mead", options={"xatol": 1e-8}).fun
        for t in (-6.0, np.log(0.5), 2.0)
    )
    assert loss[0] <= ref + 1e-5


def test_precision_bound_keeps_variances_non_negative():
    X = np.linspace(-1, 1, 12)[:, None]
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    state = ADFState(C(4.0) * RBF(3.0), X, y, 0.0, max_basis=6, site_update="optimize",
                     likelihood=Probit())
    for _ in range(4):
        J = state.candidates()
        scores = state.score("nlp_all", J)
        state.add(J[np.argmin(scores)])
        assert state.diag_A.min() >= 0.0
        assert np.all(np.isfinite(state.f_hat))


# ----------------------------------------------------------------------- deletion / exchange
def test_deletion_scores_equal_brute_force():
    state = _grown_state(n=35, p=7, seed=4, bias=-0.3)
    scores = state.deletion_scores()
    brute = []
    for k in range(state.size):
        s = copy.deepcopy(state)
        s.remove(k)
        brute.append(s.nlp(all_points=True))
    np.testing.assert_allclose(scores, brute, rtol=1e-9, atol=1e-12)


def test_add_then_delete_restores_the_state():
    state = _grown_state(n=30, p=5, seed=5)
    before = copy.deepcopy(state)
    j = int(state.candidates()[3])
    state.add(j)
    state.remove(state.size - 1)
    np.testing.assert_allclose(state.f_hat, before.f_hat, atol=1e-12)
    np.testing.assert_allclose(state.diag_A, before.diag_A, atol=1e-12)
    np.testing.assert_allclose(state.L, before.L, atol=1e-12)
    np.testing.assert_allclose(state.M, before.M, atol=1e-12)
    np.testing.assert_array_equal(state.in_basis, before.in_basis)
    # deleting a middle position then re-adding that point with its old site: same posterior
    k = 2
    j, p_j, m_j = state.basis[k], state.site_precision[k], state.site_mean[k]
    state.remove(k)
    state.add(j, p_j, m_j)
    np.testing.assert_allclose(state.f_hat, before.f_hat, atol=1e-10)
    np.testing.assert_allclose(state.diag_A, before.diag_A, atol=1e-10)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=4, max_size=14), st.integers(0, 100))
def test_mixed_additions_and_deletions_equal_dense_posterior(ops, seed):
    X, y = binary_problem(n=20, seed=seed)
    state = ADFState(C(1.3) * RBF(1.1) + WhiteKernel(1e-3), X, y, 0.2, max_basis=8,
                     likelihood=Probit())
    rng = np.random.RandomState(seed)
    for op in ops:
        if state.size and (op % 3 == 0 or state.size == state.max_basis):
            state.remove(op % state.size)
        else:
            state.add(int(rng.choice(state.candidates())), rng.uniform(0.05, 2), rng.randn())
    p = state.size
    f, A = dense_posterior(
        state.kernel, X, state.basis_indices, state.site_precision[:p], state.site_mean[:p]
    )
    np.testing.assert_allclose(state.f_hat, f, atol=1e-8)
    np.testing.assert_allclose(state.diag_A, np.diag(A), atol=1e-8)


def test_exchange_records_the_loss_and_keeps_the_basis_size():
    X, y = make_moons(n_samples=120, noise=0.3, random_state=0)
    clf = SparseGPClassifier(
        posterior="basis", max_basis=10, n_exchange=4, optimizer=None, random_state=0
    )
    clf.fit(X, y)
    curve = clf.exchange_loss_curve_
    assert len(curve) == 5 and len(clf.basis_indices_) == 10
    assert len(set(clf.basis_indices_)) == 10
    # the last value is NLP_a of the kept basis with its sites
    f, A = dense_posterior(clf.kernel_, X, clf.basis_indices_, clf.site_precision_, clf.site_mean_)
    y_pm = np.where(y == 1, 1.0, -1.0)
    assert np.isclose(curve[-1], _nlp_all(f, np.diag(A), y_pm, clf.bias_), rtol=1e-9)
    assert clf.score(X, y) > 0.8
    plain = SparseGPClassifier(
        posterior="basis", max_basis=10, optimizer=None, random_state=0
    ).fit(X, y)
    assert plain.exchange_loss_curve_ == [curve[0]]


def test_optimize_sites_fit_uses_optimised_sites():
    X, y = make_moons(n_samples=80, noise=0.25, random_state=2)
    # a fixed kernel of its own (the default's start changes with the features)
    common = {"kernel": RBF(1.0), "max_basis": 8, "optimizer": None, "random_state": 0}
    opt = SparseGPClassifier(site_update="optimize", **common).fit(X, y)
    mm = SparseGPClassifier(**common).fit(X, y)
    assert not np.allclose(opt.site_precision_, mm.site_precision_)
    assert np.all(opt.site_precision_ > 0) and np.all(np.isfinite(opt.predict_proba(X)))
    assert opt.score(X, y) > 0.8
    again = SparseGPClassifier(site_update="optimize", **common).fit(X, y)
    np.testing.assert_array_equal(again.basis_indices_, opt.basis_indices_)
