"""Tests for Titsias' collapsed variational bound (VFE, Titsias 2009 eq. (9))."""

import numpy as np
import pytest
from _support.threads import record_blas_threads
from scipy.stats import multivariate_normal
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, DotProduct, Matern, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from threadpoolctl import threadpool_limits

import skgpsparse.regression._vfe as vfe_module
from skgpsparse.regression._dtc import dtc_log_marginal_likelihood
from skgpsparse.regression._estimator import SparseGPRegressor
from skgpsparse.regression._vfe import vfe_log_marginal_likelihood

KERNELS = {
    "rbf": RBF(1.2),
    "c-rbf-ard": C(0.8) * RBF([0.9, 2.0, 0.6]),
    "matern-ard": Matern([1.0, 2.0, 0.5], nu=1.5),
    "matern52+c-rbf": Matern(1.1, nu=2.5) + C(0.3) * RBF(0.5),
    "rbf+dot": RBF(1.0) + DotProduct(0.5),
}


def _data(n=40, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.randn(n)
    return X, y


def _dense_bound(kernel, X, y, X_basis, s2, jitter):
    """Titsias' eq. (9) with the n x n matrices formed explicitly."""
    K_uu = kernel(X_basis, X_basis) + jitter * np.eye(len(X_basis))
    K_fu = kernel(X, X_basis)
    Q = K_fu @ np.linalg.solve(K_uu, K_fu.T)
    log_normal = multivariate_normal(np.zeros(len(X)), Q + s2 * np.eye(len(X))).logpdf(y)
    return log_normal - np.trace(kernel(X) - Q) / (2.0 * s2)


def _finite_difference(kernel, X, y, X_basis, s2, jitter, h=1e-5):
    theta = np.r_[kernel.theta, np.log(s2)]
    grad = np.empty_like(theta)
    for i in range(len(theta)):
        values = []
        for step in (h, -h):
            t = theta.copy()
            t[i] += step
            values.append(
                vfe_log_marginal_likelihood(
                    kernel.clone_with_theta(t[:-1]), X, y, X_basis, np.exp(t[-1]), jitter=jitter
                )
            )
        grad[i] = (values[0] - values[1]) / (2 * h)
    return grad


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("n, p", [(40, 8), (40, 1), (5, 9)])
def test_value_matches_dense_formula(name, n, p):
    kernel = KERNELS[name]
    X, y = _data(n)
    X_basis = np.random.RandomState(1).randn(p, X.shape[1])
    expected = _dense_bound(kernel, X, y, X_basis, 0.05, 1e-6)
    value = vfe_log_marginal_likelihood(kernel, X, y, X_basis, 0.05, jitter=1e-6)
    assert value == pytest.approx(expected, rel=1e-9, abs=1e-9)
    value_g, _ = vfe_log_marginal_likelihood(
        kernel, X, y, X_basis, 0.05, jitter=1e-6, eval_gradient=True
    )
    assert value_g == value


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_bound_is_dtc_minus_the_trace_term(name):
    kernel = KERNELS[name]
    X, y = _data(30)
    X_basis = X[:6] + 0.1
    s2, jitter = 0.07, 1e-8
    K_fu = kernel(X, X_basis)
    K_uu = kernel(X_basis, X_basis) + jitter * np.eye(6)
    trace = np.sum(kernel.diag(X)) - np.sum(K_fu * np.linalg.solve(K_uu, K_fu.T).T)
    assert trace > 0
    dtc = dtc_log_marginal_likelihood(kernel, X, y, X_basis, s2, jitter=jitter)
    vfe = vfe_log_marginal_likelihood(kernel, X, y, X_basis, s2, jitter=jitter)
    assert vfe == pytest.approx(dtc - trace / (2 * s2), rel=1e-10)


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("s2", [0.01, 0.3])
def test_gradient_matches_finite_differences(name, s2):
    kernel = KERNELS[name]
    X, y = _data(40)
    X_basis = X[::5] + 0.05
    _, grad = vfe_log_marginal_likelihood(
        kernel, X, y, X_basis, s2, jitter=1e-8, eval_gradient=True
    )
    assert grad.shape == (kernel.n_dims + 1,)
    fd = _finite_difference(kernel, X, y, X_basis, s2, 1e-8)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6 * np.max(np.abs(fd)))


