"""Refinement of the basis vectors (SparseGPRegressor(refine_basis=...))."""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, DotProduct, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression._dtc import dtc_log_marginal_likelihood
from skgpsparse.regression._refine import (
    AUTO_ITERATIONS,
    objective_and_gradient,
    refine_iterations,
)
from skgpsparse.regression._vfe import OBJECTIVES, vfe_log_marginal_likelihood


def _data(n=300, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.randn(n)
    return X, y


def _inputs_gradient_beside_the_objective(kernel, X, y, Z, s2, jitter, objective, rtol=1e-10):
    """The refinement's gradient in ``Z``, after checking that its value and hyperparameter
    gradient are the objective's own (to ``rtol``)."""
    value, g_theta, g_noise, g_Z = objective_and_gradient(
        kernel, X, y[:, None], Z, s2, jitter, objective
    )
    ref_value, ref_grad = OBJECTIVES[objective](
        kernel, X, y, Z, s2, eval_gradient=True, jitter=jitter
    )
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(np.append(g_theta, g_noise), ref_grad, rtol=rtol, atol=rtol)
    return g_Z


@pytest.mark.parametrize("objective", ["dtc", "vfe"])
@pytest.mark.parametrize("kernel", [C(1.3) * RBF([0.8, 1.5]), Matern(1.0, nu=2.5) + C(0.1)])
def test_gradient_in_the_basis_inputs_matches_central_differences(objective, kernel):
    X, y = _data(150)
    Z = X[:8] + 0.05
    s2, jitter = 0.05, 1e-6
    g_Z = _inputs_gradient_beside_the_objective(kernel, X, y, Z, s2, jitter, objective)
    fd = np.zeros_like(Z)
    h = 1e-6
    for j in range(Z.shape[0]):
        for k in range(Z.shape[1]):
            Zp, Zm = Z.copy(), Z.copy()
            Zp[j, k] += h
            Zm[j, k] -= h
            fd[j, k] = (
                OBJECTIVES[objective](kernel, X, y, Zp, s2, jitter=jitter)
                - OBJECTIVES[objective](kernel, X, y, Zm, s2, jitter=jitter)
            ) / (2 * h)
    np.testing.assert_allclose(g_Z, fd, rtol=0, atol=1e-6 * np.abs(fd).max())


@pytest.mark.parametrize("optimizer", ["fmin_l_bfgs_b", None])
def test_refinement_raises_the_bound_and_reports_it(optimizer):
    X, y = _data()
    # the bound at the refinement's own noise variance (no leave-one-out calibration after)
    kw = dict(max_basis=12, hyperparameter_objective="vfe", random_state=0, optimizer=optimizer,
              noise_calibration=None)
    greedy = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), refine_basis=0, **kw).fit(X, y)
    refined = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), refine_basis=40, **kw).fit(X, y)
    if optimizer is None:  # the greedy part is the same fit; then the vectors move
        np.testing.assert_array_equal(refined.basis_indices_, greedy.basis_indices_)
    assert refined.n_refine_iter_ > 0 and greedy.n_refine_iter_ == 0
    assert not np.allclose(refined.basis_vectors_, X[refined.basis_indices_])
    assert refined.log_marginal_likelihood_value_ > greedy.log_marginal_likelihood_value_ + 10
    # the reported value is the bound at the fitted basis vectors and hyperparameters
    direct = vfe_log_marginal_likelihood(
        refined.kernel_, X, y, refined.basis_vectors_, refined.noise_variance_,
        jitter=refined._jitter_value,
    )
    assert refined.log_marginal_likelihood_value_ == pytest.approx(direct, rel=1e-9)
    assert refined.log_marginal_likelihood() == refined.log_marginal_likelihood_value_
    if optimizer is None:  # fixed hyperparameters stay fixed
        assert refined.kernel_.theta == pytest.approx(greedy.kernel_.theta, abs=0)
        assert refined.noise_variance_ == greedy.noise_variance_
    else:
        assert refined.log_marginal_likelihood(refined.kernel_.theta) == pytest.approx(
            direct, rel=1e-9
        )


