"""Selection by the increase of Titsias' bound (SparseGPRegressor(selection="vfe"))."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C

import skgpsparse.regression._scoring as scoring
from skgpsparse import SparseGPRegressor
from skgpsparse.regression._state import RegressionState
from skgpsparse.regression._vfe import state_objective, vfe_log_marginal_likelihood


def _data(n=300, seed=0, targets=1):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.1 * rng.randn(n)
    return X, (y if targets == 1 else np.column_stack([y, -y + 0.5 * X[:, 0]]))


def _bound_after(kernel, X, y, s2, basis, jitter):
    """The bound on ``basis`` by the dense-free reference implementation."""
    return vfe_log_marginal_likelihood(kernel, X, y, X[basis], s2, jitter=jitter)


@pytest.mark.parametrize("targets", [1, 2])
@pytest.mark.parametrize("path", ["streaming", "cache", "blocks"])
def test_criterion_is_the_increase_of_the_bound(targets, path, monkeypatch):
    if path == "blocks":
        monkeypatch.setattr(scoring, "_STREAM_MAX", 3)
    kernel, s2 = C(1.5) * Matern(0.8, nu=2.5), 0.02
    X, y = _data(targets=targets)
    state = RegressionState(kernel, X, y, s2, 20)
    rng = np.random.RandomState(1)
    for step in range(9):
        J = rng.choice(state.candidates(), 30, replace=False)
        if path == "cache":
            state.decrease("vfe", J)  # a repeated working set is scored from the cache
        increase = state.decrease("vfe", J)
        base = _bound_after(kernel, X, y, s2, state.basis, state.jitter) if state.n_basis else (
            state_objective(state, "vfe")
        )
        for j, inc in zip(J[:4], increase[:4]):
            after = _bound_after(kernel, X, y, s2, np.append(state.basis, j), state.jitter)
            assert inc == pytest.approx(after - base, rel=1e-7, abs=1e-6)
        state.append(J[np.argmax(increase)])


def test_vfe_selection_beats_random_on_the_bound():
    X, y = _data(500)
    kw = dict(kernel=C(1.0) * RBF(1.0), max_basis=10, optimizer=None, noise_variance=0.01,
              hyperparameter_objective="vfe")
    bounds = {
        sel: [SparseGPRegressor(selection=sel, random_state=s, **kw).fit(X, y)
              .log_marginal_likelihood_value_ for s in range(3)]
        for sel in ("vfe", "random")
    }
    assert min(bounds["vfe"]) > max(bounds["random"])


def test_vfe_selection_is_validated_like_the_others():
    X, y = _data(50)
    with pytest.raises(ValueError, match="selection"):
        SparseGPRegressor(selection="bound").fit(X, y)
