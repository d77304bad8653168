"""L-BFGS-B in a box that moves with the iterate, and the contract of a user's ``optimizer``."""

import warnings

import numpy as np
import scipy.optimize
from sklearn.utils.optimize import _check_optimize_result

__all__ = ["Resolved", "Stalled", "StepResolution", "call_optimizer", "check_optimizer_result",
           "lbfgs_in_moving_box"]

# Half-width (in log space) of the search box around the current point, and how often the box
# may move before the search gives up on reaching an interior optimum.
TRUST_LOG = 2.0
TRUST_ROUNDS = 20

# Objectives whose gradient at the start exceeds this are divided by a power of two before
# L-BFGS-B sees them: its inner products of gradients overflow near 1e154, and a huge
# gradient beside a subnormal entry (a constant input column at 1e-218) makes it step to NaN.
# Ordinary objectives are far below it and reach L-BFGS-B unchanged.
_LARGE_GRADIENT = 1e100


class _Rescaled:
    """``obj_func`` divided by ``2**k``, ``k`` fixed at the first call so that the gradient
    there is of order 1 (0 when it is below :data:`_LARGE_GRADIENT`). A power of two keeps
    the values exact, so ``value * self.factor`` is the objective itself."""

    def __init__(self, obj_func):
        self.obj_func, self.factor = obj_func, None
        self.first = None  # the first value since ``first`` was last reset to None

    def __call__(self, theta):
        value, grad = self.obj_func(theta)
        if self.first is None:
            self.first = value
        if self.factor is None:
            largest = np.max(np.abs(grad), initial=0.0)
            large = np.isfinite(largest) and largest > _LARGE_GRADIENT
            self.factor = 2.0 ** np.round(np.log2(largest)) if large else 1.0
        if self.factor == 1.0:
            return value, grad
        return value / self.factor, np.asarray(grad) / self.factor


class Stalled:
    """L-BFGS-B callback: stop once ``window`` iterations together lowered the objective by
    less than ``decrease``, the iterations that only creep along a flat valley (irrelevant
    ARD length scales on their way to the upper bound). ``factor()`` is what the values
    L-BFGS-B sees are multiplied by to give the objective's."""

    def __init__(self, window, decrease, factor=lambda: 1.0):
        self.window, self.decrease, self.factor = window, decrease, factor
        self.values, self.stopped = [], False

    def __call__(self, intermediate_result):
        self.values.append(intermediate_result.fun * self.factor())
        window = self.window
        gain = self.values[-1 - window] - self.values[-1] if len(self.values) > window else None
        if gain is not None and gain < self.decrease:
            self.stopped = True
            raise StopIteration


class Resolved(Exception):
    """Raised by :class:`StepResolution` in place of an evaluation below its resolution."""


class StepResolution:
    """``obj_func`` that ends the minimisation when asked for a point within ``resolution``
    of the lowest point evaluated so far (every entry of ``|theta - best| / units``), by
    raising :class:`Resolved`; the caller then keeps ``best``.

    L-BFGS-B has no tolerance on its steps. On an objective that is exact only to a
    tolerance (EP run to a site tolerance), its line search near the optimum probes steps
    of 1e-5 to 1e-10 whose values differ below that tolerance, each a full evaluation, up
    to ``maxls = 20`` of them before it gives up (the log of session 23:
    ``benchmarks/README.md``, "History").
    A point that close to the best one is the best one to the objective's resolution.
    ``resolution = 0`` never ends a run. :meth:`minimize` runs L-BFGS-B on it.

    Examples
    --------
    >>> import numpy as np
    >>> def f(x, eval_gradient=True):
    ...     return float(x @ x), 2.0 * x
    >>> stop = StepResolution(f, units=np.ones(2), resolution=1e-3)
    >>> stop(np.array([1.0, 0.0]))[0]
    1.0
    >>> try:
    ...     stop(np.array([1.0, 1e-4]))
    ... except Resolved:
    ...     print("resolved at", stop.best[0])
    resolved at [1. 0.]
    """

    def __init__(self, obj_func, units, resolution):
        self.obj_func, self.units, self.resolution = obj_func, np.asarray(units), resolution
        self.best = None  # (theta, value) of the lowest evaluation

    def __call__(self, theta, eval_gradient=True):
        theta = np.asarray(theta, dtype=float)
        if self.best is not None:
            if np.max(np.abs(theta - self.best[0]) / self.units) < self.resolution:
                raise Resolved
        out = self.obj_func(theta, eval_gradient)
        value = out[0] if eval_gradient else out
        if np.isfinite(value) and (self.best is None or value < self.best[1]):
            self.best = (theta.copy(), float(value))
        return out

    def minimize(self, x0, **kwargs):
        """scipy's L-BFGS-B from ``x0`` (``kwargs``: ``bounds``, ``options``, ``callback``):
        ``(x, value, result)``, ``result`` None where a step fell below the resolution (``x,
        value``: the lowest evaluation)."""
        try:
            res = scipy.optimize.minimize(self, x0, method="L-BFGS-B", jac=True, **kwargs)
        except Resolved:
            return self.best[0], self.best[1], None
        return res.x, res.fun, res


