"""SparseGPRegressor(likelihood="poisson" | "student_t"): the latent model under a likelihood.

Checked against computations written here: a dense EP over every row in numpy with the tilted
moments by a fine grid in f (the full-basis limit), scikit-learn's exact GP (Student-t with huge
degrees of freedom), the rate counts were drawn from, and the in-memory fit (dask, streams).
"""

import pickle
import warnings

import numpy as np
import pytest
from scipy.integrate import trapezoid
from scipy.stats import norm, poisson
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.utils._param_validation import InvalidParameterError

from skgpsparse import SparseGPRegressor
from skgpsparse.inference._ep import all_rows_ep
from skgpsparse.inference._sparse_prior import SparsePrior
from skgpsparse.latent._predictors import AllRowsPredictor
from skgpsparse.likelihoods import Poisson, StudentT


def _counts(n=300, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    log_rate = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    return X, rng.poisson(np.exp(log_rate)).astype(float), np.exp(log_rate)


def _real(n=300, seed=0, outliers=0.0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    y = f + 0.1 * rng.randn(n)
    hit = rng.rand(n) < outliers
    y[hit] += rng.choice([-1, 1], hit.sum()) * rng.uniform(3, 6, hit.sum())
    return X, y, f


def _grid_tilted(log_density, y, mean, var, n_grid=4001, width=12.0):
    """log Z and the tilted mean and variance of each row on a fine grid in f."""
    sd = np.sqrt(var)
    lo = np.minimum(mean - width * sd, y - width)
    hi = np.maximum(mean + width * sd, y + width)
    t = np.linspace(0.0, 1.0, n_grid)
    f = lo[:, None] + (hi - lo)[:, None] * t
    log_terms = log_density(y[:, None], f) + norm.logpdf(f, mean[:, None], sd[:, None])
    top = log_terms.max(axis=1, keepdims=True)
    w = np.exp(log_terms - top)
    Z = trapezoid(w, f, axis=1)
    m1 = trapezoid(w * f, f, axis=1) / Z
    m2 = trapezoid(w * f * f, f, axis=1) / Z
    return np.log(Z) + top[:, 0], m1, m2 - m1 * m1


def _dense_ep(K, y, bias, log_density, sweeps=200, tol=1e-9):
    """Parallel EP (GPML §3.6) over every row under the dense prior N(0, K), f + bias in the
    likelihood, with tilted moments on a grid; returns the site precisions and natural means."""
    n = y.size
    tau, nu = np.zeros(n), np.zeros(n)
    for _ in range(sweeps):
        # Sigma = (K^-1 + S)^-1 = K - K S^1/2 B^-1 S^1/2 K, B = I + S^1/2 K S^1/2 (GPML 3.6)
        r = np.sqrt(tau)
        B = np.eye(n) + r[:, None] * K * r[None, :]
        Sigma = K - (K * r[None, :]) @ np.linalg.solve(B, r[:, None] * K)
        mu = Sigma @ nu
        s2 = np.diag(Sigma)
        cav_var = 1.0 / (1.0 / s2 - tau)
        cav_mean = cav_var * (mu / s2 - nu)
        _, m_hat, v_hat = _grid_tilted(log_density, y, cav_mean + bias, cav_var)
        m_hat -= bias
        new_tau = 1.0 / v_hat - 1.0 / cav_var
        new_nu = m_hat / v_hat - cav_mean / cav_var
        step = max(np.max(np.abs(new_tau - tau)), np.max(np.abs(new_nu - nu)))
        tau, nu = 0.5 * tau + 0.5 * new_tau, 0.5 * nu + 0.5 * new_nu
        if step < tol:
            break
    return tau, nu


@pytest.mark.parametrize("case", ["poisson", "student_t"])
def test_full_basis_matches_a_dense_ep(case):
    # every row in the basis: the FITC prior is the dense prior (to the jitter), so EP over
    # every row is GPML's dense EP, written above with its own tilted moments
    rng = np.random.RandomState(1)
    X = rng.uniform(-2, 2, (25, 1))
    f = np.sin(2 * X[:, 0])
    if case == "poisson":
        likelihood, y = Poisson(), rng.poisson(np.exp(f + 1.0)).astype(float)
    else:
        likelihood, y = StudentT(dof=4.0, scale=0.3), f + 0.05 * rng.randn(25)
    kernel = C(1.0) * RBF(0.7)
    model = SparseGPRegressor(kernel=kernel, likelihood=likelihood, max_basis=25,
                              optimizer=None, random_state=0).fit(X, y)
    assert model.basis_vectors_.shape == (25, 1)
    tau, nu = _dense_ep(kernel(X), y, model.bias_, likelihood.log_density)
    X_test = np.linspace(-2.5, 2.5, 40)[:, None]
    K_s = kernel(X_test, X)
    # (K + S^-1)^-1 = S^1/2 B^-1 S^1/2 (GPML eqs. (3.60)-(3.61))
    r = np.sqrt(tau)
    A = r[:, None] * np.linalg.solve(np.eye(25) + r[:, None] * kernel(X) * r, np.diag(r))
    mean = K_s @ (nu - A @ kernel(X) @ nu) + model.bias_
    var = np.diag(kernel(X_test)) - np.einsum("ij,jk,ik->i", K_s, A, K_s)
    got_mean, got_var = model._predictor.latent.latent_mean_and_variance(X_test)
    np.testing.assert_allclose(got_mean, mean, atol=2e-5)
    np.testing.assert_allclose(got_var, var, atol=2e-5)
    # and predict's moments of y from them
    mean_y, std_y = model.predict(X_test, return_std=True)
    want_mean, want_var = likelihood.predictive_moments(mean, var)
    np.testing.assert_allclose(mean_y, want_mean, rtol=1e-4)
    np.testing.assert_allclose(std_y, np.sqrt(want_var), rtol=1e-4)


def test_student_t_with_huge_dof_is_the_gaussian_gp():
    rng = np.random.RandomState(2)
    X = rng.uniform(-3, 3, (40, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(40)
    y -= np.median(y)  # the bias starts (and, not learned, stays) at the median target
    kernel = C(1.0) * RBF(1.5)
    model = SparseGPRegressor(kernel=kernel, likelihood=StudentT(dof=1e7, scale=0.1),
                              max_basis=40, optimizer=None, random_state=0).fit(X, y)
    exact = GaussianProcessRegressor(kernel, alpha=0.01, optimizer=None).fit(X, y)
    X_test = rng.uniform(-3, 3, (30, 2))
    mean, var = model._predictor.latent.latent_mean_and_variance(X_test)
    want_mean, want_std = exact.predict(X_test, return_std=True)
    np.testing.assert_allclose(mean, want_mean, atol=1e-4)
    np.testing.assert_allclose(np.sqrt(var), want_std, atol=1e-4)
    _, std_y = model.predict(X_test, return_std=True)  # the noise's variance added
    np.testing.assert_allclose(std_y, np.sqrt(want_std**2 + 0.01), atol=1e-4)


def test_poisson_recovers_the_rate():
    X, y, rate = _counts(n=2000, seed=3)
    model = SparseGPRegressor(likelihood="poisson", max_basis=40, random_state=0).fit(X, y)
    X_test, _, rate_test = _counts(n=500, seed=4)
    pred = model.predict(X_test)
    assert np.all(pred > 0)
    assert np.median(np.abs(np.log(pred / rate_test))) < 0.1
    # the basis attributes of an int max_basis, as the Gaussian regressor's
    assert model.n_basis_ == len(model.basis_vectors_) == 40
    assert model.basis_size_curve_ is None
    # its log densities of test counts are Poisson's under the predicted rates, roughly
    y_test = np.random.RandomState(5).poisson(rate_test)
    lpd = model.log_predictive_density(X_test, y_test)
    assert abs(lpd.mean() - poisson.logpmf(y_test, rate_test).mean()) < 0.05
    # the Gaussian default has no positivity: the Poisson model's deviance is lower
    gauss = SparseGPRegressor(max_basis=40, random_state=0).fit(X, y).predict(X_test)
    assert np.mean((pred - rate_test) ** 2) < np.mean((gauss - rate_test) ** 2)


def test_student_t_is_robust_to_gross_errors():
    X, y, f = _real(n=600, seed=6, outliers=0.1)
    X_test, _, f_test = _real(n=300, seed=7)
    robust = SparseGPRegressor(likelihood="student_t", max_basis=40, random_state=0).fit(X, y)
    gauss = SparseGPRegressor(max_basis=40, random_state=0).fit(X, y)
    err_t = np.mean((robust.predict(X_test) - f_test) ** 2)
    err_g = np.mean((gauss.predict(X_test) - f_test) ** 2)
    assert err_t < 0.5 * err_g


@pytest.mark.parametrize("shift", [30.0, 1e3, 1e6])
def test_student_t_is_robust_to_far_outliers(shift):
    # 5 % of the targets displaced by 1-2 x shift (the clean ones spread about 1): the fit
    # stays on the clean function whatever the shift. Before the bias started at the targets'
    # median (Likelihood.target_centre) it started at their mean, among the outliers from a
    # shift of about 300 on, and the fit ended flat (error 0.66, the clean targets' spread)
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (400, 1))
    f = np.sin(2 * X[:, 0])
    y = f + 0.1 * rng.randn(400)
    far = rng.rand(400) < 0.05
    y[far] += shift * (1 + rng.rand(far.sum()))
    y_before = y.copy()
    model = SparseGPRegressor(likelihood="student_t", max_basis=30, random_state=0).fit(X, y)
    X_test = np.linspace(-2.9, 2.9, 100)[:, None]
    error = np.sqrt(np.mean((model.predict(X_test) - np.sin(2 * X_test[:, 0])) ** 2))
    assert error < 0.05
    assert model.likelihood_.scale == pytest.approx(0.1, rel=0.3)
    np.testing.assert_array_equal(y, y_before)


def test_student_t_scale_of_tied_targets_with_far_outliers():
    # two thirds of the targets exactly 0 (their median absolute deviation is 0) and 5 %
    # shifted by 10^4: the targets are scaled by the others' median deviation, not by their
    # standard deviation (the outliers', about 2,000: the fit was flat, error 0.39)
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (400, 1))
    g = np.where(X[:, 0] > 1, np.sin(2 * X[:, 0]), 0.0)
    y = g.copy()
    y[rng.rand(400) < 0.05] += 1e4
    model = SparseGPRegressor(likelihood="student_t", max_basis=40, random_state=0).fit(X, y)
    X_test = np.linspace(-2.9, 2.9, 100)[:, None]
    g_test = np.where(X_test[:, 0] > 1, np.sin(2 * X_test[:, 0]), 0.0)
    assert np.sqrt(np.mean((model.predict(X_test) - g_test) ** 2)) < 0.15
    assert model._y_train_std < 2.0


@pytest.mark.parametrize("likelihood", ["poisson", "student_t"])
def test_log_predictive_density_is_the_likelihoods(likelihood):
    X, y = (_counts()[:2] if likelihood == "poisson" else _real()[:2])
    model = SparseGPRegressor(likelihood=likelihood, max_basis=20, random_state=0).fit(X, y)
    latent = model._predictor.latent
    mean, var = latent.latent_mean_and_variance(X[:10])
    centre, scale = model._y_train_mean, model._y_train_std
    fitted = model._latent.likelihood  # likelihood_ in the units of y, this in the fitted ones
    want = fitted.log_predictive((y[:10] - centre) / scale, mean, var) - np.log(scale)
    np.testing.assert_allclose(model.log_predictive_density(X[:10], y[:10]), want, rtol=1e-12)
    # return_cov's diagonal is return_std's square
    _, cov = model.predict(X[:10], return_cov=True)
    _, std = model.predict(X[:10], return_std=True)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), std, rtol=1e-8)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(X), model.predict(X))


