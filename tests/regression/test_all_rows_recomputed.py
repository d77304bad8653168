"""The regressor's posterior on all rows without the ``p x n`` block ``V``.

Above the budget of ``inference/_row_columns.py`` the posterior of a fit learned on a
subsample is formed on every row by two passes that form ``V``'s blocks again. Forced on
small data (the budget low enough that the 300 learning rows keep ``V``, all 900 do not),
the fitted model equals the one from the stored ``V``.
"""

import numpy as np
import pytest

from skgpsparse import SparseGPRegressor
from skgpsparse.inference import _row_columns
from skgpsparse.regression import _all_rows_posterior, _alternation, _dtc, _full_basis, _vfe
from skgpsparse.regression._dtc import sparse_factors


def _data(n, seed):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    y = np.sin(2.0 * X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.2 * rng.randn(n)
    return X, y


@pytest.mark.parametrize("weighted", [False, True])
def test_the_all_rows_posterior_by_passes_equals_the_stored_one(weighted, monkeypatch):
    X, y = _data(900, 0)
    X_test = _data(200, 1)[0]
    weights = np.random.RandomState(2).uniform(0.5, 2.0, y.size) if weighted else None
    passes = []
    original = _all_rows_posterior.posterior_on_row_store

    def spy(fit, store, *args, **kwargs):
        passes.append(store.n)
        return original(fit, store, *args, **kwargs)

    monkeypatch.setattr(_all_rows_posterior, "posterior_on_row_store", spy)
    sizes = []  # the rows of every p x n block V formed whole

    def factors(kernel, X, *args, **kwargs):
        sizes.append(X.shape[0])
        return sparse_factors(kernel, X, *args, **kwargs)

    for module in (_all_rows_posterior, _alternation, _dtc, _full_basis, _vfe):
        monkeypatch.setattr(module, "sparse_factors", factors)
    fits = []
    # 15 basis vectors: V is 36 kB on the 300 learning rows, 108 kB on all 900
    for budget in (1 << 30, 60_000):
        monkeypatch.setattr(_row_columns, "STORE_BYTES", budget)
        model = SparseGPRegressor(max_basis=15, learning_rows=300, max_iter=2, random_state=0)
        sizes.clear()
        fits.append(model.fit(X, y, sample_weight=weights))
    assert passes == [900]  # the second fit only
    assert sizes and max(sizes) == 300  # its V whole on the learning rows only (calibration too)
    stored, again = fits
    np.testing.assert_array_equal(again.basis_indices_, stored.basis_indices_)
    np.testing.assert_allclose(again.noise_variance_, stored.noise_variance_, rtol=1e-10)
    np.testing.assert_allclose(again.alpha_, stored.alpha_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(again.log_marginal_likelihood_value_,
                               stored.log_marginal_likelihood_value_, rtol=1e-10)
    mean_s, std_s = stored.predict(X_test, return_std=True)
    mean_r, std_r = again.predict(X_test, return_std=True)
    np.testing.assert_allclose(mean_r, mean_s, rtol=1e-10, atol=1e-12)
    # the std is a difference of order-one variances: 1e-10 of the prior's scale (1)
    np.testing.assert_allclose(std_r, std_s, rtol=1e-10, atol=1e-10)
