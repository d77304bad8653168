"""Any finite scale of X and y: finite outputs, and fits equivariant in y where the model is.

The RVMs have no amplitude hyperparameter and ``SparseGPRegressor(normalize_y=True)``
normalises its targets, so a fit on ``s * y`` must predict ``s`` times the mean and the
standard deviation of the fit on ``y``. The test targets' largest magnitude is 1, so for an
exact power of two ``s`` the internal rescaling makes the two fits the same arithmetic and
the predictions agree bit for bit; for powers of ten the rescaled targets differ from ``y``
by one rounding.
"""

import functools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skgpsparse import (
    RelevanceVectorClassifier,
    RelevanceVectorRegressor,
    SparseGPClassifier,
    SparseGPRegressor,
)

SCALES = [1e-300, 1e-150, 1e150, 1e300]
POWERS_OF_TWO = [2.0**-1000, 2.0**-500, 2.0**500, 2.0**1000]  # ~1e-301 ... ~1e301


def _data(n=40, seed=0):
    """Inputs, and targets whose largest magnitude is exactly 1 (an ordinary, unscaled fit)."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    return X, y / np.max(np.abs(y)), rng.normal(size=(15, 2))


def _gpr(**params):
    return SparseGPRegressor(**{"max_basis": 15, "max_iter": 2, "random_state": 0, **params})


def _rvr():
    return RelevanceVectorRegressor(random_state=0)


EQUIVARIANT = {"rvr": _rvr, "gpr-normalize_y": lambda: _gpr(normalize_y=True)}


def _fit_predict(make, X, y, X_test):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return make().fit(X, y).predict(X_test, return_std=True)


@functools.cache
def _unscaled_fit(name):
    """The predictions of the fit on the unscaled targets, shared by every scale (read-only)."""
    X, y, X_test = _data()
    outputs = _fit_predict(EQUIVARIANT[name], X, y, X_test)
    for output in outputs:
        output.setflags(write=False)
    return outputs


@pytest.mark.parametrize("name", EQUIVARIANT)
@pytest.mark.parametrize("s", POWERS_OF_TWO)
def test_fit_on_power_of_two_scaled_targets_is_the_same_fit(name, s):
    X, y, X_test = _data()
    mean0, std0 = _unscaled_fit(name)
    mean, std = _fit_predict(EQUIVARIANT[name], X, y * s, X_test)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)
    # s * y over the internal power of two is y itself: the same arithmetic, scaled back
    np.testing.assert_array_equal(mean / s, mean0)
    np.testing.assert_array_equal(std / s, std0)


@pytest.mark.parametrize("name", EQUIVARIANT)
@pytest.mark.parametrize("s", SCALES)
def test_fit_is_equivariant_in_the_scale_of_y(name, s):
    X, y, X_test = _data()
    mean0, std0 = _unscaled_fit(name)
    mean, std = _fit_predict(EQUIVARIANT[name], X, y * s, X_test)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)
    # The rescaled targets differ from y by one rounding (a relative 1e-16), which the fit
    # carries through an EM or L-BFGS path (the regressor's: hyperparameters, then up to 300
    # iterations moving the basis inputs): a tolerance far above that, far below any change
    # of the fitted model (a different basis or relevance set moves predictions by > 1e-2).
    np.testing.assert_allclose(mean / s, mean0, rtol=1e-5, atol=1e-5 * np.max(np.abs(mean0)))
    np.testing.assert_allclose(std / s, std0, rtol=1e-5)


def test_rvr_attributes_are_in_the_targets_units():
    X, y, _ = _data()
    s = 2.0**40
    ref, fit = _rvr().fit(X, y), _rvr().fit(X, y * s)
    np.testing.assert_array_equal(fit.relevance_indices_, ref.relevance_indices_)
    np.testing.assert_array_equal(fit.coef_, ref.coef_ * s)
    assert fit.intercept_ == ref.intercept_ * s
    np.testing.assert_array_equal(fit.alpha_, ref.alpha_ / s**2)
    np.testing.assert_array_equal(fit.sigma_, ref.sigma_ * s**2)
    assert fit.noise_variance_ == ref.noise_variance_ * s**2
    # the evidence of y' = s y is a density in y' units: log p(y') = log p(y) - n log s
    n = X.shape[0]
    assert np.isclose(
        fit.log_marginal_likelihood_value_,
        ref.log_marginal_likelihood_value_ - n * np.log(s),
        rtol=1e-13,
    )


@pytest.mark.parametrize("s", [1e-300, 1e-150, 1e150, 1e300])
def test_unnormalised_regressor_is_finite_or_names_normalize_y(s):
    # Without normalize_y the amplitude and noise bounds are in y's units: the fit ends on
    # a bound (and says so) or, where the likelihood leaves the float range at every theta
    # in the bounds, raises an error that names the remedy.
    X, y, X_test = _data()
    if s < 1e200:
        with pytest.warns(ConvergenceWarning, match="bound"):
            mean, std = _gpr().fit(X, y * s).predict(X_test, return_std=True)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (ConvergenceWarning, RuntimeWarning))
        with pytest.raises(ValueError, match="normalize_y=True"):
            _gpr().fit(X, y * s)
    # the advice holds: normalised, the same targets fit
    mean, std = _fit_predict(lambda: _gpr(normalize_y=True), X, y * s, X)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))


def _assert_finite_outputs(est, X):
    if hasattr(est, "predict_proba"):
        proba = est.predict_proba(X)
        assert np.all(np.isfinite(proba)) and np.all((proba >= 0) & (proba <= 1))
        if hasattr(est, "decision_function"):
            assert np.all(np.isfinite(est.decision_function(X)))
    else:
        mean, std = est.predict(X, return_std=True)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std >= 0)


ESTIMATORS = {
    "gpr": _gpr,
    "gpr-normalize_y": lambda: _gpr(normalize_y=True),
    "gpc": lambda: SparseGPClassifier(max_basis=15, max_iter=2, random_state=0),
    "gpc-multiclass": lambda: SparseGPClassifier(max_basis=10, max_iter=1, random_state=0),
    "rvr": _rvr,
    "rvc": lambda: RelevanceVectorClassifier(random_state=0),
}


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("s", SCALES)
def test_any_input_scale_gives_finite_outputs(name, s):
    X, y, X_test = _data()
    if name.startswith("gpc") or name == "rvc":
        y = (y > 0).astype(int) + (y > 0.8 if name == "gpc-multiclass" else 0)
    Xs = X * s
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = ESTIMATORS[name]().fit(Xs, y)
    _assert_finite_outputs(est, X_test * s)
    _assert_finite_outputs(est, Xs)
