"""Tests of the all-rows posterior: EP over every row's probit likelihood under a sparse prior."""

import warnings

import numpy as np
import pytest
from scipy.special import log_ndtr
from scipy.stats import multivariate_normal, norm
from sklearn.gaussian_process.kernels import RBF, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier
from skgpsparse.inference._ep import all_rows_ep, negative_log_evidence_all_rows
from skgpsparse.inference._sparse_prior import SparsePrior
from skgpsparse.latent._model import LatentSparseGP, _make_selector
from skgpsparse.latent._predictors import AllRowsPredictor


def _problem(n=30, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    y = np.where(np.sin(2.0 * X[:, 0]) + 0.5 * rng.randn(n) > 0, 1.0, -1.0)
    return X, y


def _dense_ep(K, y, bias, tol=1e-12, max_sweeps=500):
    """Full-GP EP, GPML Algorithm 3.5 with explicit inverses, and log Z_EP by eq. (3.65)."""
    n = y.size
    tau, nu = np.zeros(n), np.zeros(n)
    K_inv = np.linalg.inv(K)
    for _ in range(max_sweeps):
        old = np.concatenate([tau, nu])
        for i in range(n):
            Sigma = np.linalg.inv(K_inv + np.diag(tau))
            mu = Sigma @ nu
            s2c = 1.0 / (1.0 / Sigma[i, i] - tau[i])  # eq. (3.56)
            mc = s2c * (mu[i] / Sigma[i, i] - nu[i])
            z = y[i] * (mc + bias) / np.sqrt(1 + s2c)  # eq. (3.58)
            ratio = norm.pdf(z) / norm.cdf(z)
            m1 = mc + y[i] * s2c * ratio / np.sqrt(1 + s2c)
            s2h = s2c - s2c**2 * ratio * (z + ratio) / (1 + s2c)
            tau[i] = 1.0 / s2h - 1.0 / s2c  # eq. (3.59)
            nu[i] = m1 / s2h - mc / s2c
        if np.max(np.abs(np.concatenate([tau, nu]) - old)) < tol:
            break
    Sigma = np.linalg.inv(K_inv + np.diag(tau))
    mu = Sigma @ nu
    s2c = 1.0 / (1.0 / np.diag(Sigma) - tau)
    mc = s2c * (mu / np.diag(Sigma) - nu)
    mt, st2 = nu / tau, 1.0 / tau
    log_z = multivariate_normal(np.zeros(n), K + np.diag(st2)).logpdf(mt)
    log_z += np.sum(log_ndtr(y * (mc + bias) / np.sqrt(1 + s2c)))
    log_z += np.sum(0.5 * np.log(2 * np.pi * (s2c + st2)) + (mc - mt) ** 2 / (2 * (s2c + st2)))
    return log_z, tau, nu


def _dense_probability(kernel, X, tau, nu, bias, X_test):
    """GPML Algorithm 3.6 (predictions of the full-GP EP): Phi((f_* + b) / sqrt(1 + V_*))."""
    K, k_star = kernel(X), kernel(X, X_test)
    A = K + np.diag(1.0 / tau)
    mean = k_star.T @ np.linalg.solve(K, np.linalg.solve(np.linalg.inv(K) + np.diag(tau), nu))
    var = kernel.diag(X_test) - np.einsum("ij,ij->j", k_star, np.linalg.solve(A, k_star))
    return norm.cdf((mean + bias) / np.sqrt(1.0 + var))


@pytest.mark.parametrize("prior", ["fitc", "dtc"])
def test_every_row_in_the_basis_is_the_full_gp_ep(prior):
    X, y = _problem()
    kernel = C(1.5) * RBF([1.0, 0.7])
    log_z, tau, nu = _dense_ep(kernel(X), y, 0.3)
    sparse = SparsePrior(kernel, X, X, prior)
    value, (tau_s, nu_s) = negative_log_evidence_all_rows(sparse, y, 0.3, tol=1e-12)
    np.testing.assert_allclose(tau_s, tau, rtol=0, atol=1e-6)
    np.testing.assert_allclose(nu_s, nu, rtol=0, atol=1e-6)
    np.testing.assert_allclose(-value, log_z, rtol=1e-8)
    X_test = np.random.RandomState(5).randn(40, 2) * 1.5
    predictor = AllRowsPredictor(kernel, X, X, y, tau_s, nu_s, 0.3, prior=prior)
    np.testing.assert_allclose(
        norm.cdf(predictor.moderated_margin(X_test)),
        _dense_probability(kernel, X, tau, nu, 0.3, X_test),
        rtol=0,
        atol=1e-6,
    )


def test_binary_model_with_every_row_in_the_basis_predicts_as_the_full_gp_ep():
    X, y = _problem(25, seed=3)
    kernel = C(2.0) * RBF(1.2)
    model = LatentSparseGP(
        kernel, 25, _make_selector("entropy", None), None, 1, 1e-3, 0, posterior="all_rows"
    ).fit(X, y, np.random.RandomState(0))
    assert np.array_equal(np.sort(model.basis_indices_), np.arange(25))
    log_z, tau, nu = _dense_ep(kernel(X), y, model.bias_)
    np.testing.assert_allclose(model.site_precision_, tau, rtol=0, atol=1e-5)
    X_test = np.random.RandomState(1).randn(30, 2)
    np.testing.assert_allclose(
        norm.cdf(model.moderated_margin(X_test)),
        _dense_probability(kernel, X, tau, nu, model.bias_, X_test),
        rtol=0,
        atol=1e-5,
    )
    np.testing.assert_allclose(model.log_marginal_likelihood(), log_z, rtol=1e-6)


def test_a_basis_large_enough_for_every_row_is_the_full_gp_ep():
    # scikit-learn code moved to the sparse model with max_basis >= n: every row in the basis
    X, y = _problem(25, seed=3)
    kernel = C(2.0) * RBF(1.2)
    with pytest.warns(UserWarning, match="using max_basis=25"):
        clf = SparseGPClassifier(kernel, max_basis=100, optimizer=None).fit(X, y > 0)
    assert np.array_equal(np.sort(clf.basis_indices_), np.arange(25))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # max_basis = n: nothing to say
        SparseGPClassifier(kernel, max_basis=25, optimizer=None).fit(X, y > 0)
    _, tau, nu = _dense_ep(kernel(X), y, clf.bias_)
    X_test = np.random.RandomState(1).randn(30, 2)
    np.testing.assert_allclose(
        clf.predict_proba(X_test)[:, 1],
        _dense_probability(kernel, X, tau, nu, clf.bias_, X_test),
        rtol=0,
        atol=1e-5,
    )


@pytest.mark.parametrize("prior", ["fitc", "dtc"])
@pytest.mark.parametrize(
    "kernel", [C(1.5) * RBF([1.0, 0.7]), C(0.8) * Matern(0.9, nu=1.5)], ids=["ard_rbf", "matern"]
)
def test_evidence_gradient_matches_finite_differences(prior, kernel):
    X, y = _problem(60, seed=1)
    X_u = X[::6]
    theta = np.append(kernel.theta, 0.3)

    def value(t):
        sparse = SparsePrior(kernel.clone_with_theta(t[:-1]), X, X_u, prior)
        return negative_log_evidence_all_rows(sparse, y, t[-1], tol=1e-12)[0]

    sparse = SparsePrior(kernel, X, X_u, prior)
    _, grad, _ = negative_log_evidence_all_rows(sparse, y, 0.3, eval_gradient=True, tol=1e-12)
    step = 1e-5
    fd = [(value(theta + e) - value(theta - e)) / (2 * step) for e in np.eye(theta.size) * step]
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-5)


