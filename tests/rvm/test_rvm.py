"""Relevance vector machines by Subspace EM: regression, mean-field classification, sklearn API."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_ndtr, ndtr
from scipy.stats import multivariate_normal
from sklearn.gaussian_process.kernels import RBF

from skgpsparse.rvm._classification import RelevanceVectorClassifier
from skgpsparse.rvm._mean_field import MeanFieldEM, probit_site
from skgpsparse.rvm._regression import RelevanceVectorRegressor
from skgpsparse.rvm._regression_em import _RegressionEM
from skgpsparse.rvm._subspace_em import mackay_update


def _sine(n, seed=0, noise=0.1):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, size=(n, 1))
    return X, np.sin(X[:, 0]) + noise * rng.randn(n)


def _design(kernel, X, centers):
    return kernel(X, centers)


# ----------------------------------------------------------------------------- regression


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ssem_never_decreases_log_marginal_likelihood(seed):
    # SSEM paper §3: in regression the E-step is exact and every alpha starts at L, so the
    # Subspace EM never decreases the log marginal likelihood
    X, y = _sine(80, seed)
    est = RelevanceVectorRegressor(RBF(1.0), random_state=seed, tol=0, max_iter=60).fit(X, y)
    ll = est.log_marginal_likelihood_curve_
    assert len(ll) == 81 + 60  # one EM step per basis function (80 + bias), then batch steps
    assert np.all(np.diff(ll) >= -1e-9 * np.abs(ll[:-1]))
    assert ll[-1] > ll[0] + 10  # and it does climb
    assert est.n_em_fallbacks_ == 0  # MacKay's update alone was monotone here


def test_log_marginal_likelihood_equals_dense_formula():
    # eq. (11): log N(t | 0, s2 I + Phi A^-1 Phi^T) over the final active set
    X, y = _sine(50, 3)
    kernel = RBF(1.0)
    est = RelevanceVectorRegressor(kernel, random_state=0).fit(X, y)
    Phi = _design(kernel, X, est.relevance_vectors_)
    alpha = est.alpha_
    if np.isfinite(est.alpha_bias_):
        Phi = np.column_stack([Phi, np.ones(len(X))])
        alpha = np.append(alpha, est.alpha_bias_)
    C = est.noise_variance_ * np.eye(len(X)) + (Phi / alpha) @ Phi.T
    dense = multivariate_normal(np.zeros(len(X)), C).logpdf(y)
    assert est.log_marginal_likelihood_value_ == pytest.approx(dense, rel=1e-9)
    # eqs. (6)-(7) and (9)-(10): posterior and predictive distribution
    Sigma = np.linalg.inv(np.diag(alpha) + Phi.T @ Phi / est.noise_variance_)
    mu = Sigma @ Phi.T @ y / est.noise_variance_
    np.testing.assert_allclose(est.sigma_, Sigma, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(
        np.append(est.coef_, est.intercept_)[: len(mu)], mu, rtol=1e-7, atol=1e-10
    )
    Xq = np.linspace(-4, 4, 7)[:, None]
    Pq = _design(kernel, Xq, est.relevance_vectors_)
    if np.isfinite(est.alpha_bias_):
        Pq = np.column_stack([Pq, np.ones(len(Xq))])
    mean, std = est.predict(Xq, return_std=True)
    np.testing.assert_allclose(mean, Pq @ mu, rtol=1e-8, atol=1e-10)
    var = est.noise_variance_ + np.einsum("ij,jk,ik->i", Pq, Sigma, Pq)
    np.testing.assert_allclose(std, np.sqrt(var), rtol=1e-8)


def test_one_basis_function_equals_closed_form():
    # one basis function phi: Sigma = 1 / (alpha + phi^T phi / s2), mu = Sigma phi^T y / s2,
    # evidence N(y; 0, s2 I + phi phi^T / alpha)
    X, y = _sine(30, 4)
    kernel = RBF(1.5)
    est = RelevanceVectorRegressor(kernel, bias=False, n_basis_functions=1, random_state=0)
    est.fit(X, y)
    assert len(est.relevance_indices_) == 1
    phi = kernel(X, est.relevance_vectors_)[:, 0]
    a, s2 = est.alpha_[0], est.noise_variance_
    Sigma = 1.0 / (a + phi @ phi / s2)
    mu = Sigma * phi @ y / s2
    assert est.sigma_[0, 0] == pytest.approx(Sigma, rel=1e-10)
    assert est.coef_[0] == pytest.approx(mu, rel=1e-10)
    C = s2 * np.eye(len(y)) + np.outer(phi, phi) / a
    assert est.log_marginal_likelihood_value_ == pytest.approx(
        multivariate_normal(np.zeros(len(y)), C).logpdf(y), rel=1e-10
    )
    # and at convergence alpha, s2 are MacKay's fixed point (eq. 12)
    gamma = 1 - a * Sigma
    assert a == pytest.approx(gamma / mu**2, rel=1e-3)
    assert s2 == pytest.approx(np.sum((y - phi * mu) ** 2) / (len(y) - gamma), rel=1e-3)


def test_mackay_update_against_hand_computation():
    # one EM step from given alpha, s2 on three basis functions, against dense formulas
    X, y = _sine(40, 5)
    kernel = RBF(1.0)
    n = len(X)
    centers = np.vstack([X, np.zeros((1, 1))])
    bias_mask = np.zeros(n + 1, dtype=bool)
    model = _RegressionEM(kernel, X, y, centers, bias_mask, 0.05, True, 1e9, 1e-12)
    entries = np.array([3, 17, 29])
    alpha0 = np.array([0.5, 2.0, 1.0])
    model.add(entries, alpha0)
    Phi = kernel(X, X[entries])
    Sigma = np.linalg.inv(np.diag(alpha0) + Phi.T @ Phi / 0.05)  # eq. (7)
    mu = Sigma @ Phi.T @ y / 0.05  # eq. (6)
    gamma = 1 - alpha0 * np.diag(Sigma)
    alpha_hand = gamma / mu**2  # eq. (12)
    s2_hand = np.sum((y - Phi @ mu) ** 2) / (n - gamma.sum())
    np.testing.assert_allclose(mackay_update(gamma, mu), alpha_hand, rtol=1e-12)
    model.em_step()
    assert model.n_fallback == 0
    np.testing.assert_allclose(model.design.alpha, alpha_hand, rtol=1e-8)
    assert model.s2 == pytest.approx(s2_hand, rel=1e-8)


def test_ssem_and_batch_em_reach_similar_test_error():
    X, y = _sine(150, 6)
    Xt = np.linspace(-3, 3, 300)[:, None]
    errors, n_rv = {}, {}
    for method in ("ssem", "batch_em"):
        est = RelevanceVectorRegressor(RBF(1.0), method=method, random_state=0).fit(X, y)
        errors[method] = np.mean((est.predict(Xt) - np.sin(Xt[:, 0])) ** 2)
        n_rv[method] = len(est.relevance_indices_)
    assert errors["ssem"] < 0.01 and errors["batch_em"] < 0.01  # noise variance is 0.01
    assert errors["ssem"] < 1.5 * errors["batch_em"] + 1e-3
    assert n_rv["ssem"] < 40 and n_rv["batch_em"] < 40  # sparse: 150 candidates


def test_fixed_noise_and_noise_free_warning():
    X, y = _sine(40, 7)
    est = RelevanceVectorRegressor(RBF(1.0), noise_variance=0.3, learn_noise=False).fit(X, y)
    assert est.noise_variance_ == 0.3
    X = np.linspace(0, 1, 30)[:, None]
    with pytest.warns(UserWarning, match="noise variance reached its floor"):
        RelevanceVectorRegressor(RBF(1.0), random_state=0).fit(X, np.full(30, 2.0))


@pytest.mark.parametrize("learn_noise", [True, False])
def test_a_noise_variance_below_the_floor_starts_at_the_floor_with_a_warning(learn_noise):
    # 1e-160 overflowed the add test's sums (1 / s2 squared) with an OverflowError
    X, y = _sine(40, 7)
    with pytest.warns(UserWarning, match="noise_variance=1e-160 is below the floor"):
        est = RelevanceVectorRegressor(noise_variance=1e-160, learn_noise=learn_noise,
                                       random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.predict(X)))
    if not learn_noise:  # the targets are fitted as they are (max |y| in [1/16, 16))
        assert est.noise_variance_ == pytest.approx(1e-10 * np.var(y), rel=1e-6)


# --------------------------------------------------------------------------- classification


def _tiny_classification(n=8, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 1)
    t = np.where(X[:, 0] + 0.7 * rng.randn(n) > 0, 1.0, -1.0)
    return X, t


def _mean_field_model(X, t, cavity, entries, alpha):
    kernel = RBF(1.0)
    n = len(X)
    centers = np.vstack([X, np.zeros((1, X.shape[1]))])
    bias_mask = np.zeros(n + 1, dtype=bool)
    bias_mask[n] = True
    model = MeanFieldEM(kernel, X, t, centers, bias_mask, cavity, 1.0, 1e9)
    model.add(np.asarray(entries), np.asarray(alpha, dtype=float))
    model.e_step()
    return model, np.vstack([kernel(X, X[[j]])[:, 0] if j < n else np.ones(n) for j in entries]).T


def test_probit_site_derivatives():
    yc = np.array([-40.0, -3.0, 0.0, 2.0, 9.0])
    V, t = np.full(5, 0.7), np.array([1.0, -1.0, 1.0, 1.0, -1.0])
    logz, tau, dtau = probit_site(yc, V, t, 1.0)
    np.testing.assert_allclose(logz, log_ndtr(t * yc / np.sqrt(1.7)))
    h = 1e-6
    num_tau = (probit_site(yc + h, V, t, 1.0)[0] - probit_site(yc - h, V, t, 1.0)[0]) / (2 * h)
    num_dtau = (probit_site(yc + h, V, t, 1.0)[1] - probit_site(yc - h, V, t, 1.0)[1]) / (2 * h)
    np.testing.assert_allclose(tau, num_tau, rtol=1e-6)
    np.testing.assert_allclose(dtau, num_dtau, rtol=1e-5, atol=1e-12)


def test_laplace_newton_reaches_map_weights():
    # V = 0: eq. (19) is Newton's method on the log posterior of the weights
    X, t = _tiny_classification(12, 1)
    entries, alpha = [2, 5, 9, 12], [0.5, 1.0, 2.0, 0.3]  # 12 = the bias
    model, Phi = _mean_field_model(X, t, "laplace", entries, alpha)
    A = np.array(alpha)

    def neg_log_post(w):
        return -(log_ndtr(t * (Phi @ w)).sum() - 0.5 * np.sum(A * w * w))

    w_map = minimize(neg_log_post, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(model.mu, w_map, rtol=1e-5, atol=1e-7)
    # Sigma = (A + Phi^T W Phi)^-1 with W the negative Hessian of log Phi(t h) (eq. 16)
    _, _, dtau = probit_site(Phi @ w_map, np.zeros(len(t)), t, 1.0)
    Sigma = np.linalg.inv(np.diag(A) + Phi.T @ (-dtau[:, None] * Phi))
    B = model.L @ model.L.T
    d = A**-0.5
    np.testing.assert_allclose(d[:, None] * np.linalg.inv(B) * d[None, :], Sigma, rtol=1e-5)


def test_tap_mean_field_matches_brute_force_posterior():
    # one weight (the bias, prior N(0, 2)) and eight probit observations: the adaptive TAP
    # mean and variance are close to the exact posterior's (quadrature); Laplace is not
    X, t = _tiny_classification(8, 2)
    w = np.linspace(-12, 12, 40001)
    logp = -(w**2) / 4 + sum(log_ndtr(ti * w) for ti in t)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    mean = np.sum(w * p)
    var = np.sum((w - mean) ** 2 * p)
    res = {}
    for cavity in ("tap", "laplace", "naive"):
        model, _ = _mean_field_model(X, t, cavity, [8], [0.5])
        res[cavity] = (model.mu[0], 2.0 / (model.L[0, 0] ** 2))
    assert res["tap"][0] == pytest.approx(mean, rel=5e-3)
    assert res["tap"][1] == pytest.approx(var, rel=2e-2)
    assert abs(res["laplace"][0] - mean) > 5 * abs(res["tap"][0] - mean)


@pytest.mark.parametrize("cavity", ["naive", "tap"])
def test_mean_field_fixed_point(cavity):
    # at the solution: mu = A^-1 Phi^T tau (eq. 17), yc = Phi mu - V tau
    X, t = _tiny_classification(20, 3)
    entries, alpha = [1, 4, 7, 20], [0.8, 1.5, 0.4, 1.0]
    model, Phi = _mean_field_model(X, t, cavity, entries, alpha)
    _, tau, _ = probit_site(model.yc, model.V, t, 1.0)
    np.testing.assert_allclose(model.mu, (Phi.T @ tau) / np.array(alpha), rtol=1e-6)
    np.testing.assert_allclose(model.yc, Phi @ model.mu - model.V * tau, atol=1e-9)
    if cavity == "naive":  # V_i = [Phi A^-1 Phi^T]_ii
        np.testing.assert_allclose(model.V, (Phi**2 / np.array(alpha)).sum(1), rtol=1e-12)


@pytest.mark.parametrize("method", ["ssem", "batch_em"])
def test_classifier_probabilities_and_labels(method):
    rng = np.random.RandomState(0)
    X = rng.randn(90, 2)
    y = np.array(["left", "mid", "right"])[np.digitize(X[:, 0], [-0.5, 0.5])]
    cavity = "tap" if method == "ssem" else "laplace"
    clf = RelevanceVectorClassifier(
        RBF(1.0),
        method=method,
        cavity_variance=cavity,
        n_basis_functions=40,
        random_state=0,
        max_iter=20,
    )
    clf.fit(X, y)
    assert list(clf.classes_) == ["left", "mid", "right"]
    assert len(clf.estimators_) == 3  # one-vs-rest
    P = clf.predict_proba(X)
    assert np.all((P >= 0) & (P <= 1))
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert clf.score(X, y) > 0.85
    assert set(clf.predict(X)) <= set(clf.classes_)
    # binary: eq. (15) by hand from the fitted binary model
    yb = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
    clf = RelevanceVectorClassifier(
        RBF(1.0), method=method, cavity_variance=cavity, n_basis_functions=40, random_state=0
    ).fit(X, yb)
    b = clf.estimators_[0]
    mean, var = b.latent(X)
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], ndtr(mean / np.sqrt(1.0 + var)))
    assert clf.score(X, yb) > 0.9
    assert len(clf.relevance_vectors_) < 30


def test_classifier_ssem_close_to_batch_em():
    rng = np.random.RandomState(1)
    X = rng.randn(150, 2)
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 < 1.2).astype(int)
    Xt = rng.randn(500, 2)
    yt = (Xt[:, 0] ** 2 + Xt[:, 1] ** 2 < 1.2).astype(int)
    err = {
        m: 1
        - RelevanceVectorClassifier(RBF(1.0), method=m, n_basis_functions=60, random_state=0)
        .fit(X, y)
        .score(Xt, yt)
        for m in ("ssem", "batch_em")
    }
    assert err["ssem"] < 0.1 and err["batch_em"] < 0.1
    assert abs(err["ssem"] - err["batch_em"]) < 0.04
