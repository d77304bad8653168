"""SparseGPClassifier.partial_fit and warm_start: the streamed posterior against its batch fit,
the ADF site update against a dense computation, scikit-learn's conventions, bounded memory."""

import pickle

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgpsparse import SparseGPClassifier
from skgpsparse._memory import state_nbytes
from skgpsparse.inference._ep import all_rows_ep
from skgpsparse.inference._online import OnlinePosterior
from skgpsparse.inference._sparse_prior import SparsePrior
from skgpsparse.latent._predictors import AllRowsPredictor


def _problem(n, seed=0):
    """A noisy, curved two-class problem in two dimensions."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2.0, 2.0, (n, 2))
    y = (np.sin(2.0 * X[:, 0]) + 0.5 * X[:, 1] + 0.4 * rng.randn(n) > 0).astype(int)
    return X, y


def _stream(clf, X, y, n_chunks, classes=(0, 1)):
    for rows in np.array_split(np.arange(y.size), n_chunks):
        clf.partial_fit(X[rows], y[rows], classes=list(classes))
    return clf


def _test_nlp(p_positive, y):
    p = np.where(y == 1, p_positive, 1.0 - p_positive)
    return float(-np.mean(np.log(p)))


def test_streamed_model_within_one_percent_of_its_batch_fit():
    # The first chunk learns basis, kernel and bias; the other 9 chunks stream in. The batch
    # model is EP over all 2,000 rows with that same basis, kernel and bias.
    X, y = _problem(2400)
    X_test, y_test = X[2000:], y[2000:]
    X, y = X[:2000], y[:2000]
    clf = SparseGPClassifier(max_basis=15, max_iter=2, stream_buffer=0)
    _stream(clf, X, y, 10)
    assert clf.n_samples_seen_ == 2000
    streamed = _test_nlp(clf.predict_proba(X_test)[:, 1], y_test)
    y_pm = np.where(y == 1, 1.0, -1.0)
    prior = SparsePrior(clf.kernel_, X, clf.basis_vectors_)
    tau, nu, _, converged = all_rows_ep(prior, y_pm, clf.bias_)
    assert converged
    batch = AllRowsPredictor(clf.kernel_, clf.basis_vectors_, X, y_pm, tau, nu, clf.bias_)
    batch_nlp = _test_nlp(norm.cdf(batch.moderated_margin(X_test)), y_test)
    assert abs(streamed - batch_nlp) < 0.01 * batch_nlp
    # and the stream did learn from the later chunks: the first chunk alone is worse
    first = SparseGPClassifier(max_basis=15, max_iter=2).fit(X[:200], y[:200])
    assert _test_nlp(first.predict_proba(X_test)[:, 1], y_test) > batch_nlp + 0.01


def _dense_adf(K, y, bias):
    """Sequential ADF on the dense Gaussian N(0, K): sites and the final posterior (m, S).

    The tilted moments of ``Phi(y (f + b)) N(f; m, s2)`` from scipy's normal distribution
    (GPML eq. (3.58)), the site from eq. (3.59), the rank-one update of the n x n posterior.
    """
    n = y.size
    m, S = np.zeros(n), K.copy()
    tau, nu = np.zeros(n), np.zeros(n)
    for j in range(n):
        s2, mj = S[j, j], m[j]
        z = y[j] * (mj + bias) / np.sqrt(1.0 + s2)
        r = np.exp(norm.logpdf(z) - norm.logcdf(z))
        m_hat = mj + y[j] * s2 * r / np.sqrt(1.0 + s2)
        s2_hat = s2 - s2**2 * r * (z + r) / (1.0 + s2)
        tau[j] = 1.0 / s2_hat - 1.0 / s2
        nu[j] = m_hat / s2_hat - mj / s2
        c = S[:, j].copy()
        d = 1.0 + tau[j] * s2
        m += c * (nu[j] - tau[j] * mj) / d
        S -= np.outer(c, c) * tau[j] / d
    return tau, nu, m, S


def test_adf_pass_against_dense_sequential_adf():
    # 90 rows (three blocks of the ADF pass) under the FITC prior, formed densely:
    # K = Q + diag(K - Q), Q = K_fu K_uu^-1 K_uf.
    X, y01 = _problem(90, seed=3)
    y = np.where(y01 == 1, 1.0, -1.0)
    kernel = ConstantKernel(2.0) * RBF(0.8)
    Z, bias = X[:12], 0.3
    K_uu = kernel(Z) + 1e-8 * np.mean(np.diag(kernel(Z))) * np.eye(12)  # SparsePrior's jitter
    K_fu = kernel(X, Z)
    Q = K_fu @ np.linalg.solve(K_uu, K_fu.T)
    K = Q + np.diag(np.diag(kernel(X)) - np.diag(Q))
    tau_d, nu_d, m_d, S_d = _dense_adf(K, y, bias)
    post = OnlinePosterior(kernel, Z, bias)
    tau, nu = post.update(X, y, ep_sweeps=0)
    np.testing.assert_allclose(tau, tau_d, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(nu, nu_d, rtol=1e-7, atol=1e-10)
    # the posterior at new points: the dense GP conditional on the rows' sites
    X_new = np.random.RandomState(4).uniform(-2, 2, (7, 2))
    K_nu = kernel(X_new, Z)
    Q_nf = K_nu @ np.linalg.solve(K_uu, K_fu.T)
    # f_new | f under the joint FITC prior, integrated over N(m_d, S_d)
    A = np.linalg.solve(K, Q_nf.T).T
    mean_d = A @ m_d
    Q_nn = K_nu @ np.linalg.solve(K_uu, K_nu.T)
    var_d = np.diag(Q_nn - A @ Q_nf.T + A @ S_d @ A.T) + kernel.diag(X_new) - np.diag(Q_nn)
    predictor = AllRowsPredictor.from_posterior(kernel, Z, *post.weight_posterior(), bias)
    mean, var = predictor.latent_mean_and_variance(X_new)
    np.testing.assert_allclose(mean - bias, mean_d, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(var, var_d, rtol=1e-6, atol=1e-8)


def test_one_batch_with_ep_to_convergence_is_the_batch_ep():
    X, y01 = _problem(150, seed=5)
    y = np.where(y01 == 1, 1.0, -1.0)
    kernel, Z = ConstantKernel(1.5) * RBF(1.0), X[:10]
    post = OnlinePosterior(kernel, Z, -0.2)
    tau, nu = post.update(X, y, ep_sweeps=200, tol=1e-9)
    tau_b, nu_b, _, converged = all_rows_ep(SparsePrior(kernel, X, Z), y, -0.2, tol=1e-9)
    assert converged
    np.testing.assert_allclose(tau, tau_b, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(nu, nu_b, rtol=1e-6, atol=1e-9)


def test_batch_ep_over_several_row_blocks_equals_one_block(monkeypatch):
    """A second batch's EP (each row's bias shifted by the earlier rows' posterior mean) gives
    the same sites when its sweeps pass over the rows in several blocks (a batch larger than
    ``block_rows(p)``, as 10^5-row chunks are) as in one."""
    from skgpsparse.inference import _row_columns

    X, y01 = _problem(300, seed=6)
    y = np.where(y01 == 1, 1.0, -1.0)
    kernel, Z = ConstantKernel(1.5) * RBF(1.0), X[:10]
    sites = []
    for entries in (1 << 19, 640):  # one block of 150 rows; blocks of 64 rows
        monkeypatch.setattr(_row_columns, "_BLOCK_ENTRIES", entries)
        post = OnlinePosterior(kernel, Z, -0.2)
        post.update(X[:150], y[:150])
        sites.append(post.update(X[150:], y[150:], ep_sweeps=50, tol=1e-10))
    np.testing.assert_allclose(sites[1][0], sites[0][0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sites[1][1], sites[0][1], rtol=1e-9, atol=1e-12)


def test_first_call_needs_classes_and_fits_as_fit_does():
    X, y = _problem(200)
    params = dict(max_basis=10, max_iter=2, random_state=0)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        SparseGPClassifier(**params).partial_fit(X, y)
    streamed = SparseGPClassifier(**params).partial_fit(X, y, classes=[0, 1])
    fitted = SparseGPClassifier(**params).fit(X, y)
    np.testing.assert_allclose(streamed.predict_proba(X), fitted.predict_proba(X), atol=1e-12)
    assert streamed.kernel_ == fitted.kernel_


def test_a_failed_first_call_leaves_the_classifier_unfitted():
    # its classes (set before the batch is validated) went with it: the next first call, of
    # another width and classes, fits (before: AttributeError '_binary' for every later call)
    X, y = _problem(200)
    clf = SparseGPClassifier(max_basis=10, max_iter=2, random_state=0)
    bad = X.copy()
    bad[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.partial_fit(bad, y, classes=[0, 1])
    assert not hasattr(clf, "classes_") and not hasattr(clf, "n_features_in_")
    with pytest.raises(NotFittedError):
        clf.predict(X)
    y3 = np.where(X[:, 1] > 1, 2, y)
    clf.partial_fit(X[:, :1], y3, classes=[0, 1, 2])
    fitted = SparseGPClassifier(max_basis=10, max_iter=2, random_state=0).fit(X[:, :1], y3)
    np.testing.assert_allclose(clf.predict_proba(X[:, :1]), fitted.predict_proba(X[:, :1]),
                               atol=1e-12)


def test_conventions_features_labels_classes_posterior():
    X, y = _problem(300)
    clf = SparseGPClassifier(max_basis=8, max_iter=1, stream_buffer=0)
    clf.partial_fit(X[:100], y[:100], classes=[0, 1])
    with pytest.raises(ValueError, match="X has 3 features, but SparseGPClassifier is expecting"):
        clf.partial_fit(np.hstack([X[100:150], X[100:150, :1]]), y[100:150])
    with pytest.raises(ValueError, match=r"labels \[7\] that are not in `classes` \[0, 1\]"):
        clf.partial_fit(X[100:150], np.where(y[100:150] == 1, 7, 0))
    with pytest.raises(ValueError, match="is not the same as on last call"):
        clf.partial_fit(X[100:150], y[100:150], classes=[0, 1, 2])
    # a later batch may hold one class only
    clf.partial_fit(X[150:160][y[150:160] == 0], y[150:160][y[150:160] == 0])
    # the basis posterior has no partial_fit (scikit-learn's available_if), and says why
    assert not hasattr(SparseGPClassifier(posterior="basis"), "partial_fit")
    with pytest.raises(AttributeError, match="has no attribute 'partial_fit'") as info:
        SparseGPClassifier(posterior="basis").partial_fit(X, y, classes=[0, 1])
    assert "posterior='basis'" in str(info.value.__cause__)
    with pytest.raises(ValueError, match="2 or more distinct classes"):
        SparseGPClassifier().partial_fit(X[y == 0], y[y == 0], classes=[0])


def test_one_vs_rest_models_each_updated():
    rng = np.random.RandomState(1)
    X = rng.uniform(-2, 2, (600, 2))
    y = np.digitize(X[:, 0] + 0.3 * rng.randn(600), [-0.7, 0.7])  # classes 0, 1, 2
    clf = SparseGPClassifier(max_basis=8, max_iter=1, stream_buffer=0)
    clf.partial_fit(X[:150], y[:150], classes=[0, 1, 2])
    before = [est._predictor.projection.copy() for est in clf.estimators_]
    _stream(clf, X[150:], y[150:], 3, classes=[0, 1, 2])
    assert all(
        not np.allclose(b, est._predictor.projection) for b, est in zip(before, clf.estimators_)
    )
    assert clf.score(X, y) > 0.8
    assert clf.predict_proba(X[:5]).shape == (5, 3)


def test_memory_does_not_grow_with_rows_streamed():
    X, y = _problem(3000, seed=2)
    clf = SparseGPClassifier(max_basis=10, max_iter=1, stream_buffer=0)
    chunks = np.array_split(np.arange(3000), 60)  # 50 rows each
    sizes = []
    for i, rows in enumerate(chunks):
        clf.partial_fit(X[rows], y[rows], classes=[0, 1])
        if i in (5, 59):
            sizes.append(state_nbytes(clf))
    assert clf.n_samples_seen_ == 3000
    assert sizes[1] == sizes[0]
    assert sizes[0] < 50 * 1024  # p^2 factors and one batch's sites, not 3,000 rows
    # the state pickles to a model that predicts the same
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(again.predict_proba(X[:20]), clf.predict_proba(X[:20]))


def test_buffer_refits_on_the_first_rows_then_streams():
    X, y = _problem(900, seed=6)
    clf = SparseGPClassifier(max_basis=10, max_iter=2, stream_buffer=400)
    clf.partial_fit(X[:100], y[:100], classes=[0, 1])
    first_kernel = clf.kernel_
    clf.partial_fit(X[100:200], y[100:200])  # 200 rows: doubled, refitted
    assert clf._stream_buffer[2] == 200 and clf.kernel_ != first_kernel
    clf.partial_fit(X[200:500], y[200:500])  # the buffer fills at 400: refit, then streamed
    assert clf._stream_buffer is None
    learned = (clf.kernel_, clf.bias_)
    clf.partial_fit(X[500:], y[500:])
    assert (clf.kernel_, clf.bias_) == learned and clf.n_samples_seen_ == 900
    # the refit on the full buffer is the fit on those rows, from the previous fit's start
    assert clf.site_precision_.size == 400


def test_partial_fit_continues_a_fitted_model():
    X, y = _problem(500, seed=7)
    clf = SparseGPClassifier(max_basis=10, max_iter=2, stream_buffer=0).fit(X[:300], y[:300])
    p_before = clf.predict_proba(X[300:])
    clf.partial_fit(X[300:], y[300:])
    assert clf.n_samples_seen_ == 500
    assert not np.allclose(clf.predict_proba(X[300:]), p_before)
    restored = pickle.loads(pickle.dumps(SparseGPClassifier(max_basis=5, max_iter=1).fit(X, y)))
    with pytest.raises(ValueError, match="not a pickled one"):
        restored.partial_fit(X[:10], y[:10])


def test_warm_start_starts_from_the_previous_kernel_bias_and_basis():
    X, y = _problem(300, seed=8)
    clf = SparseGPClassifier(max_basis=10, max_iter=2).fit(X, y)
    kernel, bias, basis = clf.kernel_, clf.bias_, clf.basis_indices_.copy()
    # optimizer=None keeps the start: the previous fit's kernel and bias with warm_start
    clf.set_params(warm_start=True, optimizer=None).fit(X, y)
    assert clf.kernel_ == kernel and clf.bias_ == bias
    np.testing.assert_array_equal(clf.basis_indices_, basis)  # seeded, already full
    cold = SparseGPClassifier(max_basis=10, optimizer=None).fit(X, y)
    assert cold.kernel_ != kernel
    # more rows appended: the basis rows are still rows of X, a bigger basis grows from them
    X2, y2 = _problem(400, seed=8)
    clf.set_params(max_basis=14).fit(X2, y2)
    np.testing.assert_array_equal(clf.basis_indices_[:10], basis)
    with pytest.warns(UserWarning, match="ignored because the previous fit had 2 features"):
        clf.fit(np.hstack([X, X[:, :1]]), y)