def test_parallel_ep_reaches_the_fixed_point_of_sequential_ep_on_a_sparse_prior():
    # the sparse prior's covariance written densely (FITC: Q + Lambda) in sequential EP
    X, y = _problem(40, seed=2)
    kernel = C(1.0) * RBF(0.8)
    sparse = SparsePrior(kernel, X, X[::4], "fitc")
    K_fitc = sparse.V.T @ sparse.V + np.diag(sparse.lam)
    log_z, tau, nu = _dense_ep(K_fitc, y, -0.2)
    tau_s, nu_s, _, converged = all_rows_ep(sparse, y, -0.2, tol=1e-12)
    assert converged
    np.testing.assert_allclose(tau_s, tau, rtol=0, atol=1e-6)
    np.testing.assert_allclose(nu_s, nu, rtol=0, atol=1e-6)
    value, _ = negative_log_evidence_all_rows(sparse, y, -0.2, tol=1e-12)
    np.testing.assert_allclose(-value, log_z, rtol=1e-8)


def test_estimator_log_marginal_likelihood_is_the_all_rows_evidence():
    X, y = _problem(80, seed=4)
    clf = SparseGPClassifier(max_basis=12, posterior="all_rows", random_state=0).fit(X, y)
    assert clf.site_precision_.shape == (80,)
    theta = clf.kernel_.theta + 0.1
    value, grad = clf.log_marginal_likelihood(theta, eval_gradient=True)
    step = 1e-5
    fd = [
        (clf.log_marginal_likelihood(theta + e) - clf.log_marginal_likelihood(theta - e))
        / (2 * step)
        for e in np.eye(theta.size) * step
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(value, clf.log_marginal_likelihood(theta), rtol=1e-10)
    sparse = SparsePrior(clf.kernel_, X, clf.basis_vectors_, "fitc")
    ev, _ = negative_log_evidence_all_rows(sparse, np.where(y == 1, 1.0, -1.0), clf.bias_)
    np.testing.assert_allclose(clf.log_marginal_likelihood_value_, -ev, rtol=1e-6)


def test_all_rows_posterior_spreads_far_less_over_seeds_than_the_basis_posterior():
    rng = np.random.RandomState(0)
    X = rng.randn(300, 2)
    y = (np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] + 0.4 * rng.randn(300) > 0).astype(int)
    X_test = rng.randn(300, 2)
    spread = {}
    for posterior in ("basis", "all_rows"):
        probabilities = [
            SparseGPClassifier(max_basis=30, posterior=posterior, random_state=seed)
            .fit(X, y)
            .predict_proba(X_test)[:, 1]
            for seed in range(5)
        ]
        spread[posterior] = np.mean(np.std(probabilities, axis=0))
    assert spread["all_rows"] < 0.3 * spread["basis"]


