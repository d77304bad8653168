"""A fit with ``max_basis >= n`` (skgpsparse.regression._full_basis): the full GP without the
selection, the same model as the selection path and as scikit-learn's GPR."""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, Matern, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression import _alternation


def _data(n=70, targets=1):
    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, (n, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.1 * rng.randn(n)
    Y = y if targets == 1 else np.column_stack([y, np.cos(X[:, 1])])
    return X, Y, rng.uniform(-2, 2, (50, 2))


def _fit(monkeypatch, selection, X, y, **params):
    """A fitted model: by the full-basis path, or (``selection``) by the selection path."""
    with monkeypatch.context() as patch:
        if selection:
            patch.setattr(_alternation, "full_basis_fit", lambda *args: None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # max_basis clipped to n
            return SparseGPRegressor(max_basis=100, random_state=0, **params).fit(X, y)


def test_fixed_hyperparameters_give_scikit_learns_gpr():
    X, y, X_test = _data()
    kernel = C(1.5) * Matern([0.7, 1.2], nu=2.5)
    ours = SparseGPRegressor(
        kernel, noise_variance=0.01, optimizer=None, max_basis=100, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours.fit(X, y)
    gpr = GaussianProcessRegressor(kernel, alpha=0.01, optimizer=None).fit(X, y)
    mean, std = ours.predict(X_test, return_std=True)
    ref_mean, ref_std = gpr.predict(X_test, return_std=True)
    np.testing.assert_allclose(mean, ref_mean, atol=1e-8)
    np.testing.assert_allclose(std, ref_std, atol=1e-8)
    assert sorted(ours.basis_indices_) == list(range(len(y)))  # every row, no selection
    assert ours.cost_curve_.shape == (len(y),)
    assert np.all(np.diff(ours.cost_curve_) <= 1e-12)  # cost (2) falls as rows enter


@pytest.mark.parametrize(("targets", "warm"), [(1, False), (2, True)])
def test_learned_model_equals_the_selection_paths(monkeypatch, targets, warm):
    X, y, X_test = _data(n=40, targets=targets)
    params = dict(kernel=C(1.0) * RBF([1.0, 1.0]), warm_start=warm)
    fits = []
    for selection in (False, True):
        model = _fit(monkeypatch, selection, X[:30], y[:30], **params)
        if warm:  # the data grew: a warm-started fit on all rows
            with monkeypatch.context() as patch, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if selection:
                    patch.setattr(_alternation, "full_basis_fit", lambda *args: None)
                model.fit(X, y)
        fits.append(model)
    fast, slow = fits
    # the exact and the sparse objective differ by the jitter's effect: the same optimum
    np.testing.assert_allclose(fast.kernel_.theta, slow.kernel_.theta, atol=2e-3)
    assert fast.noise_variance_ == pytest.approx(slow.noise_variance_, rel=2e-3)
    assert fast.log_marginal_likelihood_value_ == pytest.approx(
        slow.log_marginal_likelihood_value_, abs=1e-3
    )
    for a, b in zip(fast.predict(X_test, return_std=True), slow.predict(X_test, return_std=True)):
        np.testing.assert_allclose(a, b, atol=1e-4)


def test_repeated_rows_give_the_selection_paths_model(monkeypatch):
    X, y, X_test = _data(n=40)
    X = np.vstack([X, X[:1], X[5:6] + 1e-7])  # a repeated row and a nearly repeated one
    y = np.append(y, [y[0], y[5]])
    params = dict(kernel=C(1.0) * RBF([1.0, 1.0]), noise_variance=0.01, optimizer=None)
    fast, slow = (_fit(monkeypatch, selection, X, y, **params) for selection in (False, True))
    assert len(fast.basis_indices_) == len(slow.basis_indices_)
    for a, b in zip(fast.predict(X_test, return_std=True), slow.predict(X_test, return_std=True)):
        np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("amplitude", [1.5, 1e3])
def test_exact_gp_variances_after_partial_fit_equal_scikit_learns_and_the_general_form(
    amplitude,
):
    # Every row in the basis: the variances come from K + s2 I's factor (one triangular
    # solve); a partial_fit whose row becomes a basis vector keeps the model the exact GP.
    # Tiny noise, as in Bayesian optimisation (K + s2 I ill-conditioned); at amplitude 1e3
    # the noise 1e-6 is below the jitter 1e-8 * 1e3 (the factor still exact).
    X, y, X_test = _data(n=40)
    kernel = C(amplitude) * Matern([0.7, 1.2], nu=2.5)
    ours = SparseGPRegressor(
        kernel, noise_variance=1e-6, optimizer=None, max_basis=100, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours.fit(X[:-1], y[:-1]).partial_fit(X[-1:], y[-1:])
    predictor = ours._predictor
    assert predictor.exact is not None and predictor.exact.shape == (40, 40)
    gpr = GaussianProcessRegressor(kernel, alpha=1e-6, optimizer=None).fit(X, y)
    std = ours.predict(X_test, return_std=True)[1]
    tol = 1e-7 * np.sqrt(amplitude)  # std scales with the amplitude's square root
    np.testing.assert_allclose(std, gpr.predict(X_test, return_std=True)[1], atol=tol)
    # 50 rows >= p = 40: by the factor's inverse (trmm); 5 rows: by the triangular solve
    np.testing.assert_allclose(ours.predict(X_test[:5], return_std=True)[1], std[:5], atol=tol)
    predictor.exact = None  # the general form a^T S a from the same fit
    np.testing.assert_allclose(std, ours.predict(X_test, return_std=True)[1], atol=tol)
    # more rows than basis vectors: not the exact GP, no factor
    capped = SparseGPRegressor(kernel, noise_variance=1e-6, optimizer=None, max_basis=30,
                               random_state=0).fit(X, y)
    assert capped._predictor.exact is None


@pytest.mark.parametrize("objective", ["dtc", "vfe"])
@pytest.mark.parametrize(
    "kernel, n_features",
    [
        (RBF(1.0, (1e-3, 1e3)), 1),
        (C(1.0, (1e-2, 1e2)) * RBF(1.0, (1e-3, 1e3)), 1),
        (C(0.1, (1e-2, 1e2)) * RBF(1.0, (1e-3, 1e3)) + C(1e-5, (1e-5, 1e2)), 1),
        (C(1.0) * RBF([1.0, 2.0]) + WhiteKernel(0.1), 2),
    ],
    ids=["rbf", "amplitude", "amplitude+constant", "ard+white"],
)
def test_the_returned_theta_is_a_stationary_point_of_the_reported_evidence(
    kernel, n_features, objective
):
    # With every row in the basis the fit learns on the exact log marginal likelihood, and
    # that is what log_marginal_likelihood reports (issue 48, point 4): scikit-learn's
    # GPR gives the same value at any theta, and the gradient vanishes at the returned one
    # (below scikit-learn's 1e-4 where no bound is active). The sparse objective with its
    # jitter, reported before, had gradients of 2e-4 with scikit-learn's alpha=1e-10. (A
    # WhiteKernel term is noise, so VFE's trace term is zero here too.)
    rng = np.random.RandomState(0)
    X = rng.uniform(0, 10, (8, n_features))
    y = X[:, 0] * np.sin(X[:, 0]) + 0.05 * rng.randn(8)
    noise = 1e-3 if n_features == 2 else 1e-10
    model = SparseGPRegressor(kernel, noise_variance=noise, noise_variance_bounds="fixed",
                              max_basis=8, noise_calibration=None, refine_basis=0,
                              hyperparameter_objective=objective)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
        full = GaussianProcessRegressor(model.kernel_, alpha=noise, optimizer=None).fit(X, y)
    theta = model.kernel_.theta
    value, grad = model.log_marginal_likelihood(theta, eval_gradient=True)
    np.testing.assert_allclose(value, full.log_marginal_likelihood(theta), rtol=1e-9)
    np.testing.assert_allclose(model.log_marginal_likelihood_value_, value, rtol=1e-12)
    bounds = model.kernel_.bounds
    free = (theta > bounds[:, 0] + 1e-6) & (theta < bounds[:, 1] - 1e-6)
    assert np.all(np.abs(grad[free]) < 1e-4), (theta, grad)
    # the gradient is the value's: central differences
    step = 1e-5
    numeric = [(model.log_marginal_likelihood(theta + step * e)
                - model.log_marginal_likelihood(theta - step * e)) / (2 * step)
               for e in np.eye(theta.size)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)
