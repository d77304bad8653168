"""Tests of the IVM objective (EP evidence of the basis labels) and its outer loop."""

import warnings

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import log_ndtr
from scipy.stats import multivariate_normal, norm
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier
from skgpsparse.inference._adf import ADFState
from skgpsparse.latent.objectives._basis_evidence import negative_log_evidence
from skgpsparse.likelihoods import Probit


def _dense_ep(K, y, bias, sweeps=60):
    """Textbook EP (GPML Alg. 3.5 with explicit inverses) and log Z_EP by eq. (3.65) as printed."""
    n = y.size
    tau, nu = np.zeros(n), np.zeros(n)
    for _sweep in range(sweeps):
        for i in range(n):
            Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
            mu = Sigma @ nu
            s2c = 1.0 / (1.0 / Sigma[i, i] - tau[i])
            mc = s2c * (mu[i] / Sigma[i, i] - nu[i])
            # GPML eq. (3.58): moments of the tilted distribution
            z = y[i] * (mc + bias) / np.sqrt(1 + s2c)
            ratio = norm.pdf(z) / norm.cdf(z)
            m1 = mc + y[i] * s2c * ratio / np.sqrt(1 + s2c)
            s2h = s2c - s2c**2 * ratio * (z + ratio) / (1 + s2c)
            tau[i] = 1.0 / s2h - 1.0 / s2c
            nu[i] = m1 / s2h - mc / s2c
    Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
    mu = Sigma @ nu
    s2c = 1.0 / (1.0 / np.diag(Sigma) - tau)
    mc = s2c * (mu / np.diag(Sigma) - nu)
    mt, st2 = nu / tau, 1.0 / tau
    log_z = multivariate_normal(np.zeros(n), K + np.diag(st2)).logpdf(mt)
    log_z += np.sum(log_ndtr(y * (mc + bias) / np.sqrt(1 + s2c)))
    log_z += np.sum(0.5 * np.log(2 * np.pi * (s2c + st2)) + (mc - mt) ** 2 / (2 * (s2c + st2)))
    return log_z, tau, nu


def _tilted_moments(mc, s2c, y, bias):
    """Mean and variance of N(f | mc, s2c) Phi(y (f + b)) / Z by quadrature."""
    sd = np.sqrt(s2c)

    def tilted(f, k):
        return f**k * norm.pdf(f, mc, sd) * norm.cdf(y * (f + bias))

    lo, hi = mc - 12 * sd, mc + 12 * sd
    z0, m1, m2 = (quad(tilted, lo, hi, args=(k,), epsabs=0, epsrel=1e-11)[0] for k in range(3))
    return m1 / z0, m2 / z0 - (m1 / z0) ** 2


def _problem(seed, p=5):
    rng = np.random.RandomState(seed)
    X_u, y_u = rng.randn(p, 2), np.sign(rng.randn(p))
    return X_u, y_u, 0.5 * rng.randn()


@pytest.mark.parametrize("seed", [0, 1])
def test_evidence_is_dense_ep_marginal_likelihood(seed):
    X_u, y_u, bias = _problem(seed)
    kernel = C(1.5) * RBF([0.8, 1.3])
    ref, tau_ref, nu_ref = _dense_ep(kernel(X_u), y_u, bias)
    value, (tau, nu) = negative_log_evidence(kernel, X_u, y_u, bias, return_sites=True, tol=1e-12,
                                             likelihood=Probit())
    np.testing.assert_allclose(tau, tau_ref, rtol=1e-6)
    np.testing.assert_allclose(nu, nu_ref, rtol=1e-6, atol=1e-9)
    assert np.isclose(-value, ref, rtol=1e-8)
    # the EP fixed point: each tilted distribution (cavity x likelihood, by quadrature) has the
    # moments of the posterior marginal
    K = kernel(X_u)
    Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
    mu = Sigma @ nu
    for i in range(y_u.size):
        s2c = 1.0 / (1.0 / Sigma[i, i] - tau[i])
        mc = s2c * (mu[i] / Sigma[i, i] - nu[i])
        m1, v1 = _tilted_moments(mc, s2c, y_u[i], bias)
        np.testing.assert_allclose([m1, v1], [mu[i], Sigma[i, i]], rtol=1e-7, atol=1e-10)