def test_multi_output_sums_and_fixed_kernel():
    X, y = _data(30)
    Y = np.c_[y, np.cos(X[:, 1])]
    X_basis = X[:6]
    kernel = C(1.5) * RBF([1.0, 0.7, 2.0])
    value, grad = vfe_log_marginal_likelihood(
        kernel, X, Y, X_basis, 0.05, jitter=1e-8, eval_gradient=True
    )
    parts = [
        vfe_log_marginal_likelihood(
            kernel, X, Y[:, k], X_basis, 0.05, jitter=1e-8, eval_gradient=True
        )
        for k in range(2)
    ]
    assert value == pytest.approx(parts[0][0] + parts[1][0], rel=1e-12)
    np.testing.assert_allclose(grad, parts[0][1] + parts[1][1], rtol=1e-10)
    np.testing.assert_allclose(
        grad, _finite_difference(kernel, X, Y, X_basis, 0.05, 1e-8), rtol=1e-5
    )
    # every kernel hyperparameter fixed: only the noise derivative remains
    fixed = RBF(1.0, length_scale_bounds="fixed")
    _, grad = vfe_log_marginal_likelihood(fixed, X, y, X_basis, 0.05, eval_gradient=True)
    assert grad.shape == (1,)
    np.testing.assert_allclose(
        grad, _finite_difference(fixed, X, y, X_basis, 0.05, None), rtol=1e-6
    )


@pytest.mark.parametrize("chunk_size", [1, 4])
def test_chunk_size_does_not_change_the_result(chunk_size):
    kernel = KERNELS["matern52+c-rbf"]
    X, y = _data(23)
    X_basis = X[:7] * 0.9
    value, grad = vfe_log_marginal_likelihood(kernel, X, y, X_basis, 0.05, eval_gradient=True)
    value_c, grad_c = vfe_log_marginal_likelihood(
        kernel, X, y, X_basis, 0.05, eval_gradient=True, chunk_size=chunk_size
    )
    assert value_c == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(grad_c, grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["rbf", "c-rbf-ard", "matern-ard", "matern52+c-rbf"])
def test_bound_below_exact_likelihood_and_equal_with_every_row(name):
    kernel = KERNELS[name]
    X, y = _data(25)
    s2 = 0.1
    exact = GaussianProcessRegressor(kernel, alpha=s2, optimizer=None).fit(X, y)
    lml = exact.log_marginal_likelihood_value_
    rng = np.random.RandomState(3)
    for p in (1, 3, 10, 24):
        X_basis = X[rng.choice(25, p, replace=False)] + 0.01 * rng.randn(p, 3)
        assert vfe_log_marginal_likelihood(kernel, X, y, X_basis, s2, jitter=0.0) < lml
    # Q_ff = K_ff: the bound is tight (Titsias 2009, sec. 3); a tiny jitter only
    full = vfe_log_marginal_likelihood(kernel, X, y, X, s2, jitter=1e-12)
    assert full == pytest.approx(lml, rel=1e-8)
    assert full <= lml + 1e-10 * abs(lml)


def test_white_kernel_level_is_charged_by_the_trace_term():
    # cross-covariances ignore it (Q_ff unchanged), but k(x, x) includes it
    X, y = _data(20)
    kernel = RBF(1.0)
    plain = vfe_log_marginal_likelihood(kernel, X, y, X[:4], 0.1)
    with_white = vfe_log_marginal_likelihood(kernel + WhiteKernel(0.5), X, y, X[:4], 0.1)
    assert with_white == pytest.approx(plain - 20 * 0.5 / (2 * 0.1), rel=1e-12)


def test_invalid_arguments_are_those_of_dtc():
    with pytest.raises(ValueError, match="noise_variance must be a finite real number > 0"):
        vfe_log_marginal_likelihood(RBF(), np.zeros((3, 1)), np.zeros(3), np.zeros((1, 1)), 0)
    with pytest.raises(TypeError, match="kernel must be a scikit-learn Kernel"):
        vfe_log_marginal_likelihood("rbf", np.zeros((3, 1)), np.zeros(3), np.zeros((1, 1)), 1)


