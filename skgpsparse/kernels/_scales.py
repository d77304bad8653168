"""A start for a kernel's length scales at the scale of the data.

A length scale far below the distances between rows makes every pair of rows nearly
uncorrelated, and the evidence can have a local optimum there that a gradient method does not
leave (``RBF(1.0)``, scikit-learn's default, on 20 standardised features: scikit-learn's own
GPC collapses to the constant predictor on twonorm from it). :func:`data_scaled_start` gives
the same kernel with every free length scale at the data's scale, for the fit to compare
with the user's start by its own objective.
"""

import numpy as np
from sklearn.base import clone

__all__ = [
    "bic_charge", "data_scaled_start", "per_feature_length_scale_positions",
    "per_feature_length_scales", "rows_uncorrelated",
]

# Length scales within this factor of the data's scale are left as they are.
_CLOSE = 2.0
# Median correlation of a row with its most correlated other row below which the kernel
# treats the rows as independent (RBF(0.67) on 20 standard normal features: 1e-9).
_UNCORRELATED = 1e-3


def _is_length_scale(h):
    return h.name.split("__")[-1] == "length_scale" and not h.fixed


def _free_length_scales(kernel):
    return [h for h in kernel.hyperparameters if _is_length_scale(h)]


def data_scaled_start(kernel, X, std=None):
    """``kernel`` with each free length scale at the data's scale, or None.

    The data's scale of feature ``j`` is ``sqrt(d) std_j`` (for standardised inputs
    ``sqrt(d)``, the package's default classifier kernel): an isotropic length scale takes
    the root mean square of those, an ARD one each its own. Clipped to the bounds. ``std``
    (shape ``(d,)``) gives the features' standard deviations of rows held elsewhere (``X``
    then only gives ``d``: ``X.shape[1]``); ``None`` computes them from ``X``.

    Returns
    -------
    kernel or None
        None when the kernel has no free length scale, or when every one is already within a
        factor of two of the data's scale (nothing to compare).
    """
    scales = _free_length_scales(kernel)
    if not scales:
        return None
    d = X.shape[1]
    std = np.std(np.asarray(X, dtype=np.float64), axis=0) if std is None else np.asarray(std)
    std = np.where(std > 0, std, 1.0)
    params, far = {}, False
    current = kernel.get_params()
    for h in scales:
        now = np.atleast_1d(np.asarray(current[h.name], dtype=np.float64))
        target = np.sqrt(d) * (std if now.size == d else np.sqrt(np.mean(std**2)))
        target = np.broadcast_to(target, now.shape).copy()
        bounds = np.asarray(h.bounds, dtype=np.float64).reshape(-1, 2)
        target = np.clip(target, bounds[:, 0], bounds[:, 1])
        ratio = target / now
        far = far or bool(np.any((ratio > _CLOSE) | (ratio < 1.0 / _CLOSE)))
        params[h.name] = float(target[0]) if np.ndim(current[h.name]) == 0 else target
    if not far:
        return None
    return clone(kernel).set_params(**params)


def per_feature_length_scales(kernel, n_features):
    """``kernel`` with each free scalar length scale made one per feature (ARD), or None.

    Every feature's length scale starts at the scalar's value, so the new kernel equals
    ``kernel`` at its start and can only fit better. None when the kernel has no free scalar
    length scale or there is one feature.
    """
    if n_features < 2:
        return None
    current = kernel.get_params()
    params = {
        h.name: np.full(n_features, float(current[h.name]))
        for h in _free_length_scales(kernel)
        if np.ndim(current[h.name]) == 0
    }
    if not params:
        return None
    return clone(kernel).set_params(**params)


def bic_charge(n_extra, n):
    """The Bayesian information criterion's charge, ``n_extra / 2 * log(n)`` nats, for
    ``n_extra`` more hyperparameters fitted to ``n`` rows (Schwarz 1978): what one length
    scale per feature must gain in log evidence over one for all to be kept."""
    return 0.5 * n_extra * np.log(n)


def per_feature_length_scale_positions(kernel):
    """Index arrays into ``kernel.theta`` of each free per-feature (ARD) length scale vector."""
    positions, start = [], 0
    for h in kernel.hyperparameters:
        if h.fixed:
            continue
        if _is_length_scale(h) and h.n_elements > 1:
            positions.append(np.arange(start, start + h.n_elements))
        start += h.n_elements
    return positions


def rows_uncorrelated(kernel, X):
    """Whether ``kernel`` leaves the rows of ``X`` (at least two) nearly uncorrelated.

    True when the median over rows of the largest correlation ``k(x_i, x_j) / sqrt(k(x_i,
    x_i) k(x_j, x_j))`` with another row is below ``1e-3``: the kernel then explains the
    targets as independent noise, whatever its amplitude. O(m^2) for ``m`` rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.kernels._scales import rows_uncorrelated
    >>> X = np.random.RandomState(0).randn(50, 20)
    >>> rows_uncorrelated(RBF(0.7), X), rows_uncorrelated(RBF(5.0), X)
    (True, False)
    """
    K = np.array(kernel(X), dtype=float)
    d = np.sqrt(np.clip(np.diag(K), 0.0, None))
    if K.shape[0] < 2 or not np.all(d > 0):
        return False
    R = K / np.outer(d, d)
    np.fill_diagonal(R, -np.inf)
    return bool(np.median(R.max(axis=1)) < _UNCORRELATED)
