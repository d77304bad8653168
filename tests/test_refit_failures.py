"""A fit that raises leaves the estimator as it was (issue 48, point 6): one rule for all four.

The previous model stays intact and usable (the same predictions, the same fitted attributes),
and an estimator that was never fitted stays unfitted, whatever failed: the validation of
``X`` or ``y``, the kernel inside the fit, or the optimizer.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process.kernels import RBF

from skgpsparse import (
    RelevanceVectorClassifier,
    RelevanceVectorRegressor,
    SparseGPClassifier,
    SparseGPRegressor,
)


class _Broken(RuntimeError):
    """The failure a test provokes inside a fit."""


_CALLS_LEFT = [0]  # calls of _BreaksMidFit before it fails (shared by its clones)


class _BreaksMidFit(RBF):
    """An RBF that raises :class:`_Broken` once it has been called ``_CALLS_LEFT[0]`` times:
    a failure after the validation, in the middle of the fit's work."""

    def __call__(self, X, Y=None, eval_gradient=False):
        _CALLS_LEFT[0] -= 1
        if _CALLS_LEFT[0] < 0:
            raise _Broken("the kernel failed inside the fit")
        return super().__call__(X, Y, eval_gradient)


def _failing_optimizer(obj_func, initial_theta, bounds):
    obj_func(initial_theta)  # the fit is under way when it fails
    raise _Broken("the optimizer failed")


def _data(classify):
    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, (50, 2))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.randn(50)
    return X, ((y > 0).astype(int) if classify else y)


_ESTIMATORS = {
    "SparseGPRegressor": lambda: SparseGPRegressor(max_basis=10, max_iter=2, random_state=0),
    "SparseGPClassifier": lambda: SparseGPClassifier(max_basis=10, max_iter=2, random_state=0),
    "RelevanceVectorRegressor": lambda: RelevanceVectorRegressor(max_iter=20, random_state=0),
    "RelevanceVectorClassifier": lambda: RelevanceVectorClassifier(max_iter=20, random_state=0),
}


def _failures(name, X, y):
    """``(description, call that raises, exception type)`` on the estimator ``est``."""
    X_nan = X.copy()
    X_nan[3, 1] = np.nan

    def kernel_breaks(est):
        _CALLS_LEFT[0] = 1
        est.set_params(kernel=_BreaksMidFit(1.0)).fit(X, y)

    cases = [
        ("X with NaN", lambda est: est.fit(X_nan, y), ValueError),
        ("y of another length", lambda est: est.fit(X, y[:-1]), ValueError),
        ("y with inf", lambda est: est.fit(X, np.where(np.arange(len(y)) == 2, np.inf, y)),
         ValueError),
        ("the kernel inside the fit", kernel_breaks, _Broken),
    ]
    if name.startswith("SparseGP"):
        cases.append(("the optimizer",
                      lambda est: est.set_params(optimizer=_failing_optimizer).fit(X, y),
                      _Broken))
    return cases


def _outputs(est, X):
    if hasattr(est, "predict_proba"):
        return est.predict(X), est.predict_proba(X)
    if isinstance(est, SparseGPRegressor):
        return est.predict(X, return_std=True)
    return est.predict(X, return_std=True)


def _snapshot(est):
    return {name: value for name, value in vars(est).items()
            if name.endswith("_") or name.startswith("_")}


@pytest.mark.parametrize("name", sorted(_ESTIMATORS))
def test_a_failed_refit_leaves_the_previous_model(name):
    classify = "Classifier" in name
    X, y = _data(classify)
    X_query = np.random.RandomState(1).uniform(-2, 2, (20, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for what, fail, error in _failures(name, X, y):
            est = _ESTIMATORS[name]().fit(X, y)
            before, state = _outputs(est, X_query), _snapshot(est)
            params = est.get_params()
            with pytest.raises(error):
                fail(est)
            # the same fitted attributes, as the same objects, and nothing added
            assert set(_snapshot(est)) == set(state), what
            for key, value in state.items():
                assert vars(est)[key] is value, (what, key)
            for a, b in zip(_outputs(est, X_query), before):
                np.testing.assert_array_equal(a, b, err_msg=what)
            # usable: the parameters back to the first fit's, a refit gives the fresh model
            est.set_params(**params).fit(X, y)
            for a, b in zip(_outputs(est, X_query), before):
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("name", sorted(_ESTIMATORS))
def test_a_failed_first_fit_leaves_an_unfitted_estimator(name):
    classify = "Classifier" in name
    X, y = _data(classify)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for what, fail, error in _failures(name, X, y):
            est = _ESTIMATORS[name]()
            with pytest.raises(error):
                fail(est)
            assert not [k for k in vars(est) if k.endswith("_")], what
            if isinstance(est, SparseGPRegressor):
                # unfitted, it predicts the prior (as scikit-learn's GPR): zero mean
                mean, std = SparseGPRegressor().predict(X[:5], return_std=True)
                np.testing.assert_array_equal(mean, 0.0)
                np.testing.assert_allclose(std, 1.0)
            else:
                with pytest.raises(NotFittedError):
                    est.predict(X[:5])
