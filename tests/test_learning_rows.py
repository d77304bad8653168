"""``learning_rows``: learning on a random subsample, the posterior on every row.

The large-n path is forced on small data by a low ``learning_rows``. It is checked against
its exact counterparts: with the subsample holding every row it is the ordinary fit; the
learned values are those of the ordinary fit on the subsample (the same random stream); and
the posterior is every row's, by dense formulas (the projected-process predictive, GPML
eq. (8.27); EP's fixed point, GPML eqs. (3.56)-(3.59), under the FITC prior).
"""

import numpy as np
import pytest
from scipy.stats import norm

from skgpsparse import SparseGPClassifier, SparseGPRegressor
from skgpsparse._learning_rows import learning_size, learning_subsample
from skgpsparse.latent.learning._hyperparameters import _lbfgs


def _data(n=600, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    f = np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] ** 2
    return X, f + 0.3 * rng.randn(n), np.where(f + 0.3 * rng.randn(n) > 0.5, 1, 0)


def _drawn_rows(n, m, seed=0):
    """The subsample a fit with ``random_state=seed`` draws first, and the stream after it."""
    rng = np.random.RandomState(seed)
    return np.sort(rng.choice(n, size=m, replace=False)), rng


def test_subsample_size_and_draw():
    assert learning_size("auto", 100) == 20_000
    assert learning_size("auto", 300) == 60_000
    assert learning_size(50, 100) == 100  # never fewer rows than basis vectors
    rng = np.random.RandomState(3)
    before = rng.get_state()[1].copy()
    assert learning_subsample("auto", 20_000, 100, rng) is None
    assert learning_subsample(None, 10**6, 100, rng) is None
    np.testing.assert_array_equal(rng.get_state()[1], before)  # nothing drawn
    rows = learning_subsample(500, 2_000, 10, rng)
    assert rows.shape == (500,) and np.all(np.diff(rows) > 0) and rows[-1] < 2_000


@pytest.mark.parametrize("Estimator", [SparseGPRegressor, SparseGPClassifier])
@pytest.mark.parametrize("value", [0, -3, 2.5, "all"])
def test_bad_learning_rows_is_a_clear_error(Estimator, value):
    X, y, labels = _data(60)
    with pytest.raises(ValueError, match="learning_rows"):
        Estimator(learning_rows=value).fit(X, labels if Estimator is SparseGPClassifier else y)


def test_regressor_subsample_of_every_row_is_the_ordinary_fit():
    X, y, _ = _data(200)
    kw = dict(max_basis=8, random_state=0, max_iter=1, refine_basis=10)
    a = SparseGPRegressor(learning_rows=None, **kw).fit(X, y)
    for learning_rows in (200, "auto"):
        b = SparseGPRegressor(learning_rows=learning_rows, **kw).fit(X, y)
        np.testing.assert_array_equal(b.basis_vectors_, a.basis_vectors_)
        np.testing.assert_array_equal(b.kernel_.theta, a.kernel_.theta)
        assert b.noise_variance_ == a.noise_variance_
        np.testing.assert_array_equal(b.predict(X[:50], return_std=True),
                                      a.predict(X[:50], return_std=True))


def _dense_projected_process(kernel, s2, Z, X, y, X_test):
    """GPML eqs. (8.26)-(8.27): mean and latent variance of the projected process on ``X``."""
    K_uu, K_uf, K_us = kernel(Z), kernel(Z, X), kernel(Z, X_test)
    Sigma = np.linalg.inv(s2 * K_uu + K_uf @ K_uf.T)
    mean = K_us.T @ Sigma @ K_uf @ y
    q = np.einsum("ij,ij->j", K_us, np.linalg.solve(K_uu, K_us))
    var = kernel.diag(X_test) - q + s2 * np.einsum("ij,ij->j", K_us, Sigma @ K_us)
    return mean, var


