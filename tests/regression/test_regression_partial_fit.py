"""SparseGPRegressor.partial_fit and warm_start: streamed rows give the fit's posterior.

The reference is the projected-process posterior written densely on every row streamed
(GPML eqs. (8.26)-(8.27), ``Sigma = (K_uf K_fu + s2 K_uu)^-1``) with numpy, on the basis,
kernel and noise of the streamed model, and the objective functions of the batch fit.
"""

import pickle
import warnings

import numpy as np
import pytest
from scipy.linalg import cho_factor, cho_solve
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression._streaming import stream_nbytes
from skgpsparse.regression._vfe import OBJECTIVES

KERNEL = C(1.0) * RBF(1.0)
S2 = 0.05


def _data(n, seed=0, n_targets=None):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(2 * X[:, 1]) + 0.1 * rng.randn(n)
    if n_targets:
        y = np.column_stack([y + t * X[:, 0] for t in range(n_targets)])
    return X, y


def _dense_posterior(model, X, y, X_test):
    """Mean and latent variance of the PP posterior on all of ``X``, from dense matrices."""
    k, Z, s2 = model.kernel_, model.basis_vectors_, model.noise_variance_
    y_mean, y_std = model._y_train_mean, model._y_train_std
    Y = (y - y_mean) / y_std
    K_uf, K_uu, K_tu = k(Z, X), k(Z), k(X_test, Z)
    Sigma_inv = cho_factor(K_uf @ K_uf.T + s2 * K_uu)
    mean = K_tu @ cho_solve(Sigma_inv, K_uf @ Y) * y_std + y_mean
    var = (
        k.diag(X_test)
        - np.einsum("ij,ji->i", K_tu, np.linalg.solve(K_uu, K_tu.T))
        + s2 * np.einsum("ij,ji->i", K_tu, cho_solve(Sigma_inv, K_tu.T))
    )
    return mean, var


def _model(**kwargs):
    params = dict(kernel=KERNEL, noise_variance=S2, optimizer=None, max_basis=15,
                  random_state=0)
    params.update(kwargs)
    return SparseGPRegressor(**params)


@pytest.mark.parametrize("objective", ["dtc", "vfe"])
@pytest.mark.parametrize("n_targets", [None, 3])
def test_chunks_equal_the_posterior_on_all_rows(objective, n_targets):
    X, y = _data(600, n_targets=n_targets)
    X_test, _ = _data(40, seed=1)
    model = _model(hyperparameter_objective=objective, normalize_y=True)
    for start in range(0, 600, 100):  # each chunk larger than the basis: fixed after the first
        model.partial_fit(X[start : start + 100], y[start : start + 100])
    assert model.basis_vectors_.shape == (15, 2)
    mean, var = _dense_posterior(model, X, y, X_test)
    got_mean, got_std = model.predict(X_test, return_std=True)
    np.testing.assert_allclose(got_mean, mean, rtol=0, atol=1e-10)
    std = np.sqrt(var)[:, None] * model._y_train_std if n_targets else np.sqrt(var)
    np.testing.assert_allclose(got_std, std * (1 if n_targets else model._y_train_std),
                               rtol=0, atol=1e-10)
    # the objective is the batch one on every row streamed (normalised targets)
    Y = (y - model._y_train_mean) / model._y_train_std
    expected = OBJECTIVES[objective](
        model.kernel_, X, Y, model.basis_vectors_, S2, jitter=model._jitter_value
    )
    np.testing.assert_allclose(model.log_marginal_likelihood_value_, expected, rtol=1e-9)


