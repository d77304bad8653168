"""SparseGPRegressor where code written for scikit-learn's GaussianProcessRegressor calls it."""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression import _sampling


def _data(n=80, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.05 * rng.normal(size=n)
    return X, y, rng.uniform(-3, 3, size=(6, 2))


# ---------------------------------------------------------------- log_marginal_likelihood
@pytest.mark.parametrize("noise_bounds", ["fixed", (1e-4, 1.0)])
def test_log_marginal_likelihood_takes_the_kernels_theta(noise_bounds):
    X, y, _ = _data()
    model = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), max_basis=15, random_state=0,
                              noise_variance_bounds=noise_bounds).fit(X, y)
    theta = model.kernel_.theta
    # scikit-learn's convention: kernel_.theta alone gives the fitted value ...
    np.testing.assert_allclose(model.log_marginal_likelihood(theta),
                               model.log_marginal_likelihood_value_, rtol=1e-9)
    # ... and equals the long form at the fitted noise
    full = np.append(theta, np.log(model.noise_variance_))
    np.testing.assert_allclose(model.log_marginal_likelihood(theta),
                               model.log_marginal_likelihood(full), rtol=1e-12)
    value, grad = model.log_marginal_likelihood(theta + 0.1, eval_gradient=True)
    assert grad.shape == theta.shape
    # central differences: the objective's own round-off (~1e-11 here, an ill-conditioned K_uu
    # at noise 2.5e-3) makes steps below ~1e-5 noisier than the truncation error of 1e-4
    step = 1e-4
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = step
        fd = (model.log_marginal_likelihood(theta + 0.1 + e)
              - model.log_marginal_likelihood(theta + 0.1 - e)) / (2 * step)
        np.testing.assert_allclose(grad[i], fd, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="kernel_.n_dims"):
        model.log_marginal_likelihood(np.zeros(theta.size + 2))


# ---------------------------------------------------------------- the prior before fit
@pytest.mark.parametrize("n_targets", [None, 1, 3])
def test_predict_before_fit_is_the_prior_of_scikit_learn(n_targets):
    _, _, X_test = _data()
    for kernel in (None, C(2.0) * RBF(0.7)):
        ours = SparseGPRegressor(kernel, n_targets=n_targets)
        theirs = GaussianProcessRegressor(kernel, n_targets=n_targets)
        for kwargs in ({}, {"return_std": True}, {"return_cov": True}):
            a, b = ours.predict(X_test, **kwargs), theirs.predict(X_test, **kwargs)
            for u, v in zip(np.atleast_1d(a) if not kwargs else a,
                            np.atleast_1d(b) if not kwargs else b):
                assert np.shape(u) == np.shape(v)
                np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-15)
    draws = SparseGPRegressor(n_targets=n_targets).sample_y(X_test, 4)
    assert draws.shape == GaussianProcessRegressor(n_targets=n_targets).sample_y(X_test, 4).shape


def test_fit_checks_n_targets():
    X, y, _ = _data()
    with pytest.raises(ValueError, match="n_targets"):
        SparseGPRegressor(max_basis=10, n_targets=2).fit(X, y)


# ---------------------------------------------------------------- sample_y
def test_sample_y_shapes_and_seed_follow_scikit_learn():
    X, y, X_test = _data()
    Y = np.c_[y, 2 * y + 1]
    for target in (y, Y):
        ours = SparseGPRegressor(max_basis=15, random_state=0).fit(X, target)
        theirs = GaussianProcessRegressor().fit(X, target)
        for n in (1, 5):
            assert ours.sample_y(X_test, n).shape == theirs.sample_y(X_test, n).shape
        np.testing.assert_array_equal(ours.sample_y(X_test, 3, random_state=7),
                                      ours.sample_y(X_test, 3, random_state=7))
        assert not np.array_equal(ours.sample_y(X_test, 3, random_state=7),
                                  ours.sample_y(X_test, 3, random_state=8))


def test_sample_y_draws_have_the_predictive_mean_and_covariance():
    X, y, X_test = _data()
    model = SparseGPRegressor(max_basis=12, normalize_y=True, random_state=0).fit(X, y)
    mean, cov = model.predict(X_test, return_cov=True)
    draws = model.sample_y(X_test, 40_000, random_state=1)
    # Monte-Carlo error of a covariance entry: about sqrt(2 / N) of the variance scale
    tol = 5 * np.sqrt(2.0 / 40_000) * np.max(np.diag(cov))
    np.testing.assert_allclose(draws.mean(axis=1), mean, atol=5 * np.sqrt(np.max(np.diag(cov))
                                                                            / 40_000))
    np.testing.assert_allclose(np.cov(draws), cov, atol=tol)


