"""Tipping & Faul's add test in the RVM regressor's Subspace EM (visits and revisits)."""

import numpy as np
import pytest
from _support.rvm_em import em_model
from sklearn.gaussian_process.kernels import RBF

from skgpsparse.rvm._add_test import add_gain, add_statistics, sequential_adds
from skgpsparse.rvm._regression import RelevanceVectorRegressor


def _problem(n=40, m=12, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, size=(n, 1))
    t = np.sin(X[:, 0]) + 0.1 * rng.randn(n)
    Phi = RBF(0.8)(X, X[rng.choice(n, m, replace=False)])  # n x m candidate columns
    return t, Phi, rng


def _dense_log_likelihood(t, Phi, alpha, s2):
    """Eq. (11): log N(t | 0, s2 I + Phi A^-1 Phi^T), from the dense covariance."""
    C = s2 * np.eye(len(t)) + (Phi / alpha) @ Phi.T
    _, logdet = np.linalg.slogdet(C)
    return -0.5 * (len(t) * np.log(2 * np.pi) + logdet + t @ np.linalg.solve(C, t))


def _active_state(t, Phi, alpha, s2):
    """Lower factor of A + Phi^T Phi / s2 (eq. 7) and the residual t - Phi mu (eq. 6)."""
    S = np.diag(alpha) + Phi.T @ Phi / s2
    L = np.linalg.cholesky(S)
    mu = np.linalg.solve(S, Phi.T @ t / s2)
    return L, t - Phi @ mu


