"""Sample weights of RelevanceVectorRegressor (issue 48): whitened rows against repeated rows."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF

from skgpsparse import RelevanceVectorRegressor
from skgpsparse.rvm._regression_em import _RegressionEM
from skgpsparse.rvm._weighted_rows import WeightedRegressionEM


def _data(n=30, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.sin(X[:, 0]) + 0.1 * rng.randn(n)


@pytest.mark.parametrize("learn_noise", [True, False])
def test_weighted_em_equals_the_em_of_repeated_rows_on_the_same_library(learn_noise):
    # the same basis functions (one per distinct row, and the bias): the weighted EM's
    # evidence, posterior and updates are the repeated rows', step by step
    X, y = _data()
    w = np.random.RandomState(1).randint(1, 4, len(y)).astype(float)
    n = len(y)
    centers = np.vstack([X, np.zeros((1, 1))])
    bias_mask = np.r_[np.zeros(n, dtype=bool), True]
    args = (centers, bias_mask, 0.05, learn_noise, 1e9, 1e-12, "refactor")
    kernel = RBF(0.7)
    weighted = WeightedRegressionEM(kernel, X, y, *args, weight=w)
    reps = w.astype(int)
    repeated = _RegressionEM(kernel, np.repeat(X, reps, axis=0), np.repeat(y, reps), *args)
    entries = np.arange(n + 1)
    weighted.add(entries, "auto")
    repeated.add(entries, "auto")
    for _ in range(15):
        ll_w, ll_r = weighted.em_step(), repeated.em_step()
        assert ll_w == pytest.approx(ll_r, rel=1e-9)
    np.testing.assert_array_equal(weighted.design.index, repeated.design.index)
    np.testing.assert_allclose(weighted.design.alpha, repeated.design.alpha, rtol=1e-7)
    assert weighted.s2 == pytest.approx(repeated.s2, rel=1e-9)
    np.testing.assert_allclose(weighted.posterior()[0], repeated.posterior()[0], rtol=1e-7,
                               atol=1e-10)


def test_zero_weights_equal_removal_and_unit_weights_change_nothing():
    X, y = _data(seed=2)
    w = np.ones(len(y))
    w[::4] = 0
    model = RelevanceVectorRegressor(kernel=RBF(1.0), random_state=0)
    weighted = model.fit(X, y, sample_weight=w)
    mean_w = weighted.predict(X)
    kept = np.flatnonzero(w > 0)
    assert np.all(w[weighted.relevance_indices_] > 0)
    indices_w = weighted.relevance_indices_.copy()
    removed = RelevanceVectorRegressor(kernel=RBF(1.0), random_state=0).fit(X[kept], y[kept])
    np.testing.assert_allclose(mean_w, removed.predict(X), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(indices_w, kept[removed.relevance_indices_])
    unit = RelevanceVectorRegressor(random_state=0).fit(X, y, sample_weight=np.ones(len(y)))
    plain = RelevanceVectorRegressor(random_state=0).fit(X, y)
    np.testing.assert_array_equal(unit.predict(X), plain.predict(X))


@pytest.mark.parametrize("seed", [3, 7])
def test_integer_weights_are_near_repeated_rows_and_far_from_no_weights(seed):
    # the repeated rows' library has a basis function per copy and the RVM's evidence has
    # local optima (pruning), so the estimators agree to the EM's optimum, not to rounding:
    # measured 4e-5 to 8e-5 in the predictions, 1e-6 relative in the noise, against 0.08 to
    # 0.1 from the unweighted fit (batch EM; SSEM's random visits differ more, up to 0.05)
    rng = np.random.RandomState(seed)
    n = 60
    X = rng.uniform(-3, 3, (n, 1))
    y = np.sin(X[:, 0]) + 0.2 * rng.randn(n)
    w = rng.randint(1, 5, n)
    grid = np.linspace(-3, 3, 25).reshape(-1, 1)
    params = {"kernel": RBF(1.0), "method": "batch_em", "random_state": 0}
    weighted = RelevanceVectorRegressor(**params).fit(X, y, sample_weight=w)
    repeated = RelevanceVectorRegressor(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    plain = RelevanceVectorRegressor(**params).fit(X, y)
    assert np.max(np.abs(weighted.predict(grid) - repeated.predict(grid))) < 1e-3
    assert weighted._noise_variance == pytest.approx(repeated._noise_variance, rel=1e-4)
    assert np.max(np.abs(weighted.predict(grid) - plain.predict(grid))) > 0.05