def lbfgs_in_moving_box(
    obj_func, theta0, bounds, *, half_width=TRUST_LOG, rounds=TRUST_ROUNDS, stall=None
):
    """Minimise ``obj_func`` with L-BFGS-B inside ``theta +- half_width``, moving the box.

    L-BFGS-B's first step follows the raw gradient, which far from the optimum can jump to the
    corners of wide hyperparameter bounds (length scales at 1e-5 or 1e5, where all of y is
    explained as noise). Searching a box of ``+- half_width`` (log space) around the current
    point, and re-centring it while the optimum lies on an edge that is not a true bound, keeps
    the search in the basin of the warm start. An objective whose gradient at ``theta0`` is
    beyond ``1e100`` (targets of a huge scale) is divided by a power of two first, so that
    L-BFGS-B's arithmetic stays within floating point range; the minimiser is the same.

    Parameters
    ----------
    obj_func : callable
        ``obj_func(theta) -> (value, gradient)``, as in scikit-learn's optimizer contract.
    theta0 : ndarray of shape (n_dims,)
        Starting point (log-hyperparameters).
    bounds : ndarray of shape (n_dims, 2)
        The true bounds.
    half_width : float, default=2.0
        Half-width of the search box in log space.
    rounds : int, default=20
        Largest number of box moves.
    stall : (int, float) or None, default=None
        ``(window, decrease)``: stop a round when its last ``window`` iterations together
        lowered the objective by less than ``decrease``, and stop moving the box after a
        round (stopped so or converged) that lowered it by less than ``decrease`` in all.
        ``None`` runs L-BFGS-B to its own convergence test.

    Returns
    -------
    theta_opt : ndarray of shape (n_dims,)
    func_min : float

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse._optimize import lbfgs_in_moving_box
    >>> f = lambda t: (float(np.sum((t - 7.0) ** 2)), 2 * (t - 7.0))
    >>> theta, value = lbfgs_in_moving_box(f, np.zeros(2), np.array([[-10, 10], [-10, 10.0]]))
    >>> np.round(theta, 4).tolist(), round(value, 8)
    ([7.0, 7.0], 0.0)
    """
    theta_opt = np.clip(np.asarray(theta0, dtype=float), bounds[:, 0], bounds[:, 1])
    obj_func = _Rescaled(obj_func)
    for round_ in range(rounds):
        lo = np.maximum(bounds[:, 0], theta_opt - half_width)
        hi = np.minimum(bounds[:, 1], theta_opt + half_width)
        stalled = None if stall is None else Stalled(*stall, lambda: obj_func.factor)
        obj_func.first = None
        res = scipy.optimize.minimize(
            obj_func, theta_opt, method="L-BFGS-B", jac=True, bounds=np.column_stack([lo, hi]),
            callback=stalled,
        )
        # a moved box whose start L-BFGS-B cannot improve on at all (its line search fails
        # at once): the previous round ended at the optimum to round-off, not a failure
        settled = round_ > 0 and res.status == 2 and res.nit == 0
        stopped = settled or (stalled is not None and stalled.stopped)
        # with a stall rule, a box move is worth another round only while rounds still pay
        if settled or (
            stalled is not None and (obj_func.first - res.fun) * obj_func.factor < stalled.decrease
        ):
            break
        theta_opt = res.x
        at_edge = ((theta_opt <= lo + 1e-8) & (lo > bounds[:, 0])) | (
            (theta_opt >= hi - 1e-8) & (hi < bounds[:, 1])
        )
        if not np.any(at_edge):
            break
    if not stopped:
        _check_optimize_result("lbfgs", res)
    return res.x, res.fun * obj_func.factor


def call_optimizer(optimizer, *args, **kwargs):
    """``(theta_opt, func_min)`` of a user's ``optimizer(obj_func, initial_theta, bounds)``;
    anything but such a pair raises a ``ValueError`` naming ``optimizer``."""
    out = optimizer(*args, **kwargs)
    try:
        theta, value = out
    except (TypeError, ValueError) as exc:
        raise ValueError(
            "The `optimizer` callable must return a pair (theta_opt, func_min), as "
            f"scikit-learn's contract says; got {out!r}."
        ) from exc
    return theta, value


def check_optimizer_result(theta, bounds):
    """The ``theta`` a user's ``optimizer`` callable returned, made safe to use.

    scikit-learn's contract is ``optimizer(obj_func, initial_theta, bounds) -> (theta_opt,
    func_min)``. A ``theta_opt`` of the wrong shape or with a non-finite entry raises a
    ``ValueError`` naming ``optimizer``; entries outside ``bounds`` are clipped to them with a
    ``UserWarning`` (a kernel must not be fitted beyond its own bounds).

    Returns
    -------
    theta : ndarray
        ``theta_opt`` clipped to ``bounds``.
    clipped : bool
        Whether any entry was clipped.
    """
    bounds = np.asarray(bounds, dtype=float).reshape(-1, 2)
    try:
        theta = np.asarray(theta, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"The `optimizer` callable must return theta_opt as an array of {len(bounds)} "
            f"floats, got {theta!r}."
        ) from exc
    if theta.shape != (len(bounds),):
        raise ValueError(
            f"The `optimizer` callable must return theta_opt of shape ({len(bounds)},), got "
            f"shape {theta.shape}."
        )
    if not np.all(np.isfinite(theta)):
        raise ValueError(
            f"The `optimizer` callable returned a non-finite theta_opt: {theta}. It must return "
            "finite log-hyperparameters within the bounds it is given."
        )
    lo, hi = bounds[:, 0], bounds[:, 1]
    outside = (theta < lo) | (theta > hi)
    if np.any(outside):
        warnings.warn(
            f"The `optimizer` callable returned theta_opt outside its bounds at positions "
            f"{np.flatnonzero(outside).tolist()} ({theta[outside]} against bounds "
            f"{bounds[outside].tolist()}); they are clipped to the bounds.",
            UserWarning,
            stacklevel=3,
        )
    return np.clip(theta, lo, hi), bool(np.any(outside))