def test_full_basis_draws_match_scikit_learn_in_distribution():
    X, y, X_test = _data(n=40)
    kernel = C(1.0) * RBF(1.3)
    ours = SparseGPRegressor(kernel, noise_variance=0.01, max_basis=40, optimizer=None).fit(X, y)
    theirs = GaussianProcessRegressor(kernel, alpha=0.01, optimizer=None).fit(X, y)
    a = ours.sample_y(X_test, 20_000, random_state=3)
    b = theirs.sample_y(X_test, 20_000, random_state=4)
    scale = np.sqrt(np.max(np.var(b, axis=1)))
    np.testing.assert_allclose(a.mean(axis=1), b.mean(axis=1), atol=6 * scale / np.sqrt(20_000))
    np.testing.assert_allclose(np.cov(a), np.cov(b), atol=6 * scale**2 * np.sqrt(2 / 20_000))


def test_drawn_rows_keep_the_predictive_variance_at_a_large_amplitude(monkeypatch):
    # a large amplitude against a small noise leaves I - S to round-off that, clipped to PSD,
    # was a large share of the predictive variance: each row's variance must stay predict's
    monkeypatch.setattr(_sampling, "EXACT_ROWS", 10)
    X, y, _ = _data()
    model = SparseGPRegressor(
        C(147.0**2) * RBF(14.2), max_basis=10, noise_variance=4.7e-3, optimizer=None,
        random_state=0,
    ).fit(X, y)
    X_test = np.random.RandomState(5).uniform(-3, 3, size=(30, 2))
    with pytest.warns(UserWarning, match="independently per row"):
        draws = model.sample_y(X_test, 30_000, random_state=2)
    _, std = model.predict(X_test, return_std=True)
    np.testing.assert_allclose(np.var(draws, axis=1), std**2, rtol=6 * np.sqrt(2 / 30_000))


def test_many_rows_are_drawn_by_blocks_with_the_predictive_variance(monkeypatch):
    # beyond EXACT_ROWS no n x n covariance is formed: the basis part is drawn exactly, the
    # rest per row, so every row keeps its predictive variance and rows covary through the basis
    monkeypatch.setattr(_sampling, "EXACT_ROWS", 10)
    X, y, _ = _data()
    model = SparseGPRegressor(max_basis=10, random_state=0).fit(X, y)
    X_test = np.random.RandomState(5).uniform(-3, 3, size=(30, 2))
    with pytest.warns(UserWarning, match="independently per row"):
        draws = model.sample_y(X_test, 30_000, random_state=2)
    mean, cov = model.predict(X_test, return_cov=True)
    n = draws.shape[1]
    np.testing.assert_allclose(np.var(draws, axis=1), np.diag(cov),
                               atol=6 * np.sqrt(2 / n) * np.max(np.diag(cov)))
    # the covariance the basis carries (A^T (I - S) A) is there off the diagonal; checked on
    # moderate hyperparameters (the learned amplitude above, 147^2 against a noise variance
    # of 5e-3, leaves I - S to round-off of a few 1e-7, a large share of these covariances)
    model = SparseGPRegressor(max_basis=10, optimizer=None, random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match="independently per row"):
        draws = model.sample_y(X_test, 30_000, random_state=2)
    mean, cov = model.predict(X_test, return_cov=True)
    np.testing.assert_allclose(np.var(draws, axis=1), np.diag(cov),
                               atol=6 * np.sqrt(2 / n) * np.max(np.diag(cov)))
    off = ~np.eye(30, dtype=bool)
    emp = np.cov(draws)
    A = np.linalg.solve(model._predictor.L, model.kernel_(model.basis_vectors_, X_test))
    expected = A.T @ (np.eye(10) - model._predictor.S) @ A
    np.testing.assert_allclose(emp[off], expected[off],
                               atol=6 * np.sqrt(2 / n) * np.max(np.diag(cov)))
    np.testing.assert_allclose(np.mean(draws, axis=1), mean,
                               atol=6 * np.sqrt(np.max(np.diag(cov)) / n))


def test_draws_of_several_targets_are_independent():
    X, y, X_test = _data()
    Y = np.c_[y, -y]
    model = SparseGPRegressor(max_basis=12, random_state=0).fit(X, Y)
    draws = model.sample_y(X_test, 20_000, random_state=0)
    assert draws.shape == (6, 2, 20_000)
    dev = draws - model.predict(X_test)[:, :, None]
    corr = np.corrcoef(dev[:, 0, :].ravel(), dev[:, 1, :].ravel())[0, 1]
    assert abs(corr) < 0.02  # 120,000 pairs: the standard error of a zero correlation is 0.003
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.sample_y(X_test, 2)
