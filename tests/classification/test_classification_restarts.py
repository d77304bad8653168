"""Restarts of SparseGPClassifier from several bias starts, chosen on held-out rows."""

import numpy as np
import pytest
from scipy.stats import norm, ttest_rel
from sklearn.datasets import make_classification
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.metrics import log_loss

from skgpsparse import SparseGPClassifier
from skgpsparse.classification.learning._restarts import (
    bias_offsets,
    choose_start,
    class_prior_nlp,
    fit_binary,
    held_out_nlp,
    stratified_split,
)
from skgpsparse.latent._model import LatentSparseGP, _make_selector


def _ring(n, d, rng):
    """Ringnorm-like data: class +1 a broad Gaussian (std 2) around the tight class -1."""
    y = np.where(rng.rand(n) < 0.5, 1, -1)
    X = np.where(y[:, None] > 0, 2.0 * rng.randn(n, d), rng.randn(n, d) + 2.0 / np.sqrt(d))
    return X, y


def _params(**kw):
    params = {
        "kernel": ConstantKernel(1.0, (1e-5, 100.0)) * RBF(2.0),
        "max_basis": 12,
        "selector": _make_selector("adaptive", None),
        "optimizer": "fmin_l_bfgs_b",
        "max_iter": 3,
        "tol": 1e-3,
        "verbose": 0,
    }
    params.update(kw)
    return params


def test_bias_offsets_sequence():
    assert bias_offsets(0).tolist() == [0.0]
    assert bias_offsets(4).tolist() == [0.0, 4.0, -4.0, 2.0, -2.0]
    assert len(bias_offsets(10)) == 11
    with pytest.raises(ValueError, match="n_restarts"):
        bias_offsets(11)


@pytest.mark.parametrize("fraction", [0.1, 0.2, 0.5])
def test_stratified_split_partitions_each_class(fraction):
    y = np.array([1.0] * 37 + [-1.0] * 63)
    fit, held = stratified_split(y, fraction, np.random.RandomState(0))
    assert np.intersect1d(fit, held).size == 0
    assert np.array_equal(np.sort(np.concatenate([fit, held])), np.arange(y.size))
    for label, count in ((1.0, 37), (-1.0, 63)):
        assert np.sum(y[held] == label) == round(fraction * count)
        assert np.sum(y[fit] == label) >= 1


def test_stratified_split_keeps_a_singleton_class_for_fitting():
    y = np.array([1.0] + [-1.0] * 9)
    fit, held = stratified_split(y, 0.5, np.random.RandomState(1))
    assert 0 in fit and np.all(y[held] == -1.0) and held.size == 4


def test_held_out_nlp_equals_log_loss_of_predict_proba():
    X, y = make_classification(n_samples=80, n_features=4, random_state=0)
    clf = SparseGPClassifier(max_basis=10, max_iter=2, random_state=0).fit(X, y)
    expected = log_loss(y, clf.predict_proba(X))
    # and from the latent moments, validation paper eq. (2.7)
    mean, var = clf.latent_mean_and_variance(X)
    signed = np.where(y == clf.classes_[1], 1.0, -1.0)
    by_hand = -np.mean(np.log(norm.cdf(signed * mean / np.sqrt(1.0 + var))))
    got = held_out_nlp(clf._binary, X, signed).mean()
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    np.testing.assert_allclose(got, by_hand, rtol=1e-10)


def test_choose_start_is_a_paired_test_against_the_default_start():
    rng = np.random.RandomState(0)
    base = rng.gamma(2.0, 0.2, size=60)
    noisy = base + rng.normal(scale=0.3, size=60)
    for shift in np.linspace(-0.2, 0.1, 13):
        other = noisy + shift
        t = ttest_rel(other, base).statistic  # mean difference / its standard error
        assert choose_start(np.array([base, other])) == (1 if t < -2.0 else 0)
    # among several significantly better starts, the lowest mean wins
    losses = np.array([base, base - 0.05, base - 0.1 + 0.01 * rng.normal(size=60), noisy])
    assert choose_start(losses) == 2
    # one held-out row: no standard error, the default start stays
    assert choose_start(np.array([[0.5], [0.1]])) == 0


def test_a_start_must_also_beat_the_class_prior():
    # a start that is significantly better than a failed default start but no better than
    # the class prior stays out; one that beats both is chosen
    rng = np.random.RandomState(1)
    y = np.where(rng.rand(80) < 0.3, 1.0, -1.0)
    prior = class_prior_nlp(y, y)
    np.testing.assert_allclose(prior[y > 0], -np.log(np.mean(y > 0)))
    failed_default = prior + 0.5 + 0.05 * rng.rand(80)
    like_prior = prior + 0.01 * rng.normal(size=80)
    assert choose_start(np.array([failed_default, like_prior])) == 1
    assert choose_start(np.array([failed_default, like_prior]), prior) == 0
    informed = 0.4 * prior
    assert choose_start(np.array([failed_default, like_prior, informed]), prior) == 2


