"""The regressor's fit over row partitions (skgpsparse.rows._store.LocalRows), without a cluster.

The partitioned state and objectives are the in-memory ones with every pass over the rows
cut at partition boundaries: the same basis and, up to the order of the additions, the same
numbers. The objectives are also checked against GPML eq. (8.17) and Titsias' bound written
densely here.
"""

import warnings

import numpy as np
import pytest
from _support.counting_rows import CountingRows
from sklearn.gaussian_process.kernels import RBF, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression._fitting import prepare_fit
from skgpsparse.regression._partitioned import PartitionedRegressionState
from skgpsparse.regression._partitioned_fit import fit_rows
from skgpsparse.regression._partitioned_objectives import PARTITIONED_OBJECTIVES
from skgpsparse.regression._state import RegressionState
from skgpsparse.regression._targets import target_scaling
from skgpsparse.rows._store import LocalRows, row_centre


def _data(n=240, d=2, seed=0, targets=None):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, d))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.randn(n)
    if targets:
        y = np.column_stack([y + k for k in range(targets)])
    return X, y


def _fit_local(params, X, y, partition_rows):
    model = SparseGPRegressor(**params)
    model.n_features_in_ = X.shape[1]
    yn, p, rng = prepare_fit(model, y, len(X), target_scaling(y, model.normalize_y))
    rows = LocalRows(X, yn, partition_rows)
    return fit_rows(model, rows, p, rng), rows


@pytest.mark.parametrize(
    "params",
    [
        {"optimizer": None},
        {"optimizer": None, "selection": "exact", "n_exchange": 4},
        {"optimizer": None, "selection": "info_gain"},
        {"optimizer": None, "selection": "random", "normalize_y": True},
        {"kernel": C(1.0) * Matern(1.0, nu=1.5), "optimizer": None, "selection": "exact"},
        # learned: partitions keep the selected rows, as refine_basis=0 does in memory
        {"max_iter": 3, "refine_basis": 0},
        {"max_iter": 3, "hyperparameter_objective": "vfe", "refine_basis": 0},
    ],
)
def test_partitioned_fit_equals_in_memory_fit(params):
    X, y = _data()
    params = dict(max_basis=12, random_state=0, **params)
    reference = SparseGPRegressor(**params).fit(X, y)
    model, rows = _fit_local(params, X, y, partition_rows=70)  # 4 uneven partitions
    assert rows.n_partitions == 4
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    X_test = _data(50, seed=1)[0]
    np.testing.assert_allclose(model.predict(X_test), reference.predict(X_test), rtol=0, atol=1e-10)
    np.testing.assert_allclose(model.kernel_.theta, reference.kernel_.theta, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        model.log_marginal_likelihood_value_, reference.log_marginal_likelihood_value_,
        rtol=1e-10,
    )


def test_partitioned_fit_with_several_targets():
    X, y = _data(targets=2)
    params = {"max_basis": 10, "random_state": 0, "optimizer": None, "selection": "exact"}
    reference = SparseGPRegressor(**params).fit(X, y)
    model, _ = _fit_local(params, X, y, partition_rows=100)
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    np.testing.assert_allclose(model.predict(X), reference.predict(X), atol=1e-10)


