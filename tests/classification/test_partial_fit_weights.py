"""SparseGPClassifier.partial_fit with sample_weight and class_weight, against repeated and
removed rows.

What is exact and what is not (``classification._streaming``, ``inference._online``):

- rows of weight zero are dropped, so a stream with zero weights is the stream of the other
  rows bit for bit, and weights of one are the unweighted stream bit for bit;
- the buffer's refits are ``fit`` with the buffered rows' weights, so a stream that stays
  within ``stream_buffer`` equals the stream of the repeated rows to EP's tolerance (1e-6 on
  the sites) when both refit at the same batches;
- the online ADF pass adds a row of weight ``c`` as a power-``c`` update (one site matched,
  added ``c`` times): the fit's weighted ADF start with blocks of one row, not ``c`` repeated
  rows one after another, which each see the copies before them; so ADF alone is only close
  to the repeated stream, and the EP sweeps (whose fixed point is the repeated rows') close
  the gap.
"""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier
from skgpsparse.inference._ep_passes import adf_sites
from skgpsparse.inference._online import OnlinePosterior
from skgpsparse.inference._sparse_prior import SparsePrior


def _data(n, seed=0, n_classes=2):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    score = X[:, 0] + 0.5 * rng.randn(n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y, rng.randint(1, 4, size=n)


def _streams(params, X, y, w, batches, classes=(0, 1), first=None):
    """The weighted stream and the stream of the repeated rows (``first``: an unweighted
    first batch given to both)."""
    weighted, repeated = SparseGPClassifier(**params), SparseGPClassifier(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_basis clipped on a small first batch
        if first is not None:
            for clf in (weighted, repeated):
                clf.partial_fit(X[first], y[first], classes=list(classes))
        for rows in batches:
            weighted.partial_fit(X[rows], y[rows], classes=list(classes),
                                 sample_weight=w[rows])
            repeated.partial_fit(np.repeat(X[rows], w[rows], axis=0), np.repeat(y[rows], w[rows]),
                                 classes=list(classes))
    return weighted, repeated


def _outputs(clf, X):
    """``predict_proba``, or one vs one (no probabilities, as scikit-learn's) each pair's
    probability of its first class."""
    if getattr(clf, "multi_class_", None) != "one_vs_one":
        return clf.predict_proba(X)
    return np.column_stack([
        est.likelihood.predictive_probability(1.0, *est.latent_mean_and_variance(X))
        for est in clf.estimators_
    ])


def test_online_posterior_of_weighted_sites_equals_repeated_sites():
    X, _, w = _data(30)
    rng = np.random.RandomState(1)
    tau, nu = rng.uniform(0.1, 1.0, 30), rng.randn(30)
    kernel, X_u = C(2.0) * RBF(1.3), X[:6]
    ours = OnlinePosterior.from_sites(kernel, X_u, 0.2, X, tau, nu, weights=w.astype(float))
    theirs = OnlinePosterior.from_sites(kernel, X_u, 0.2, np.repeat(X, w, axis=0),
                                        np.repeat(tau, w), np.repeat(nu, w))
    np.testing.assert_allclose(ours.precision, theirs.precision, rtol=1e-12)
    np.testing.assert_allclose(ours.eta, theirs.eta, rtol=1e-12, atol=1e-14)


def test_weighted_adf_is_the_fits_power_update_row_by_row():
    # the stream's sequential ADF of weighted rows against the fit's weighted ADF start with
    # blocks of one row (inference._ep_passes.adf_sites): each row's site matched under the
    # posterior of the rows before, then added its weight's times
    X, y, w = _data(50)
    y_pm = np.where(y == 1, 1.0, -1.0)
    kernel, X_u, bias = C(2.0) * RBF(1.0), X[:8], 0.3
    online = OnlinePosterior(kernel, X_u, bias)
    tau, nu = online.update(X, y_pm, ep_sweeps=0, weights=w.astype(float))
    prior = SparsePrior(kernel, X, X_u, weights=w.astype(float))
    tau_fit, nu_fit, post = adf_sites(prior, y_pm, bias, rows=1)
    np.testing.assert_allclose(tau, tau_fit, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(nu, nu_fit, rtol=1e-9, atol=1e-12)
    mean = online._factor()[1]
    np.testing.assert_allclose(mean, post.mean_w, rtol=1e-9, atol=1e-12)
    # c repeated rows one after another are another computation: close, not equal
    repeated = OnlinePosterior(kernel, X_u, bias)
    repeated.update(np.repeat(X, w, axis=0), np.repeat(y_pm, w), ep_sweeps=0)
    gap = np.max(np.abs(repeated._factor()[1] - mean))
    assert 1e-8 < gap < 0.1 * np.max(np.abs(mean))


@pytest.mark.parametrize("seed", [3, 5])
def test_buffered_stream_equals_repeated_stream(seed):
    # every row stays in the buffer and both streams refit at both batches (each doubles
    # its rows), learning kernel, bias and basis as fit does on the weighted and the
    # repeated rows (test_sample_weight: those fits agree to rounding on these seeds)
    X, y, w = _data(80, seed=seed)
    params = {"max_basis": 15, "stream_buffer": 1000, "random_state": 0}
    weighted, repeated = _streams(params, X, y, w, [slice(0, 40), slice(40, 80)])
    assert weighted._stream_buffer[2] == 80 and repeated._stream_buffer[2] == w.sum()
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), atol=1e-6)
    np.testing.assert_allclose(weighted.kernel_.theta, repeated.kernel_.theta, atol=1e-6)
    np.testing.assert_allclose(weighted.bias_, repeated.bias_, atol=1e-6)
    assert weighted.n_samples_seen_ == 80


@pytest.mark.parametrize("n_classes, multi_class", [(2, "auto"), (3, "auto"),
                                                    (3, "one_vs_one")])
def test_streamed_batches_equal_repeated_rows_once_ep_converges(n_classes, multi_class):
    # the same unweighted first batch learns the same model for both streams; the weighted
    # batches then enter the online posterior. With EP run to its fixed point the weighted
    # stream is the repeated rows' (EP's tolerance); ADF alone is close only
    X, y, w = _data(300, seed=1, n_classes=n_classes)
    classes = list(range(n_classes))
    batches = [slice(100, 200), slice(200, 300)]
    gaps = {}
    for sweeps in (0, 200):
        params = {"kernel": C(1.0) * RBF(1.0), "optimizer": None, "max_basis": 10,
                  "stream_buffer": 0, "stream_ep_sweeps": sweeps, "multi_class": multi_class}
        weighted, repeated = _streams(params, X, y, w, batches, classes, first=slice(0, 100))
        gaps[sweeps] = np.max(np.abs(_outputs(weighted, X) - _outputs(repeated, X)))
    assert gaps[200] < 1e-6
    assert gaps[200] < gaps[0] < 0.02


def test_partial_fit_after_a_weighted_fit():
    # fit with weights, then a weighted batch: the fit's sites enter the online posterior
    # with their rows' weights, so it equals fit and stream on the repeated rows
    X, y, w = _data(160, seed=2)
    params = {"kernel": C(1.0) * RBF(1.0), "optimizer": None, "max_basis": 10,
              "stream_ep_sweeps": 200}
    first, later = slice(0, 80), slice(80, 160)
    weighted = SparseGPClassifier(**params).fit(X[first], y[first], sample_weight=w[first])
    repeated = SparseGPClassifier(**params).fit(np.repeat(X[first], w[first], axis=0),
                                                np.repeat(y[first], w[first]))
    np.testing.assert_allclose(weighted.basis_vectors_, repeated.basis_vectors_)
    weighted.partial_fit(X[later], y[later], sample_weight=w[later])
    repeated.partial_fit(np.repeat(X[later], w[later], axis=0), np.repeat(y[later], w[later]))
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), atol=1e-6)
    # and an unweighted batch after a weighted fit is the batch of weight one
    a = SparseGPClassifier(**params).fit(X[first], y[first], sample_weight=w[first])
    b = SparseGPClassifier(**params).fit(X[first], y[first], sample_weight=w[first])
    a.partial_fit(X[later], y[later])
    b.partial_fit(X[later], y[later], sample_weight=np.ones(80))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_zero_weights_remove_rows_and_unit_weights_change_nothing():
    X, y, w = _data(400, seed=4)
    w[::5] = 0
    kept = w > 0
    params = {"max_basis": 10, "max_iter": 2, "stream_buffer": 150, "random_state": 0}
    batches = np.array_split(np.arange(400), 4)  # 100 rows: buffer refits, then streamed
    for weights in (w, kept.astype(int)):
        a, b = SparseGPClassifier(**params), SparseGPClassifier(**params)
        for rows in batches:
            a.partial_fit(X[rows], y[rows], classes=[0, 1], sample_weight=weights[rows])
            rows = rows[kept[rows]]
            b.partial_fit(X[rows], y[rows], classes=[0, 1], sample_weight=weights[rows])
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
        assert a.n_samples_seen_ == b.n_samples_seen_ == kept.sum()
    # weights of one (the 0/1 weights above, their zeros dropped) are the unweighted stream
    c = SparseGPClassifier(**params)
    for rows in batches:
        rows = rows[kept[rows]]
        c.partial_fit(X[rows], y[rows], classes=[0, 1])
    np.testing.assert_array_equal(a.predict_proba(X), c.predict_proba(X))
    # a later batch whose weights are all zero leaves the model as it was
    before = a.predict_proba(X)
    a.partial_fit(X[:10], y[:10], sample_weight=np.zeros(10))
    np.testing.assert_array_equal(a.predict_proba(X), before)
    with pytest.raises(ValueError, match="zero for every row"):
        SparseGPClassifier(**params).partial_fit(X[:50], y[:50], classes=[0, 1],
                                                 sample_weight=np.zeros(50))