def test_the_users_data_are_not_modified():
    X, y = _problem(50, seed=6)
    X0, y0 = X.copy(), y.copy()
    SparseGPClassifier(max_basis=8, posterior="all_rows", random_state=0).fit(X, y)
    assert np.array_equal(X, X0) and np.array_equal(y, y0)


def test_three_classes_one_vs_rest_with_the_all_rows_posterior():
    rng = np.random.RandomState(7)
    X = rng.randn(150, 2)
    y = np.digitize(X[:, 0] + 0.3 * rng.randn(150), [-0.5, 0.5])
    clf = SparseGPClassifier(max_basis=15, posterior="all_rows", random_state=0).fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert all(s.shape == (150,) for s in clf.site_precision_)
    assert clf.score(X, y) > 0.75


def test_pickled_all_rows_model_predicts_the_same_without_the_training_rows():
    import pickle

    X, y = _problem(n=400, seed=3)
    model = SparseGPClassifier(max_basis=15, max_iter=2, random_state=0).fit(X, y)
    assert model.posterior == "auto" and model.site_precision_.shape == (400,)  # all rows
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))
    assert not hasattr(restored._binary, "_train")  # X is not in the pickle
    assert restored.log_marginal_likelihood() == model.log_marginal_likelihood_value_
    theta = model.kernel_.theta
    assert np.isfinite(model.log_marginal_likelihood(theta))
    with pytest.raises(ValueError, match="pickled model does not keep"):
        restored.log_marginal_likelihood(theta)


def test_predict_is_the_argmax_of_predict_proba_at_a_tie():
    # identical inputs with balanced labels: the margin is within rounding of 0, both
    # probabilities are 0.5, and predict follows predict_proba's argmax (classes_[0])
    X = np.zeros((8, 1), dtype=np.float32)
    y = np.array([False, True, True, True, True, False, False, False])
    model = SparseGPClassifier(random_state=0).fit(X, y)
    proba = model.predict_proba(X)
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(proba, axis=1)])


def test_predict_is_the_argmax_of_predict_proba_at_a_three_class_tie():
    # identical inputs, one row per class: the three one-vs-rest margins differ only by
    # rounding, the normalised probabilities are equal, and predict must agree with them
    X = np.zeros((3, 1))
    y = np.array([-7, 0, 3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SparseGPClassifier(max_basis=3, random_state=0).fit(X, y)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba, 1.0 / 3.0)
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(proba, axis=1)])