def test_first_call_fits_as_fit_does():
    X, y = _data(150)
    X_test, _ = _data(20, seed=1)
    params = dict(max_basis=12, max_iter=1, refine_basis=0, random_state=0, normalize_y=True)
    fitted = SparseGPRegressor(**params).fit(X, y)
    streamed = SparseGPRegressor(**params).partial_fit(X, y)
    np.testing.assert_array_equal(streamed.basis_vectors_, fitted.basis_vectors_)
    assert streamed.kernel_.theta.tolist() == fitted.kernel_.theta.tolist()
    for a, b in zip(streamed.predict(X_test, return_std=True),
                    fitted.predict(X_test, return_std=True)):
        np.testing.assert_array_equal(a, b)
    # the rows are not kept, so the likelihood at another theta asks for a refit
    with pytest.raises(ValueError, match="partial_fit"):
        streamed.log_marginal_likelihood(streamed.kernel_.theta)


def test_partial_fit_after_fit_continues_it():
    X, y = _data(400)
    X_test, _ = _data(20, seed=1)
    model = _model().fit(X[:200], y[:200])
    model.partial_fit(X[200:], y[200:])
    mean, _ = _dense_posterior(model, X, y, X_test)
    np.testing.assert_allclose(model.predict(X_test), mean, rtol=0, atol=1e-10)


def test_one_observation_at_a_time_equals_the_refit():
    # Woodbury updates of one row (and the refresh every 32 p rows) against the dense posterior
    X, y = _data(440)
    X_test, _ = _data(20, seed=1)
    model = _model(max_basis=10).partial_fit(X[:100], y[:100])
    for i in range(100, 440):
        model.partial_fit(X[i : i + 1], y[i : i + 1])
        if i in (100, 419, 439):  # after one row, before and after a refresh
            assert model._stream.since_refresh == {100: 1, 419: 320, 439: 19}[i]
            mean, var = _dense_posterior(model, X[: i + 1], y[: i + 1], X_test)
            got_mean, got_std = model.predict(X_test, return_std=True)
            np.testing.assert_allclose(got_mean, mean, rtol=0, atol=1e-10)
            np.testing.assert_allclose(got_std**2, var, rtol=0, atol=1e-10)
    expected = OBJECTIVES["vfe"](model.kernel_, X, y, model.basis_vectors_, S2,
                                 jitter=model._jitter_value)
    np.testing.assert_allclose(model.log_marginal_likelihood_value_, expected, rtol=1e-9)


