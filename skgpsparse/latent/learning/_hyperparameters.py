"""The classifier's hyperparameter step: the optimizer contract, the bias start and bounds.

Both objectives' outer loops (the NLP loss of the two-loop design and the IVM evidence) take
their hyperparameter step through :func:`minimize_theta`, which follows scikit-learn's
``optimizer`` contract, and start the bias of the likelihood at :func:`initial_bias`.
"""

import numpy as np

from ..._optimize import StepResolution, call_optimizer, check_optimizer_result
from ..._row_weights import weighted_mean
from ...kernels._bounds import describe_at_bounds, warn_at_bounds
from ...likelihoods import Probit

__all__ = [
    "BIAS_BOUNDS", "OPTIMIZER_MAXITER", "PATIENCE", "check_bounds", "initial_bias",
    "minimize_theta",
]

# L-BFGS iterations per outer iteration: the validation paper does "one or two line searches"
# with the basis fixed, then re-selects the basis (§2.5).
OPTIMIZER_MAXITER = 15
# The outer loop stops when the NLP has not improved by `tol` for this many iterations (§2.5).
PATIENCE = 5
# Bounds of the bias b (probit units) for the optimiser.
BIAS_BOUNDS = (-1e3, 1e3)


def initial_bias(kernel, X, y, likelihood=None, weights=None):
    """The likelihood's bias start (``Likelihood.initial_bias``) from the targets' centre
    (``Likelihood.target_centre``) and the mean prior variance at ``X``: for the probit
    (None), the prior's class balance. ``weights``: the rows' weights (means over their
    copies)."""
    likelihood = Probit() if likelihood is None else likelihood
    return likelihood.initial_bias(
        likelihood.target_centre(y, weights), weighted_mean(kernel.diag(X), weights),
    )


def _lbfgs(obj_func, initial_theta, bounds, callback=None, resolution=None):
    """Default optimiser: a few L-BFGS-B iterations with the analytic gradient; with
    ``resolution = (units, tol)`` they end at a step below it (:class:`StepResolution`)."""
    units, tol = (np.ones(np.size(initial_theta)), 0.0) if resolution is None else resolution
    theta, loss, _ = StepResolution(obj_func, units, tol).minimize(
        initial_theta, bounds=bounds, options={"maxiter": OPTIMIZER_MAXITER}, callback=callback
    )
    return theta, loss


def minimize_theta(optimizer, obj_func, theta0, bounds, callback=None, resolution=None):
    """``(theta, loss)`` by ``"fmin_l_bfgs_b"`` or a callable (sklearn's optimizer contract).

    ``callback``: L-BFGS-B's (scipy's ``intermediate_result`` form; ``StopIteration`` ends the
    run at its iterate); a callable optimiser runs without it. ``resolution``: ``(units,
    tol)``, L-BFGS-B ends at a step below ``tol`` in ``units`` (:class:`StepResolution`);
    a callable optimiser runs without it.

    A callable may pass ``obj_func`` any sequence of floats (it sees an array). Its theta is
    checked (:func:`~skgpsparse._optimize.check_optimizer_result`:
    non-finite raises, outside the bounds is clipped with a warning); one that returns a
    non-finite loss leaves ``theta0`` in place.
    """
    if optimizer == "fmin_l_bfgs_b":
        theta, loss = _lbfgs(obj_func, theta0, bounds, callback, resolution)
    else:
        objective = obj_func

        def obj_func(theta, eval_gradient=True):  # a user's theta may be a list or tuple
            return objective(np.asarray(theta, dtype=float), eval_gradient)

        theta, loss = call_optimizer(optimizer, obj_func, theta0, bounds)
        theta, clipped = check_optimizer_result(theta, bounds)
        if clipped:  # the loss at the theta kept
            loss = obj_func(theta, eval_gradient=False)
    theta, loss = np.asarray(theta, dtype=float), float(loss)
    if not np.isfinite(loss):  # a callable optimiser gone wrong: keep the start
        theta, loss = theta0, float(obj_func(theta0, eval_gradient=False))
    return theta, loss


def check_bounds(model, kernel):
    """scikit-learn's ``ConvergenceWarning`` for each learned hyperparameter of ``kernel`` at
    a bound, but those ``model.expected_at_bounds`` names (the package's default kernel:
    :func:`~skgpsparse.classification._fitting.default_kernel`), which reach their upper
    bound by design and go to the verbose output instead
    (:func:`~skgpsparse.kernels._bounds.warn_at_bounds`)."""
    quiet = warn_at_bounds(kernel, model.expected_at_bounds)
    if quiet:
        model._progress.line(f"default kernel: {describe_at_bounds(quiet)} (by design, "
                             "not warned)")