def test_evidence_does_not_depend_on_the_warm_start():
    # EP with probit sites has one fixed point: the ADF sites as a start change nothing
    X_u, y_u, bias = _problem(3, p=8)
    kernel = C(2.0) * RBF(1.0)
    state = ADFState(kernel, X_u, y_u, bias, max_basis=8, likelihood=Probit())
    for j in range(8):
        state.add(j)
    prec, mean = state.site_precision, state.site_mean
    cold = negative_log_evidence(kernel, X_u, y_u, bias, tol=1e-12, likelihood=Probit())
    warm = negative_log_evidence(
        kernel, X_u, y_u, bias, site_precision=prec, site_natural_mean=prec * mean, tol=1e-12,
        likelihood=Probit()
    )
    assert np.isclose(cold, warm, rtol=1e-10)
    # ... while the ADF sites themselves are not the EP fixed point (the old objective's flaw)
    _, (tau, _) = negative_log_evidence(kernel, X_u, y_u, bias, return_sites=True, tol=1e-12,
                                        likelihood=Probit())
    assert not np.allclose(tau, prec, rtol=1e-3)


def test_evidence_of_an_empty_basis_is_zero():
    value, grad = negative_log_evidence(
        RBF(1.0), np.zeros((0, 2)), np.zeros(0), 0.3, eval_gradient=True, likelihood=Probit()
    )
    assert value == 0.0 and np.array_equal(grad, np.zeros(2))


def test_evidence_of_one_basis_point_is_exact():
    # one point: the marginal likelihood is log Phi(y b / sqrt(1 + k)) and EP is exact
    k = C(2.0) * RBF(1.0)
    value = negative_log_evidence(k, np.array([[0.3]]), np.array([-1.0]), 0.4, likelihood=Probit())
    assert np.isclose(-value, log_ndtr(-0.4 / np.sqrt(3.0)), rtol=1e-10)


def test_evidence_of_two_points_is_close_to_the_exact_integral():
    # EP approximates log p(y1, y2) = log E[Phi(y1 (f1 + b)) Phi(y2 (f2 + b))]; for the probit
    # this is the bivariate normal CDF, exact to compare with (EP is accurate here, ~1e-3)
    X_u, y_u, bias = np.array([[0.0], [0.7]]), np.array([1.0, -1.0]), 0.3
    kernel = C(1.5) * RBF(1.0)
    K = kernel(X_u)
    # P(y_i (f_i + b) - e_i > 0) with e ~ N(0, I): a bivariate normal orthant probability
    D = np.diag(y_u)
    cov = D @ K @ D + np.eye(2)
    exact = np.log(multivariate_normal(np.zeros(2), cov).cdf(y_u * bias))
    value = negative_log_evidence(kernel, X_u, y_u, bias, tol=1e-12, likelihood=Probit())
    assert abs(-value - exact) < 5e-3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_evidence_gradient_matches_finite_differences(seed):
    rng = np.random.RandomState(seed)
    p = 7
    X_u, y_u, bias = rng.randn(p, 3), np.sign(rng.randn(p)), rng.randn()
    kernel = C(1.5) * RBF([0.8, 1.2, 2.0]) + WhiteKernel(0.01)
    _, grad = negative_log_evidence(kernel, X_u, y_u, bias, eval_gradient=True, tol=1e-13,
                                    likelihood=Probit())
    theta = np.append(kernel.theta, bias)
    eps = 1e-5

    def f(t):
        k = kernel.clone_with_theta(t[:-1])
        return negative_log_evidence(k, X_u, y_u, t[-1], tol=1e-13, likelihood=Probit())

    num = [(f(theta + eps * e) - f(theta - eps * e)) / (2 * eps) for e in np.eye(theta.size)]
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-8)