@pytest.mark.parametrize("refine", [0, 15])
def test_regressor_learns_on_the_subsample_and_fits_every_row(refine):
    X, y, _ = _data(400)
    m = 150
    kw = dict(max_basis=8, max_iter=2, refine_basis=refine, noise_calibration=None)
    model = SparseGPRegressor(learning_rows=m, random_state=0, **kw).fit(X, y)
    rows, stream = _drawn_rows(len(y), m)
    # the learned values: the ordinary fit on the subsample, from the same random stream
    sub = SparseGPRegressor(learning_rows=None, random_state=stream, **kw).fit(X[rows], y[rows])
    np.testing.assert_array_equal(model.kernel_.theta, sub.kernel_.theta)
    assert model.noise_variance_ == sub.noise_variance_
    np.testing.assert_array_equal(model.basis_vectors_, sub.basis_vectors_)
    np.testing.assert_array_equal(model.basis_indices_, rows[sub.basis_indices_])
    # the posterior: every row's (the subsample's predicts otherwise)
    X_test = np.random.RandomState(1).randn(40, 2)
    args = (model.kernel_, model.noise_variance_, model.basis_vectors_)
    mean, var = _dense_projected_process(*args, X, y, X_test)
    got_mean, got_std = model.predict(X_test, return_std=True)
    np.testing.assert_allclose(got_mean, mean, rtol=0, atol=2e-5)
    np.testing.assert_allclose(got_std**2, var, rtol=0, atol=2e-5)
    assert np.max(np.abs(sub.predict(X_test) - mean)) > 1e-3
    # the stored objective is the bound over every row
    theta = np.append(model.kernel_.theta, np.log(model.noise_variance_))
    np.testing.assert_allclose(
        model.log_marginal_likelihood_value_, model.log_marginal_likelihood(theta), rtol=1e-9
    )


def test_regressor_calibrates_on_every_row():
    X, y, _ = _data(400)
    model = SparseGPRegressor(max_basis=8, refine_basis=15, learning_rows=150, random_state=0)
    model.fit(X, y)
    X_test = np.random.RandomState(2).randn(40, 2)
    mean, var = _dense_projected_process(
        model.kernel_, model.noise_variance_, model.basis_vectors_, X, y, X_test
    )
    got_mean, got_std = model.predict(X_test, return_std=True)
    np.testing.assert_allclose(got_mean, mean, rtol=0, atol=2e-5)
    np.testing.assert_allclose(got_std**2, var, rtol=0, atol=2e-5)


def test_classifier_subsample_of_every_row_is_the_ordinary_fit():
    X, _, labels = _data(250)
    kw = dict(max_basis=10, max_iter=2, random_state=0)
    a = SparseGPClassifier(learning_rows=None, **kw).fit(X, labels)
    b = SparseGPClassifier(learning_rows=250, **kw).fit(X, labels)
    np.testing.assert_array_equal(b.kernel_.theta, a.kernel_.theta)
    np.testing.assert_array_equal(b.site_precision_, a.site_precision_)
    np.testing.assert_array_equal(b.predict_proba(X), a.predict_proba(X))


def _fitc_ep_sweep(kernel, X, Z, y, bias, tau, nu):
    """One parallel EP update of every site (GPML eqs. (3.56)-(3.59)) under the FITC prior
    ``Q_ff + diag(K_ff - Q_ff)``, dense."""
    K_uu, K_uf = kernel(Z), kernel(Z, X)
    Q = K_uf.T @ np.linalg.solve(K_uu, K_uf)
    prior = Q + np.diag(kernel.diag(X) - np.diag(Q))
    Sigma = np.linalg.inv(np.linalg.inv(prior) + np.diag(tau))
    mu, s = Sigma @ nu, np.diag(Sigma)
    s2c = 1.0 / (1.0 / s - tau)
    mc = s2c * (mu / s - nu)
    z = y * (mc + bias) / np.sqrt(1 + s2c)
    ratio = np.exp(norm.logpdf(z) - norm.logcdf(z))
    m1 = mc + y * s2c * ratio / np.sqrt(1 + s2c)
    s2h = s2c - s2c**2 * ratio * (z + ratio) / (1 + s2c)
    return 1.0 / s2h - 1.0 / s2c, m1 / s2h - mc / s2c