def test_class_weight_dict_and_balanced():
    X, y, w = _data(200, seed=6)
    params = {"max_basis": 10, "max_iter": 2, "stream_buffer": 60, "random_state": 0}
    batches = np.array_split(np.arange(200), 4)
    a = SparseGPClassifier(class_weight={0: 2.5}, **params)
    b = SparseGPClassifier(**params)
    for rows in batches:
        a.partial_fit(X[rows], y[rows], classes=[0, 1], sample_weight=w[rows])
        b.partial_fit(X[rows], y[rows], classes=[0, 1],
                      sample_weight=w[rows] * np.where(y[rows] == 0, 2.5, 1.0))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    # "balanced" needs the whole stream's labels: refused, also after a balanced fit
    balanced = SparseGPClassifier(class_weight="balanced", **params)
    with pytest.raises(ValueError, match="'balanced' is not supported by partial_fit"):
        balanced.partial_fit(X, y, classes=[0, 1])
    balanced.fit(X, y)
    with pytest.raises(ValueError, match="'balanced' is not supported by partial_fit"):
        balanced.partial_fit(X, y)


def test_bad_weights_name_sample_weight_and_are_not_modified():
    X, y, w = _data(40)
    clf = SparseGPClassifier(max_basis=5, optimizer=None)
    for bad in (-w, w[:-1], np.where(np.arange(40) == 3, np.nan, w)):
        with pytest.raises(ValueError, match="sample_weight"):
            clf.partial_fit(X, y, classes=[0, 1], sample_weight=bad)
    w = w.astype(float)
    w_before = w.copy()
    clf.partial_fit(X, y, classes=[0, 1], sample_weight=w)
    clf.partial_fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(w, w_before)
