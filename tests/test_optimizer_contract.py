"""The `optimizer` contract: theta outside the bounds is clipped with a warning, NaN raises."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier, SparseGPRegressor
from skgpsparse._optimize import lbfgs_in_moving_box


def _far_out(obj_func, theta0, bounds):
    """A user optimizer that overshoots every upper bound."""
    return np.asarray(bounds)[:, 1] + 3.0, float(obj_func(theta0, eval_gradient=False))


def _nan(obj_func, theta0, bounds):
    return np.full_like(theta0, np.nan), 0.0


def _scalar(obj_func, theta0, bounds):
    """A user optimizer that returns the value alone, not the pair."""
    return float(obj_func(theta0, eval_gradient=False))


def _estimators():
    X, y = make_moons(n_samples=80, noise=0.2, random_state=0)
    kernel = C(1.0, (1e-2, 1e2)) * RBF(1.0, (1e-2, 1e2))
    return [
        (SparseGPClassifier(kernel, max_basis=10, max_iter=1, random_state=0), X, y),
        (SparseGPRegressor(kernel, max_basis=10, max_iter=1, random_state=0), X,
         np.sin(X[:, 0]) + X[:, 1]),
    ]


@pytest.mark.parametrize("index", [0, 1], ids=["classifier", "regressor"])
def test_theta_outside_the_bounds_is_clipped_with_a_warning(index):
    model, X, y = _estimators()[index]
    with pytest.warns(UserWarning, match="optimizer.*outside its bounds"):
        model.set_params(optimizer=_far_out).fit(X, y)
    bounds = model.kernel_.bounds
    assert np.all(model.kernel_.theta >= bounds[:, 0]) and np.all(
        model.kernel_.theta <= bounds[:, 1]
    )
    np.testing.assert_allclose(model.kernel_.theta, bounds[:, 1])
    assert np.all(np.isfinite(model.predict(X)))


@pytest.mark.parametrize("index", [0, 1], ids=["classifier", "regressor"])
def test_non_finite_theta_raises_naming_the_optimizer(index):
    model, X, y = _estimators()[index]
    with pytest.raises(ValueError, match="`optimizer`.*non-finite"):
        model.set_params(optimizer=_nan).fit(X, y)


@pytest.mark.parametrize("index", [0, 1], ids=["classifier", "regressor"])
def test_a_result_that_is_no_pair_raises_naming_the_optimizer(index):
    est, X, y = _estimators()[index]
    with pytest.raises(ValueError, match="`optimizer` callable must return a pair"):
        est.set_params(optimizer=_scalar).fit(X, y)


def test_wrong_shape_raises_naming_the_optimizer():
    model, X, y = _estimators()[1]
    with pytest.raises(ValueError, match="`optimizer`.*shape"):
        model.set_params(optimizer=lambda f, t, bounds: (np.zeros(7), 0.0)).fit(X, y)


@pytest.mark.parametrize("scale", [1.0, 1e154, 1e200])
def test_moving_box_search_survives_huge_gradients_beside_subnormal_ones(scale):
    # The regressor's objective for targets near 1e76 has gradients near 1e154, and a constant
    # input column at 1e-218 adds a subnormal entry: raw L-BFGS-B then steps to NaN. The search
    # must find the minimiser of the quadratic (1, 0, 1) and its value, as at scale 1.
    def quadratic(theta):
        grad = scale * 2.0 * (theta - 1.0)
        grad[1] = -2.7e-317
        return float(scale * np.sum((theta - 1.0) ** 2) + scale), grad

    bounds = np.array([[-5.0, 5.0]] * 3)
    theta, value = lbfgs_in_moving_box(quadratic, np.zeros(3), bounds)
    np.testing.assert_allclose(theta, [1.0, 0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(value, 2.0 * scale, rtol=1e-10)


def _slow_tail(counter):
    """An ill-conditioned quartic (weights 1 ... 1e-6): L-BFGS-B's last hundreds of
    iterations gain almost nothing, as on ARD length scales that barely matter."""
    w = np.logspace(0, -6, 40)

    def f(theta):
        counter.append(theta.copy())
        r = theta - 1.5
        return float(np.sum(w * r**2 + w * r**4)), 2.0 * w * r + 4.0 * w * r**3

    return f


def test_stall_stops_the_slow_tail_without_a_warning():
    bounds = np.array([[-10.0, 10.0]] * 40)
    full, stalled = [], []
    _, value_full = lbfgs_in_moving_box(_slow_tail(full), np.zeros(40), bounds)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stopping early is not a convergence failure
        _, value = lbfgs_in_moving_box(
            _slow_tail(stalled), np.zeros(40), bounds, stall=(10, 1e-4)
        )
    start = _slow_tail([])(np.zeros(40))[0]
    assert len(stalled) < len(full) / 3
    # within a few times the stall's decrease of the optimum, from a start 4 orders above
    assert value_full < value < value_full + 1e-3 < start / 1000


def test_stall_does_not_cut_short_a_round_that_still_pays():
    # steady progress (a quadratic) converges as without the stall rule
    def quadratic(theta):
        return float(np.sum((theta - 3.0) ** 2)), 2.0 * (theta - 3.0)

    bounds = np.array([[-10.0, 10.0]] * 4)
    theta, _ = lbfgs_in_moving_box(quadratic, np.full(4, -6.0), bounds, stall=(10, 1e-6))
    np.testing.assert_allclose(theta, 3.0, atol=1e-6)


def _scripted_minimize(results):
    """A stand-in for scipy.optimize.minimize returning the given results in turn."""
    from scipy.optimize import OptimizeResult

    calls = iter(results)

    def minimize(fun, x0, **kwargs):
        fun(x0)
        status, nit, x = next(calls)
        x = np.asarray(x, dtype=float)
        return OptimizeResult(x=x, fun=fun(x)[0], status=status, nit=nit, success=status == 0,
                              message="ABNORMAL: " if status == 2 else "CONVERGENCE")

    return minimize


def test_a_moved_box_whose_start_cannot_be_improved_ends_the_search_quietly(monkeypatch):
    import scipy.optimize

    def f(theta):
        return float(np.sum((theta - 9.0) ** 2)), 2.0 * (theta - 9.0)

    bounds = np.array([[-10.0, 10.0]])
    # round 1 ends on its box's edge (2.0), round 2's line search fails at once: settled
    monkeypatch.setattr(scipy.optimize, "minimize", _scripted_minimize([(0, 5, [2.0]),
                                                                        (2, 0, [2.0])]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        theta, value = lbfgs_in_moving_box(f, np.zeros(1), bounds)
    assert theta[0] == 2.0 and value == 49.0
    # the same failure in the first round is a failed search, and says so
    monkeypatch.setattr(scipy.optimize, "minimize", _scripted_minimize([(2, 0, [0.0])]))
    with pytest.warns(ConvergenceWarning, match="ABNORMAL"):
        lbfgs_in_moving_box(f, np.zeros(1), bounds)


def test_lbfgs_ends_at_a_step_below_the_resolution():
    # an objective whose gradient disagrees with its values (EP's evidence near the optimum,
    # exact only to the site tolerance): L-BFGS-B's line search rejects every step and, left
    # alone, probes ever shorter ones (20 evaluations) before it gives up at the start
    from skgpsparse.latent.learning._hyperparameters import _lbfgs

    calls = []

    def misleading(x, eval_gradient=True):
        calls.append(np.array(x))
        return float(x @ x), -2.0 * x  # uphill

    x0, bounds = np.array([1.0, 0.5]), [(-5.0, 5.0)] * 2
    theta, value = _lbfgs(misleading, x0, bounds)
    plain = len(calls)
    calls.clear()
    resolved, resolved_value = _lbfgs(misleading, x0, bounds, resolution=(np.ones(2), 1e-4))
    # the same answer (the start, the lowest point), fewer evaluations, none closer to the
    # lowest point than the resolution
    np.testing.assert_array_equal(resolved, theta)
    assert resolved_value == value == 1.25
    assert len(calls) < plain
    assert all(np.max(np.abs(c - x0)) >= 1e-4 for c in calls[1:])
    # units: the same steps measured in units of 100 fall below the resolution sooner
    in_ones = len(calls)
    calls.clear()
    _lbfgs(misleading, x0, bounds, resolution=(np.full(2, 100.0), 1e-4))
    assert len(calls) < in_ones
    assert all(np.max(np.abs(c - x0)) >= 1e-2 for c in calls[1:])