def test_classifier_learns_on_the_subsample_and_runs_ep_on_every_row():
    X, _, labels = _data(400)
    m = 150
    kw = dict(max_basis=10, max_iter=2)
    model = SparseGPClassifier(learning_rows=m, random_state=0, **kw).fit(X, labels)
    rows, stream = _drawn_rows(len(labels), m)
    # the learned values: the ordinary fit on the subsample from the same random stream, as
    # a callable optimiser runs it (the rounds' L-BFGS-B, without the final run to
    # convergence, which the subsample path skips)
    sub = SparseGPClassifier(learning_rows=None, random_state=stream, optimizer=_lbfgs, **kw)
    sub.fit(X[rows], labels[rows])
    np.testing.assert_array_equal(model.kernel_.theta, sub.kernel_.theta)
    assert model.bias_ == sub.bias_
    np.testing.assert_array_equal(model.basis_indices_, rows[sub.basis_indices_])
    # one site per training row, at EP's fixed point on every row
    tau = model.site_precision_
    nu = tau * model.site_mean_
    assert tau.shape == (len(labels),)
    y = np.where(labels == 1, 1.0, -1.0)
    new_tau, new_nu = _fitc_ep_sweep(model.kernel_, X, model.basis_vectors_, y, model.bias_,
                                     tau, nu)
    np.testing.assert_allclose(new_tau, tau, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(new_nu, nu, rtol=1e-3, atol=1e-5)
    # the subsample's own sites are not that fixed point
    assert not np.allclose(model.site_precision_[rows], sub.site_precision_, atol=1e-3)


def test_classifier_subsample_skips_only_the_final_convergence_run():
    # below learning_rows the default optimiser ends with L-BFGS-B run to convergence
    # (_all_rows_fit._converged), so it differs from the same rounds by a callable optimiser;
    # on the subsample both are the rounds alone
    X, _, labels = _data(300)
    kw = dict(max_basis=10, max_iter=2, random_state=0)
    polished = SparseGPClassifier(learning_rows=None, **kw).fit(X, labels)
    rounds = SparseGPClassifier(learning_rows=None, optimizer=_lbfgs, **kw).fit(X, labels)
    assert not np.allclose(polished.kernel_.theta, rounds.kernel_.theta, rtol=0, atol=1e-6)
    assert polished.log_marginal_likelihood_value_ >= rounds.log_marginal_likelihood_value_
    a = SparseGPClassifier(learning_rows=200, **kw).fit(X, labels)
    b = SparseGPClassifier(learning_rows=200, optimizer=_lbfgs, **kw).fit(X, labels)
    np.testing.assert_array_equal(a.kernel_.theta, b.kernel_.theta)
    np.testing.assert_array_equal(a.site_precision_, b.site_precision_)


def test_classifier_warm_start_on_a_subsample_starts_from_the_last_basis():
    # the last basis (indices of every row) joins the learning rows: a refit on the same rows
    # keeps most of it and predicts as the last fit (it once indexed the subsample and failed)
    X, _, y = _data(n=900)
    clf = SparseGPClassifier(max_basis=15, learning_rows=200, warm_start=True,
                             random_state=0, max_iter=2)
    clf.fit(X, y)
    basis, proba = np.sort(clf.basis_indices_), clf.predict_proba(X)[:, 1]
    clf.fit(X, y)
    np.testing.assert_array_equal(clf.basis_vectors_, X[clf.basis_indices_])
    assert np.intersect1d(basis, clf.basis_indices_).size >= 13
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], proba, atol=0.05)
