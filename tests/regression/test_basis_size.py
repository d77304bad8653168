"""max_basis="auto": the stopping rule of the forward selection (regression/_basis_size.py)."""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression._basis import forward_step, make_selector
from skgpsparse.regression._basis_size import (
    FIRST_SIZE,
    GAIN_PER_ROW,
    auto_basis_cap,
    profile,
)
from skgpsparse.regression._fit_memory import fit_memory
from skgpsparse.regression._state import RegressionState
from skgpsparse.regression._vfe import vfe_log_marginal_likelihood


def _data(target, n, d=1, seed=0, noise=0.1):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, d))
    return X, target(X) + noise * rng.randn(n)


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # learned values at bounds (a constant target)
        return SparseGPRegressor(max_basis="auto", random_state=0, **params).fit(X, y)


@pytest.mark.parametrize(
    "target",
    [lambda X: np.full(len(X), 2.0), lambda X: 0.5 * X[:, 0] - X[:, 1]],
    ids=["constant", "linear"],
)
def test_auto_stops_at_the_first_size_on_a_target_that_needs_few_basis_vectors(target):
    X, y = _data(target, 1500, d=2)
    model = _fit(X, y)
    assert model.n_basis_ == FIRST_SIZE == len(model.basis_indices_)
    # the curve: 50, then the doubling to 100 that gained less than the threshold
    sizes, values = model.basis_size_curve_.T
    np.testing.assert_array_equal(sizes, [FIRST_SIZE, 2 * FIRST_SIZE])
    assert values[1] - values[0] < GAIN_PER_ROW


def test_auto_grows_on_a_target_that_needs_many_basis_vectors():
    # a 2-D product of sines, 24 half-periods along each input, noise 0.1
    X, y = _data(lambda X: np.sin(4 * X[:, 0]) * np.sin(4 * X[:, 1]), 2000, d=2)
    model = _fit(X, y, refine_basis=0, max_iter=2)
    sizes, values = model.basis_size_curve_.T
    assert model.n_basis_ >= 400
    gains = np.diff(values)
    # every doubling kept gained at least the threshold; only a last one may gain less
    assert np.all(gains[:-1] >= GAIN_PER_ROW)
    assert model.n_basis_ in sizes
    # and the larger basis predicts better than the first size on fresh rows
    X_t, y_t = _data(lambda X: np.sin(4 * X[:, 0]) * np.sin(4 * X[:, 1]), 1000, d=2, seed=1)
    small = SparseGPRegressor(max_basis=FIRST_SIZE, refine_basis=0, max_iter=2,
                              random_state=0).fit(X, y)
    assert model.score(X_t, y_t) > small.score(X_t, y_t) + 0.05


def test_profiled_bound_is_titsias_bound_at_its_amplitude_and_noise():
    X, y = _data(lambda X: np.sin(2 * X[:, 0]), 400)
    kernel, s2 = C(1.0) * RBF(0.5), 0.05
    state = RegressionState(kernel, X, y, s2, 30, jitter=1e-10)
    selector, rng = make_selector("matching_pursuit", None), np.random.RandomState(0)
    while state.n_basis < 30 and forward_step(state, selector, rng, []):
        pass
    value, c, s2_best = profile(state, (1e-6, 1e2))
    Z = X[state.basis]

    def bound(c_, s2_):  # the package's dense objective, from kernel matrices
        k = C(c_) * RBF(0.5)
        return vfe_log_marginal_likelihood(k, X, y, Z, s2_, jitter=1e-10 * c_) / len(y)

    assert value == pytest.approx(bound(c, s2_best), rel=1e-7)
    # at the state's own (c, s2) = (1, 0.05) and near the optimum the bound is not higher
    assert bound(1.0, s2) <= value + 1e-9
    for dc, ds in [(1.1, 1.0), (0.9, 1.0), (1.0, 1.1), (1.0, 0.9)]:
        assert bound(c * dc, s2_best * ds) <= value + 1e-9
    # with the noise not learned nothing is re-fitted: the bound at the state's values
    assert profile(state, None)[0] == pytest.approx(bound(1.0, s2), rel=1e-7)


def test_auto_cap_is_the_memory_budget_the_rows_and_800():
    X, y = _data(lambda X: X[:, 0], 3000, d=3)
    model = SparseGPRegressor(max_basis="auto")
    model._selector = make_selector("matching_pursuit", None)
    model.kernel_ = C(1.0) * RBF(1.0)
    plenty = 10.0 * 2**40
    assert auto_basis_cap(model, X, y, 3000, True, available=plenty) == 800
    assert auto_basis_cap(model, X[:1000], y[:1000], 1000, True, available=plenty) == 500
    assert auto_basis_cap(model, X[:40], y[:40], 40, True, available=plenty) == 40
    budget = fit_memory(3000, 3, 120, 2, 1, True, 59).total
    assert auto_basis_cap(model, X, y, 3000, True, available=budget) == 120