def test_student_t_learns_the_scale_of_its_noise():
    # targets with Student-t noise of a known scale (4 degrees of freedom, the default's):
    # likelihood_ holds the learned scale in the units of y (the fit divides the targets by
    # their robust spread), within 20 % of the truth (a fixed scale would sit at its start,
    # half that spread, 3.5 times the truth here)
    rng = np.random.RandomState(11)
    n, truth = 1500, 0.15
    X = rng.uniform(-3, 3, (n, 2))
    y = 3.0 * (np.sin(X[:, 0]) + 0.5 * X[:, 1]) + truth * rng.standard_t(4.0, n)
    model = SparseGPRegressor(likelihood="student_t", max_basis=30, random_state=0).fit(X, y)
    assert isinstance(model.likelihood_, StudentT)
    assert model.likelihood_.dof == 4.0  # fixed (docs: why)
    assert model.likelihood_.scale == pytest.approx(truth, rel=0.2)
    # likelihood_ is the fitted likelihood in the units of y
    assert model.likelihood_.scale == pytest.approx(
        model._latent.likelihood.scale * model._y_train_std, rel=1e-12)


def test_learning_objective_gradient_in_the_likelihoods_parameters():
    # the all-rows objective at z = [theta, log scale, log dof, b] (FITC prior, weighted rows):
    # its gradient against central differences of the converged EP evidence
    from skgpsparse.latent.objectives._ep_evidence import AllRowsObjective, joint_theta

    X, y, _ = _real(n=60, seed=12, outliers=0.1)
    weights = np.random.RandomState(0).randint(1, 3, 60).astype(float)
    kernel = C(1.0) * RBF(1.0)
    likelihood = StudentT(dof=4.0, scale=0.2)
    objective = AllRowsObjective(kernel, X, y, X[::4], (None, None), tol=1e-11,
                                 likelihood=likelihood, weights=weights)
    z = joint_theta(kernel, likelihood, 0.1)
    assert z.size == kernel.n_dims + 3
    _, grad = objective(z)
    h = 1e-5
    numeric = np.empty(z.size)
    for j in range(z.size):
        up, down = z.copy(), z.copy()
        up[j] += h
        down[j] -= h
        numeric[j] = (objective(up, eval_gradient=False)
                      - objective(down, eval_gradient=False)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-7)
    assert abs(grad[kernel.n_dims]) > 1e-2  # log scale: the evidence is not flat in it


