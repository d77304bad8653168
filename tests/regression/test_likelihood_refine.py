"""The basis inputs refined on the EP evidence under a non-Gaussian likelihood
(``skgpsparse.latent.learning._refine``, ``SparseGPRegressor(refine_basis=...)``)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, DotProduct
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.inference._ep import all_rows_ep
from skgpsparse.inference._sparse_prior import SparsePrior
from skgpsparse.latent.learning._refine import site_surrogate
from skgpsparse.latent.objectives._ep_evidence import AllRowsObjective, joint_theta
from skgpsparse.likelihoods import StudentT


def _real(n, seed, outliers=0.0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    f = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.5 * X[:, 1]
    y = f + 0.05 * rng.randn(n)
    hit = rng.rand(n) < outliers
    y[hit] += rng.choice([-1, 1], hit.sum()) * rng.uniform(3, 6, hit.sum())
    return X, y, f


def _sites(kernel, X, y, Z, likelihood, weights=None):
    prior = SparsePrior(kernel, X, Z, "fitc", weights=weights)
    tau, nu, _, converged = all_rows_ep(prior, y, 0.1, tol=1e-12, likelihood=likelihood)
    assert converged
    return tau, nu


def test_surrogate_gradient_is_its_central_differences():
    # in theta and in every coordinate of the basis inputs, with row weights
    X, y, _ = _real(60, 0, outliers=0.1)
    weights = np.random.RandomState(1).randint(1, 3, 60).astype(float)
    kernel = C(1.0) * RBF([1.0, 1.5])
    Z = X[::6] + 0.1
    sites = _sites(kernel, X, y, Z, StudentT(dof=4.0, scale=0.2), weights)
    f = site_surrogate(kernel, X, sites, weights)
    x = np.concatenate([kernel.theta, Z.ravel()])
    _, grad = f(x)
    h = 1e-6
    numeric = np.array([(f(x + h * e, False) - f(x - h * e, False)) / (2 * h)
                        for e in np.eye(x.size)])
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)
    assert np.max(np.abs(grad[kernel.n_dims:])) > 1e-3  # the inputs are not at a stationary point


def test_surrogate_gradient_is_the_ep_evidence_gradient_at_the_fixed_point():
    # GPML eq. (5.27): at converged sites the surrogate's gradient in (theta, Z) is that of
    # the EP evidence itself (sites re-converged at each point), by central differences of
    # the converged evidence in theta and in the basis inputs
    X, y, _ = _real(50, 2, outliers=0.1)
    kernel = C(1.0) * RBF(1.2)
    likelihood = StudentT(dof=4.0, scale=0.2)
    Z = X[::5] + 0.05
    sites = _sites(kernel, X, y, Z, likelihood)
    _, grad = site_surrogate(kernel, X, sites)(np.concatenate([kernel.theta, Z.ravel()]))

    def evidence(theta, Z):
        objective = AllRowsObjective(kernel, X, y, Z, sites, tol=1e-12, likelihood=likelihood)
        return objective(joint_theta(kernel.clone_with_theta(theta), likelihood, 0.1),
                         eval_gradient=False)

    h = 1e-5
    for j in range(kernel.n_dims):
        e = h * np.eye(kernel.n_dims)[j]
        numeric = (evidence(kernel.theta + e, Z) - evidence(kernel.theta - e, Z)) / (2 * h)
        assert grad[j] == pytest.approx(numeric, rel=1e-4, abs=1e-8)
    for j in (0, 3, 9, 14):  # entries of Z (row-major)
        e = np.zeros(Z.size)
        e[j] = h
        e = e.reshape(Z.shape)
        numeric = (evidence(kernel.theta, Z + e) - evidence(kernel.theta, Z - e)) / (2 * h)
        assert grad[kernel.n_dims + j] == pytest.approx(numeric, rel=1e-4, abs=1e-8)


def test_student_t_auto_refines_and_raises_the_evidence():
    X, y, f = _real(800, 3, outliers=0.1)
    X_test, _, f_test = _real(400, 4)
    kw = dict(likelihood="student_t", max_basis=15, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        refined = SparseGPRegressor(**kw).fit(X, y)
        greedy = SparseGPRegressor(refine_basis=0, **kw).fit(X, y)
    assert refined.n_refine_iter_ > 0 and greedy.n_refine_iter_ == 0
    # the basis moved off the rows it started from (basis_indices_)
    assert not np.allclose(refined.basis_vectors_, X[refined.basis_indices_])
    np.testing.assert_array_equal(greedy.basis_vectors_, X[greedy.basis_indices_])
    # the EP evidence of every row (the same likelihood family) rose, and the error against
    # the noise-free function fell
    assert refined.log_marginal_likelihood_value_ > greedy.log_marginal_likelihood_value_ + 5
    err = [np.mean((m.predict(X_test) - f_test) ** 2) for m in (refined, greedy)]
    assert err[0] < 0.7 * err[1]
    # the refined model predicts from its own basis: log_marginal_likelihood() is the fitted one
    assert refined._latent.log_marginal_likelihood() == pytest.approx(
        refined.log_marginal_likelihood_value_, rel=1e-6)


def test_poisson_auto_keeps_the_rows_and_an_int_refines():
    rng = np.random.RandomState(5)
    X = rng.uniform(-3, 3, (300, 2))
    y = rng.poisson(np.exp(np.sin(X[:, 0]))).astype(float)
    kw = dict(likelihood="poisson", max_basis=10, random_state=0)
    auto = SparseGPRegressor(**kw).fit(X, y)
    assert auto.n_refine_iter_ == 0
    np.testing.assert_array_equal(auto.basis_vectors_, X[auto.basis_indices_])
    moved = SparseGPRegressor(refine_basis=20, **kw).fit(X, y)
    assert 0 < moved.n_refine_iter_ <= 20
    assert moved.log_marginal_likelihood_value_ > auto.log_marginal_likelihood_value_


def test_fixed_hyperparameters_move_the_inputs_only():
    X, y, _ = _real(300, 6)
    kernel = C(1.0) * RBF(1.0)
    likelihood = StudentT(dof=4.0, scale=0.1)
    kw = dict(kernel=kernel, likelihood=likelihood, max_basis=10, optimizer=None,
              random_state=0)
    assert SparseGPRegressor(**kw).fit(X, y).n_refine_iter_ == 0  # "auto": no
    moved = SparseGPRegressor(refine_basis=15, **kw).fit(X, y)
    assert moved.n_refine_iter_ > 0
    np.testing.assert_array_equal(moved.kernel_.theta, kernel.theta)
    assert moved.likelihood_.scale == pytest.approx(0.1 * moved._y_train_std)


def test_refine_basis_needs_input_gradients():
    X, y, _ = _real(100, 7)
    model = SparseGPRegressor(kernel=DotProduct(), likelihood="student_t", refine_basis=5,
                              max_basis=10)
    with pytest.raises(ValueError, match="refine_basis"):
        model.fit(X, y)
    # "auto" keeps the rows for such a kernel
    auto = SparseGPRegressor(kernel=DotProduct(), likelihood="student_t", max_basis=10,
                             random_state=0).fit(X, y)
    assert auto.n_refine_iter_ == 0


def test_refinement_on_a_subsample_above_learning_rows():
    # above learning_rows the inputs move on that many rows; EP then runs on every row
    X, y, _ = _real(700, 8, outliers=0.05)
    model = SparseGPRegressor(likelihood="student_t", max_basis=10, learning_rows=300,
                              random_state=0).fit(X, y)
    assert model.n_refine_iter_ > 0
    assert model._latent.site_precision_.shape == (700,)
    latent = model._latent
    prior = SparsePrior(latent.kernel_, X, latent.basis_vectors_, "fitc")
    centre, scale = model._y_train_mean, model._y_train_std
    tau, _, _, converged = all_rows_ep(prior, (y - centre) / scale, latent.bias_,
                                       likelihood=latent.likelihood)
    assert converged
    np.testing.assert_allclose(latent.site_precision_, tau, atol=1e-5)


def test_warm_start_with_a_likelihood_warns_and_starts_afresh():
    # the Gaussian warm start reads the previous fit's noise, which a non-Gaussian fit has
    # not: the second fit is the first one again (it raised an AttributeError before)
    X, y, _ = _real(200, 9)
    model = SparseGPRegressor(likelihood="student_t", max_basis=8, random_state=0,
                              warm_start=True).fit(X, y)
    first = model.predict(X)
    with pytest.warns(UserWarning, match="warm_start=True is not taken"):
        model.fit(X, y)
    np.testing.assert_allclose(model.predict(X), first, rtol=1e-10)


def test_the_refinement_outlasts_two_losing_alternations(monkeypatch):
    # an alternation can lose evidence (the surrogate is EP's at its sites only) and a later
    # one gain more: the refinement stops after PATIENCE = 3 alternations in a row without a
    # gain of STOP_GAIN per row, not 2, and returns the best alternation's kernel and inputs
    from skgpsparse.latent.learning import _refine

    X, y, _ = _real(300, 10, outliers=0.1)
    steps, start = [], []
    real_step, real_prior = _refine._evidence_step, _refine.with_length_scale_prior
    # the alternations' -log evidence per row against the start's: a gain, two losses, the
    # largest gain, then losses until the refinement stops
    offsets = [-0.01, 1.0, 1.0, -0.02, 1.0, 1.0, 1.0, 1.0, 1.0]

    def evidence_step(kernel, bias, likelihood, X_, y_, Z, *args):
        out = real_step(kernel, bias, likelihood, X_, y_, Z, *args)
        steps.append((kernel.theta.copy(), Z.copy()))
        return (start[0] + offsets[len(steps) - 1],) + out[1:]

    def with_prior(objective, kernel, n):  # the first is the start's evidence
        f = real_prior(objective, kernel, n)

        def recorded(*args, **kwargs):
            value = f(*args, **kwargs)
            start.append(float(value))
            return value
        return f if start else recorded

    monkeypatch.setattr(_refine, "_evidence_step", evidence_step)
    monkeypatch.setattr(_refine, "with_length_scale_prior", with_prior)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SparseGPRegressor(likelihood="student_t", max_basis=10, refine_basis=2000,
                                  random_state=0).fit(X, y)
    assert len(steps) == 7  # the fourth gained; three more without a gain
    theta, Z = steps[3]
    np.testing.assert_allclose(model._latent.kernel_.theta, theta)
    np.testing.assert_allclose(model.basis_vectors_, Z)