def test_int_max_basis_has_no_curve_and_its_size():
    X, y = _data(lambda X: np.sin(X[:, 0]), 200)
    model = SparseGPRegressor(max_basis=20, optimizer=None, random_state=0).fit(X, y)
    assert model.n_basis_ == 20 and model.basis_size_curve_ is None


def test_auto_with_fixed_hyperparameters_uses_the_bound_itself():
    X, y = _data(lambda X: np.sin(6 * X[:, 0]), 1000)
    model = SparseGPRegressor(C(1.0) * RBF(0.3), max_basis="auto", optimizer=None,
                              noise_variance=0.01, random_state=0).fit(X, y)
    sizes, values = model.basis_size_curve_.T
    assert model.n_basis_ in sizes
    # the last value is the fitted model's bound when the last size was kept
    if model.n_basis_ == sizes[-1]:
        assert values[-1] * len(y) == pytest.approx(model.log_marginal_likelihood_value_,
                                                    rel=1e-8)


def test_verbose_prints_the_curve(capsys):
    X, y = _data(lambda X: np.full(len(X), 1.0), 300)
    _fit(X, y, verbose=1)
    out = capsys.readouterr().out
    assert "max_basis='auto': basis 50" in out and "gain" in out


def test_auto_is_refused_with_a_non_gaussian_likelihood():
    X, y = _data(lambda X: np.full(len(X), 1.0), 50)
    with pytest.raises(ValueError, match="max_basis='auto'"):
        SparseGPRegressor(max_basis="auto", likelihood="poisson").fit(X, np.abs(y).round())


def test_bad_max_basis_string_names_the_parameter():
    X, y = _data(lambda X: X[:, 0], 30)
    with pytest.raises(ValueError, match="max_basis"):
        SparseGPRegressor(max_basis="many").fit(X, y)


def test_partial_fit_keeps_the_size_auto_chose():
    X, y = _data(lambda X: 0.5 * X[:, 0], 600)
    model = SparseGPRegressor(max_basis="auto", optimizer=None, random_state=0)
    model.partial_fit(X[:400], y[:400])
    chosen = model.n_basis_
    assert chosen < 200  # (half the rows)
    model.partial_fit(X[400:], y[400:])
    assert model.n_basis_ == chosen == len(model.basis_indices_)


def test_partial_fit_grows_when_the_first_batch_was_all_basis():
    X, y = _data(lambda X: np.sin(3 * X[:, 0]), 300)
    model = SparseGPRegressor(max_basis="auto", optimizer=None, random_state=0)
    model.partial_fit(X[:20], y[:20])
    assert model.n_basis_ == 20
    model.partial_fit(X[20:], y[20:])
    assert 20 < model.n_basis_ <= 100


def test_profiled_bound_with_weights_is_that_of_the_repeated_rows():
    from skgpsparse.regression._row_noise import RowNoise
    from skgpsparse.regression._row_scaled_state import RowScaledState

    X, y = _data(lambda X: np.sin(2 * X[:, 0]), 150)
    w = np.random.RandomState(1).randint(1, 4, size=150).astype(float)
    kernel, s2 = C(1.0) * RBF(0.5), 0.05
    weighted = RowScaledState(kernel, X, y, s2, 20, row_noise=RowNoise(np.ones(150), w),
                              jitter=1e-10)
    rows = np.repeat(np.arange(150), w.astype(int))
    repeated = RegressionState(kernel, X[rows], y[rows], s2, 20, jitter=1e-10)
    first = np.searchsorted(rows, np.arange(150))  # each row's first copy
    for j in np.random.RandomState(2).choice(150, 20, replace=False):
        weighted.append(j)
        repeated.append(first[j])
    for bounds in [None, (1e-6, 1e2)]:
        a, b = profile(weighted, bounds), profile(repeated, bounds)
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_warm_start_doubles_from_the_previous_size():
    X, y = _data(lambda X: np.sin(6 * X[:, 0]), 1200)
    model = SparseGPRegressor(C(1.0) * RBF(0.3), max_basis="auto", optimizer=None,
                              noise_variance=0.01, random_state=0, warm_start=True)
    model.fit(X, y)
    first = model.n_basis_
    model.fit(X, y)
    assert model.basis_size_curve_[0, 0] == first
    assert model.n_basis_ >= first
