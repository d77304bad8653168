"""Tests of the shared fit's class probabilities: ``softmax(log p_k - t log(1 - p_k))`` with ``t``
chosen by EP's leave-one-out (cavity) log loss on the training rows
(classification/multiclass/_combination.py, latent/_leave_one_out.py)."""

import warnings

import numpy as np
import pytest
from scipy.special import log_softmax
from scipy.stats import norm
from sklearn.datasets import make_blobs

from skgpsparse import SparseGPClassifier
from skgpsparse.classification.multiclass._combination import (
    LOO_ROWS,
    choose_logit_weight,
    loo_rows,
)
from skgpsparse.latent._leave_one_out import leave_one_out_moments


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SparseGPClassifier(random_state=0, **params).fit(X, y)


def _data(n=160, n_classes=4, std=1.0, seed=0):
    X, y = make_blobs(n_samples=n, centers=n_classes, n_features=2, cluster_std=std,
                      random_state=seed)
    return X, y


def _dense_cavities(model, X):
    """Leave-one-out ``(mean, var)`` of ``f_i + b`` from the dense FITC-EP posterior: the
    prior ``Q + diag(K - Q)`` (``Q = K_fu K_uu^-1 K_uf``), the sites ``N(f_i; mu_i, 1/tau_i)``,
    ``Sigma = (K_fitc^-1 + T)^-1`` and each row's cavity from its marginal (GPML eq. (3.56))."""
    kernel, Z = model.kernel_, model.basis_vectors_
    K_uu = kernel(Z)
    K_uu = K_uu + 1e-8 * np.mean(np.diag(K_uu)) * np.eye(Z.shape[0])
    K_fu = kernel(X, Z)
    Q = K_fu @ np.linalg.solve(K_uu, K_fu.T)
    K_fitc = Q + np.diag(kernel.diag(X) - np.diag(Q))
    tau, mu = model.site_precision_, model.site_mean_
    Sigma = np.linalg.inv(np.linalg.inv(K_fitc) + np.diag(tau))
    m = Sigma @ (tau * mu)
    v = np.diag(Sigma)
    tau_c = 1.0 / v - tau
    return (m / v - tau * mu) / tau_c + model.bias_, 1.0 / tau_c


def test_leave_one_out_moments_equal_the_dense_fitc_ep_cavities():
    X, y = _data(n=90, n_classes=3, std=1.5)
    clf = _fit(X, y, max_basis=12, max_iter=2)
    for model in clf.estimators_:
        rows = np.arange(X.shape[0])
        mean, var = leave_one_out_moments(model, X, rows)
        want_mean, want_var = _dense_cavities(model, X)
        np.testing.assert_allclose(mean, want_mean, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(var, want_var, rtol=1e-6, atol=1e-8)
        # a subset of rows: each row's own site is taken out, wherever the row is
        some = np.array([5, 0, 77, 31])
        sub_mean, sub_var = leave_one_out_moments(model, X[some], some)
        np.testing.assert_allclose(sub_mean, mean[some], rtol=1e-12)
        np.testing.assert_allclose(sub_var, var[some], rtol=1e-12)


def _probabilities(clf, X):
    """``P(y = +1 | x)`` of each class model, from its latent moments (scipy's normal cdf)."""
    cols = []
    for predictor in clf._predictors:
        mean, var = predictor.latent_mean_and_variance(X)
        cols.append(norm.cdf(mean / np.sqrt(1.0 + var)))
    return np.column_stack(cols)


def test_shared_fit_probabilities_are_the_softmax_of_the_weighted_logits():
    X, y = _data(n=200, n_classes=4, std=1.0)
    clf = _fit(X, y, max_basis=15, max_iter=2)
    assert clf.multi_class_ == "shared"
    t = clf.logit_weight_
    assert 0.0 <= t <= 1.0
    X_new = _data(n=60, n_classes=4, std=1.5, seed=3)[0]
    p = _probabilities(clf, X_new)
    want = np.exp(log_softmax(np.log(p) - t * np.log1p(-p), axis=1))
    np.testing.assert_allclose(clf.predict_proba(X_new), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X_new)), want, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X_new), clf.classes_[np.argmax(want, axis=1)])


