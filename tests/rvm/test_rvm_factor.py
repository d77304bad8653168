"""The RVM regressor's incremental factor of Sigma^-1 = A + Phi^T Phi / s2 (SSEM paper eq. 7)."""

import numpy as np
import pytest
from _support.rvm_em import em_model as _model
from sklearn.gaussian_process.kernels import RBF

from skgpsparse.rvm._regression import RelevanceVectorRegressor


def _dense_factor(model, kernel, X):
    # eq. (7): Sigma^-1 = A + Phi^T Phi / s2 over the active basis functions, from scratch
    idx = model.design.index
    n = X.shape[0]
    Phi = np.ones((n, len(idx)))
    kern = idx < n
    Phi[:, kern] = kernel(X, X[idx[kern]])
    S = np.diag(model.design.alpha) + Phi.T @ Phi / model.s2
    return np.linalg.cholesky(S), Phi


def _assert_factor_matches(model, kernel, X):
    L = np.tril(model.L)
    L_dense, Phi = _dense_factor(model, kernel, X)
    # row j of L scales like sqrt(alpha_j): compare the rows of D L (D = A^-1/2), whose
    # entries are O(1), relative to their norm
    d = model.design.alpha**-0.5
    err = np.linalg.norm(d[:, None] * (L - L_dense)) / np.linalg.norm(d[:, None] * L_dense)
    assert err < 1e-8
    np.testing.assert_allclose(model.G, Phi.T @ Phi, rtol=1e-12, atol=1e-10)


def test_incremental_factor_equals_dense_cholesky():
    # adds (cholesky_append at alpha = L), alpha changes up and down (rank-one update and
    # downdate, or delete + append for a collapse from L), prunes (cholesky_delete)
    model, kernel, X, _ = _model()
    rng = np.random.RandomState(0)
    unused = list(rng.permutation(X.shape[0] + 1))
    for step in range(30):
        model.add(np.array([unused.pop()]), None)
        _assert_factor_matches(model, kernel, X)
        alpha = model.design.alpha.copy()
        alpha[-1] = np.exp(rng.uniform(-3, 3))  # the new one leaves L
        some = rng.rand(len(alpha) - 1) < 0.3
        alpha[:-1][some] *= np.exp(rng.uniform(-3, 3, size=some.sum()))
        if step % 4 == 3:  # prune one or two
            alpha[rng.choice(len(alpha), size=1 + step % 2, replace=False)] = 1e10
        model.set_alpha(alpha)
        _assert_factor_matches(model, kernel, X)
    counts = model.counts
    assert counts["refactor"] == 0
    assert counts["append"] == 30 and counts["rank_one"] > 20
    assert counts["move"] >= 25 and counts["delete"] >= 10
    assert 10 < model.n_active < 30