def test_accelerated_fit_is_the_plain_fit(monkeypatch):
    # the default fit learns with Anderson-accelerated EP; the plain damped sweeps reach the
    # same fixed point. A large amplitude saturates the probit: plain EP takes many sweeps there
    from skgpsparse.inference import _ep
    from skgpsparse.latent.objectives import _ep_evidence

    sweeps, sweep = [], _ep.ep_sweep

    def counting_sweep(*args, **kwargs):
        sweeps.append(1)
        return sweep(*args, **kwargs)

    monkeypatch.setattr(_ep, "ep_sweep", counting_sweep)
    rng = np.random.RandomState(4)
    X, X_test = rng.randn(150, 2), rng.randn(300, 2)
    y = (X[:, 0] + 0.3 * rng.randn(150) > 0.8).astype(int)
    fits, counts = [], []
    for accelerate in (False, True):
        monkeypatch.setattr(_ep_evidence, "ACCELERATE", accelerate)
        sweeps.clear()
        model = SparseGPClassifier(posterior="all_rows", max_basis=25, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the amplitude reaches its bound
            fits.append(model.fit(X, y))
        counts.append(len(sweeps))
    plain, fast = fits
    assert counts[1] < 0.8 * counts[0]  # the fit's EP ran accelerated (seen: 165 of 401)
    np.testing.assert_array_equal(fast.basis_indices_, plain.basis_indices_)
    # both end where L-BFGS-B's projected gradient per row is below 1e-5, on an evidence flat
    # in the amplitude and bias (seen: theta 2.6e-3, bias 4.7e-3, probabilities 8e-5 apart)
    close = np.testing.assert_allclose
    close(fast.kernel_.theta, plain.kernel_.theta, rtol=0, atol=1e-2)
    close(fast.bias_, plain.bias_, rtol=0, atol=2e-2)
    close(fast.site_precision_, plain.site_precision_, rtol=0, atol=1e-3)
    close(fast.site_mean_ * fast.site_precision_, plain.site_mean_ * plain.site_precision_,
          rtol=0, atol=2e-2)
    close(fast.log_marginal_likelihood_value_, plain.log_marginal_likelihood_value_, rtol=1e-6)
    close(fast.predict_proba(X_test), plain.predict_proba(X_test), rtol=0, atol=5e-4)


def test_each_round_after_the_first_searches_a_box_around_its_start():
    from skgpsparse.latent.learning._ep_rounds import _ROUND_STEP, round_bounds
    from skgpsparse.latent.learning._hyperparameters import BIAS_BOUNDS

    X = np.random.RandomState(0).randn(20, 2)
    kernel = C(40.0, (1e-5, 1e2)) * RBF(1.0, (0.5, 1e5))
    bounds = round_bounds(kernel, 0.5, X)
    s = _ROUND_STEP
    expected = [[np.log(40.0) - s, np.log(1e2)],  # the amplitude's bound is nearer than the box
                [np.log(0.5), s],  # the length scale's lower bound is nearer
                [0.5 - s * np.sqrt(41.0), 0.5 + s * np.sqrt(41.0)]]  # prior sd sqrt(1 + 40)
    np.testing.assert_allclose(bounds, expected)
    unboxed = round_bounds(kernel, 0.5, X, boxed=False)
    np.testing.assert_allclose(unboxed, np.vstack([kernel.bounds, BIAS_BOUNDS]))
    # a start outside the kernel's bounds stays searchable (the box holds it)
    outside = round_bounds(C(40.0, (1e-5, 1e2)) * RBF(0.1, (0.5, 1e5)), [0.5, -0.5], X)
    assert outside[1, 0] <= np.log(0.1) <= outside[1, 1] and outside.shape == (4, 2)


def test_ep_warm_started_after_a_far_evaluation_gives_the_same_evidence():
    # each evaluation starts EP from the sites of the lowest so far (not a rejected far trial's):
    # the evidence and gradient at a point are those of EP started afresh there, to EP's tolerance
    from skgpsparse.latent.objectives._ep_evidence import AllRowsObjective

    X, y = _problem(60)
    kernel = C(1.0) * RBF(1.0)
    theta = np.append(kernel.theta, 0.1)
    fresh = AllRowsObjective(kernel, X, y, X[:12], (None, None), tol=1e-10)(theta + 0.05)
    warm = AllRowsObjective(kernel, X, y, X[:12], (None, None), tol=1e-10)
    warm(theta)
    warm(theta + np.array([6.0, -5.0, 8.0]))  # a far trial (its value is higher)
    assert warm._best[0] == pytest.approx(60 * warm(theta, eval_gradient=False))
    value, grad = warm(theta + 0.05)
    assert value == pytest.approx(fresh[0], rel=1e-8)
    np.testing.assert_allclose(grad, fresh[1], rtol=1e-6, atol=1e-9)