def _rings(n, seed):
    """Ringnorm-like data: class +1 wide N(0, 4 I), class -1 tight N(0, I), in 8-D."""
    rng = np.random.RandomState(seed)
    y = np.where(rng.rand(n) < 0.5, 1, -1)
    X = rng.randn(n, 8) * np.where(y > 0, 2.0, 1.0)[:, None]
    return X, y


def test_evidence_fit_learns_the_bias_a_ring_needs():
    # Far from the data the latent function returns to 0, so only b can predict the wide
    # class there: the old objective (b fixed at the class balance, stale sites) ended at a
    # constant latent function (length scale at its bound, ~50 % error) on ringnorm.
    # (The previous objective: 54 % accuracy here, length scale ~1e4.)
    X, y = _rings(200, 0)
    X_test, y_test = _rings(400, 1)
    clf = SparseGPClassifier(
        C(1.0) * RBF(3.0),
        selection="entropy",
        hyperparameter_objective="evidence",
        max_basis=40,
        max_iter=6,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    assert clf.score(X_test, y_test) > 0.85
    assert clf.kernel_.k2.length_scale < 50.0
    assert clf.bias_ > 0.5  # the wide class is the default far from the tight one


def test_evidence_fit_keeps_a_consistent_model():
    from sklearn.datasets import make_moons

    X, y = make_moons(n_samples=100, noise=0.25, random_state=1)
    clf = SparseGPClassifier(
        max_basis=30, hyperparameter_objective="evidence", max_iter=3, random_state=0,
        posterior="basis",
    ).fit(X, y)
    y_pm = np.where(y == 1, 1.0, -1.0)
    assert clf.score(X, y) > 0.8
    assert len(clf.loss_curve_) == clf.n_iter_
    # the kept basis was selected under the kept kernel_ and bias_: its sites are the moment
    # matching sites of an ADF pass under them, in the same order
    state = ADFState(clf.kernel_, X, y_pm, clf.bias_, max_basis=30, likelihood=Probit())
    for j in clf.basis_indices_:
        state.add(j)
    np.testing.assert_allclose(state.site_precision, clf.site_precision_, rtol=1e-8)
    np.testing.assert_allclose(state.site_mean, clf.site_mean_, rtol=1e-8)
    # with fixed hyperparameters the loss is the evidence of the fitted basis at the start bias
    fixed = SparseGPClassifier(
        max_basis=12, hyperparameter_objective="evidence", optimizer=None, random_state=0,
        posterior="basis",
    ).fit(X, y)
    u = fixed.basis_indices_
    assert np.isclose(
        negative_log_evidence(fixed.kernel_, X[u], y_pm[u], fixed.bias_, likelihood=Probit()),
        fixed.loss_curve_[0],
        rtol=1e-6,
    )
    frac = np.mean(y == 1)
    assert np.isclose(norm.cdf(fixed.bias_ / np.sqrt(2.0)), frac, rtol=1e-9)


def test_evidence_fit_keeps_the_visited_model_with_the_lowest_training_nlp(capsys):
    X, y = _rings(120, 2)
    clf = SparseGPClassifier(
        C(1.0) * RBF(3.0),
        selection="entropy",
        hyperparameter_objective="evidence",
        max_basis=30,
        max_iter=4,
        random_state=0,
        verbose=1,
        posterior="basis",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    printed = [
        float(t.split("NLP_a ")[1].split()[0])
        for t in capsys.readouterr().out.split("\n")
        if "NLP_a" in t
    ]
    assert len(printed) == clf.n_iter_ + 1  # one per selection, the final one included
    state = ADFState(clf.kernel_, X, y.astype(float), clf.bias_, max_basis=30, likelihood=Probit())
    for j in clf.basis_indices_:
        state.add(j)
    assert np.isclose(state.nlp(all_points=True), min(printed), rtol=1e-5)