def test_basis_grows_from_new_rows_up_to_max_basis():
    X, y = _data(120)
    model = _model(max_basis=30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "max_basis exceeds the samples" warning
        model.partial_fit(X[:10], y[:10])
    assert model.basis_vectors_.shape[0] == 10
    for i in range(10, 25):  # one evaluation at a time, as a Bayesian-optimisation loop
        model.partial_fit(X[i : i + 1], y[i : i + 1])
    assert model.basis_vectors_.shape[0] == 25
    np.testing.assert_array_equal(np.sort(model.basis_indices_), np.arange(25))
    # every row is in the basis: the projection of earlier rows is exact, the full GP's
    # posterior on them (up to the jitter's effect, ~1e-8 of the prior variance here)
    X_test, _ = _data(20, seed=1)
    mean, var = _dense_posterior(model, X[:25], y[:25], X_test)
    got_mean, got_std = model.predict(X_test, return_std=True)
    np.testing.assert_allclose(got_mean, mean, atol=1e-6)
    np.testing.assert_allclose(got_std**2, var, atol=1e-6)
    model.partial_fit(X[25:120], y[25:120])  # a batch fills the basis and no more
    assert model.basis_vectors_.shape[0] == 30
    np.testing.assert_array_equal(model.basis_vectors_, X[model.basis_indices_])


def test_the_fitted_state_does_not_grow_with_the_rows():
    X, y = _data(4000)
    model = _model(max_basis=20).partial_fit(X[:200], y[:200])
    model.partial_fit(X[200:400], y[200:400])
    size = stream_nbytes(model)
    pickled = len(pickle.dumps(model))
    for start in range(400, 4000, 200):
        model.partial_fit(X[start : start + 200], y[start : start + 200])
    assert model._stream.n_rows == 4000
    assert stream_nbytes(model) == size
    assert len(pickle.dumps(model)) <= pickled + 200  # a few scalars' digits, not rows
    assert size < 40 * 20 * 20 * 8  # a few p x p arrays, nothing of n


def test_changed_number_of_features_or_targets_is_refused():
    X, y = _data(100)
    model = _model().partial_fit(X, y)
    with pytest.raises(ValueError, match="2 features"):
        model.partial_fit(np.c_[X, X[:, :1]], y)
    with pytest.raises(ValueError, match="partial_fit got `y` with 2 target"):
        model.partial_fit(X, np.c_[y, y])


def test_user_arrays_are_not_modified():
    X, y = _data(200)
    model = _model().partial_fit(X[:100], y[:100])
    X_b, y_b = X[100:].copy(), y[100:].copy()
    model.partial_fit(X_b, y_b)
    np.testing.assert_array_equal(X_b, X[100:])
    np.testing.assert_array_equal(y_b, y[100:])


def test_warm_start_starts_from_the_previous_solution():
    X, y = _data(300)
    # fixed hyperparameters: the previous basis (rows of the new X) is the new fit's start
    warm = _model(max_basis=10, warm_start=True).fit(X[:200], y[:200])
    first = warm.basis_vectors_.copy()
    warm.fit(X, y)
    np.testing.assert_array_equal(warm.basis_vectors_, first)
    cold = _model(max_basis=10).fit(X, y)
    assert not np.array_equal(cold.basis_vectors_, first)  # a cold fit selects afresh
    # with learning, the hyperparameters start from the previous ones, not the subset GP
    learner = SparseGPRegressor(max_basis=10, max_iter=1, refine_basis=0, random_state=0,
                                warm_start=True, noise_calibration=None)
    learner.fit(X[:200], y[:200])
    previous = learner.kernel_.theta.copy()
    starts = []

    def record(obj_func, theta, bounds):
        starts.append(np.array(theta))
        return theta, float(obj_func(theta, eval_gradient=False))

    learner.set_params(optimizer=record).fit(X, y)
    assert len(starts) == 1  # no subset start: only the learning on the basis
    np.testing.assert_allclose(starts[0][:-1], previous)
    learner.set_params(warm_start=False).fit(X, y)
    assert len(starts) > 2  # the subset start learns from several noise starts first
    learner.set_params(warm_start=True)
    with pytest.warns(UserWarning, match="warm_start=True ignored"):
        learner.fit(np.c_[X, X[:, 0]], y)


def test_warm_start_with_a_white_kernel_term_starts_from_its_level():
    # the WhiteKernel term is noise (regression/_white.py): a warm fit starts from the
    # previous kernel without it and from its level as noise, and the fitted kernel keeps
    # the user's form (one WhiteKernel), its level the previous one where nothing moved
    from sklearn.gaussian_process.kernels import WhiteKernel

    X, y = _data(200)
    starts = []

    def record(obj_func, theta, bounds):
        starts.append(np.array(theta))
        return theta, float(obj_func(theta, eval_gradient=False))

    kernel = C(1.0) * RBF(1.0) + WhiteKernel(0.1)
    model = SparseGPRegressor(kernel, max_basis=10, max_iter=1, refine_basis=0, random_state=0,
                              noise_calibration=None, warm_start=True)
    model.fit(X, y)
    previous = model.kernel_
    model.set_params(optimizer=record).fit(X, y)
    assert len(starts) == 1
    # the start: the previous rest-of-kernel theta, then log of the previous total noise
    np.testing.assert_allclose(starts[0][:-1], previous.k1.theta)
    np.testing.assert_allclose(
        np.exp(starts[0][-1]), model.noise_variance + previous.k2.noise_level
    )
    assert isinstance(model.kernel_.k2, WhiteKernel) and not isinstance(model.kernel_.k1.k2,
                                                                         WhiteKernel)
    np.testing.assert_allclose(model.kernel_.k2.noise_level, previous.k2.noise_level)


def test_streamed_inverse_is_that_of_the_predictions_matrix():
    # P = A'^-1 with A' = V V^T + s2 M, M = I - (j - delta) L^-1 L^-T (the prediction's
    # model, ._prediction); S = M^-1 - s2 P. A noise below the jitter (amplitude 1e3,
    # dense rows) makes delta < j matter: the transposed L^-T L^-1 was off by O(1).
    from skgpsparse.regression._streaming import _posterior

    X, y = _data(60)
    model = _model(kernel=C(1e3) * RBF(2.0), noise_variance=1e-6, max_basis=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X[:40], y[:40])
    stream = _posterior(model)
    p, s2, excess = stream.p, stream.s2, stream.jitter - stream.delta
    assert excess > 0
    L_inv = np.linalg.inv(stream.L)
    M = np.eye(p) - excess * (L_inv @ L_inv.T)
    A = stream.VVt + s2 * M
    np.testing.assert_allclose(stream.P @ A, np.eye(p), atol=1e-6)
    np.testing.assert_allclose(stream.S + s2 * stream.P, np.linalg.inv(M), rtol=1e-6,
                               atol=1e-6)


def test_grown_exact_factor_inverse_is_bordered_not_recomputed():
    # one row at a time into a full basis (Bayesian optimisation): the prediction's inverse
    # of the exact factor is carried and bordered; it is the factor's inverse (numpy's)
    from skgpsparse.regression._prediction import _bordered_inverse

    X, y = _data(40)
    X_test, _ = _data(60, seed=1)
    model = _model(max_basis=40, noise_variance=1e-4).partial_fit(X[:10], y[:10])
    model.predict(X_test, return_std=True)
    for i in range(10, 14):
        model.partial_fit(X[i : i + 1], y[i : i + 1])
        carried = model._predictor._inverse
        assert carried[1] is not None and carried[0].shape == (i, i)  # the previous factor's
        _, std = model.predict(X_test, return_std=True)
        factor, inverse = model._predictor._inverse
        assert factor is model._predictor.exact and factor.shape == (i + 1, i + 1)
        np.testing.assert_allclose(inverse, np.linalg.inv(factor).T, rtol=1e-10, atol=1e-10)
        mean, var = _dense_posterior(model, X[: i + 1], y[: i + 1], X_test)
        np.testing.assert_allclose(std**2, var, atol=1e-6)
    # several rows at once: the block form against numpy's inverse
    L = np.linalg.cholesky(model.kernel_(X[:20]) + 1e-4 * np.eye(20))
    got = _bordered_inverse(L, np.linalg.inv(L[:15, :15]).T)
    np.testing.assert_allclose(got, np.linalg.inv(L).T, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("objective", ["dtc", "vfe"])
def test_batches_with_their_row_noise_equal_the_posterior_on_all_rows(objective, weighted):
    # a stream of batches, each with its rows' noise a_i (the common scale s2 = 1 is kept
    # with optimizer=None) and weights w_i (zeros among them): the PP posterior on every row
    # with the noise a / w (GPML eqs. (8.26)-(8.27) with Lambda = diag(a / w)), and the
    # batch objective on every row with that row noise
    from skgpsparse.regression._row_noise import RowNoise

    X, y = _data(600)
    X_test, _ = _data(40, seed=1)
    rng = np.random.RandomState(2)
    a = S2 * rng.uniform(0.5, 2.0, 600)
    w = rng.randint(0, 4, 600).astype(float) if weighted else np.ones(600)
    model = _model(hyperparameter_objective=objective, normalize_y=True, noise_variance=a[:100])
    with pytest.raises(ValueError, match="needs the batch's per-row noise"):
        clone_of = _model(noise_variance=a[:100]).partial_fit(X[:100], y[:100])
        clone_of.partial_fit(X[100:200], y[100:200])
    for start in range(0, 600, 100):
        rows = slice(start, start + 100)
        model.partial_fit(X[rows], y[rows], sample_weight=w[rows] if weighted else None,
                          noise_variance=None if start == 0 else a[rows])
    assert model.basis_vectors_.shape == (15, 2)
    kept = w > 0
    assert model._noise_scale == 1.0
    np.testing.assert_allclose(model.noise_variance_, a[kept], rtol=1e-12)
    k, Z = model.kernel_, model.basis_vectors_
    y_mean, y_std = model._y_train_mean, model._y_train_std
    Y = (y - y_mean) / y_std
    lam_inv = w / a  # Lambda^-1
    K_uf, K_uu, K_tu = k(Z, X), k(Z), k(X_test, Z)
    Sigma_inv = cho_factor((K_uf * lam_inv) @ K_uf.T + K_uu)
    mean = K_tu @ cho_solve(Sigma_inv, (K_uf * lam_inv) @ Y) * y_std + y_mean
    var = (k.diag(X_test) - np.einsum("ij,ji->i", K_tu, np.linalg.solve(K_uu, K_tu.T))
           + np.einsum("ij,ji->i", K_tu, cho_solve(Sigma_inv, K_tu.T)))
    got_mean, got_std = model.predict(X_test, return_std=True)
    np.testing.assert_allclose(got_mean, mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got_std, np.sqrt(var) * y_std, rtol=0, atol=1e-10)
    expected = OBJECTIVES[objective](
        k, X[kept], Y[kept], Z, 1.0, jitter=model._jitter_value,
        row_noise=RowNoise(a[kept], w[kept]),
    )
    np.testing.assert_allclose(model.log_marginal_likelihood_value_, expected, rtol=1e-9)


def test_batch_noise_needs_a_noise_variance_array():
    X, y = _data(60)
    with pytest.raises(ValueError, match="needs a noise_variance array on the estimator"):
        _model().partial_fit(X, y, noise_variance=np.ones(60))
    model = _model(noise_variance=np.ones(30)).partial_fit(X[:30], y[:30])
    with pytest.raises(ValueError, match="noise_variance as an array must have one entry"):
        model.partial_fit(X[30:], y[30:], noise_variance=np.ones(29))


def test_partial_fit_requests_the_batch_noise_as_metadata():
    # scikit-learn's metadata routing: partial_fit's noise_variance is requestable as
    # sample_weight is (set_partial_fit_request), so a meta-estimator can route it
    import sklearn

    with sklearn.config_context(enable_metadata_routing=True):
        model = _model().set_partial_fit_request(sample_weight=True, noise_variance=True)
        requests = model.get_metadata_routing().partial_fit.requests
    assert requests == {"sample_weight": True, "noise_variance": True}


def test_weighted_stream_with_every_row_in_the_basis_has_the_rows_noise():
    # every streamed row is a basis vector: the exact GP of noise s2 / w_i per row (each
    # row's own), not of one s2 (that factor put the std 0.08 off)
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (10, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(10)
    w = rng.randint(1, 4, 10).astype(float)
    kernel = C(1.0) * RBF(1.0)
    model = SparseGPRegressor(kernel, max_basis=50, optimizer=None, noise_variance=0.05,
                              random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.partial_fit(X[:4], y[:4], sample_weight=w[:4])
        model.partial_fit(X[4:], y[4:], sample_weight=w[4:])
    gp = GaussianProcessRegressor(kernel, alpha=0.05 / w, optimizer=None).fit(X, y)
    X_test = np.linspace(-3, 3, 7)[:, None]
    mean, std = model.predict(X_test, return_std=True)
    want_mean, want_std = gp.predict(X_test, return_std=True)
    np.testing.assert_allclose(mean, want_mean, atol=1e-3)
    np.testing.assert_allclose(std, want_std, atol=1e-3)
