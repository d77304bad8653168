"""Per-row noise and sample weights of the regressor: row scales and the evidence's constant.

Row ``i`` has the Gaussian noise variance ``s2 a_i / w_i``: ``s2`` the noise variance that the
fit learns (or keeps), ``a_i`` a fixed relative noise (a ``noise_variance`` array, with ``s2``
its common scale) and ``w_i > 0`` a sample weight. For the Gaussian likelihood a weight is
exact (rows of weight zero are removed before the fit)::

    N(y; f, s2 a)^w = (2 pi s2 a)^(-(w - 1)/2) w^(-1/2) N(y; f, s2 a / w),

so a row of integer weight ``w`` gives the posterior, the evidence and its derivatives of ``w``
copies of the row. The fit works on whitened rows: with ``c_i = (w_i / a_i)^(1/2)`` the rows'
kernel columns ``K_fu``, targets ``y`` and prior variances ``k(x_i, x_i)`` are scaled by
``c_i``, ``c_i`` and ``c_i^2`` (``K_uu`` is not), which makes the noise ``s2`` on every row
(``C = Q_ff + s2 diag(a / w) = D^-1 (D Q_ff D + s2 I) D^-1``, ``D = diag(c)``): the DTC
evidence (GPML eq. (8.17)), Titsias' bound (its trace term ``sum_i c_i^2 (k_ii - q_ii)``),
the selection's cost (2) and criteria, the exchange and the posterior on the basis are the
homoscedastic ones of the whitened rows. The change of variables and the weights' factors
add to the log evidence, per target (:meth:`RowNoise.log_constant`)::

    -1/2 sum_i log a_i - 1/2 sum_i (w_i - 1) log(2 pi s2 a_i),

whose derivative in ``log s2`` is ``-1/2 sum_i (w_i - 1)``.
"""

from typing import NamedTuple

import numpy as np

from .._row_weights import distinct_rows, positive_rows

__all__ = [
    "RowNoise", "make_row_noise", "exact_fit_rows", "partitioned_row_noise",
    "rows_of_positive_weight",
    "weighted_mean_std", "weighted_mean_var", "weighted_target_scaling",
]

_LOG_2PI = np.log(2.0 * np.pi)


class RowNoise(NamedTuple):
    """Row ``i``'s noise variance is ``s2 * relative[i] / weight[i]`` (module docstring)."""

    relative: np.ndarray  # a_i > 0 (ones with a scalar noise_variance)
    weight: np.ndarray  # w_i > 0 (ones without sample_weight)

    @property
    def scale(self):
        """``c_i = (w_i / a_i)^(1/2)``: the whitened rows are ``c_i`` times the rows."""
        return np.sqrt(self.weight / self.relative)

    @property
    def total_weight(self):
        """``sum_i w_i``: the number of rows of the repeated data set."""
        return float(np.sum(self.weight))

    def log_constant(self, s2, n_targets=1):
        """What the log evidence of the rows adds to the whitened rows' one (all targets)."""
        excess = self.weight - 1.0
        value = -0.5 * np.sum(np.log(self.relative)) - 0.5 * np.sum(
            excess * (_LOG_2PI + np.log(s2) + np.log(self.relative))
        )
        return n_targets * float(value)

    def log_constant_gradient(self, n_targets=1):
        """``d log_constant / d log s2 = -1/2 sum_i (w_i - 1)`` (all targets)."""
        return -0.5 * n_targets * float(np.sum(self.weight - 1.0))

    def take(self, rows):
        """The row noise of the rows ``rows`` (indices or a mask)."""
        return RowNoise(self.relative[rows], self.weight[rows])

    def whiten(self, y):
        """``c * y`` row by row (``y`` of shape ``(n,)`` or ``(n, m)``); a new array."""
        c = self.scale
        return y * (c if y.ndim == 1 else c[:, None])


def make_row_noise(relative, weight, n):
    """:class:`RowNoise` of ``n`` rows, or None when every row has the noise ``s2``.

    ``relative`` (``a``) and ``weight`` (``w``) are arrays of length ``n`` or None (ones).
    """
    if relative is None and weight is None:
        return None
    a = np.ones(n) if relative is None else np.asarray(relative, dtype=np.float64)
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    return RowNoise(a, w)


def weighted_mean_std(y, weight):
    """Weighted mean and standard deviation of the targets (per column), as of repeated rows.

    ``sum w y / sum w`` and ``(sum w (y - mean)^2 / sum w)^(1/2)``: the values of ``y`` with
    row ``i`` repeated ``w_i`` times (for integer weights), the population standard deviation
    as scikit-learn's ``normalize_y``.
    """
    mean, var = weighted_mean_var(y, weight)
    return mean, np.sqrt(var)