def test_student_t_partial_fit_keeps_the_learned_scale():
    # later batches enter under the first fit's kernel, basis, bias and learned likelihood;
    # the stream approaches EP over every row under those
    X, y, _ = _real(n=900, seed=13, outliers=0.05)
    stream = SparseGPRegressor(likelihood="student_t", max_basis=20, random_state=0)
    stream.partial_fit(X[:300], y[:300])
    first = stream.predict(X)
    latent = stream._latent
    kernel, basis, bias = latent.kernel_, latent.basis_vectors_, latent.bias_
    learned = stream.likelihood_
    fitted = latent.likelihood
    for rows in np.array_split(np.arange(300, 900), 3):
        stream.partial_fit(X[rows], y[rows])
    assert stream.likelihood_ is learned and stream._latent.likelihood.scale == fitted.scale
    centre, scale = stream._y_train_mean, stream._y_train_std
    prior = SparsePrior(kernel, X, basis, "fitc")
    tau, nu, _, converged = all_rows_ep(prior, (y - centre) / scale, bias, likelihood=fitted)
    assert converged
    full = AllRowsPredictor(kernel, basis, X, (y - centre) / scale, tau, nu, bias,
                            likelihood=fitted)
    want = centre + scale * full.latent_mean_and_variance(X)[0]
    got = stream.predict(X)
    assert np.max(np.abs(got - want)) < 0.05
    assert np.max(np.abs(got - want)) < 0.5 * np.max(np.abs(first - want))


