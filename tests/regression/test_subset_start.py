"""The regressor's starting hyperparameters: the full GP on a subset, from two noise starts."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import skgpsparse.regression._alternation as alternation
from skgpsparse import SparseGPRegressor


def _data(n=120, d=6, seed=0):
    # one relevant input of six: short isotropic length scales explain y by overfitting
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.sin(2.0 * X[:, 0]) + 0.3 * rng.randn(n)
    return X, y


def test_the_subset_start_keeps_the_highest_likelihood_of_its_noise_starts(monkeypatch):
    X, y = _data()
    model = SparseGPRegressor(C(1.0) * RBF(np.full(6, np.sqrt(6))), max_basis=20)
    model._progress = None
    seen = []
    learn = alternation._learn

    def spy(model, kernel, s2, X_sub, y_sub, X_basis, objective=None):
        out = learn(model, kernel, s2, X_sub, y_sub, X_basis, objective)
        # the subset is its own basis: the exact GP's objective
        assert X_basis is X_sub and objective is alternation.FULL_BASIS_OBJECTIVES["vfe"]
        seen.append((s2, out))
        return out

    monkeypatch.setattr(alternation, "_learn", spy)
    kernel, s2 = alternation._subset_start(model, model.kernel, 1e-2, X, y, (1e-6, 1e2))
    # the model's start, then a tenth of the targets' variance and the variance itself
    variance = float(np.var(y))
    np.testing.assert_allclose([start for start, _ in seen], [1e-2, 0.1 * variance, variance])
    values = [out[2] for _, out in seen]
    assert len(set(np.round(values, 6))) > 1  # the starts reach different optima here
    best = seen[int(np.argmax(values))][1]
    np.testing.assert_array_equal(kernel.theta, best[0].theta)
    assert s2 == best[1]
    # with a fixed noise one start; a start within a factor 2 of one run is skipped
    seen.clear()
    alternation._subset_start(model, model.kernel, 1e-2, X, y, None)
    assert len(seen) == 1
    seen.clear()
    alternation._subset_start(model, model.kernel, variance, X, y, (1e-6, 1e2))
    np.testing.assert_allclose([start for start, _ in seen], [variance, 0.1 * variance])
    # starts are clipped to the noise bounds
    seen.clear()
    alternation._subset_start(model, model.kernel, 1e-2, X, y, (1e-6, 0.05))
    np.testing.assert_allclose([start for start, _ in seen], [1e-2, 0.05])


def test_max_iter_zero_keeps_the_exact_gp_hyperparameters_of_the_subset():
    # 90 rows: the starting subset is every row, so the hyperparameters kept are the exact
    # GP's on the training set, which scikit-learn's GPR finds by its own optimizer
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import WhiteKernel

    rng = np.random.RandomState(3)
    X = rng.uniform(-3, 3, (90, 2))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(2 * X[:, 1]) + 0.1 * rng.randn(90)
    kernel = C(1.0) * RBF([1.0, 1.0])
    model = SparseGPRegressor(
        kernel, max_basis=15, max_iter=0, noise_calibration=None, random_state=0
    ).fit(X, y)
    gpr = GaussianProcessRegressor(kernel + WhiteKernel(0.1), random_state=0).fit(X, y)
    np.testing.assert_allclose(model.kernel_.theta, gpr.kernel_.k1.theta, atol=2e-3)
    assert np.log(model.noise_variance_) == pytest.approx(gpr.kernel_.k2.theta[0], abs=2e-3)
    # one selection at them; "auto" does not refine (refinement would re-learn them)
    assert model.n_iter_ == 1 and model.n_refine_iter_ == 0
    np.testing.assert_array_equal(model.basis_vectors_, X[model.basis_indices_])
    # the default alternation re-learns them on the 15-vector basis
    learned = SparseGPRegressor(
        kernel, max_basis=15, noise_calibration=None, refine_basis=0, random_state=0
    ).fit(X, y)
    assert np.max(np.abs(learned.kernel_.theta - model.kernel_.theta)) > 0.05


def test_max_iter_zero_refines_the_inputs_only_and_calibrates_the_noise():
    X, y = _data(n=300, seed=2)
    kw = {"kernel": C(1.0) * RBF(np.full(6, np.sqrt(6))), "max_basis": 12, "max_iter": 0,
          "random_state": 0}
    kept = SparseGPRegressor(noise_calibration=None, refine_basis=0, **kw).fit(X, y)
    moved = SparseGPRegressor(noise_calibration=None, refine_basis=20, **kw).fit(X, y)
    np.testing.assert_array_equal(moved.kernel_.theta, kept.kernel_.theta)
    assert moved.noise_variance_ == kept.noise_variance_
    assert moved.n_refine_iter_ > 0
    assert not np.allclose(moved.basis_vectors_, X[moved.basis_indices_])
    assert moved.log_marginal_likelihood_value_ > kept.log_marginal_likelihood_value_
    # the leave-one-out noise: 12 basis vectors cannot fit what the exact GP on the subset
    # explains, so the calibrated noise is larger than the subset's
    calibrated = SparseGPRegressor(refine_basis=0, **kw).fit(X, y)
    np.testing.assert_array_equal(calibrated.basis_indices_, kept.basis_indices_)
    assert calibrated.noise_variance_ > kept.noise_variance_


def test_a_start_that_leaves_the_rows_uncorrelated_is_taken_again_on_four_times_the_rows(
    monkeypatch,
):
    # a kernel whose length scale is far below the rows' distances explains the subset as
    # noise (a 100-row subset of 20 features can end there): the start is drawn again on
    # 400 rows; a start that correlates the rows is kept at once
    X, y = _data(n=600, d=6)
    sizes = []
    start = alternation._subset_start

    def spy(model, kernel, s2, X_sub, y_sub, noise_bounds):
        sizes.append(X_sub.shape[0])
        found = start(model, kernel, s2, X_sub, y_sub, noise_bounds)
        return (C(1.0) * RBF(1e-3), found[1]) if len(sizes) == 1 else found

    monkeypatch.setattr(alternation, "_subset_start", spy)
    # (a kernel passed: the default kernel's subset also fits one length scale per feature)
    params = dict(kernel=C(1.0) * RBF(1.0), max_basis=20, max_iter=1, refine_basis=0,
                  random_state=0)
    SparseGPRegressor(**params).fit(X, y)
    assert sizes == [100, 400]
    sizes.clear()
    monkeypatch.setattr(alternation, "_subset_start", start)
    monkeypatch.setattr(alternation, "_subset_start", lambda *a: sizes.append(a[3].shape[0])
                        or start(*a))
    SparseGPRegressor(**params).fit(X, y)
    assert sizes == [100]
