"""Several targets in one SparseGPRegressor: a shared basis, kernel and noise; sklearn's shapes."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression._dtc import dtc_log_marginal_likelihood
from skgpsparse.regression._state import RegressionState


def _data(n=120, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    Y = np.c_[np.sin(X[:, 0]), 3 * np.cos(X[:, 1]) + 5, 0.3 * X[:, 0] * X[:, 1]]
    return X, Y + 0.05 * rng.normal(size=Y.shape), rng.uniform(-3, 3, size=(9, 2))


def _grown(kernel, X, y, basis, s2=0.01):
    state = RegressionState(kernel, X, y, s2, len(basis) + 1)
    for j in basis:
        assert state.append(j)
    return state


def test_state_with_several_targets_is_the_sum_of_single_target_states():
    # Cost (2) of several targets is the sum of their costs on the shared basis, so its
    # minimiser, the selection criteria and the deletion scores are the per-target ones summed
    X, Y, _ = _data()
    kernel = RBF(1.2)
    basis = [3, 50, 17, 99, 64, 8]
    multi = _grown(kernel, X, Y, basis)
    singles = [_grown(kernel, X, Y[:, t], basis) for t in range(Y.shape[1])]
    J = np.setdiff1d(np.arange(0, 120, 5), basis)
    for criterion in ("exact", "matching_pursuit", "info_gain"):
        expected = sum(s.decrease(criterion, J) for s in singles)
        np.testing.assert_allclose(multi.decrease(criterion, J), expected, rtol=1e-12)
    np.testing.assert_allclose(multi.alpha, np.column_stack([s.alpha for s in singles]),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(multi.cost, sum(s.cost for s in singles), rtol=1e-12)
    np.testing.assert_allclose(multi.deletion_scores(),
                               sum(s.deletion_scores() for s in singles), rtol=1e-12)
    # ... and after a Givens deletion
    multi.delete(2)
    for s in singles:
        s.delete(2)
    np.testing.assert_allclose(multi.residual, np.column_stack([s.residual for s in singles]),
                               rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(multi.log_marginal_likelihood(),
                               sum(s.log_marginal_likelihood() for s in singles), rtol=1e-12)


def test_state_weights_match_the_dense_map_solution():
    # exchange paper eq. (2) for every target: alpha = (s2 K_uu + K_uf K_fu)^-1 K_uf Y (the
    # state adds its jitter to diag(K_uu))
    X, Y, _ = _data()
    kernel = C(1.5) * RBF(0.8)
    basis = [5, 40, 77, 12, 101]
    state = _grown(kernel, X, Y, basis, s2=0.02)
    K_uf = kernel(X[basis], X)
    K_uu = kernel(X[basis]) + state.jitter * np.eye(len(basis))
    alpha = np.linalg.solve(0.02 * K_uu + K_uf @ K_uf.T, K_uf @ Y)
    np.testing.assert_allclose(state.alpha, alpha, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("normalize_y", [False, True])
def test_full_basis_limit_matches_scikit_learn_with_its_shapes(normalize_y):
    X, Y, X_test = _data(n=60)
    Y = Y[:, :2]
    kernel = C(1.3) * RBF([1.1, 0.9])
    full = GaussianProcessRegressor(kernel, alpha=0.01, optimizer=None, normalize_y=normalize_y)
    full.fit(X, Y)
    sparse = SparseGPRegressor(kernel, noise_variance=0.01, max_basis=60, optimizer=None,
                               normalize_y=normalize_y).fit(X, Y)
    mean, std = sparse.predict(X_test, return_std=True)
    full_mean, full_std = full.predict(X_test, return_std=True)
    assert mean.shape == full_mean.shape == (9, 2) and std.shape == full_std.shape == (9, 2)
    # the exact GP: the predictions take the jitter only where strictly needed
    np.testing.assert_allclose(mean, full_mean, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(std, full_std, rtol=1e-8, atol=1e-8)
    _, cov = sparse.predict(X_test, return_cov=True)
    _, full_cov = full.predict(X_test, return_cov=True)
    assert cov.shape == full_cov.shape == (9, 9, 2)
    np.testing.assert_allclose(cov, full_cov, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(sparse.log_marginal_likelihood_value_,
                               full.log_marginal_likelihood_value_, rtol=1e-5)


def test_one_column_target_gives_the_one_dimensional_shapes():
    X, Y, X_test = _data()
    flat = SparseGPRegressor(max_basis=15, random_state=0).fit(X, Y[:, 0])
    column = SparseGPRegressor(max_basis=15, random_state=0).fit(X, Y[:, :1])
    mean, std = column.predict(X_test, return_std=True)
    assert mean.shape == std.shape == (9,)
    assert column.predict(X_test, return_cov=True)[1].shape == (9, 9)
    np.testing.assert_array_equal(column.basis_indices_, flat.basis_indices_)
    np.testing.assert_allclose(mean, flat.predict(X_test), rtol=1e-9, atol=1e-12)


def test_learned_fit_of_several_targets_maximises_their_summed_likelihood():
    X, Y, X_test = _data()
    model = SparseGPRegressor(
        max_basis=20, normalize_y=True, random_state=0, hyperparameter_objective="dtc",
    ).fit(X, Y)
    assert model.predict(X_test).shape == (9, 3) and model.alpha_.shape == (20, 3)
    Yn = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    lml = dtc_log_marginal_likelihood(model.kernel_, X, Yn, model.basis_vectors_,
                                      model.noise_variance_, jitter=model._jitter_value)
    per_target = sum(
        dtc_log_marginal_likelihood(model.kernel_, X, Yn[:, t], model.basis_vectors_,
                                    model.noise_variance_, jitter=model._jitter_value)
        for t in range(3)
    )
    np.testing.assert_allclose(lml, per_target, rtol=1e-10)
    np.testing.assert_allclose(model.log_marginal_likelihood_value_, lml, rtol=1e-8)
    # every target is fitted: the model explains each far better than its mean
    residual = model.predict(X) - Y
    assert np.all(np.mean(residual**2, axis=0) < 0.1 * Y.var(axis=0))