def test_gaussian_log_predictive_density_is_the_normal_density():
    X, y, _ = _real(n=200)
    model = SparseGPRegressor(max_basis=20, random_state=0).fit(X, y)
    mean, std = model.predict(X[:20], return_std=True)
    want = norm.logpdf(y[:20], mean, np.sqrt(std**2 + model.noise_variance_))
    np.testing.assert_allclose(model.log_predictive_density(X[:20], y[:20]), want, rtol=1e-12)


def test_gaussian_default_is_unchanged_by_the_parameter():
    X, y, _ = _real(n=200)
    a = SparseGPRegressor(max_basis=20, random_state=0).fit(X, y)
    b = SparseGPRegressor(likelihood="gaussian", max_basis=20, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert not hasattr(a, "likelihood_")


def test_bad_targets_and_options_raise_naming_them():
    X, y, _ = _counts(n=50)
    model = SparseGPRegressor(likelihood="poisson", max_basis=10)
    with pytest.raises(ValueError, match="non-negative counts"):
        model.fit(X, np.where(np.arange(50) == 3, -1.0, y))
    with pytest.raises(ValueError, match="must be counts"):
        model.fit(X, y + 0.5)
    with pytest.raises(InvalidParameterError, match="likelihood"):
        SparseGPRegressor(likelihood="laplace").fit(X, y)
    with pytest.raises(ValueError, match="fits one target"):
        model.fit(X, np.column_stack([y, y]))
    with pytest.raises(ValueError, match="noise_variance array"):
        SparseGPRegressor(likelihood="poisson", noise_variance=np.ones(50)).fit(X, y)
    # a rate with its exposure as sample_weight (PoissonRegressor's convention) is accepted
    exposure = np.full(50, 2.0)
    y_copy, w_copy = y.copy(), exposure.copy()
    model.fit(X, y / exposure, sample_weight=exposure)
    np.testing.assert_array_equal(y, y_copy)  # the user's arrays are not modified
    np.testing.assert_array_equal(exposure, w_copy)


def test_integer_weights_are_repeated_rows():
    X, y, _ = _counts(n=60)
    w = np.random.RandomState(0).randint(1, 3, 60).astype(float)
    kernel = C(1.0) * RBF(1.0) + WhiteKernel(0.1)
    kw = dict(kernel=kernel, likelihood="poisson", max_basis=10, optimizer=None,
              selection="info_gain", random_state=0)
    weighted = SparseGPRegressor(**kw).fit(X, y, sample_weight=w)
    idx = np.repeat(np.arange(60), w.astype(int))
    repeated = SparseGPRegressor(**kw).fit(X[idx], y[idx])
    np.testing.assert_allclose(weighted.basis_vectors_, repeated.basis_vectors_)
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-6)


