"""The regressor's targets: their normalisation, and predictions in their units and shapes.

One target is a 1-D ``y``; several are the columns of a 2-D ``y``, fitted together (one basis,
kernel and noise), with scikit-learn's ``GaussianProcessRegressor`` shapes for the results: a
trailing target axis, dropped when ``y`` has a single column.
"""

import numpy as np

from .._scaling import scaled_mean_std

__all__ = ["prior_prediction", "target_scaling", "to_target_units"]


def target_scaling(y, normalize):
    """``(mean, std)`` that the fit subtracts from and divides ``y`` by (per target).

    ``(0, 1)`` without ``normalize``; a constant target keeps the scale 1. The moments are
    taken on targets divided by an exact power of two where their magnitude is extreme
    (``_scaling.scaled_mean_std``), so that any finite scale of ``y`` gives the same
    normalised targets.
    """
    if normalize and y.ndim == 1:
        mean, std = (float(v) for v in scaled_mean_std(y))
        return mean, (std if std > 0 else 1.0)
    if normalize:
        mean, std = scaled_mean_std(y)
        return mean, np.where(std > 0, std, 1.0)
    if y.ndim == 1:
        return 0.0, 1.0
    return np.zeros(y.shape[1]), np.ones(y.shape[1])


def to_target_units(mean, var, cov, y_mean, y_std):
    """The latent mean, std (from ``var``) or covariance in the targets' units and shapes.

    ``mean`` is ``(n,)`` or ``(n, m)`` in normalised units; ``var`` (``(n,)``) and ``cov``
    (``(n, n)``) are shared by the targets and scaled by each target's ``y_std``. Returns
    ``mean``, ``(mean, std)`` or ``(mean, cov)`` as scikit-learn's GPR does.
    """
    mean = mean + y_mean
    several = mean.ndim == 2
    if several and mean.shape[1] == 1:  # as scikit-learn: (n, 1) targets give (n,)
        mean = mean[:, 0]
    if var is not None:
        if not several:
            return mean, np.sqrt(var) * y_std
        std = np.sqrt(var)[:, None] * y_std  # the targets' own scales
        return mean, std[:, 0] if std.shape[1] == 1 else std
    if cov is not None:
        if not several:
            return mean, cov * y_std**2
        cov = cov[:, :, None] * y_std**2
        return mean, cov[:, :, 0] if cov.shape[2] == 1 else cov
    return mean


def prior_prediction(kernel, X, n_targets, return_std, return_cov):
    """The prior's mean (0), std or covariance at ``X``: ``predict`` before ``fit``.

    One target unless ``n_targets > 1``, which repeats the prior along a trailing target
    axis, as scikit-learn's ``GaussianProcessRegressor`` does.
    """
    m = 1 if n_targets is None else n_targets
    mean = np.zeros(X.shape[0]) if m == 1 else np.zeros((X.shape[0], m))
    if return_cov:
        cov = kernel(X)
        return mean, (cov if m == 1 else np.repeat(cov[:, :, None], m, axis=2))
    if return_std:
        std = np.sqrt(np.clip(kernel.diag(X), 0.0, None))
        return mean, (std if m == 1 else np.repeat(std[:, None], m, axis=1))
    return mean