def test_add_statistics_equal_dense_formula():
    # s_i = phi_i^T C^-1 phi_i, q_i = phi_i^T C^-1 t, P_ij = phi_i^T C^-1 phi_j with
    # C = s2 I + Phi A^-1 Phi^T over the active columns
    t, Phi, rng = _problem()
    s2, active, cand = 0.05, Phi[:, :5], Phi[:, 5:]
    alpha = np.exp(rng.uniform(-2, 2, size=5))
    L, resid = _active_state(t, active, alpha, s2)
    s, q, P = add_statistics(L, active.T, resid, s2, cand.T)
    Cinv = np.linalg.inv(s2 * np.eye(len(t)) + (active / alpha) @ active.T)
    np.testing.assert_allclose(P, cand.T @ Cinv @ cand, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(s, np.diag(cand.T @ Cinv @ cand), rtol=1e-9)
    np.testing.assert_allclose(q, cand.T @ Cinv @ t, rtol=1e-9, atol=1e-9)
    s_only, q_only, none = add_statistics(L, active.T, resid, s2, cand.T, cross=False)
    assert none is None
    np.testing.assert_allclose(s_only, s, rtol=1e-12)
    np.testing.assert_allclose(q_only, q, rtol=1e-12)
    # with no active basis function C = s2 I
    s0, q0, _ = add_statistics(np.empty((0, 0)), np.empty((0, len(t))), t, s2, cand.T)
    np.testing.assert_allclose(s0, np.sum(cand**2, axis=0) / s2)
    np.testing.assert_allclose(q0, cand.T @ t / s2)


def test_add_gain_is_the_likelihood_change_at_the_optimal_alpha():
    t, Phi, rng = _problem(seed=1)
    s2, active = 0.05, Phi[:, :4]
    alpha = np.exp(rng.uniform(-2, 2, size=4))
    L, resid = _active_state(t, active, alpha, s2)
    s, q, _ = add_statistics(L, active.T, resid, s2, Phi[:, 4:].T)
    gain, a_opt = add_gain(s, q)
    base = _dense_log_likelihood(t, active, alpha, s2)
    passing = np.flatnonzero(np.isfinite(a_opt))
    assert passing.size >= 2 and np.all(gain[passing] > 0)
    assert np.all((gain == 0) == (q * q <= s))
    for i in passing:
        col = Phi[:, [4 + i]]

        def ll(a, col=col):
            return _dense_log_likelihood(t, np.hstack([active, col]), np.append(alpha, a), s2)

        assert ll(a_opt[i]) - base == pytest.approx(gain[i], rel=1e-6, abs=1e-8)
        # alpha = s^2 / (q^2 - s) is the maximum over alpha
        assert ll(a_opt[i]) >= max(ll(0.7 * a_opt[i]), ll(1.4 * a_opt[i]))


def test_sequential_adds_raise_the_likelihood_by_their_gain():
    # each pick is optimal given the ones before it: the dense likelihood rises by the total
    # gain, and the statistics updated by Sherman-Morrison equal the recomputed ones
    t, Phi, rng = _problem(n=50, m=16, seed=2)
    s2, active, cand = 0.02, Phi[:, :3], Phi[:, 3:]
    alpha = np.exp(rng.uniform(-1, 1, size=3))
    L, resid = _active_state(t, active, alpha, s2)
    s, q, P = add_statistics(L, active.T, resid, s2, cand.T)
    picks, a_new, total = sequential_adds(s, q, P)
    assert len(picks) >= 2
    gains = []
    A, a = active, alpha
    for j, aj in zip(picks, a_new):
        L, resid = _active_state(t, A, a, s2)
        sj, qj, _ = add_statistics(L, A.T, resid, s2, cand[:, [j]].T)
        g, opt = add_gain(sj, qj)
        assert aj == pytest.approx(opt[0], rel=1e-6)  # optimal given the earlier picks
        gains.append(g[0])
        A, a = np.hstack([A, cand[:, [j]]]), np.append(a, aj)
    assert total == pytest.approx(sum(gains), rel=1e-6)
    gained = _dense_log_likelihood(t, A, a, s2) - _dense_log_likelihood(t, active, alpha, s2)
    assert gained == pytest.approx(total, rel=1e-6)
    # after the picks no remaining candidate passes the test
    L, resid = _active_state(t, A, a, s2)
    rest = np.setdiff1d(np.arange(cand.shape[1]), picks)
    s_rest, q_rest, _ = add_statistics(L, A.T, resid, s2, cand[:, rest].T)
    assert np.all(add_gain(s_rest, q_rest)[0] < 1e-8)
    # a minimum gain above every candidate's adds nothing
    assert sequential_adds(s, q, P, min_gain=10 * total)[0].size == 0


def _model(n=60, seed=7):
    model, _, X, y = em_model(n, seed, learn_noise=False)
    return model, X, y


def test_visit_enters_at_the_optimal_alpha_or_leaves_the_model_unchanged():
    model, X, y = _model()
    kernel, n = model.kernel, X.shape[0]
    accepted = rejected = 0
    for j in np.random.RandomState(0).permutation(n):
        idx, alpha = model.design.index.copy(), model.design.alpha.copy()
        Phi = kernel(X, X[idx]) if len(idx) else np.empty((n, 0))
        before = _dense_log_likelihood(y, Phi, alpha, model.s2) if len(idx) else None
        phi = kernel(X, X[[j]])
        L, resid = _active_state(y, Phi, alpha, model.s2)
        s, q, _ = add_statistics(L, Phi.T, resid, model.s2, phi.T)
        gain = add_gain(s, q)[0]
        calls = model.counts["alpha_refactor"] + model.counts["rank_k"]
        ll = model.visit(np.array([j]))
        if gain[0] > 0:
            accepted += 1
            assert j in model.design.index  # unless its own M-step pruned it at once
            # it entered at alpha = s^2 / (q^2 - s): the step then starts from that gain
            assert ll >= (before or -np.inf) + gain[0] - 1e-8 * abs(ll)
        else:
            rejected += 1
            np.testing.assert_array_equal(model.design.index, idx)
            np.testing.assert_array_equal(model.design.alpha, alpha)
            assert model.counts["alpha_refactor"] + model.counts["rank_k"] == calls  # no step
            if before is not None:
                assert ll == pytest.approx(before, rel=1e-9)
    assert accepted >= 3 and rejected >= 10
    assert model.counts["add_test"] == accepted


def test_revisit_re_adds_a_pruned_basis_function_that_passes():
    model = _model(n=60, seed=3)[0]
    for j in np.random.RandomState(1).permutation(61):
        model.visit(np.array([j]))
    for _ in range(20):
        model.em_step()
    # prune the active basis function the model needs most (largest |mu_j| sqrt(G_jj))
    mu, _ = model.posterior()
    worst = int(np.argmax(np.abs(mu) * np.sqrt(np.diag(model.G))))
    entry = model.design.index[worst]
    alpha = model.design.alpha.copy()
    alpha[worst] = 2 * model.alpha_max
    model.set_alpha(alpha)
    assert entry not in model.design.index
    ll0 = model._current_log_likelihood()
    added = model.revisit(np.arange(61), 0.0)
    assert added >= 1 and entry in model.design.index
    ll1 = model.log_likelihood(*model.posterior())
    assert ll1 > ll0 + 1.0  # it was the most useful one
    # and a revisit of a model where nothing passes adds nothing
    model.revisit(np.arange(61), 0.0)
    assert model.revisit(np.arange(61), 10 * abs(ll1)) == 0


def test_add_test_fit_never_decreases_the_likelihood_and_revisits():
    rng = np.random.RandomState(4)
    X = rng.uniform(-3, 3, size=(120, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(120)
    est = RelevanceVectorRegressor(RBF(1.0), random_state=0, tol=1e-6).fit(X, y)
    ll = est.log_marginal_likelihood_curve_
    assert len(ll) - est.n_iter_ == 121  # one entry per visit, accepted or not
    assert np.all(np.diff(ll) >= -1e-9 * np.abs(ll[:-1]))
    counts = est._factor_counts
    # far fewer basis functions entered than were visited: no EM step for the others
    assert 0 < counts["add_test"] < 121 / 2
    paper = RelevanceVectorRegressor(RBF(1.0), random_state=0, tol=1e-6, add_test=False)
    paper.fit(X, y)
    assert paper._factor_counts["add_test"] == 0 and paper._factor_counts["append"] == 121
    # both are close on this easy problem
    assert est.log_marginal_likelihood_value_ >= paper.log_marginal_likelihood_value_ - 1.0


class _Oscillating:
    """A model whose batch steps alternate between two likelihoods (round-off at the top)."""

    n_active = 1

    def __init__(self):
        self.steps = self.revisits = 0

    def visit(self, entries):
        return 100.0

    def revisit(self, library, min_gain):
        self.revisits += 1
        return 0

    def em_step(self):
        self.steps += 1
        return 100.0 + 0.5 * (self.steps % 2)


def test_add_test_batch_phase_stops_on_an_oscillating_likelihood():
    # progress is a new best: steps that only return to the best so far are quiet, so the
    # phase stops after PATIENCE of them and the revisits find nothing
    from skgpsparse.rvm._subspace_em import PATIENCE, run_subspace_em

    model = _Oscillating()
    kw = {"method": "ssem", "alpha_init": None, "max_iter": 200, "tol": 1e-6}
    hist = run_subspace_em(model, np.arange(5), rng=np.random.RandomState(0), add_test=True, **kw)
    assert hist["converged"] and hist["n_iter"] <= PATIENCE + 2
    assert model.revisits >= 1