def test_partial_fit_streams_ep_over_later_batches():
    X, y, _ = _counts(n=900, seed=8)
    stream = SparseGPRegressor(likelihood="poisson", max_basis=20, random_state=0)
    stream.partial_fit(X[:300], y[:300])
    first = stream.predict(X)
    latent = stream._latent
    kernel, basis, bias = latent.kernel_, latent.basis_vectors_, latent.bias_
    for rows in np.array_split(np.arange(300, 900), 3):
        stream.partial_fit(X[rows], y[rows])
    # EP over all 900 rows under the first fit's kernel, basis and bias: what the stream
    # approximates without revisiting the earlier batches' sites
    prior = SparsePrior(kernel, X, basis, "fitc")
    tau, nu, _, converged = all_rows_ep(prior, y, bias, likelihood=Poisson())
    assert converged
    full = AllRowsPredictor(kernel, basis, X, y, tau, nu, bias, likelihood=Poisson())
    want = np.exp(np.minimum(sum(m * c for m, c in zip(full.latent_mean_and_variance(X),
                                                         (1.0, 0.5))), 700))
    got = stream.predict(X)
    assert np.max(np.abs(got / want - 1)) < 0.05
    assert np.max(np.abs(got / want - 1)) < 0.5 * np.max(np.abs(first / want - 1))


def test_partial_fit_keeps_a_small_first_batch():
    X, y, _ = _counts(n=200, seed=9)
    model = SparseGPRegressor(likelihood="poisson", max_basis=30, random_state=0)
    with pytest.warns(UserWarning, match="fewer than max_basis"):
        model.partial_fit(X[:10], y[:10])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.partial_fit(X[10:200], y[10:200])
    assert model.basis_vectors_.shape == (30, 2)  # refitted on the 200 rows kept


def test_sample_y_and_structured_refusals():
    X, y, _ = _counts(n=60)
    model = SparseGPRegressor(likelihood="poisson", max_basis=10, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="sample_y"):
        model.sample_y(X[:3])