def weighted_mean_var(y, weight):
    """Weighted mean and variance of the targets (per column), as of repeated rows; with unit
    weights ``numpy.mean`` and ``numpy.var``'s values to the bit."""
    mean = np.average(y, axis=0, weights=weight)
    var = np.average((y - mean) ** 2, axis=0, weights=weight)
    return mean, var


def weighted_target_scaling(y, weight, normalize):
    """``target_scaling`` (``._targets``) of the rows repeated by their weights."""
    if not normalize:
        return (0.0, 1.0) if y.ndim == 1 else (np.zeros(y.shape[1]), np.ones(y.shape[1]))
    mean, std = weighted_mean_std(y, weight)
    if y.ndim == 1:
        return float(mean), (float(std) if std > 0 else 1.0)
    return mean, np.where(std > 0, std, 1.0)


def rows_of_positive_weight(noise_variance, X, y, sample_weight):
    """``(X, y, row_noise, kept)``: the rows of positive weight, their :class:`RowNoise`
    (None for unit weights and a scalar ``noise_variance``) and the indices of the rows
    kept (None when every row is).

    ``noise_variance`` is the estimator's parameter (a scalar, or the rows' relative noise
    ``a``); ``sample_weight`` is checked by :func:`~skgpsparse._row_weights.fit_weights`.
    """
    n = X.shape[0]
    relative = None
    if np.ndim(noise_variance) > 0:
        relative = np.asarray(noise_variance, dtype=np.float64)
        if relative.shape != (n,):
            raise ValueError(
                "noise_variance as an array must have one entry per training row: shape "
                f"({n},), got shape {relative.shape}."
            )
        if not np.all(np.isfinite(relative)) or not np.all(relative > 0):
            raise ValueError(
                "noise_variance as an array must hold finite values > 0 (the rows' noise "
                f"variances); got min {np.min(relative)!r}."
            )
    weight, kept = positive_rows(sample_weight, X)
    if kept is not None:  # a zero weight removes the row
        X, y = X[kept], y[kept]
        relative = None if relative is None else relative[kept]
    return X, y, make_row_noise(relative, weight, X.shape[0]), kept


def partitioned_row_noise(noise_variance, sample_weight, n):
    """``(row_noise, kept)`` of ``n`` rows held in partitions, which keep every row.

    As :func:`rows_of_positive_weight` (the same checks), but ``row_noise`` is over all ``n``
    rows: a row of weight zero has ``c_i = 0`` (its whitened row is zero, and its terms of
    the whitened evidence and of :meth:`RowNoise.log_constant` cancel: the row is removed).
    ``kept``: the indices of the rows of positive weight (None when every row is), from which
    the rows gathered to the driver are drawn as the in-memory fit draws them.
    """
    index = np.arange(n)
    _, _, positive, kept = rows_of_positive_weight(
        noise_variance, np.empty((n, 0)), index, sample_weight
    )
    if positive is None:
        return None, None
    relative = (np.ones(n) if np.ndim(noise_variance) == 0
                else np.asarray(noise_variance, dtype=np.float64))
    weight = np.zeros(n)
    weight[index if kept is None else kept] = positive.weight
    return RowNoise(relative, weight), kept


def exact_fit_rows(X, y, row_noise, max_basis):
    """``(X, y, row_noise, index)``: the rows of an exact (full-basis) fit, as the rows
    they stand for (:func:`~skgpsparse._row_weights.distinct_rows`).

    With at most ``max_basis`` distinct rows (input and target) the fit is the exact GP, where
    a row repeated ``k`` times is one row of weight ``k`` (module docstring): repeated rows
    are fitted once with their summed weight, and the rows of a weighted exact fit are taken in
    lexicographic order, so that the same rows, repeated or weighted, in any order give the
    same arithmetic (the learned noise of a near-interpolating fit amplifies rounding).
    ``index`` gives each row's (first) position in the arguments; None, and the arguments
    unchanged, when there is nothing to do, and when the rows have their own noise.
    """
    if row_noise is not None and np.any(row_noise.relative != 1.0):
        return X, y, row_noise, None
    weights = None if row_noise is None else row_noise.weight
    X, y, weights, index = distinct_rows(X, y, weights, max_basis)
    if index is None:
        return X, y, row_noise, None
    return X, y, RowNoise(np.ones(index.size), weights), index