@pytest.mark.parametrize("multi_class", ["independent", "one_vs_rest"])
def test_independent_fits_keep_scikit_learns_normalisation(multi_class):
    X, y = _data(n=120, n_classes=3)
    clf = _fit(X, y, max_basis=10, max_iter=1, multi_class=multi_class)
    assert clf.logit_weight_ == 0.0
    p = _probabilities(clf, X)
    np.testing.assert_allclose(clf.predict_proba(X), p / p.sum(axis=1, keepdims=True),
                               rtol=1e-9)


def _loo_loss(clf, X, y, t):
    index = np.searchsorted(clf.classes_, y)
    log_p, log_q = [], []
    for model in clf.estimators_:
        mean, var = _dense_cavities(model, X)
        z = mean / np.sqrt(1.0 + var)
        log_p.append(norm.logcdf(z))
        log_q.append(norm.logcdf(-z))
    scores = np.column_stack(log_p) - t * np.column_stack(log_q)
    return -np.mean(log_softmax(scores, axis=1)[np.arange(y.size), index])


def test_chosen_weight_minimises_the_dense_leave_one_out_log_loss():
    X, y = _data(n=120, n_classes=4, std=1.2)
    clf = _fit(X, y, max_basis=12, max_iter=2)
    grid = np.linspace(0.0, 1.0, 101)
    losses = np.array([_loo_loss(clf, X, y, t) for t in grid])
    chosen = _loo_loss(clf, X, y, clf.logit_weight_)
    assert chosen <= losses.min() + 1e-6
    # the function's own reading of the same loss, with the ends it reports
    t, (at_0, at_1, at_t) = choose_logit_weight(
        clf.estimators_, X, np.searchsorted(clf.classes_, y), np.arange(y.size)
    )
    assert t == pytest.approx(clf.logit_weight_, abs=1e-12)
    np.testing.assert_allclose([at_0, at_1, at_t], [losses[0], losses[-1], chosen], rtol=1e-6)


def test_separated_classes_choose_a_positive_weight_that_helps_held_out_rows():
    # well separated blobs: each one-vs-rest model is confident, and normalising its
    # probabilities (t = 0) spreads mass over classes no model supports
    X, y = make_blobs(n_samples=800, centers=8, n_features=3, cluster_std=1.0, random_state=0)
    X_train, y_train, X_test, y_test = X[:400], y[:400], X[400:], y[400:]
    clf = _fit(X_train, y_train, max_basis=20, max_iter=2)
    assert clf.logit_weight_ > 0.2
    p = _probabilities(clf, X_test)
    index = np.searchsorted(clf.classes_, y_test)
    nlp_chosen = -np.mean(np.log(clf.predict_proba(X_test)[np.arange(y_test.size), index]))
    normalised = p / p.sum(axis=1, keepdims=True)
    nlp_t0 = -np.mean(np.log(normalised[np.arange(y_test.size), index]))
    assert nlp_chosen < nlp_t0


def test_weight_rows_are_all_rows_or_evenly_spaced():
    np.testing.assert_array_equal(loo_rows(7), np.arange(7))
    rows = loo_rows(3 * LOO_ROWS + 1)
    assert rows.size == LOO_ROWS and rows[0] == 0 and rows[-1] == 3 * LOO_ROWS
    steps = np.diff(rows)
    assert steps.min() >= 3 and steps.max() <= 4  # evenly spaced, to rounding


def test_verbose_prints_the_chosen_weight(capsys):
    X, y = _data(n=100, n_classes=3)
    _fit(X, y, max_basis=8, max_iter=1, verbose=1)
    assert "logit weight t = " in capsys.readouterr().out


def test_partial_fit_keeps_the_weight_of_its_last_refit():
    X, y = _data(n=300, n_classes=3, std=1.5)
    clf = SparseGPClassifier(max_basis=10, max_iter=1, stream_buffer=150, random_state=0)
    classes = np.unique(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.partial_fit(X[:150], y[:150], classes=classes)
        t = clf.logit_weight_
        reference = SparseGPClassifier(max_basis=10, max_iter=1, random_state=0).fit(X[:150],
                                                                                     y[:150])
        assert t == pytest.approx(reference.logit_weight_, abs=1e-9)
        clf.partial_fit(X[150:], y[150:])  # beyond the buffer: posteriors only
    assert clf.logit_weight_ == t
    p = _probabilities(clf, X)
    want = np.exp(log_softmax(np.log(p) - t * np.log1p(-p), axis=1))
    np.testing.assert_allclose(clf.predict_proba(X), want, rtol=1e-9, atol=1e-12)