@pytest.mark.parametrize(
    ("params", "targets"),
    [
        ({}, None),  # the default constructor: the basis refined
        ({"hyperparameter_objective": "dtc", "max_iter": 3}, None),
        ({"kernel": C(1.0) * RBF([1.0, 1.0]), "noise_calibration": "loo"}, 3),
    ],
)
def test_partitioned_learned_fit_is_the_in_memory_fit(params, targets):
    # learning runs in memory on the rows gathered from the partitions (every row here);
    # the calibration passes run on the partitions: the in-memory model, refinement included
    X, y = _data(n=150, targets=targets)
    params = dict(max_basis=8, random_state=0, **params)
    reference = SparseGPRegressor(**params).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model, _ = _fit_local(params, X, y, partition_rows=70)
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    assert model.n_refine_iter_ == reference.n_refine_iter_
    assert (model.n_refine_iter_ > 0) == ("max_iter" not in params)
    np.testing.assert_allclose(model.basis_vectors_, reference.basis_vectors_, rtol=0, atol=1e-12)
    X_test = _data(60, seed=2)[0]
    for got, want in zip(model.predict(X_test, return_std=True),
                         reference.predict(X_test, return_std=True)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
    np.testing.assert_allclose(model.noise_variance_, reference.noise_variance_, rtol=1e-9)
    np.testing.assert_allclose(
        model.log_marginal_likelihood_value_, reference.log_marginal_likelihood_value_,
        rtol=1e-9,
    )


def test_partitioned_fit_learning_on_a_subsample_is_the_in_memory_fit():
    # learning_rows below n: the in-memory fit's random subsample (the same draws) is
    # gathered and learned on; the posterior on every row and the calibration are the
    # partitions' sums
    X, y = _data(n=400, targets=2)
    params = {"max_basis": 8, "random_state": 0, "learning_rows": 150, "normalize_y": True}
    reference = SparseGPRegressor(**params).fit(X, y)
    model, _ = _fit_local(params, X, y, partition_rows=90)
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    assert reference.basis_indices_.max() > 150  # indices of the training set
    np.testing.assert_allclose(model.basis_vectors_, reference.basis_vectors_, rtol=0, atol=1e-12)
    X_test = _data(60, seed=2)[0]
    for got, want in zip(model.predict(X_test, return_std=True),
                         reference.predict(X_test, return_std=True)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
    np.testing.assert_allclose(
        model.log_marginal_likelihood_value_, reference.log_marginal_likelihood_value_,
        rtol=1e-9,
    )


def test_partitioned_fit_learning_on_every_row_warns_that_it_keeps_the_selected_rows():
    # learning_rows=None learns on the partitions, where the basis is not refined: a warning
    # says so, and refine_basis=0 (the same model on both paths) is silent
    X, y = _data(n=120)
    params = {"max_basis": 8, "random_state": 0, "max_iter": 1, "learning_rows": None}
    with pytest.warns(UserWarning, match="refine_basis='auto' does not refine"):
        model, _ = _fit_local(params, X, y, 60)
    assert model.n_refine_iter_ == 0
    assert SparseGPRegressor(**params).fit(X, y).n_refine_iter_ > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _fit_local({**params, "refine_basis": 0}, X, y, 60)


def test_partitioned_state_tracks_in_memory_state_through_append_and_delete():
    X, y = _data(n=150)
    kernel = C(1.5) * RBF(0.8)
    rows = LocalRows(X, y, 40)
    state = RegressionState(kernel, X, y, 0.05, 8, jitter=1e-8)
    part = PartitionedRegressionState(
        kernel, rows, 0.05, 8, centre=row_centre(rows), jitter=1e-8
    )
    for j in (3, 77, 120, 41, 9):
        assert state.append(j) and part.append(j)
    J = np.array([5, 60, 100, 149, 0])
    for criterion in ("exact", "matching_pursuit", "info_gain"):
        np.testing.assert_allclose(part.decrease(criterion, J), state.decrease(criterion, J),
                                   rtol=1e-10)
    for s in (state, part):
        s.delete(1)
        s.append(60)
    np.testing.assert_array_equal(part.basis, state.basis)
    np.testing.assert_allclose(part.alpha, state.alpha, rtol=1e-10)
    np.testing.assert_allclose(part.sigma_diag, state.sigma_diag, rtol=1e-10)
    np.testing.assert_allclose(part.sampling_weights(J), state.sampling_weights(J), atol=1e-12)
    np.testing.assert_allclose(part.nystrom_trace(), float(np.sum(state.q)), rtol=1e-10)
    np.testing.assert_allclose(part.mean_squared_residual(), np.mean(state.residual**2),
                               rtol=1e-10)
    np.testing.assert_allclose(part.cost, state.cost, rtol=1e-10)
    np.testing.assert_allclose(part.basis_rows, X[state.basis])


def _dense_objectives(kernel, X, y, X_u, s2, jitter):
    """GPML eq. (8.17) and Titsias' bound with the n x n matrices (small n only)."""
    K_uu = kernel(X_u) + jitter * np.eye(len(X_u))
    K_fu = kernel(X, X_u)
    Q = K_fu @ np.linalg.solve(K_uu, K_fu.T)
    Cm = Q + s2 * np.eye(len(X))
    _, logdet = np.linalg.slogdet(Cm)
    dtc = -0.5 * y @ np.linalg.solve(Cm, y) - 0.5 * logdet - 0.5 * len(X) * np.log(2 * np.pi)
    vfe = dtc - 0.5 * np.trace(kernel(X) - Q) / s2
    return {"dtc": dtc, "vfe": vfe}


@pytest.mark.parametrize("name", ["dtc", "vfe"])
def test_partitioned_objectives_against_dense_formula_and_finite_differences(name):
    X, y = _data(n=90)
    X_u = X[::9]
    kernel = C(1.3) * RBF(np.array([0.9, 1.4]))
    rows = LocalRows(X, y, 25)
    s2, jitter = 0.04, 1e-8
    value, gradient = PARTITIONED_OBJECTIVES[name](
        kernel, rows, None, X_u, s2, eval_gradient=True, jitter=jitter
    )
    assert value == pytest.approx(_dense_objectives(kernel, X, y, X_u, s2, jitter)[name],
                                  rel=1e-9)
    theta = np.append(kernel.theta, np.log(s2))
    h = 1e-6
    for i in range(len(theta)):
        values = []
        for sign in (1, -1):
            t = theta.copy()
            t[i] += sign * h
            values.append(_dense_objectives(
                kernel.clone_with_theta(t[:-1]), X, y, X_u, np.exp(t[-1]), jitter)[name])
        assert gradient[i] == pytest.approx((values[0] - values[1]) / (2 * h), rel=1e-5,
                                            abs=1e-6)


@pytest.mark.parametrize("selection", ["matching_pursuit", "exact"])
def test_forward_steps_fetch_the_next_working_set_with_the_append(selection):
    # Each append pass brings back the rows of the working set the next step will draw
    # (drawn ahead with a copy of the random state): two calls per forward step, and the
    # draws, so the basis, are the in-memory fit's.
    X, y = _data(n=300)
    params = dict(max_basis=15, random_state=0, optimizer=None, selection=selection,
                  working_set_size=20)
    reference = SparseGPRegressor(**params).fit(X, y)
    model = SparseGPRegressor(**params)
    model.n_features_in_ = X.shape[1]
    yn, p, rng = prepare_fit(model, y, len(X), target_scaling(y, False))
    rows = CountingRows(X, yn, 70)
    fit_rows(model, rows, p, rng)
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    np.testing.assert_allclose(model.predict(X), reference.predict(X), rtol=0, atol=1e-10)
    calls = rows.calls
    assert calls["_p_score"] == 15
    # the first append fetches the second working set; the last one fetches nothing
    assert calls["_p_append+fetch"] == 14 and calls["_p_append"] == 1
    # rows taken: the first working set, and the basis rows at the end
    assert calls["_take_rows"] == 2


def test_learning_on_the_partitions_fetches_the_final_basis_rows_at_once():
    # learning_rows=None: selection and learning on the partitions; the final state on the
    # kept basis gets the rows of all its appends in one take (not one per append)
    X, y = _data(n=200)
    params = {"max_basis": 10, "random_state": 0, "max_iter": 2, "learning_rows": None,
              "refine_basis": 0}
    reference = SparseGPRegressor(**params).fit(X, y)
    model = SparseGPRegressor(**params)
    model.n_features_in_ = X.shape[1]
    yn, p, rng = prepare_fit(model, y, len(X), target_scaling(y, False))
    rows = CountingRows(X, yn, 70)
    fit_rows(model, rows, p, rng)
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    # (the objective summed over partitions, another order: the learned noise agrees to
    # about 1e-7 relative, the predictions to 1e-7)
    np.testing.assert_allclose(model.predict(X), reference.predict(X), rtol=0, atol=1e-6)
    # the subset start, per iteration the first working set and the basis rows learning
    # uses, then the final basis (prefetched; one take per append without) and the fitted
    # basis rows
    assert rows.calls["_take_rows"] == 1 + 2 * model.n_iter_ + 2


def test_partitioned_state_skips_a_round_off_pivot_as_the_in_memory_state():
    # A linear kernel (rank 2) on rows each repeated 5 times, noise 1e-10: a third basis
    # vector adds only round-off to V V^T. The in-memory state marks such a point redundant
    # (RegressionState.append); the partitioned one raised a LinAlgError from
    # cholesky_append. Both now skip it, and predict the same.
    from sklearn.gaussian_process.kernels import ConstantKernel, DotProduct

    rng = np.random.RandomState(1)
    X = np.repeat(rng.uniform(-3, 3, size=(12, 1)), 5, axis=0)
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(len(X))
    kernel = ConstantKernel(1e4, "fixed") * DotProduct(1.0, sigma_0_bounds="fixed")
    params = dict(kernel=kernel, noise_variance=1e-10, noise_variance_bounds="fixed",
                  optimizer=None, max_basis=len(X), random_state=0)
    with pytest.warns(UserWarning, match="numerically redundant"):
        reference = SparseGPRegressor(**params).fit(X, y)
    with pytest.warns(UserWarning, match="numerically redundant"):
        model, rows = _fit_local(params, X, y, partition_rows=25)
    assert rows.n_partitions == 3
    assert len(reference.basis_indices_) == 2  # the kernel's rank: every other point skipped
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    X_test = np.linspace(-3, 3, 9)[:, None]
    np.testing.assert_allclose(model.predict(X_test), reference.predict(X_test), atol=1e-8)