def test_refined_predictions_are_the_projected_process_at_the_moved_basis():
    X, y = _data(200)
    model = SparseGPRegressor(
        C(1.0) * RBF([1.0, 1.0]), max_basis=10, hyperparameter_objective="vfe",
        refine_basis=20, random_state=0,
    ).fit(X, y)
    Xq = np.random.RandomState(3).uniform(-3, 3, (25, 2))
    k, Z, s2 = model.kernel_, model.basis_vectors_, model.noise_variance_
    # GPML eqs. (8.26)-(8.27), formed densely at the refined basis
    K_uu, K_uf, K_qu = k(Z), k(Z, X), k(Xq, Z)
    Sigma = np.linalg.inv(s2 * K_uu + K_uf @ K_uf.T)
    mean = K_qu @ Sigma @ K_uf @ y
    var = (
        k.diag(Xq)
        - np.einsum("ij,ij->i", K_qu @ np.linalg.inv(K_uu), K_qu)
        + s2 * np.einsum("ij,ij->i", K_qu @ Sigma, K_qu)
    )
    mu, std = model.predict(Xq, return_std=True)
    np.testing.assert_allclose(mu, mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(std**2, var, rtol=1e-5, atol=1e-7)


def test_refinement_improves_the_test_fit_of_a_small_basis():
    X, y = _data(600, seed=1)
    X_test, y_test = _data(600, seed=2)
    kw = dict(max_basis=10, hyperparameter_objective="vfe", random_state=0)
    errors = []
    for refine in (0, 50):
        model = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), refine_basis=refine, **kw)
        errors.append(np.mean((model.fit(X, y).predict(X_test) - y_test) ** 2))
    assert errors[1] < 0.7 * errors[0]


def test_multiple_targets_are_refined_together():
    X, y = _data(200)
    Y = np.column_stack([y, -2.0 * y + 0.5])
    model = SparseGPRegressor(
        max_basis=8, hyperparameter_objective="vfe", refine_basis=10, random_state=0
    ).fit(X, Y)
    direct = vfe_log_marginal_likelihood(
        model.kernel_, X, Y, model.basis_vectors_, model.noise_variance_,
        jitter=model._jitter_value,
    )
    assert model.log_marginal_likelihood_value_ == pytest.approx(direct, rel=1e-9)
    assert model.predict(X[:5]).shape == (5, 2)


def test_dtc_objective_refines_too():
    X, y = _data(200)
    model = SparseGPRegressor(
        max_basis=8, refine_basis=10, optimizer=None, random_state=0, hyperparameter_objective="dtc",
    )
    model.fit(X, y)
    direct = dtc_log_marginal_likelihood(
        model.kernel_, X, y, model.basis_vectors_, model.noise_variance_,
        jitter=model._jitter_value,
    )
    assert model.log_marginal_likelihood_value_ == pytest.approx(direct, rel=1e-9)


@pytest.mark.parametrize("kernel", [DotProduct(1.0), RBF(1.0) + DotProduct()])
def test_kernel_without_input_gradient_is_refused_before_any_work(kernel):
    X, y = _data(50)
    with pytest.raises(ValueError, match="refine_basis"):
        SparseGPRegressor(kernel, max_basis=5, refine_basis=5).fit(X, y)
    with warnings.catch_warnings():  # refine_basis=0 and the default "auto" accept it
        warnings.simplefilter("ignore")
        SparseGPRegressor(kernel, max_basis=5, optimizer=None, refine_basis=0).fit(X, y)
        model = SparseGPRegressor(kernel, max_basis=5, max_iter=1).fit(X, y)
    assert model.n_refine_iter_ == 0
    np.testing.assert_array_equal(model.basis_vectors_, X[model.basis_indices_])


def test_auto_refines_fits_that_learn_with_the_default_optimizer():
    X, y = _data(200)
    kw = {"max_basis": 10, "random_state": 0}
    auto = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), **kw).fit(X, y)
    assert auto.refine_basis == "auto" and auto.n_refine_iter_ > 0
    assert not np.allclose(auto.basis_vectors_, X[auto.basis_indices_])
    explicit = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), refine_basis=AUTO_ITERATIONS, **kw)
    np.testing.assert_array_equal(explicit.fit(X, y).predict(X[:20]), auto.predict(X[:20]))
    # fixed hyperparameters, a callable optimizer, the DTC evidence, or every row in the
    # basis: the rows stay
    fixed = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), optimizer=None, **kw).fit(X, y)
    dtc = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), hyperparameter_objective="dtc",
                            max_iter=1, **kw).fit(X, y)

    def optimizer(obj_func, initial_theta, bounds):
        return initial_theta, obj_func(initial_theta, eval_gradient=False)

    own = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), optimizer=optimizer, max_iter=1, **kw)
    full = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), max_basis=40, max_iter=1)
    for model, X_fit in ((fixed, X), (own.fit(X, y), X), (dtc, X),
                         (full.fit(X[:40], y[:40]), X[:40])):
        assert model.n_refine_iter_ == 0
        np.testing.assert_array_equal(model.basis_vectors_, X_fit[model.basis_indices_])