def test_subspace_steps_equal_dense_em_and_never_refactorise():
    # with a fixed noise the whole SSEM sweep (Figure 1) runs on appends, rank-one updates and
    # deletions; each step's E-step equals the dense posterior of eqs. (6)-(7)
    model, kernel, X, y = _model(n=50, learn_noise=False)
    for j in np.random.RandomState(1).permutation(51):
        model.add(np.array([j]), None)
        model.subspace_step()
        _assert_factor_matches(model, kernel, X)
        mu, resid = model.posterior()
        # the posterior kept from the M-step's trial is the current one
        np.testing.assert_allclose(model._post[0], mu, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(model._post[1], resid, rtol=1e-10, atol=1e-12)
        L_dense, Phi = _dense_factor(model, kernel, X)
        mu_dense = np.linalg.solve(L_dense @ L_dense.T, Phi.T @ y / model.s2)
        np.testing.assert_allclose(mu, mu_dense, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(resid, y - Phi @ mu_dense, atol=1e-8)
    assert model.counts["refactor"] == 0
    assert model.counts["append"] == 51
    assert model.counts["rank_one"] + model.counts["move"] > 51


def test_fit_refactorises_once_per_batch_step_and_per_noise_update():
    rng = np.random.RandomState(3)
    X = rng.uniform(-3, 3, size=(64, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(64)
    # (the paper's sweep: every visited basis function is appended at L)
    est = RelevanceVectorRegressor(
        RBF(1.0), random_state=0, max_iter=10, tol=0, add_test=False
    ).fit(X, y)
    counts = est._factor_counts
    assert counts["append"] == 65 and est.n_iter_ == 10
    # one factor per batch step (two when MacKay's step is redone with the EM update), plus
    # the sweep's noise updates: at visits growing by NOISE_GAP = 1.1 at least, so at most
    # 1 + log(65) / log(1.1) of them
    n_noise = counts["refactor"] - est.n_iter_
    assert 1 <= n_noise <= 1 + np.log(65) / np.log(1.1) + est.n_em_fallbacks_
    assert n_noise < 65 / 2
    fixed = RelevanceVectorRegressor(
        RBF(1.0),
        learn_noise=False,
        noise_variance=0.01,
        random_state=0,
        max_iter=0,
        add_test=False,
    ).fit(X, y)
    assert fixed._factor_counts["refactor"] == 0
    assert fixed._factor_counts["append"] == 65


@pytest.mark.parametrize("method", ["ssem", "batch_em"])
def test_predictions_equal_dense_formula(method):
    # eqs. (9)-(10) with the learned alpha and s2 against a dense posterior
    rng = np.random.RandomState(5)
    X = rng.uniform(-3, 3, size=(70, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.05 * rng.randn(70)
    kernel = RBF(1.2)
    est = RelevanceVectorRegressor(kernel, method=method, random_state=2).fit(X, y)
    Phi = np.column_stack([kernel(X, est.relevance_vectors_), np.ones(len(X))])
    alpha = np.append(est.alpha_, est.alpha_bias_)
    if not np.isfinite(est.alpha_bias_):
        Phi, alpha = Phi[:, :-1], alpha[:-1]
    Sigma = np.linalg.inv(np.diag(alpha) + Phi.T @ Phi / est.noise_variance_)
    mu = Sigma @ Phi.T @ y / est.noise_variance_
    Xq = rng.uniform(-3, 3, size=(20, 2))
    Pq = np.column_stack([kernel(Xq, est.relevance_vectors_), np.ones(len(Xq))])[:, : len(mu)]
    mean, std = est.predict(Xq, return_std=True)
    np.testing.assert_allclose(mean, Pq @ mu, rtol=1e-8, atol=1e-10)
    var = est.noise_variance_ + np.einsum("ij,jk,ik->i", Pq, Sigma, Pq)
    np.testing.assert_allclose(std, np.sqrt(var), rtol=1e-8)
    assert np.mean((est.predict(X) - y) ** 2) < 0.01


def test_batch_em_fit_unchanged_by_the_incremental_factor():
    # batch EM (one refactorisation per step) is the same algorithm before and after the
    # factor moved from B = I + D G D / s2 to Sigma^-1 = A + G / s2; these values come from
    # the previous implementation (commit 4af8d5d) on the same data and seed
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, size=(200, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(200)
    est = RelevanceVectorRegressor(RBF(1.0), method="batch_em", random_state=0).fit(X, y)
    assert est.log_marginal_likelihood_value_ == pytest.approx(162.65247425046613, rel=1e-10)
    assert len(est.relevance_vectors_) == 55 and est.n_iter_ == 34
    assert est.noise_variance_ == pytest.approx(0.009842464825573846, rel=1e-9)
    mean, std = est.predict(np.array([[-2.5], [0.0], [1.7]]), return_std=True)
    np.testing.assert_allclose(
        mean, [-0.5626916170291577, -0.01684769360165083, 0.9787479035051647], rtol=1e-8
    )
    np.testing.assert_allclose(
        std, [0.1006088137814991, 0.10020499769527792, 0.10063791626457962], rtol=1e-8
    )


def test_sweep_with_full_m_step_equals_refactorising_em():
    # every alpha change is applied (rank-k update and downdate): with a fixed noise the
    # incremental sweep is Figure 1 exactly, the same steps as the refactorising EM step
    inc = _model(n=50, seed=11, learn_noise=False)[0]
    ref = _model(n=50, seed=11, learn_noise=False)[0]
    for j in np.random.RandomState(2).permutation(51):
        for m in (inc, ref):
            m.add(np.array([j]), None)
        ll_inc, ll_ref = inc.subspace_step(), ref.em_step()
        assert ll_inc == pytest.approx(ll_ref, rel=1e-8, abs=1e-6)
        # the same active set and alphas (a delete + append reorders the factor's rows)
        a, b = np.argsort(inc.design.index), np.argsort(ref.design.index)
        np.testing.assert_array_equal(inc.design.index[a], ref.design.index[b])
        # (alpha of a weakly determined weight moves the likelihood little: rtol 1e-3)
        np.testing.assert_allclose(inc.design.alpha[a], ref.design.alpha[b], rtol=1e-3)
    assert inc.counts["refactor"] == 0 and ref.counts["refactor"] == 51
    assert inc.n_active > 3


def _dense_mackay(model, kernel, X, y):
    """Eqs. (6), (7) and (12) from scratch: the M-step's alpha for the model's E-step."""
    _, Phi = _dense_factor(model, kernel, X)
    # Sigma = D B^-1 D with B = I + D Phi^T Phi D / s2, D = A^-1/2 (well conditioned)
    d = model.design.alpha**-0.5
    B = np.eye(len(d)) + (d[:, None] * (Phi.T @ Phi) * d) / model.s2
    Sigma = d[:, None] * np.linalg.inv(B) * d
    mu = Sigma @ Phi.T @ y / model.s2
    gamma = 1.0 - model.design.alpha * np.diag(Sigma)
    # the floor of _m_step: alpha_j >= 1e-12 min(G_jj / s2, alpha_j / 1e-12)
    floor = np.minimum(np.sum(Phi**2, axis=0) / model.s2, model.design.alpha / 1e-12)
    alpha = np.maximum(np.maximum(gamma / mu**2, 1e-12), 1e-12 * floor)
    return dict(zip(model.design.index, alpha)), dict(zip(model.design.index, gamma))


@pytest.mark.parametrize("learn_noise", [False, True])
def test_every_ssem_step_is_the_full_m_step(learn_noise):
    # Figure 1, step 4: after each SSEM step every active alpha is MacKay's eq. (12) from the
    # E-step before it (none left behind), the pruned ones are those reaching L, and the
    # factor (rank-k updates and downdates, no refactorisation unless s2 moved) is the
    # dense Cholesky factor of A + Phi^T Phi / s2
    model, kernel, X, y = _model(n=60, seed=3, learn_noise=learn_noise)
    n_checked = 0
    for j in np.random.RandomState(4).permutation(61):
        model.add(np.array([j]), None)
        expected, gamma = _dense_mackay(model, kernel, X, y)
        fallbacks = model.n_fallback
        model.subspace_step()
        _assert_factor_matches(model, kernel, X)
        assert model.n_fallback == fallbacks  # MacKay's update, not the EM fallback
        survivors = {i for i, a in expected.items() if a < model.alpha_max}
        assert set(model.design.index) == survivors
        for i, a in zip(model.design.index, model.design.alpha):
            # (the factor drifts from the dense one by up to ~1e-9 over the sweep, and a weight
            # the data barely determine, gamma ~ 1e-9 at alpha = L, has its alpha from a
            # cancelling 1 - alpha Sigma_jj; a partial M-step would miss by >= 10%)
            rtol = 1e-5 if gamma[i] > 1e-4 else 1e-3
            assert a == pytest.approx(expected[i], rel=rtol)
            n_checked += 1
    assert n_checked > 200
    counts = model.counts
    # each step's changes: one rank-k update and/or one rank-k downdate of many columns
    assert counts["append"] == 61 and counts["rank_k"] > 61
    assert counts["rank_one"] > 4 * counts["rank_k"]
    if not learn_noise:
        assert counts["refactor"] == 0
    else:
        assert 1 <= counts["refactor"] <= 1 + np.log(61) / np.log(1.1)
    assert model.n_active > 3
