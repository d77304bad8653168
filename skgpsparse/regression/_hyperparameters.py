"""Hyperparameter learning on a fixed basis: L-BFGS-B over ``(theta, log s2)``.

The objective is the DTC evidence (GPML eq. (8.17), :mod:`._dtc`) or Titsias' bound
(:mod:`._vfe`); the search runs in a box that moves with the iterate
(:func:`skgpsparse._optimize.lbfgs_in_moving_box`) and stops when its iterations stop paying
(``STALL_PER_ROW``), or follows a user's ``optimizer`` callable (scikit-learn's contract).
"""

import warnings

import numpy as np
from scipy.linalg import LinAlgError
from sklearn.exceptions import ConvergenceWarning

from .._optimize import call_optimizer, check_optimizer_result, lbfgs_in_moving_box
from ..kernels._radial import with_theta
from ._dtc import dtc_log_marginal_likelihood

__all__ = ["check_noise_bounds", "learn_hyperparameters", "warn_at_noise_bound"]

# Hyperparameter learning stops when STALL_WINDOW L-BFGS-B iterations together raise the
# objective (a sum over rows) by less than STALL_PER_ROW nats per training row.
STALL_WINDOW = 10
STALL_PER_ROW = 1e-4


def learn_hyperparameters(
    kernel, noise_variance, X, y, X_basis, *, noise_bounds, optimizer, jitter, objective=None
):
    """Maximise eq. (8.17) on a fixed basis over ``kernel.theta`` and ``log(noise_variance)``.

    Or another objective with the signature of :func:`dtc_log_marginal_likelihood`, such as
    the VFE bound (:func:`skgpsparse.regression._vfe.vfe_log_marginal_likelihood`).

    Warm-started at the given values; ``noise_bounds=None`` keeps the noise variance fixed.
    The jitter is held at the given value during the search: were it recomputed from each
    theta (it is relative to the prior variance, so it scales with a constant factor), the
    gradient, which treats it as a constant, would disagree with the value; with an
    ill-conditioned ``K_uu`` (long length scales) by far more than the tolerance, and
    L-BFGS-B's line search ended "ABNORMAL".

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Starting kernel (its bounds bound the search).
    noise_variance : float
        Starting noise variance.
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    X_basis : ndarray of shape (p, n_features)
    noise_bounds : (float, float) or None
        Bounds of the noise variance; ``None`` keeps it fixed.
    optimizer : "fmin_l_bfgs_b" or callable
        ``"fmin_l_bfgs_b"`` runs L-BFGS-B in a moving trust box
        (:func:`skgpsparse._optimize.lbfgs_in_moving_box`); a callable follows scikit-learn's
        ``optimizer(obj_func, initial_theta, bounds) -> (theta_opt, func_min)`` contract.
    jitter : float
        Added to ``diag(K_uu)``.
    objective : callable, default=None
        ``objective(kernel, X, y, X_basis, noise_variance, *, eval_gradient, jitter)``
        returning the value (and gradient) to maximise; ``None`` means
        :func:`dtc_log_marginal_likelihood`.

    Returns
    -------
    kernel : Kernel
        The kernel at the optimum.
    noise_variance : float
    log_likelihood : float
        The objective (eq. (8.17) by default) at the optimum.

    Raises
    ------
    ValueError
        If the likelihood is not finite at the optimum.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.regression._hyperparameters import learn_hyperparameters
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (60, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.randn(60)
    >>> k, s2, lml = learn_hyperparameters(
    ...     RBF(3.0), 0.5, X, y, X[:10], noise_bounds=(1e-4, 10.0),
    ...     optimizer="fmin_l_bfgs_b", jitter=1e-8)
    >>> bool(s2 < 0.05 and k.length_scale < 3.0)
    True
    """
    learn_noise = noise_bounds is not None
    n_k = kernel.n_dims
    if objective is None:
        objective = dtc_log_marginal_likelihood

    def split(theta):
        k = with_theta(kernel, theta[:n_k])
        return k, (float(np.exp(theta[n_k])) if learn_noise else noise_variance)

    def obj_func(theta, eval_gradient=True):
        k, noise = split(np.asarray(theta, dtype=float))
        try:
            if eval_gradient:
                lml, grad = objective(k, X, y, X_basis, noise, eval_gradient=True, jitter=jitter)
                grad = grad if learn_noise else grad[:n_k]
                return -lml, -grad
            return -objective(k, X, y, X_basis, noise, jitter=jitter)
        except LinAlgError:
            return (np.inf, np.zeros_like(theta)) if eval_gradient else np.inf

    theta0 = kernel.theta
    bounds = kernel.bounds
    if learn_noise:
        theta0 = np.append(theta0, np.log(np.clip(noise_variance, *noise_bounds)))
        bounds = np.vstack([bounds.reshape(-1, 2), np.log(noise_bounds)])
    if optimizer == "fmin_l_bfgs_b":
        # Stop once ten iterations together gain less than 1e-4 nats per row: beyond that
        # L-BFGS-B only creeps along flat valleys (irrelevant ARD length scales on their way
        # to the upper bound), which changes no prediction.
        stall = (STALL_WINDOW, STALL_PER_ROW * X.shape[0])
        theta_opt, func_min = lbfgs_in_moving_box(obj_func, theta0, bounds, stall=stall)
    else:
        theta_opt, func_min = call_optimizer(optimizer, obj_func, theta0, bounds=bounds)
        theta_opt, clipped = check_optimizer_result(theta_opt, bounds)
        if clipped or not np.isfinite(func_min):  # the objective at the theta kept
            func_min = obj_func(theta_opt, eval_gradient=False)
    theta_opt = np.asarray(theta_opt, dtype=float)
    if not np.isfinite(func_min):
        raise ValueError(
            "Hyperparameter learning failed: the approximate marginal likelihood is not "
            "finite at the optimum. Try other initial hyperparameters or bounds, and check "
            "that the kernel is positive definite on these inputs (ExpSineSquared, e.g., is "
            "only on one feature)."
        )
    k, noise = split(theta_opt)
    return k, noise, -float(func_min)


def check_noise_bounds(bounds):
    """``None`` for ``"fixed"``, else ``(low, high)``; a clear error for anything else."""
    if isinstance(bounds, str):
        return None
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        lo = hi = np.nan
    if not (0 < lo <= hi < np.inf):
        raise ValueError(
            "`noise_variance_bounds` must be 'fixed' or a pair (low, high) with "
            f"0 < low <= high < inf, got {bounds!r}."
        )
    return lo, hi


def warn_at_noise_bound(noise_variance, bounds):
    """Warn when a learned noise variance ends at one of its ``bounds`` (``None``: fixed)."""
    if bounds is None:
        return
    log_s2 = np.log(noise_variance)
    for name, b in zip(("lower", "upper"), bounds):
        if np.isclose(log_s2, np.log(b)):
            warnings.warn(
                f"The learned noise_variance_ {noise_variance:.3g} is close to the "
                f"specified {name} bound {b}. Decreasing/increasing the bound and calling "
                "fit again may find a better value.",
                ConvergenceWarning,
            )