# ---------------------------------------------------------------------------- the estimator
def _regression_data(n=200, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.randn(n)
    return X, y


@pytest.mark.parametrize("optimizer", ["fmin_l_bfgs_b", None])
def test_estimator_value_is_the_bound(optimizer):
    X, y = _regression_data()
    model = SparseGPRegressor(
        C(1.0) * RBF([1.0, 1.0]),
        max_basis=15,
        max_iter=3,
        optimizer=optimizer,
        hyperparameter_objective="vfe",
        random_state=0,
    ).fit(X, y)
    s2 = model.noise_variance_
    expected = vfe_log_marginal_likelihood(
        model.kernel_, X, y, model.basis_vectors_, s2, jitter=model._jitter_value
    )
    assert model.log_marginal_likelihood_value_ == pytest.approx(expected, rel=1e-10)
    assert model.log_marginal_likelihood() == model.log_marginal_likelihood_value_
    theta = np.r_[model.kernel_.theta, np.log(s2)]
    value, grad = model.log_marginal_likelihood(theta, eval_gradient=True)
    assert value == pytest.approx(expected, rel=1e-12)
    assert grad.shape == theta.shape
    # the bound is below the DTC value on the same basis
    dtc = dtc_log_marginal_likelihood(
        model.kernel_, X, y, model.basis_vectors_, s2, jitter=model._jitter_value
    )
    assert value < dtc
    assert model.score(X, y) > 0.9


def test_estimator_learns_a_higher_bound_than_the_dtc_optimum():
    # each objective's optimum on its own terms: VFE's hyperparameters give a higher bound
    X, y = _regression_data()
    # the objectives' own optima: no leave-one-out calibration after
    common = {"max_basis": 12, "max_iter": 3, "random_state": 0, "noise_calibration": None}
    dtc = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), hyperparameter_objective="dtc", **common)
    dtc.fit(X, y)
    vfe = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), hyperparameter_objective="vfe", **common)
    vfe.fit(X, y)
    bound_at_dtc = vfe_log_marginal_likelihood(
        dtc.kernel_, X, y, vfe.basis_vectors_, dtc.noise_variance_, jitter=vfe._jitter_value
    )
    assert vfe.log_marginal_likelihood_value_ > bound_at_dtc
    # DTC does not charge for unexplained prior variance: it learns a larger amplitude
    assert vfe.kernel_.k1.constant_value < dtc.kernel_.k1.constant_value


def test_default_objective_is_vfe():
    # chosen by benchmarks/peers/peers_regression.py: calibrated error bars (DTC's too wide)
    X, y = _regression_data(n=80)
    kw = {"max_basis": 8, "max_iter": 2, "random_state": 0}
    default = SparseGPRegressor(**kw).fit(X, y)
    explicit = SparseGPRegressor(hyperparameter_objective="vfe", **kw).fit(X, y)
    assert SparseGPRegressor().hyperparameter_objective == "vfe"
    np.testing.assert_array_equal(default.alpha_, explicit.alpha_)
    assert default.log_marginal_likelihood_value_ == explicit.log_marginal_likelihood_value_


def test_invalid_objective_is_rejected():
    X, y = _regression_data(n=20)
    with pytest.raises(ValueError, match="hyperparameter_objective"):
        SparseGPRegressor(hyperparameter_objective="fitc").fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_vfe_fit_runs_blas_on_one_thread(monkeypatch):
    # (8 basis vectors are too few for this function: the bound's optimum explains it all as
    # noise, with the amplitude at its lower bound)
    seen = record_blas_threads(monkeypatch, vfe_module, "sparse_factors")
    X, y = _regression_data(n=60)
    with threadpool_limits(limits=2, user_api="blas"):
        SparseGPRegressor(
            max_basis=8, max_iter=2, hyperparameter_objective="vfe", random_state=0
        ).fit(X, y)
    assert seen and all(t == [1] * len(t) for t in seen)