@pytest.mark.parametrize(
    "args, expected",
    [
        (("auto", "vfe", "fmin_l_bfgs_b", RBF(1.0), True, 10, 100, True), AUTO_ITERATIONS),
        (("auto", "dtc", "fmin_l_bfgs_b", RBF(1.0), True, 10, 100, True), 0),
        (("auto", "vfe", None, RBF(1.0), False, 10, 100, True), 0),
        (("auto", "vfe", "fmin_l_bfgs_b", RBF(1.0), True, 100, 100, True), 0),
        (("auto", "vfe", "fmin_l_bfgs_b", RBF(1.0), True, 10, 100, False), 0),
        (("auto", "vfe", "fmin_l_bfgs_b", DotProduct(), True, 10, 100, True), 0),
        ((25, "dtc", None, RBF(1.0), False, 10, 100, True), 25),
        ((0, "vfe", "fmin_l_bfgs_b", RBF(1.0), True, 10, 100, True), 0),
    ],
)
def test_refine_iterations_of_auto_and_of_a_number(args, expected):
    assert refine_iterations(*args) == expected


def test_refine_basis_is_validated():
    X, y = _data(50)
    with pytest.raises(ValueError, match="refine_basis"):
        SparseGPRegressor(refine_basis=-1).fit(X, y)


@pytest.mark.parametrize("objective", ["dtc", "vfe"])
def test_an_ill_conditioned_basis_takes_the_triangular_solves(objective):
    # length scales of the inputs' spread and 25 basis vectors: K_uu's square is beyond
    # the Gram route (on elevators the greedy basis scored -inf by it and never moved)
    from scipy.linalg import cholesky

    from skgpsparse.regression._refine import _gram_conditioned

    X, y = _data(150)
    kernel = C(1.0) * RBF([3.0, 4.0])
    Z = X[:25] + 0.05
    s2, jitter = 0.05, 1e-8
    L = cholesky(kernel(Z) + jitter * np.eye(len(Z)), lower=True)
    assert not _gram_conditioned(L)
    # the refinement forms K_uf from the scaled inputs' inner products, the reference by
    # cdist: their rounding differs by a few eps, which this K_uu amplifies to about 1e-9
    g_Z = _inputs_gradient_beside_the_objective(
        kernel, X, y, Z, s2, jitter, objective, rtol=1e-8
    )
    h = 1e-5
    for j, k in [(0, 0), (7, 1), (24, 0)]:
        Zp, Zm = Z.copy(), Z.copy()
        Zp[j, k] += h
        Zm[j, k] -= h
        fd = (
            OBJECTIVES[objective](kernel, X, y, Zp, s2, jitter=jitter)
            - OBJECTIVES[objective](kernel, X, y, Zm, s2, jitter=jitter)
        ) / (2 * h)
        assert g_Z[j, k] == pytest.approx(fd, rel=2e-3, abs=1e-3 * np.abs(g_Z).max())


def test_refinement_stops_when_its_iterations_stop_paying(monkeypatch):
    from skgpsparse.regression import _refine

    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (400, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.3 * rng.randn(400)
    kw = {"max_basis": 15, "refine_basis": 400, "random_state": 0, "noise_calibration": None}
    stalled = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), **kw).fit(X, y)
    charge = _refine.STALL_PER_ROW * len(X)
    monkeypatch.setattr(_refine, "STALL_PER_ROW", 0.0)
    full = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), **kw).fit(X, y)
    # fewer iterations, within a few windows' charge (1e-4 nats per row each) of the bound
    # L-BFGS-B reaches by its own tests, and both below the iteration cap
    assert stalled.n_refine_iter_ < full.n_refine_iter_ < 400
    lml, lml_full = stalled.log_marginal_likelihood_value_, full.log_marginal_likelihood_value_
    assert lml_full - 3 * charge <= lml <= lml_full + 1e-6