def test_no_restarts_is_the_plain_fit():
    X, y = make_classification(n_samples=70, n_features=4, random_state=2)
    y = np.where(y == 1, 1.0, -1.0)
    a = fit_binary(_params(), X, y, np.random.RandomState(5), n_restarts=0)
    b = LatentSparseGP(**_params()).fit(X, y, np.random.RandomState(5))
    assert np.array_equal(a.basis_indices_, b.basis_indices_)
    np.testing.assert_array_equal(a.kernel_.theta, b.kernel_.theta)
    assert a.bias_ == b.bias_ and not hasattr(a, "restart_losses_")


def test_restarts_choose_the_lowest_held_out_nlp_and_refit_on_all_rows():
    rng = np.random.RandomState(3)
    X, y = _ring(120, 6, rng)
    y = y.astype(float)
    model = fit_binary(_params(), X, y, np.random.RandomState(7), n_restarts=2)
    # the search, replayed independently: same split, same random stream, same starts, each
    # held-in fit cut to two outer iterations (of the 3 the plain fit runs)
    replay = np.random.RandomState(7)
    fit, held = stratified_split(y, 0.2, replay)
    screen = _params(max_iter=2)
    losses = [
        held_out_nlp(
            LatentSparseGP(**screen, bias_offset=offset).fit(X[fit], y[fit], replay),
            X[held],
            y[held],
        )
        for offset in (0.0, 4.0, -4.0)
    ]
    np.testing.assert_allclose(model.restart_losses_, np.mean(losses, axis=1), rtol=1e-12)
    # with whole held-in fits the losses differ: the cut is real
    whole_replay = np.random.RandomState(7)
    stratified_split(y, 0.2, whole_replay)
    whole = held_out_nlp(
        LatentSparseGP(**_params()).fit(X[fit], y[fit], whole_replay), X[held], y[held]
    )
    assert abs(whole.mean() - model.restart_losses_[0]) > 1e-9
    chosen = (0.0, 4.0, -4.0)[choose_start(np.array(losses))]
    assert model.bias_offset == chosen
    # the winner is refitted on all rows with the random state a plain fit would use
    refit = LatentSparseGP(**_params(), bias_offset=chosen).fit(
        X, y, np.random.RandomState(7)
    )
    assert np.array_equal(model.basis_indices_, refit.basis_indices_)
    np.testing.assert_allclose(model.kernel_.theta, refit.kernel_.theta)


def test_restarts_find_the_better_fixed_point_on_ringnorm_like_data():
    # The class-balance start settles at a small bias and an under-confident model; a start
    # 4 probit units higher spends the basis on the tight class (test NLP ~0.2 vs ~0.3).
    for seed in (0, 1):
        rng = np.random.RandomState(seed)
        X, y = _ring(200, 10, rng)
        X_test, y_test = _ring(2000, 10, rng)
        losses = []
        for n_restarts in (0, 2):
            clf = SparseGPClassifier(
                max_basis=30, max_iter=5, n_restarts=n_restarts, random_state=seed,
                posterior="basis",
            ).fit(X, y)
            losses.append(log_loss(y_test, clf.predict_proba(X_test)))
        assert clf._binary.bias_offset == 4.0
        assert losses[1] < 0.8 * losses[0], losses


def test_restarts_multiclass_and_fixed_hyperparameters():
    X, y = make_classification(
        n_samples=120,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )
    clf = SparseGPClassifier(max_basis=10, max_iter=2, n_restarts=1, random_state=0).fit(X, y)
    proba = clf.predict_proba(X)
    assert np.all(np.isfinite(proba)) and np.allclose(proba.sum(axis=1), 1.0)
    assert all(len(est.restart_losses_) == 2 for est in clf.estimators_)
    # optimizer=None keeps the bias at its start: restarts are ignored
    kernel = ConstantKernel(2.0) * RBF(1.5)
    a = SparseGPClassifier(kernel, optimizer=None, max_basis=10, random_state=0, n_restarts=3)
    b = SparseGPClassifier(kernel, optimizer=None, max_basis=10, random_state=0)
    np.testing.assert_array_equal(a.fit(X, y).predict_proba(X), b.fit(X, y).predict_proba(X))


@pytest.mark.parametrize(
    "params, name",
    [
        ({"n_restarts": -1}, "n_restarts"),
        ({"n_restarts": 11}, "n_restarts"),
        ({"validation_fraction": 0.0}, "validation_fraction"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
    ],
)
def test_bad_restart_parameters_are_named(params, name):
    X, y = make_classification(n_samples=30, n_features=4, random_state=0)
    with pytest.raises(ValueError, match=name):
        SparseGPClassifier(max_basis=5, **params).fit(X, y)