# ------------------------------------------------- predictions with the minimal jitter
def _near_duplicates(n, n_dup, distance, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    X = np.vstack([X, X[:n_dup] + distance * rng.randn(n_dup, 2)])
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.randn(len(X))
    return X, 3.0 * y + 2.0


@pytest.mark.parametrize(
    "n, n_dup, distance, kernel",
    [
        (30, 0, 0.0, C(1.5) * RBF(1.0)),
        (100, 0, 0.0, C(1.5) * RBF(1.0)),  # cond(K) ~ 1e10
        (60, 0, 0.0, C(1.5) * RBF(3.0)),  # cond(K) ~ 1e15
        (30, 5, 1e-4, C(1.5) * RBF(1.0)),  # near-duplicate rows
        (100, 10, 1e-3, C(1.5) * Matern(1.0, nu=2.5)),
    ],
)
@pytest.mark.parametrize("normalize_y", [False, True])
def test_full_basis_limit_is_the_exact_gp(n, n_dup, distance, kernel, normalize_y):
    # every row in the basis, fixed hyperparameters: the model is the exact GP; the state's
    # relative jitter 1e-8 in K_uu had moved the mean by up to 2e-5 here
    X, y = _near_duplicates(n, n_dup, distance)
    s2 = 0.05
    kw = {"noise_variance": s2, "optimizer": None, "normalize_y": normalize_y}
    sparse = SparseGPRegressor(
        kernel, max_basis=len(X), selection="random", random_state=0, **kw
    ).fit(X, y)
    assert len(sparse.basis_indices_) == len(X)
    full = GaussianProcessRegressor(kernel, alpha=s2, optimizer=None, normalize_y=normalize_y)
    full.fit(X, y)
    Xt = np.vstack([np.random.RandomState(1).uniform(-4, 4, (30, 2)), X[:10] + 1e-3, X[:5]])
    mean, std = sparse.predict(Xt, return_std=True)
    mean_ref, std_ref = full.predict(Xt, return_std=True)
    scale = np.std(y) if normalize_y else 1.0
    np.testing.assert_allclose(mean, mean_ref, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(std, std_ref, rtol=0, atol=1e-8 * scale)
    _, cov = sparse.predict(Xt[:20], return_cov=True)
    _, cov_ref = full.predict(Xt[:20], return_cov=True)
    np.testing.assert_allclose(cov, cov_ref, rtol=0, atol=1e-8 * scale**2)


@pytest.mark.parametrize("selection", ["random", "exact"])
def test_predictions_are_the_jitter_free_projected_process(selection):
    # GPML eqs. (8.26)-(8.27) formed densely without jitter (K_uu well conditioned here)
    X, y = _regression_data(n=150, seed=2)
    kernel, s2 = C(1.5) * RBF(1.0), 0.02
    model = SparseGPRegressor(
        kernel,
        noise_variance=s2,
        optimizer=None,
        max_basis=30,
        selection=selection,
        random_state=0,
    ).fit(X, y)
    Xu = model.basis_vectors_
    K_uu, K_uf = kernel(Xu), kernel(Xu, X)
    assert np.linalg.cond(K_uu) < 1e6
    Sigma_inv = K_uf @ K_uf.T + s2 * K_uu
    Xt = np.vstack([np.random.RandomState(1).uniform(-4, 4, (30, 2)), X[:20] + 0.01])
    K_us = kernel(Xu, Xt)
    mean_ref = K_us.T @ np.linalg.solve(Sigma_inv, K_uf @ y)
    var_ref = (
        kernel.diag(Xt)
        - np.sum(K_us * np.linalg.solve(K_uu, K_us), axis=0)
        + s2 * np.sum(K_us * np.linalg.solve(Sigma_inv, K_us), axis=0)
    )
    mean, std = model.predict(Xt, return_std=True)
    np.testing.assert_allclose(mean, mean_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(std**2, var_ref, rtol=0, atol=1e-10)


def test_prediction_factors_fall_back_to_the_state_model():
    # with no room below the state's jitter, the factors are the state's own model
    from scipy.linalg import cho_solve

    from skgpsparse.regression._prediction import prediction_factors
    from skgpsparse.regression._state import RegressionState

    X, y = _regression_data(n=60)
    state = RegressionState(RBF(1.0), X, y, 0.05, 10, jitter=1e-30)
    for j in range(0, 60, 6):
        state.append(j)
    factors = prediction_factors(state.L, state.R, state.Vy, state.jitter, 0.05)
    assert factors.jitter == state.jitter
    np.testing.assert_allclose(factors.alpha, state.alpha, rtol=1e-10)
    R = state.R
    expected = np.eye(10) - 0.05 * cho_solve((R, True), np.eye(10))
    np.testing.assert_allclose(factors.S, expected, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exchange_never_lowers_the_vfe_bound(seed):
    # with the VFE objective in force, an exchange step that leaves the bound lower is undone:
    # after every step the bound is at least what it was before the exchange began
    from functools import partial

    from skgpsparse.regression._basis import make_selector, select_and_exchange
    from skgpsparse.regression._state import RegressionState
    from skgpsparse.regression._vfe import state_objective

    class _Recorder:
        """A stand-in for the progress printer that records the bound after every step."""

        def __init__(self, state):
            self.state, self.values = state, []

        def step(self, message):
            self.values.append(state_objective(self.state, "vfe"))

    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, size=(150, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=150)
    state = RegressionState(C(1.0) * RBF(0.7), X, y, 0.01, 12)
    selector = make_selector("random", None)
    select_and_exchange(state, selector, 12, 0, rng, [])
    start = state_objective(state, "vfe")
    recorder = _Recorder(state)
    select_and_exchange(state, selector, 12, 25, rng, [], progress=recorder,
                        objective=partial(state_objective, objective="vfe"))
    values = np.array(recorder.values)
    assert values.size == 25
    tol = 1e-9 * abs(start)
    assert np.all(np.diff(np.r_[start, values]) >= -tol)
    assert values[-1] > start  # random replacements: some exchanges do raise the bound
